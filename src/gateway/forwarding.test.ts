/**
 * Node-to-node forwarding (forwarding.ts, NF1–NF5) with two real gateways in one process: node B
 * holds a real worker process and serves its node endpoint; node A has no worker and forwards.
 */
import { randomBytes } from "node:crypto";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isRoostError } from "../errors/index.ts";
import {
  createForwardingGateway,
  startNodeEndpoint,
  type NodeEndpoint,
  type NodeGateway,
} from "./forwarding.ts";
import {
  makeComputerDirs,
  spawnWorker,
  startTestGateway,
  waitForWorkerProcess,
  type TestComputerDirs,
  type TestGateway,
  type WorkerProcess,
} from "./testing/index.ts";

const secret = randomBytes(32).toString("base64url");

describe("forwarding calls to the node holding the worker", () => {
  let nodeA: TestGateway;
  let nodeB: TestGateway;
  let endpoint: NodeEndpoint;
  let forwarding: NodeGateway;
  let dirs: TestComputerDirs;
  let worker: WorkerProcess;
  let echo: net.Server;
  let echoPort: number;
  const locations = new Map<string, { nodeUrl: string }>();

  beforeAll(async () => {
    nodeA = await startTestGateway();
    nodeB = await startTestGateway();
    endpoint = await startNodeEndpoint({ gateway: nodeB.gateway, secret, port: 0 });
    const nodeUrlB = `http://127.0.0.1:${endpoint.port}`;
    dirs = makeComputerDirs();
    nodeB.tokens.set("token-fwd", "cmp_fwd");
    worker = spawnWorker({ gatewayUrl: nodeB.url, token: "token-fwd", dirs });
    await waitForWorkerProcess(nodeB.gateway, "cmp_fwd", worker);
    locations.set("cmp_fwd", { nodeUrl: nodeUrlB });
    // A stale entry: it names B, where no worker of this computer is connected.
    locations.set("cmp_stale", { nodeUrl: nodeUrlB });
    forwarding = createForwardingGateway(nodeA.gateway, {
      selfUrl: "http://127.0.0.1:1",
      secret,
      locations: { getWorkerLocation: async (computerId) => locations.get(computerId) },
      workerWaitMs: 1_000,
    });
    // A server inside the computer (the process worker's loopback is this host's).
    echo = net.createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    echoPort = (echo.address() as AddressInfo).port;
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    await endpoint?.close();
    await nodeA?.close();
    await nodeB?.close();
    echo?.close();
    dirs?.remove();
  });

  it("a shell call made on A runs on B's worker, its output streamed back", async () => {
    const chunks: string[] = [];
    const result = await forwarding.call(
      "cmp_fwd",
      {
        callId: "fwd-1",
        tool: "shell",
        input: { command: "echo one; sleep 0.3; echo two > f && cat f" },
        timeoutMs: 10_000,
      },
      { onChunk: (chunk) => chunks.push(chunk.data) },
    );
    expect(result).toMatchObject({ ok: true, output: { exitCode: 0, stdout: "one\ntwo\n" } });
    expect(chunks.join("")).toContain("one\n");
    // Asking the holder; the synchronous view then knows the worker for a few seconds.
    expect(await forwarding.connectedAnywhere("cmp_fwd")).toBe(true);
    expect(forwarding.isConnected("cmp_fwd")).toBe(true);
    expect(forwarding.worker("cmp_fwd")?.workerId).toBe(nodeB.gateway.worker("cmp_fwd")?.workerId);
    expect(nodeA.gateway.isConnected("cmp_fwd")).toBe(false);
  });

  it("NF2: the same call id made again is the same call: the worker does not run it twice", async () => {
    const request = {
      callId: "fwd-once",
      tool: "shell",
      input: { command: "echo run >> runs; wc -l < runs" },
      timeoutMs: 10_000,
    };
    const first = await forwarding.call("cmp_fwd", request);
    const again = await forwarding.call("cmp_fwd", request);
    expect(again).toEqual(first);
    expect(first).toMatchObject({ ok: true, output: { stdout: "1\n" } });
  });

  it("NF5: a tool failure and a gateway error come back as they would locally", async () => {
    const failed = await forwarding.call("cmp_fwd", {
      callId: "fwd-missing",
      tool: "read",
      input: { path: "no-such-file" },
      timeoutMs: 10_000,
    });
    expect(failed.ok).toBe(false);
    const local = await nodeB.gateway.call("cmp_fwd", {
      callId: "local-missing",
      tool: "read",
      input: { path: "no-such-file" },
      timeoutMs: 10_000,
    });
    expect(failed).toEqual(local);
  });

  it("a tunnel opened on A reaches a port inside B's computer", async () => {
    const tunnel = await forwarding.openTunnel("cmp_fwd", echoPort);
    try {
      const answer = new Promise<string>((resolve) => {
        let text = "";
        tunnel.on("data", (data: Buffer) => {
          text += data.toString();
          if (text.includes("ping")) resolve(text);
        });
      });
      tunnel.write("ping");
      expect(await answer).toBe("ping");
    } finally {
      tunnel.destroy();
    }
  });

  it("NF3: a stale location is answered at once, and the call fails as unavailable within the wait", async () => {
    const started = Date.now();
    const error = await forwarding
      .call("cmp_stale", {
        callId: "stale-1",
        tool: "shell",
        input: { command: "true" },
        timeoutMs: 1_000,
      })
      .catch((caught: unknown) => caught);
    expect(isRoostError(error) && error.code).toBe("computer_unavailable");
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await forwarding.connectedAnywhere("cmp_stale")).toBe(false);
  }, 30_000);

  it("NF1: a node with another secret is refused, and says which setting to check", async () => {
    const wrong = createForwardingGateway(nodeA.gateway, {
      selfUrl: "http://127.0.0.1:1",
      secret: `${secret}-other`,
      locations: { getWorkerLocation: async (computerId) => locations.get(computerId) },
      workerWaitMs: 500,
    });
    const error = await wrong
      .call("cmp_fwd", {
        callId: "wrong-1",
        tool: "shell",
        input: { command: "id" },
        timeoutMs: 1_000,
      })
      .catch((caught: unknown) => caught);
    expect(String(error)).toContain("ROOST_NODE_SECRET");
    await expect(wrong.openTunnel("cmp_fwd", echoPort)).rejects.toMatchObject({
      code: "unauthenticated",
    });
  });
});
