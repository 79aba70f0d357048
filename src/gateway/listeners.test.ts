/**
 * A computer's own gateway socket (G8, G9) and who may take over a computer's connection (G4):
 * the real gateway, real worker processes dialling `ws+unix://`, and raw clients doing what a
 * well-behaved worker never does.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { access } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../log/testing/index.ts";
import { closeCodes, GATEWAY_PATH } from "../protocol/index.ts";
import type { ShellCompletedOutput } from "../protocol/index.ts";
import type { TokenIdentity } from "./gateway.ts";
import {
  makeComputerDirs,
  rawClient,
  spawnWorker,
  startTestGateway,
  waitFor,
  waitForWorkerProcess,
  type TestGateway,
} from "./testing/index.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A gateway whose tokens `token-a` and `token-b` are computers A and B, both socket-bound. */
async function start(options: Parameters<typeof startTestGateway>[0] = {}) {
  const identities: Record<string, TokenIdentity> = {
    "token-a": { computerId: "cmp_a", boundToSocket: true },
    "token-b": { computerId: "cmp_b", boundToSocket: true },
    "token-tcp": { computerId: "cmp_tcp" },
  };
  const gw = await startTestGateway({
    verifyToken: async (token) => identities[token],
    ...options,
  });
  const dir = mkdtempSync(path.join(os.tmpdir(), "roost-gw-sock-"));
  cleanups.push(async () => {
    await gw.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const socketOf = (computerId: string) => path.join(dir, `${computerId}.sock`);
  const listen = (computerId: string) =>
    gw.gateway.listenComputer(computerId, socketOf(computerId));
  const urlOf = (computerId: string) => `ws+unix://${socketOf(computerId)}:${GATEWAY_PATH}`;
  return { gw, socketOf, listen, urlOf };
}

function worker(gw: TestGateway, gatewayUrl: string, token: string) {
  const dirs = makeComputerDirs();
  const process = spawnWorker({ gatewayUrl, token, dirs });
  cleanups.push(async () => {
    await process.stop();
    dirs.remove();
  });
  return process;
}

const shell = async (gw: TestGateway, computerId: string, callId: string, command: string) => {
  const result = await gw.gateway.call(computerId, {
    callId,
    tool: "shell",
    input: { command },
    timeoutMs: 10_000,
  });
  if (!result.ok) throw new Error(result.error.message);
  return (result.output as ShellCompletedOutput).stdout;
};

describe("a computer's own gateway socket", () => {
  it("a worker dialling its computer's socket (ws+unix) is that computer and runs its calls", async () => {
    const { gw, listen, urlOf } = await start();
    await listen("cmp_a");
    const process = worker(gw, urlOf("cmp_a"), "token-a");
    await waitForWorkerProcess(gw.gateway, "cmp_a", process);
    expect(await shell(gw, "cmp_a", "s1", "echo on the socket")).toBe("on the socket\n");
  });

  it("a worker token works from another computer's sandbox (attack): B's token on A's socket is refused", async () => {
    const logger = createMemoryLogger();
    const { gw, listen, urlOf } = await start({ logger });
    await listen("cmp_a");
    await listen("cmp_b");
    const stolen = await rawClient(urlOf("cmp_a"), "token-b");
    expect(stolen.opened).toMatchObject({
      ok: false,
      status: 403,
      body: "this socket belongs to computer cmp_a; the token is another computer's\n",
    });
    expect(gw.gateway.isConnected("cmp_a")).toBe(false);
    expect(gw.gateway.isConnected("cmp_b")).toBe(false);
    expect(logger.entries).toContainEqual(
      expect.objectContaining({
        level: "warn",
        fields: expect.objectContaining({ socketOf: "cmp_a", tokenOf: "cmp_b" }),
      }),
    );
    // B's own worker on B's socket is fine.
    const process = worker(gw, urlOf("cmp_b"), "token-b");
    await waitForWorkerProcess(gw.gateway, "cmp_b", process);
  });

  it("a socket-bound token is refused on the shared TCP path; a TCP computer's token works there", async () => {
    const { gw } = await start();
    const overTcp = await rawClient(gw.url, "token-a");
    expect(overTcp.opened).toMatchObject({
      ok: false,
      status: 403,
      body: "computer cmp_a's worker connects through its own socket; its token is not accepted here\n",
    });
    const tcp = await rawClient(gw.url, "token-tcp");
    expect(tcp.opened).toEqual({ ok: true });
    tcp.hello();
    await waitFor(() => gw.gateway.isConnected("cmp_tcp"));
    tcp.ws.close();
    await tcp.closed;
  });

  it("a flood of half-open connections on a computer's socket stops at its limit, is logged, and the connected worker keeps working (G9)", async () => {
    const logger = createMemoryLogger();
    const { gw, listen, urlOf, socketOf } = await start({
      logger,
      maxConnectionsPerComputer: 4,
      headersTimeoutMs: 300,
    });
    await listen("cmp_a");
    const process = worker(gw, urlOf("cmp_a"), "token-a");
    await waitForWorkerProcess(gw.gateway, "cmp_a", process);
    const flood: Socket[] = [];
    let closedCount = 0;
    cleanups.push(() => {
      for (const socket of flood) socket.destroy();
    });
    for (let index = 0; index < 30; index++) {
      const socket = connect({ path: socketOf("cmp_a") });
      socket.on("error", () => undefined);
      socket.on("close", () => (closedCount += 1));
      socket.write(`GET ${GATEWAY_PATH} HTTP/1.1\r\nHost: x\r\n`); // never finished
      flood.push(socket);
    }
    // Over the limit: closed at once; the rest: closed by the header timeout.
    await waitFor(() => closedCount === 30, { message: "every flooding socket closed" });
    const messages = logger.messages();
    expect(messages).toContain(
      "a computer reached its limit of connections to its gateway socket; further ones are closed",
    );
    expect(messages).toContain(
      "a connection to a computer's gateway socket did not finish its request headers in time; closed",
    );
    expect(await shell(gw, "cmp_a", "s2", "echo still connected")).toBe("still connected\n");
  });

  it("closing a computer's listener ends its connections and removes the socket", async () => {
    const { gw, listen, urlOf, socketOf } = await start();
    const listener = await listen("cmp_a");
    const client = await rawClient(urlOf("cmp_a"), "token-a");
    client.hello();
    await waitFor(() => gw.gateway.isConnected("cmp_a"));
    await listener.close();
    await client.closed;
    await waitFor(() => !gw.gateway.isConnected("cmp_a"));
    await expect(access(socketOf("cmp_a"))).rejects.toThrow(/ENOENT/);
  });
});

describe("who may take over a computer's connection (G4)", () => {
  it("a fake worker with a stolen token cannot displace the live worker on the TCP path", async () => {
    const logger = createMemoryLogger();
    const { gw } = await start({ logger, probeTimeoutMs: 1_000 });
    const process = worker(gw, gw.url, "token-tcp");
    await waitForWorkerProcess(gw.gateway, "cmp_tcp", process);
    const realWorker = gw.gateway.worker("cmp_tcp")!;
    const fake = await rawClient(gw.url, "token-tcp");
    expect(fake.opened).toEqual({ ok: true });
    fake.hello({ workerId: "wrk_fake" });
    expect(await fake.closed).toEqual({
      code: closeCodes.inUse,
      reason: "another worker of computer cmp_tcp is connected and answering; this one was refused",
    });
    expect(fake.received).toEqual([]); // never welcomed, never sent a call
    expect(gw.gateway.worker("cmp_tcp")).toEqual(realWorker);
    expect(gw.events).toContainEqual(
      expect.objectContaining({
        type: "hello_refused",
        computerId: "cmp_tcp",
        workerId: "wrk_fake",
      }),
    );
    expect(logger.messages()).toContain(
      "refused a hello from another worker while the current one answers",
    );
    expect(await shell(gw, "cmp_tcp", "s3", "echo real")).toBe("real\n");
  });

  it("a fake worker cannot displace the live worker on the computer's own socket either", async () => {
    const { gw, listen, urlOf } = await start();
    await listen("cmp_a");
    const process = worker(gw, urlOf("cmp_a"), "token-a");
    await waitForWorkerProcess(gw.gateway, "cmp_a", process);
    const fake = await rawClient(urlOf("cmp_a"), "token-a");
    fake.hello({ workerId: "wrk_fake" });
    expect((await fake.closed).code).toBe(closeCodes.inUse);
    expect(await shell(gw, "cmp_a", "s4", "echo real")).toBe("real\n");
  });

  it("another worker id takes over when the current connection no longer answers", async () => {
    const { gw } = await start({ probeTimeoutMs: 300 });
    const silent = await rawClient(gw.url, "token-tcp");
    silent.hello({ workerId: "wrk_old", bootId: "boot_old" }); // then answers nothing, ever
    await waitFor(() => gw.gateway.worker("cmp_tcp")?.workerId === "wrk_old");
    const next = await rawClient(gw.url, "token-tcp");
    next.hello({ workerId: "wrk_new", bootId: "boot_new" });
    expect((await silent.closed).code).toBe(closeCodes.replaced);
    await waitFor(() => gw.gateway.worker("cmp_tcp")?.workerId === "wrk_new");
    expect(next.received[0]).toMatchObject({ type: "welcome", computerId: "cmp_tcp" });
    next.ws.close();
    await next.closed;
  });
});
