/**
 * Helpers for the local provider's integration tests and its bench: whether this host can run
 * them, a small real gateway the real worker dials (on each computer's unix socket), plain TCP
 * listeners, and a test-made "outside host" in its own network namespace. Not used by
 * production code.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, readlink, rm } from "node:fs/promises";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { WebSocketServer, type WebSocket } from "ws";
import { MAX_FRAME_BYTES, PROTOCOL_VERSION } from "../../../protocol/index.ts";
import { forwarderPorts } from "../sandbox.ts";
import { findExecutable, runChecked, runCommand } from "../system.ts";

/** Why the namespace tests cannot run here, or undefined when they can. */
export async function isolationUnavailableReason(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return "not running as root";
  // `ip` only for the tests' own outside hosts; the provider itself does not use it.
  for (const tool of ["bwrap", "nsenter", "setpriv", "socat", "ip"]) {
    if ((await findExecutable(tool, undefined)) === undefined) return `${tool} is not installed`;
  }
  return undefined;
}

/**
 * Skips a namespace test file with a printed reason, except in CI (CI=true), where a host that
 * cannot isolate is a failure, not a skip.
 */
export async function skipReason(file: string): Promise<string | undefined> {
  const reason = await isolationUnavailableReason();
  if (reason === undefined) return undefined;
  if (process.env.CI === "true") return undefined;
  console.warn(
    `${file}: skipped: ${reason} (the local provider needs root, bubblewrap, util-linux and socat)`,
  );
  return reason;
}

export async function makeTempDir(
  prefix = "roost-local-",
): Promise<{ path: string; remove: () => Promise<void> }> {
  const folder = await mkdtemp(path.join(tmpdir(), prefix));
  return { path: folder, remove: () => rm(folder, { recursive: true, force: true }) };
}

export function uniqueId(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

/** A TCP listener that answers every connection with `<name> <remote address>\n`. */
export interface BannerServer {
  port: number;
  /** Remote addresses of the connections so far. */
  peers: string[];
  close(): Promise<void>;
}

export async function startBannerServer(name: string, host: string): Promise<BannerServer> {
  const peers: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    peers.push(socket.remoteAddress ?? "?");
    socket.end(`${name} ${socket.remoteAddress ?? "?"}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    peers,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A bash snippet that connects to host:port and prints what it reads, or fails within seconds. */
export function connectCommand(host: string, port: number, seconds = 3): string {
  return `timeout ${seconds} bash -c 'exec 3<>/dev/tcp/${host}/${port} && head -c 200 <&3'`;
}

export interface ToolResult {
  ok: boolean;
  output?: unknown;
  error?: { code: string; message: string };
}

/**
 * A minimal gateway: welcomes workers, answers pings, sends calls and collects results. Local
 * computers reach it on their own unix socket (`sockets` for the provider's options).
 */
export interface TestGateway {
  /** ws://127.0.0.1:PORT/v1/gateway (the wake request's URL; local workers use their socket). */
  url: string;
  port: number;
  /** The provider's `sockets.gateway`: serves a computer's gateway socket. */
  listenComputer(computerId: string, socketPath: string): Promise<{ close(): Promise<void> }>;
  /** How many workers have said hello so far (a restarted worker says hello again). */
  readonly hellos: number;
  waitForHello(count: number, timeoutMs?: number): Promise<void>;
  call(tool: string, input: unknown, timeoutMs?: number): Promise<ToolResult>;
  close(): Promise<void>;
}

export async function startTestGateway(): Promise<TestGateway> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/v1/gateway" });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const unixServers = new Set<HttpServer>();
  let hellos = 0;
  let current: WebSocket | undefined;
  const waiters: Array<() => void> = [];
  const pending = new Map<string, (result: ToolResult) => void>();
  server.on("connection", (socket) => {
    socket.on("error", () => undefined);
    socket.on("message", (data: Buffer) => {
      const frame = JSON.parse(data.toString("utf8")) as {
        type: string;
        callId?: string;
        nonce?: string;
      } & ToolResult;
      switch (frame.type) {
        case "hello":
          hellos += 1;
          current = socket;
          socket.send(
            JSON.stringify({
              type: "welcome",
              computerId: "test-computer",
              protocol: PROTOCOL_VERSION,
              heartbeatMs: 60_000,
              maxFrameBytes: MAX_FRAME_BYTES,
            }),
          );
          for (const wake of waiters.splice(0)) wake();
          break;
        case "ping":
          socket.send(JSON.stringify({ type: "pong", nonce: frame.nonce }));
          break;
        case "result": {
          socket.send(JSON.stringify({ type: "ack", callId: frame.callId }));
          const resolve = pending.get(frame.callId ?? "");
          pending.delete(frame.callId ?? "");
          resolve?.({ ok: frame.ok, output: frame.output, error: frame.error });
          break;
        }
        default:
          break;
      }
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}/v1/gateway`,
    port,
    async listenComputer(_computerId, socketPath) {
      const http: HttpServer = createHttpServer();
      const accepted = new Set<Socket>();
      http.on("connection", (socket: Socket) => {
        accepted.add(socket);
        socket.on("close", () => accepted.delete(socket));
      });
      http.on("upgrade", (request, socket, head) => {
        server.handleUpgrade(request, socket, head, (ws) => server.emit("connection", ws, request));
      });
      await rm(socketPath, { force: true });
      await new Promise<void>((resolve) => http.listen(socketPath, resolve));
      unixServers.add(http);
      return {
        close: () =>
          new Promise<void>((resolve) => {
            unixServers.delete(http);
            for (const socket of accepted) socket.destroy();
            http.close(() => resolve());
          }),
      };
    },
    get hellos() {
      return hellos;
    },
    async waitForHello(count, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (hellos < count) {
        if (Date.now() > deadline)
          throw new Error(`no worker hello #${count} within ${timeoutMs} ms (got ${hellos})`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    call(tool, input, timeoutMs = 30_000) {
      const socket = current;
      if (socket === undefined) return Promise.reject(new Error("no worker connected"));
      const callId = randomBytes(8).toString("hex");
      return new Promise<ToolResult>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(callId);
          reject(new Error(`call ${tool} got no result within ${timeoutMs + 5000} ms`));
        }, timeoutMs + 5000);
        pending.set(callId, (result) => {
          clearTimeout(timer);
          resolve(result);
        });
        socket.send(JSON.stringify({ type: "call", callId, tool, input, timeoutMs }));
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        for (const http of unixServers) http.close();
        server.close(() => resolve());
      }),
  };
}

/** The `stdout` of a completed shell tool result (throws on anything else). */
export function shellStdout(result: ToolResult): string {
  const output = result.output as
    { kind?: string; stdout?: string; stderr?: string; exitCode?: number | null } | undefined;
  if (!result.ok || output?.kind !== "completed") {
    throw new Error(`shell call failed: ${JSON.stringify(result)}`);
  }
  return output.stdout ?? "";
}

/**
 * A stand-in for an internet host: a network namespace of its own with a veth to the host and
 * servers in it, reachable from the host (so a computer that fails to reach it is blocked by the
 * sandbox, not by the test). Addresses come from 198.18.0.0/15 (RFC 2544, benchmarking).
 */
export interface OutsideHost {
  address: string;
  /** The default server's port (8080), when no script was given. */
  port: number;
  close(): Promise<void>;
}

/**
 * `script`: Node source run inside the namespace with `process.argv[1]` = the host's address
 * and `process.argv.slice(2)` = what `args(address)` returns (e.g. files made for that address);
 * it prints a line once it listens. By default, a TCP server on 8080 that answers every
 * connection with `outside\n`.
 */
export async function startOutsideHost(
  options: { script?: string; args?: (address: string) => Promise<string[]> } = {},
): Promise<OutsideHost> {
  const ip = (await findExecutable("ip", undefined))!;
  const tag = randomBytes(3).toString("hex");
  const netns = `roosttest-${tag}`;
  const hostSide = `rto-${tag}`;
  const block = (randomBytes(2).readUInt16BE(0) % 16_384) * 4; // a /30 in 198.18.0.0/16
  const prefix = `198.18.${Math.floor(block / 256)}`;
  const hostAddress = `${prefix}.${(block % 256) + 1}`;
  const address = `${prefix}.${(block % 256) + 2}`;
  const port = 8080;
  let listener: ChildProcess | undefined;
  const close = async () => {
    listener?.kill("SIGKILL");
    await runCommand(ip, ["link", "del", hostSide]);
    await runCommand(ip, ["netns", "del", netns]);
  };
  try {
    await runChecked(ip, ["netns", "add", netns]);
    await runChecked(ip, [
      "link",
      "add",
      hostSide,
      "type",
      "veth",
      "peer",
      "name",
      "eth0",
      "netns",
      netns,
    ]);
    await runChecked(ip, ["addr", "add", `${hostAddress}/30`, "dev", hostSide]);
    await runChecked(ip, ["link", "set", hostSide, "up"]);
    await runChecked(ip, ["-n", netns, "addr", "add", `${address}/30`, "dev", "eth0"]);
    await runChecked(ip, ["-n", netns, "link", "set", "eth0", "up"]);
    const source =
      options.script ??
      `require("node:net").createServer((s) => s.end("outside\\n")).listen(${port}, "0.0.0.0", () => console.log("ready"));`;
    const args = (await options.args?.(address)) ?? [];
    listener = spawn(
      ip,
      ["netns", "exec", netns, process.execPath, "-e", source, address, ...args],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const started = listener;
    await new Promise<void>((resolve, reject) => {
      started.stdout!.once("data", () => resolve());
      started.once("exit", (code) => reject(new Error(`outside host listener exited (${code})`)));
    });
    return { address, port, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Node source for `node -e SCRIPT COUNT SECONDS` inside a computer: opens COUNT connections to
 * each way out of the sandbox (the HTTP forwarder, both egress sockets directly, the gateway
 * socket), sends half a request line (or half a SOCKS5 greeting) on each, holds them for SECONDS,
 * then prints how many opened. The flood of the hardening issue (§1.4).
 */
export const floodScript = `
const net = require("node:net");
const count = Number(process.argv[1]);
const targets = [
  { port: ${forwarderPorts.http}, host: "127.0.0.1", data: "GET http://x.test/ HT" },
  { path: "/run/roost/egress-http.sock", data: "CONNECT x.test:443 HT" },
  { path: "/run/roost/egress-socks.sock", data: Buffer.from([5, 1]) },
  { path: "/run/roost/gateway.sock", data: "GET /v1/gateway HT" },
];
let opened = 0;
for (const target of targets) for (let i = 0; i < count; i++) {
  const socket = net.connect(target.path === undefined ? { port: target.port, host: target.host } : { path: target.path });
  socket.on("connect", () => { opened++; socket.write(target.data); });
  socket.on("error", () => undefined);
}
setTimeout(() => { console.log("opened " + opened); process.exit(0); }, Number(process.argv[2]) * 1000);
`;

export {
  asUnprivileged,
  nodeForUnprivileged,
  otherUid,
  startUnprivilegedHarness,
  unprivilegedSkipReason,
  unprivilegedUid,
  type UnprivilegedHarness,
} from "./unprivileged.ts";

/**
 * Host pids of the processes of this provider's spare sandboxes: in a mount namespace other than
 * the host's, with /run/roost-spare bound from below `dir`. (Never by a plain match on mountinfo:
 * while a claim's binds are mounted, every host process lists them.)
 */
export async function spareSandboxPids(dir: string): Promise<number[]> {
  const hostNamespace = await readlink("/proc/self/ns/mnt");
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const namespace = await readlink(`/proc/${name}/ns/mnt`).catch(() => hostNamespace);
    if (namespace === hostNamespace) continue;
    const mounts = await readFile(`/proc/${name}/mountinfo`, "utf8").catch(() => "");
    const isSpare = mounts.split("\n").some((line) => {
      const fields = line.split(" ");
      return fields[4] === "/run/roost-spare" && fields[3]!.startsWith(`${dir}/`);
    });
    if (isSpare) found.push(Number(name));
  }
  return found;
}
