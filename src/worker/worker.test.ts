import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import type WebSocket from "ws";
import { closeCodes, PROTOCOL_VERSION } from "../protocol/index.ts";
import type { WorkerFrame } from "../protocol/index.ts";
import { startWorker } from "./worker.ts";
import type { Worker } from "./worker.ts";

/** A small real server standing in for the gateway, scripted per test. */
interface FakeGateway {
  url: string;
  connections: {
    ws: WebSocket;
    request: IncomingMessage;
    frames: WorkerFrame[];
    closed: Promise<number>;
  }[];
  close(): Promise<void>;
}

async function startFakeGateway(onHello: (ws: WebSocket) => void): Promise<FakeGateway> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const connections: FakeGateway["connections"] = [];
  server.on("connection", (ws, request) => {
    const frames: WorkerFrame[] = [];
    const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
    connections.push({ ws, request, frames, closed });
    ws.on("message", (data: Buffer) => {
      const frame = JSON.parse(data.toString()) as WorkerFrame;
      frames.push(frame);
      if (frame.type === "hello") onHello(ws);
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return {
    url: `ws://127.0.0.1:${address.port}/v1/gateway`,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}

const welcome = (heartbeatMs: number) =>
  JSON.stringify({
    type: "welcome",
    computerId: "cmp_1",
    protocol: PROTOCOL_VERSION,
    heartbeatMs,
    maxFrameBytes: 1 << 20,
  });

async function until(condition: () => boolean, message: string): Promise<void> {
  const giveUpAt = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${message}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let root: string;
const cleanups: (() => Promise<void>)[] = [];

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "roost-worker-"));
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  rmSync(root, { recursive: true, force: true });
});

async function worker(
  gatewayUrl: string,
  overrides: { token?: string; tokenFile?: string } = {},
): Promise<Worker> {
  const started = await startWorker({
    gatewayUrl,
    token: overrides.tokenFile === undefined ? (overrides.token ?? "t0ken") : undefined,
    tokenFile: overrides.tokenFile,
    stateDir: path.join(root, "state"),
    workspace: path.join(root, "workspace"),
    commandEnv: { PATH: "/usr/bin:/bin" },
    fsync: false,
    log: () => undefined,
    backoff: { initialDelayMs: 20, maxDelayMs: 100 },
  });
  cleanups.push(() => started.close());
  return started;
}

describe("worker connection", () => {
  it("dials with the bearer token and says hello with a worker id kept in the state directory", async () => {
    const gateway = await startFakeGateway((ws) => ws.send(welcome(10_000)));
    cleanups.push(() => gateway.close());
    const first = await worker(gateway.url);
    await until(() => first.isConnected(), "the first worker to connect");
    const connection = gateway.connections[0]!;
    expect(connection.request.headers.authorization).toBe("Bearer t0ken");
    expect(connection.frames[0]).toEqual({
      type: "hello",
      workerId: first.workerId,
      bootId: first.bootId,
      protocol: PROTOCOL_VERSION,
      capabilities: [
        ...["shell", "shell_status", "read", "write", "edit", "list", "glob"],
        // The browser on the bot's screen and that screen's desktop (protocol/browser.ts).
        ...["browser", "computer"],
        // The files API's operations (protocol/files.ts), which are not model tools.
        ...["files.list", "files.read", "files.write", "files.commit", "files.abort"],
        ...["files.delete", "files.rename", "files.mkdir"],
        // The skill operations (protocol/skills.ts), confined to ~/skills.
        ...["skills.sync", "skills.put"],
        // The port previews: the listening ports, and tunnels (protocol/tunnels.ts).
        "ports.list",
        // The browser's screens (protocol/screens.ts), then the tunnel capability.
        ...["screens.list", "screens.control", "screens.snapshot"],
        "tunnel",
        // The computer's command MCP servers (protocol/mcp.ts).
        ...["mcp.tools", "mcp.call"],
      ],
      inflight: [],
    });
    expect(readFileSync(path.join(root, "state", "worker-id"), "utf8").trim()).toBe(first.workerId);
    await first.close();

    const second = await worker(gateway.url);
    expect(second.workerId).toBe(first.workerId);
    expect(second.bootId).not.toBe(first.bootId);
  });

  it("drops and redials a gateway that goes silent (half-open connection)", async () => {
    // Welcomes with a 100 ms heartbeat, then never pings.
    const gateway = await startFakeGateway((ws) => ws.send(welcome(100)));
    cleanups.push(() => gateway.close());
    await worker(gateway.url);
    await until(() => gateway.connections.length >= 2, "a second connection");
    expect(gateway.connections[0]!.ws.readyState).not.toBe(gateway.connections[0]!.ws.OPEN);
  });

  it("answers pings, and closes with 4000 and reconnects on a malformed frame", async () => {
    const gateway = await startFakeGateway((ws) => {
      ws.send(welcome(10_000));
      ws.send(JSON.stringify({ type: "ping", nonce: "n1" }));
    });
    cleanups.push(() => gateway.close());
    await worker(gateway.url);
    await until(
      () => gateway.connections[0]?.frames.some((frame) => frame.type === "pong") === true,
      "a pong",
    );
    expect(gateway.connections[0]!.frames).toContainEqual({ type: "pong", nonce: "n1" });
    gateway.connections[0]!.ws.send(JSON.stringify({ type: "call", callId: "c1" }));
    expect(await gateway.connections[0]!.closed).toBe(closeCodes.protocolError);
    await until(() => gateway.connections.length >= 2, "a reconnect");
  });

  it("runs a call and re-sends its result after a reconnect until it is acked", async () => {
    const gateway = await startFakeGateway((ws) => ws.send(welcome(10_000)));
    cleanups.push(() => gateway.close());
    await worker(gateway.url);
    await until(
      () => gateway.connections.length === 1 && gateway.connections[0]!.frames.length === 1,
      "hello",
    );
    gateway.connections[0]!.ws.send(
      JSON.stringify({ type: "call", callId: "c1", tool: "list", input: {}, timeoutMs: 5000 }),
    );
    await until(
      () => gateway.connections[0]!.frames.some((frame) => frame.type === "result"),
      "the result",
    );
    gateway.connections[0]!.ws.terminate(); // the result was never acked
    await until(
      () => gateway.connections[1]?.frames.some((frame) => frame.type === "result") === true,
      "the re-sent result",
    );
    gateway.connections[1]!.ws.send(JSON.stringify({ type: "ack", callId: "c1" }));
    const resent = gateway.connections[1]!.frames.find((frame) => frame.type === "result");
    expect(resent).toMatchObject({ type: "result", callId: "c1", ok: true });
  });

  it("re-reads the token file before every dial, so the token can rotate without a restart", async () => {
    const tokenFile = path.join(root, "token");
    writeFileSync(tokenFile, "first\n");
    const gateway = await startFakeGateway((ws) => ws.send(welcome(10_000)));
    cleanups.push(() => gateway.close());
    await worker(gateway.url, { tokenFile });
    await until(() => gateway.connections.length === 1, "the first connection");
    writeFileSync(tokenFile, "second\n");
    gateway.connections[0]!.ws.terminate();
    await until(() => gateway.connections.length === 2, "the second connection");
    expect(
      gateway.connections.map((connection) => connection.request.headers.authorization),
    ).toEqual(["Bearer first", "Bearer second"]);
  });
});
