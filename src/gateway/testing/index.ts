/**
 * Test support: a real gateway on 127.0.0.1:0 and real worker processes. Used by the gateway's
 * tests and the benchmark; other subsystems' integration tests may use it too.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { GATEWAY_PATH, PROTOCOL_VERSION } from "../../protocol/index.ts";
import { createGateway } from "../gateway.ts";
import type { Gateway, GatewayEvent, GatewayOptions } from "../gateway.ts";

/** Path of the worker's entry point (spawned, never imported: the worker is its own program). */
export const workerMainPath = fileURLToPath(new URL("../../worker/main.ts", import.meta.url));

export interface TestGateway {
  gateway: Gateway;
  server: Server;
  port: number;
  url: string;
  /** token → computer id, consulted by the test verifyToken. */
  tokens: Map<string, string>;
  events: GatewayEvent[];
  /** Server-side TCP sockets, to drop connections from the gateway's side. */
  sockets: Set<Socket>;
  close(): Promise<void>;
}

export async function startTestGateway(
  options: Partial<Omit<GatewayOptions, "server">> & { port?: number } = {},
): Promise<TestGateway> {
  const server = createServer((_request, response) => {
    response.writeHead(404).end();
  });
  const sockets = new Set<Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  const tokens = new Map<string, string>();
  const events: GatewayEvent[] = [];
  const gateway = createGateway({
    verifyToken: async (token) => {
      const computerId = tokens.get(token);
      return computerId === undefined ? undefined : { computerId };
    },
    ...options,
    server,
    onEvent: (event) => {
      events.push(event);
      options.onEvent?.(event);
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("server has no port");
  return {
    gateway,
    server,
    port: address.port,
    url: `ws://127.0.0.1:${address.port}${GATEWAY_PATH}`,
    tokens,
    events,
    sockets,
    async close() {
      await gateway.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface TestComputerDirs {
  root: string;
  stateDir: string;
  workspace: string;
  home: string;
  remove(): void;
}

/** A throwaway state dir, workspace and home (an empty home keeps `bash -l` fast and predictable). */
export function makeComputerDirs(prefix = "roost-worker-"): TestComputerDirs {
  const root = mkdtempSync(path.join(os.tmpdir(), prefix));
  const dirs = {
    root,
    stateDir: path.join(root, "state"),
    workspace: path.join(root, "workspace"),
    home: path.join(root, "home"),
  };
  for (const dir of [dirs.stateDir, dirs.workspace, dirs.home]) mkdirSync(dir, { recursive: true });
  return { ...dirs, remove: () => rmSync(root, { recursive: true, force: true }) };
}

export interface WorkerProcess {
  child: ChildProcess;
  /** Everything the worker wrote to stderr/stdout so far. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then SIGKILL after 3 s; resolves when it has exited. */
  stop(): Promise<void>;
}

export function spawnWorker(options: {
  gatewayUrl: string;
  token: string;
  dirs: TestComputerDirs;
  args?: string[];
  env?: Record<string, string>;
  /** Node's own options, before the entry. @default none */
  nodeOptions?: readonly string[];
  /** The worker's entry (a built one, for instance). @default src/worker/main.ts */
  entry?: string;
}): WorkerProcess {
  const argv = [
    ...(options.nodeOptions ?? []),
    options.entry ?? workerMainPath,
    ...(options.args ?? []),
  ];
  const child = spawn(process.execPath, argv, {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: options.dirs.home,
      ROOST_GATEWAY_URL: options.gatewayUrl,
      ROOST_WORKER_TOKEN: options.token,
      ROOST_WORKER_STATE_DIR: options.dirs.stateDir,
      ROOST_WORKSPACE: options.dirs.workspace,
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (data: Buffer) => (output += data.toString()));
  child.stderr?.on("data", (data: Buffer) => (output += data.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null)
      resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  return {
    child,
    output: () => output,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/**
 * Waits for the worker's hello, and on failure says why: whether the process exited, and what
 * it printed.
 */
export async function waitForWorkerProcess(
  gateway: Gateway,
  computerId: string,
  worker: WorkerProcess,
  timeoutMs = 30_000,
): Promise<void> {
  try {
    await gateway.waitForWorker(computerId, timeoutMs);
  } catch (error) {
    const state =
      worker.child.exitCode !== null || worker.child.signalCode !== null
        ? `exited (${worker.child.exitCode ?? worker.child.signalCode})`
        : "still running";
    throw new Error(
      `${(error as Error).message}; the worker process is ${state}; its output:\n${worker.output()}`,
      { cause: error },
    );
  }
}

/** Polls a condition until it holds; fails with `message` after `timeoutMs`. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const giveUpAt = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > giveUpAt)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${options.message ?? "a condition"}`,
      );
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 20));
  }
}

/** A raw protocol client, for what a well-behaved worker never does (`ws://…` or `ws+unix://…`). */
export async function rawClient(url: string, token: string | undefined) {
  const ws = new WebSocket(
    url,
    token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
  );
  const received: unknown[] = [];
  ws.on("message", (data: Buffer) => received.push(JSON.parse(data.toString())));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on("close", (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const opened = await new Promise<{ ok: true } | { ok: false; status: number; body: string }>(
    (resolve) => {
      ws.once("open", () => resolve({ ok: true }));
      ws.once("unexpected-response", (_request, response) => {
        let body = "";
        response.on("data", (data: Buffer) => (body += data.toString()));
        response.on("end", () => resolve({ ok: false, status: response.statusCode ?? 0, body }));
      });
      ws.once("error", () => undefined);
    },
  );
  const hello = (overrides: Record<string, unknown> = {}) =>
    ws.send(
      JSON.stringify({
        type: "hello",
        workerId: "wrk_raw",
        bootId: "boot_raw",
        protocol: PROTOCOL_VERSION,
        capabilities: [],
        inflight: [],
        ...overrides,
      }),
    );
  return { ws, received, closed, opened, hello };
}
