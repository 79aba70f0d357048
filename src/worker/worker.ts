/**
 * The worker: dials out to the gateway, says hello, runs the calls it receives, and reconnects
 * when the connection ends. Runs inside the computer; imports nothing of ours but protocol/.
 *
 * Invariants:
 *   K1 Only `hello` is sent before `welcome`; calls are accepted only after it.
 *   K2 One connection at a time: a new dial starts only after the previous socket closed.
 *   K3 A connection that hears nothing (frames or pings) for 2.5 × the gateway's heartbeat is
 *      dropped and redialled, so a half-open TCP connection cannot hold calls hostage.
 *   K4 Reconnect delays grow until a connection stays up `minUptimeMs` (backoff.ts).
 *   K5 The token is read anew (from `tokenFile`, when set) for every dial, so a token rotated on
 *      the server and written to the file is picked up after the next refusal, without a restart.
 *   K6 Tunnels (port previews, tunnels.ts) live and die with one connection: they are ended
 *      when it closes and are never carried over to the next.
 */
import type { Socket } from "node:net";
import { promises as fs, readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import {
  closeCodes,
  encodeFrame,
  fileOperationNames,
  isFileOperationName,
  isToolName,
  MAX_FRAME_BYTES,
  parseFrame,
  mcpOperationNames,
  portOperationNames,
  screenOperationNames,
  PROTOCOL_VERSION,
  skillOperationNames,
  toolNames,
  truncateReason,
  tunnelCapability,
} from "../protocol/index.ts";
import type { GatewayFrame, WorkerFrame } from "../protocol/index.ts";
import { createBackoff } from "./backoff.ts";
import type { BackoffOptions } from "./backoff.ts";
import { createCallRunner } from "./calls.ts";
import type { WorkerConfig } from "./config.ts";
import { openDoneLog } from "./done-log.ts";
import { createFileOperations } from "./file-operations.ts";
import { isErrno, makeDirectories, writeFileAtomic } from "./fs-atomic.ts";
import { pruneJobs } from "./jobs.ts";
import { randomBytes } from "./light-crypto.ts";
import { connectThroughProxy, describeProxy, secureOverTunnel } from "./proxy.ts";
import { GatewaySocket } from "./gateway-socket.ts";
import { createSkillOperations } from "./skill-operations.ts";
import { createMcpServers } from "./mcp-servers.ts";
import type { ShellOptions } from "./shell-tool.ts";
import type { WorkerStats } from "./status-server.ts";
import { createTunnelEndpoint } from "./tunnels.ts";
import { createScreenManager, type ScreenManagerOptions } from "./screens.ts";
import { createWarmShell } from "./warm-shell.ts";
import type { TunnelEndpointOptions } from "./tunnels.ts";

export interface WorkerOptions extends WorkerConfig {
  /** Environment for the commands the worker runs; never the worker's own secrets. */
  commandEnv: Readonly<Record<string, string>>;
  /** @default writes to stderr */
  log?: (line: string) => void;
  backoff?: BackoffOptions;
  /** Time allowed from socket open to `welcome`. @default 10_000 */
  helloTimeoutMs?: number;
  /** @default 5000 */
  progressIntervalMs?: number;
  /** Done records and finished jobs older than this are deleted at start-up and daily. @default 7 days */
  retentionMs?: number;
  /** @default true */
  fsync?: boolean;
  shell?: ShellOptions;
  /** No `shell` call for this long retires the wrapper started ahead (warm-shell.ts). @default 30 s */
  warmShellIdleMs?: number;
  /** The computer user's home: skills are copied to `<home>/skills`. @default commandEnv.HOME, else the process's home */
  home?: string;
  /** Limits of the port previews' tunnels. */
  tunnels?: Omit<TunnelEndpointOptions, "send" | "log">;
  /** Called after every `welcome` (tests and supervisors use it to know the worker is connected). */
  onConnected?: (computerId: string) => void;
  /**
   * An HTTP proxy to reach the gateway through, with CONNECT (proxy.ts; `roost worker` takes it
   * from HTTPS_PROXY / HTTP_PROXY). Never used for a unix-socket gateway. @default none
   */
  proxy?: URL;
  /** The browser's screens (screens.ts); home, workspace and env come from the worker's. */
  screens?: Partial<Omit<ScreenManagerOptions, "home" | "workspace" | "env">>;
}

export interface Worker {
  /** Stable across restarts (kept in `<stateDir>/worker-id`). */
  readonly workerId: string;
  /** New for this process. */
  readonly bootId: string;
  isConnected(): boolean;
  /** Connection and call counts, for the status endpoints (status-server.ts). */
  stats(): WorkerStats;
  close(): Promise<void>;
}

const defaultRetentionMs = 7 * 24 * 60 * 60 * 1000;

export async function startWorker(options: WorkerOptions): Promise<Worker> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const durable = options.fsync ?? true;
  const retentionMs = options.retentionMs ?? defaultRetentionMs;
  await makeDirectories(options.stateDir);
  await makeDirectories(options.workspace);
  const workerId = await loadWorkerId(options.stateDir, durable);
  const bootId = `boot_${randomBytes(9).toString("base64url")}`;
  const doneLog = await openDoneLog(options.stateDir, { fsync: durable });

  const prune = async () => {
    try {
      await doneLog.prune(retentionMs);
      await pruneJobs(options.stateDir, retentionMs, Date.now());
    } catch (error) {
      log(`worker: pruning old records failed: ${(error as Error).message}`);
    }
  };
  const pruneTimer = setInterval(() => void prune(), 24 * 60 * 60 * 1000);
  pruneTimer.unref();

  const files = createFileOperations({
    workspace: options.workspace,
    stateDir: options.stateDir,
    fsync: durable,
    log,
  });
  const sweepFiles = () =>
    files
      .sweep()
      .catch((error: unknown) =>
        log(`worker: cleaning up unfinished uploads and deletes failed: ${String(error)}`),
      );
  // Abandoned uploads expire after an hour (fileLimits.uploadTtlMs); look for them as often.
  const sweepTimer = setInterval(() => void sweepFiles(), 60 * 60 * 1000);
  sweepTimer.unref();

  const skills = createSkillOperations({
    home: options.home ?? options.commandEnv.HOME ?? homedir(),
    fsync: durable,
    log,
  });

  // Command MCP servers run while this worker does (the computer is awake); MCPW2.
  const mcp = createMcpServers({
    workspace: options.workspace,
    commandEnv: options.commandEnv,
    jobPrelude: options.jobPrelude,
    log,
  });

  let socket: GatewaySocket | undefined;
  let welcomed = false;
  let closing = false;
  let heartbeatMs = 0;
  let maxFrameBytes = MAX_FRAME_BYTES;
  let lastHeardAt = 0;
  let heardAny = false;
  let connectAttempts = 0;
  let connections = 0;
  const callCounts = new Map<string, { tool: string; outcome: "ok" | "error"; count: number }>();
  let reconnectTimer: NodeJS.Timeout | undefined;
  let livenessTimer: NodeJS.Timeout | undefined;
  let helloTimer: NodeJS.Timeout | undefined;
  const backoff = createBackoff(options.backoff);

  const screens = createScreenManager({
    max: options.screensMax,
    ...options.screens,
    home: options.home ?? options.commandEnv.HOME ?? homedir(),
    workspace: options.workspace,
    env: options.commandEnv,
    jobPrelude: options.jobPrelude,
    log,
  });

  const warmShell =
    options.warmShell === false
      ? undefined
      : createWarmShell({
          env: options.commandEnv,
          prelude: options.jobPrelude,
          ...(options.warmShellIdleMs === undefined ? {} : { idleMs: options.warmShellIdleMs }),
        });

  const sendNow = (ws: GatewaySocket, frame: WorkerFrame) => ws.send(encodeFrame(frame));
  const runner = createCallRunner({
    workspace: options.workspace,
    stateDir: options.stateDir,
    doneLog,
    commandEnv: options.commandEnv,
    jobPrelude: options.jobPrelude,
    warmShell,
    fsync: durable,
    progressIntervalMs: options.progressIntervalMs ?? 5000,
    maxFrameBytes: () => maxFrameBytes,
    files,
    skills,
    screens,
    mcp,
    log,
    onAnswered(tool, ok) {
      // Only names the worker knows become labels: a gateway cannot grow the metrics at will.
      const name = isToolName(tool) || isFileOperationName(tool) ? tool : "other";
      const outcome = ok ? "ok" : "error";
      const key = `${name} ${outcome}`;
      const entry = callCounts.get(key) ?? { tool: name, outcome, count: 0 };
      entry.count += 1;
      callCounts.set(key, entry);
    },
    ...(options.shell === undefined ? {} : { shell: options.shell }),
    send(frame) {
      if (socket === undefined || !welcomed || socket.readyState !== GatewaySocket.OPEN)
        return false; // K1
      sendNow(socket, frame);
      return true;
    },
  });
  await runner.recoverUnfinished();
  const tunnels = createTunnelEndpoint({
    ...options.tunnels,
    log,
    send(frame) {
      if (socket === undefined || !welcomed || socket.readyState !== GatewaySocket.OPEN)
        return false; // K1
      sendNow(socket, frame);
      return true;
    },
  });

  const readToken = (): string | undefined => {
    if (options.tokenFile === undefined) return options.token;
    try {
      return readFileSync(options.tokenFile, "utf8").trim();
    } catch (error) {
      log(`worker: cannot read the token file ${options.tokenFile}: ${(error as Error).message}`);
      return undefined;
    }
  };

  const scheduleReconnect = () => {
    if (closing) return;
    const delayMs = backoff.nextDelayMs(); // K4
    log(`worker: reconnecting in ${delayMs} ms (attempt ${backoff.attempt})`);
    reconnectTimer = setTimeout(dial, delayMs);
  };

  function dial(): void {
    reconnectTimer = undefined;
    if (closing) return;
    connectAttempts += 1;
    const token = readToken(); // K5
    if (token === undefined || token === "") {
      scheduleReconnect();
      return;
    }
    const proxy = options.proxy;
    const gateway = new URL(options.gatewayUrl);
    if (proxy === undefined || (gateway.protocol !== "ws:" && gateway.protocol !== "wss:")) {
      open(token, undefined);
      return;
    }
    const host = gateway.hostname.replace(/^\[(.*)\]$/, "$1");
    const port = Number(gateway.port || (gateway.protocol === "wss:" ? 443 : 80));
    connectThroughProxy(
      proxy,
      { host, port },
      { timeoutMs: options.helloTimeoutMs ?? 10_000 },
    ).then(
      (tunnel) => {
        if (closing) {
          tunnel.destroy();
          return;
        }
        open(token, gateway.protocol === "wss:" ? secureOverTunnel(tunnel, host) : tunnel);
      },
      (error: unknown) => {
        log(
          `worker: cannot reach the gateway through the proxy ${describeProxy(proxy)}: ${(error as Error).message}`,
        );
        scheduleReconnect();
      },
    );
  }

  /** `tunnel`: a connection through the proxy, already open to the gateway's host. */
  function open(token: string, tunnel: Socket | undefined): void {
    let ws: GatewaySocket;
    try {
      ws = new GatewaySocket(options.gatewayUrl, {
        headers: { authorization: `Bearer ${token}` },
        maxPayload: MAX_FRAME_BYTES,
        handshakeTimeoutMs: options.helloTimeoutMs ?? 10_000,
        // The tunnel comes paused (proxy.ts); the gateway never speaks first, so nothing is lost.
        ...(tunnel === undefined ? {} : { connection: tunnel }),
      });
    } catch (error) {
      log(`worker: cannot connect to ${options.gatewayUrl}: ${(error as Error).message}`);
      scheduleReconnect();
      return;
    }
    socket = ws;
    welcomed = false;

    ws.on("open", () => {
      lastHeardAt = Date.now();
      sendNow(ws, {
        type: "hello",
        workerId,
        bootId,
        protocol: PROTOCOL_VERSION,
        capabilities: [
          ...toolNames,
          ...fileOperationNames,
          ...skillOperationNames,
          ...portOperationNames,
          ...screenOperationNames,
          tunnelCapability,
          ...mcpOperationNames,
        ],
        inflight: runner.inflight(),
      });
      helloTimer = setTimeout(() => {
        log("worker: no welcome from the gateway in time; reconnecting");
        ws.terminate();
      }, options.helloTimeoutMs ?? 10_000);
    });

    ws.on("message", (data, isBinary) => {
      lastHeardAt = Date.now();
      heardAny = true;
      if (isBinary) {
        ws.close(closeCodes.protocolError, "binary frames are not part of the protocol");
        return;
      }
      const parsed = parseFrame(data.toString("utf8"), "gateway", { maxBytes: MAX_FRAME_BYTES });
      if (!parsed.ok) {
        log(`worker: closing the connection: ${parsed.error.message}`);
        ws.close(closeCodes.protocolError, truncateReason(parsed.error.message));
        return;
      }
      handleFrame(ws, parsed.frame);
    });

    ws.on("error", (error) => {
      const hint = !/\b401\b/.test(error.message)
        ? ""
        : options.tokenFile === undefined
          ? " (the gateway refused the token: it may have expired, been rotated or revoked; restart the worker with the current token, or use a token file)"
          : ` (the gateway refused the token: it may have been rotated or revoked; ${options.tokenFile} is read again before the next attempt)`; // K5
      log(`worker: connection error: ${error.message}${hint}`);
    });

    ws.on("close", (code, reason) => {
      clearTimeout(helloTimer);
      clearInterval(livenessTimer);
      if (socket === ws) socket = undefined;
      tunnels.closeAll(); // K6
      const wasWelcomed = welcomed;
      welcomed = false;
      if (wasWelcomed || code !== 1006)
        log(`worker: disconnected (${code}${reason.length > 0 ? ` ${reason.toString()}` : ""})`);
      scheduleReconnect(); // K2: the next dial starts only now
    });
  }

  function handleFrame(ws: GatewaySocket, frame: GatewayFrame): void {
    if (!welcomed && frame.type !== "welcome" && frame.type !== "ping") {
      ws.close(closeCodes.protocolError, `expected welcome, got ${frame.type}`); // K1
      return;
    }
    switch (frame.type) {
      case "welcome": {
        if (welcomed) {
          ws.close(closeCodes.protocolError, "a second welcome");
          return;
        }
        clearTimeout(helloTimer);
        welcomed = true;
        connections += 1;
        heartbeatMs = frame.heartbeatMs;
        maxFrameBytes = Math.min(MAX_FRAME_BYTES, frame.maxFrameBytes);
        backoff.connected();
        livenessTimer = setInterval(
          () => {
            if (Date.now() - lastHeardAt > heartbeatMs * 2.5) {
              log(
                `worker: nothing heard from the gateway for ${Date.now() - lastHeardAt} ms; reconnecting`,
              );
              ws.terminate(); // K3
            }
          },
          Math.max(50, Math.floor(heartbeatMs / 2)),
        );
        log(
          `worker: connected to ${options.gatewayUrl} for computer ${frame.computerId} (worker ${workerId})`,
        );
        runner.resendUnacked();
        options.onConnected?.(frame.computerId);
        return;
      }
      case "call":
        runner.handleCall(frame);
        return;
      case "ack":
        runner.handleAck(frame.callId);
        return;
      case "cancel":
        runner.handleCancel(frame.callId);
        return;
      case "ping":
        sendNow(
          ws,
          frame.nonce === undefined ? { type: "pong" } : { type: "pong", nonce: frame.nonce },
        );
        return;
      case "pong":
        return;
      case "tunnel_open":
        tunnels.handleOpen(frame);
        return;
      case "tunnel_data":
      case "tunnel_credit":
      case "tunnel_end":
      case "tunnel_close":
        tunnels.handleFrame(frame);
        return;
      default:
        assertNever(frame);
    }
  }

  dial();
  // Housekeeping once the dial is under way: neither is needed before a call (the timers above
  // run them at any time), and both were ~10 ms of a wake's start (decision 0021, seventh pass).
  void prune().then(sweepFiles);

  return {
    workerId,
    bootId,
    isConnected: () => welcomed && socket?.readyState === GatewaySocket.OPEN,
    stats: () => ({
      connected: welcomed && socket?.readyState === GatewaySocket.OPEN,
      lastHeardAt: heardAny ? lastHeardAt : undefined,
      connectAttempts,
      connections,
      calls: [...callCounts.values()].map((entry) => ({ ...entry })),
    }),
    async close() {
      if (closing) return;
      closing = true;
      clearTimeout(reconnectTimer);
      clearInterval(pruneTimer);
      clearInterval(sweepTimer);
      runner.close();
      warmShell?.close();
      tunnels.closeAll();
      await screens.close(); // SCR4
      await mcp.close();
      const ws = socket;
      if (ws !== undefined && ws.readyState !== GatewaySocket.CLOSED) {
        const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
        if (ws.readyState === GatewaySocket.CONNECTING) ws.terminate();
        else ws.close(closeCodes.goingAway, "worker shutting down");
        const forced = setTimeout(() => ws.terminate(), 2000);
        await closed;
        clearTimeout(forced);
      }
    },
  };
}

async function loadWorkerId(stateDir: string, durable: boolean): Promise<string> {
  const file = path.join(stateDir, "worker-id");
  try {
    const existing = (await fs.readFile(file, "utf8")).trim();
    if (existing !== "") return existing;
  } catch (error) {
    if (!isErrno(error, "ENOENT")) throw error;
  }
  const workerId = `wrk_${randomBytes(12).toString("base64url")}`;
  await writeFileAtomic(file, `${workerId}\n`, durable);
  return workerId;
}

function assertNever(value: never): never {
  throw new Error(`unexpected frame ${JSON.stringify(value)}`);
}
