/**
 * The gateway: the server end of the worker protocol (docs/worker-protocol.md). Workers dial out
 * to it over WebSocket: on the platform's HTTP server (self-hosted and `process` workers), or on
 * a unix socket of their own computer (`listenComputer`; the local provider mounts it into the
 * sandbox). The loop sends calls through it.
 *
 * Invariants:
 *   G1 A worker only ever receives calls for its own computer: a connection's computer id comes
 *      from its token (verifyToken), never from anything the worker sends.
 *   G2 A malformed, oversize, binary or out-of-sequence frame closes only the connection it
 *      arrived on, with a close code and reason; other connections and pending calls of other
 *      computers are untouched.
 *   G3 A pending call is sent, with the same call id, to every new connection of its computer
 *      until its result arrives; the worker's done-log makes the repeats safe.
 *   G4 One connection per computer. A hello from the same worker (same worker id: a restart or a
 *      reconnect) replaces the previous connection at once; a hello from another worker id
 *      replaces it only if the previous one does not answer a ping within `probeTimeoutMs`, and
 *      is refused (close code `inUse`) otherwise, so a stolen token cannot displace a live worker.
 *   G5 Every pending call ends: with a result, or a rejection when its deadline passes, when no
 *      worker is connected for `workerWaitMs`, on disconnect(), close() or its abort signal.
 *   G6 Every result is acked, even for an unknown call id, so the worker can drop its copy.
 *   G7 Nothing is read from a worker before its token is verified: authentication happens on the
 *      HTTP upgrade, before a WebSocket exists.
 *   G8 A connection that arrives on computer A's socket is computer A's: a token of any other
 *      computer is refused there. A token whose computer connects by socket (`boundToSocket`)
 *      is refused on the shared HTTP server.
 *   G9 What a computer can reach of the gateway is bounded: at most `maxConnectionsPerComputer`
 *      connections on its socket (more are closed at once, and logged), and a request that does
 *      not finish its headers within `headersTimeoutMs` is closed (and logged).
 *   G10 Tunnels (the port previews, tunnels.ts GT1–GT5) are opened only on a computer's current
 *      connection, to a worker whose hello offers them, and end with the connection they ride.
 */
import { rm } from "node:fs/promises";
import { createServer, STATUS_CODES, type IncomingMessage, type Server } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type WebSocket from "ws";
import { InvalidRequestError, RoostError } from "../errors/index.ts";
import { createThrottledWarning, silentLogger, type Logger } from "../log/index.ts";
import {
  callFrameSchema,
  closeCodes,
  encodeFrame,
  frameBytes,
  GATEWAY_PATH,
  isToolName,
  MAX_FRAME_BYTES,
  parseFrame,
  PROTOCOL_VERSION,
  toolOutputSchemas,
  truncateReason,
  tunnelCapability,
} from "../protocol/index.ts";
import type {
  ChunkFrame,
  GatewayFrame,
  HelloFrame,
  ResultFrame,
  ToolError,
  ToolInput,
  ToolName,
  ToolOutput,
} from "../protocol/index.ts";
import { createTunnelHub } from "./tunnels.ts";
import type { TunnelEvent, TunnelLink, TunnelOptions, TunnelStream } from "./tunnels.ts";

/** Who a worker token belongs to. */
export interface TokenIdentity {
  computerId: string;
  /** The computer's worker connects through its own socket only (G8): refused on the HTTP server. */
  boundToSocket?: boolean;
}

export interface GatewayOptions {
  /** The platform's HTTP server; the gateway handles its `upgrade` requests for `path`. */
  server: Server;
  /** Owned by the control plane: maps a worker token to its computer, or undefined when invalid or expired. */
  verifyToken(token: string): Promise<TokenIdentity | undefined>;
  /** @default GATEWAY_PATH ("/v1/gateway") */
  path?: string;
  /** How often the gateway pings each worker (sent to the worker in `welcome`). @default 10_000 */
  heartbeatMs?: number;
  /** A connection not heard from for this long is closed. @default 3 × heartbeatMs */
  heartbeatTimeoutMs?: number;
  /** Time from the upgrade to the worker's hello. @default 10_000 */
  helloTimeoutMs?: number;
  /** @default MAX_FRAME_BYTES (16 MiB) */
  maxFrameBytes?: number;
  /** How long a call waits for a (re)connected worker before failing as unavailable. @default 60_000 */
  workerWaitMs?: number;
  /** Extra time beyond a call's `timeoutMs` before the gateway gives up on its result. @default 30_000 */
  resultGraceMs?: number;
  /** How long a live connection has to answer the ping that decides a hello from another worker id (G4). @default 2_000 */
  probeTimeoutMs?: number;
  /** Connections at once on one computer's socket (G9). @default 8 */
  maxConnectionsPerComputer?: number;
  /** Time to receive an upgrade request's headers on a computer's socket (G9). @default 5_000 */
  headersTimeoutMs?: number;
  /** Limits of the tunnels to ports inside computers (G10, tunnels.ts). */
  tunnels?: TunnelOptions;
  onEvent?: (event: GatewayEvent) => void;
  /** @default silent */
  logger?: Logger;
  /** @default Date.now */
  now?: () => number;
}

/** A computer's own gateway socket; `close` stops it and ends the connections it accepted. */
export interface GatewayListener {
  close(): Promise<void>;
}

export type GatewayEvent =
  | { type: "upgrade_refused"; status: number; reason: string; remoteAddress: string | undefined }
  | { type: "connected"; computerId: string; worker: WorkerInfo; replaced: boolean }
  | { type: "hello_refused"; computerId: string; workerId: string; reason: string }
  | {
      type: "disconnected";
      computerId: string;
      workerId: string | undefined;
      code: number;
      reason: string;
    }
  | { type: "frame_rejected"; computerId: string; code: number; reason: string }
  | { type: "call_sent"; computerId: string; callId: string; tool: string; resend: boolean }
  | { type: "call_received"; computerId: string; callId: string }
  | { type: "call_finished"; computerId: string; callId: string; ok: boolean; durationMs: number }
  | { type: "call_failed"; computerId: string; callId: string; code: string; message: string }
  | TunnelEvent;

export interface WorkerInfo {
  workerId: string;
  bootId: string;
  protocol: number;
  capabilities: string[];
  /** Calls the worker was running when it said hello. */
  inflight: string[];
  /** Epoch ms. */
  connectedAt: number;
}

export type CallResult<O = unknown> = { ok: true; output: O } | { ok: false; error: ToolError };

export interface CallRequest<T extends string = string> {
  /** Stable across retries (derived from the journal): the same id is the same call. */
  callId: string;
  tool: T;
  input: T extends ToolName ? ToolInput<T> : unknown;
  /** The tool's time limit on the computer. */
  timeoutMs: number;
  /** The bot the call works for (browser and computer use its screen). */
  botId?: string;
}

export interface CallOptions {
  /** Streamed output as it arrives (best effort; the result holds the output too). */
  onChunk?: (chunk: { stream: ChunkFrame["stream"]; data: string }) => void;
  /** The worker's periodic "still running" for this call. */
  onProgress?: (elapsedMs: number) => void;
  /** Aborting rejects this caller with the signal's reason; the worker is told to cancel when no caller is left. */
  signal?: AbortSignal;
}

export interface Gateway {
  /**
   * Runs a tool call on the computer's worker and resolves with its result (a tool failure is a
   * result with `ok: false`). Rejects with a RoostError when there is no result: `computer_unavailable`
   * (no worker within `workerWaitMs`, or disconnected; retryable), `timeout`, or the signal's reason.
   * A call id already pending for the computer attaches to that call.
   */
  call<T extends ToolName>(
    computerId: string,
    request: CallRequest<T>,
    options?: CallOptions,
  ): Promise<CallResult<ToolOutput<T>>>;
  call(computerId: string, request: CallRequest, options?: CallOptions): Promise<CallResult>;
  /** Resolves when the computer's worker has said hello (at once if it is connected). @default timeoutMs 60_000 */
  waitForWorker(computerId: string, timeoutMs?: number, signal?: AbortSignal): Promise<WorkerInfo>;
  isConnected(computerId: string): boolean;
  /** The connected worker's hello, if any. */
  worker(computerId: string): WorkerInfo | undefined;
  /** Closes the computer's connection (at sleep) and fails its pending calls as unavailable. */
  disconnect(computerId: string, reason?: string): Promise<void>;
  /**
   * Accepts the workers of one computer on a unix socket created at `socketPath` (a stale file
   * there is replaced); every connection on it is that computer's (G8). The caller decides who
   * may open it (file owner and mode).
   */
  listenComputer(computerId: string, socketPath: string): Promise<GatewayListener>;
  /**
   * Opens a TCP connection to `port` on the computer's own loopback, made by its worker (G10), as
   * a Duplex stream. Rejects with a RoostError: `computer_unavailable` (no worker connected, or
   * one without tunnels; retryable), `rate_limited` (too many tunnels), `not_found` (nothing
   * listens on the port), `timeout`.
   */
  openTunnel(
    computerId: string,
    port: number,
    options?: { signal?: AbortSignal },
  ): Promise<TunnelStream>;
  /** Tunnels open or opening for the computer. */
  tunnelCount(computerId: string): number;
  /** Stops accepting workers, closes every connection and fails every pending call. */
  close(): Promise<void>;
}

interface Connection {
  ws: WebSocket;
  computerId: string;
  remoteAddress: string | undefined;
  /** "probing": hello received, waiting to learn whether the current connection is alive (G4). */
  state: "hello" | "probing" | "ready" | "closed";
  worker: WorkerInfo | undefined;
  lastHeardAt: number;
  helloTimer: NodeJS.Timeout | undefined;
  heartbeatTimer: NodeJS.Timeout | undefined;
  /** Called on every frame heard from this connection (a probe listens here, G4). */
  onHeard: (() => void) | undefined;
  /** What this connection's tunnels ride (G10). */
  link: TunnelLink;
}

interface Caller {
  resolve(result: CallResult): void;
  reject(error: unknown): void;
  options: CallOptions;
  onAbort: (() => void) | undefined;
}

interface PendingCall {
  computerId: string;
  callId: string;
  tool: string;
  frameText: string;
  createdAt: number;
  callers: Set<Caller>;
  sentOn: Connection | undefined;
  deadlineTimer: NodeJS.Timeout;
  waitTimer: NodeJS.Timeout | undefined;
}

interface Waiter {
  resolve(worker: WorkerInfo): void;
  reject(error: Error): void;
}

export function createGateway(options: GatewayOptions): Gateway {
  const gatewayPath = options.path ?? GATEWAY_PATH;
  const heartbeatMs = options.heartbeatMs ?? 10_000;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? heartbeatMs * 3;
  const helloTimeoutMs = options.helloTimeoutMs ?? 10_000;
  const maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  const workerWaitMs = options.workerWaitMs ?? 60_000;
  const resultGraceMs = options.resultGraceMs ?? 30_000;
  const probeTimeoutMs = options.probeTimeoutMs ?? 2_000;
  const maxConnectionsPerComputer = options.maxConnectionsPerComputer ?? 8;
  const headersTimeoutMs = options.headersTimeoutMs ?? 5_000;
  const now = options.now ?? Date.now;
  const logger = (options.logger ?? silentLogger).child({ component: "gateway" });
  const warnLimit = createThrottledWarning(
    logger,
    "a computer reached its limit of connections to its gateway socket; further ones are closed",
  );
  const warnHeaders = createThrottledWarning(
    logger,
    "a connection to a computer's gateway socket did not finish its request headers in time; closed",
  );
  // A token nobody issued, or one revoked or rotated away (a self-hosted machine's after DELETE).
  const warnRefusedToken = createThrottledWarning(
    logger,
    "refused a worker connection: its token is invalid, expired or revoked",
    1_000,
  );
  const computerListeners = new Set<GatewayListener>();
  const tunnels = createTunnelHub({ ...options.tunnels, onEvent: (event) => emit(event) });
  const emit = (event: GatewayEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // An observer's bug must not break the connection handling.
    }
  };

  // ws enforces a hard cap (closing with 1009 and no reason); parseFrame enforces the real limit
  // below it, with a reason (G2).
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: maxFrameBytes * 2,
    perMessageDeflate: false,
  });
  const connections = new Map<string, Connection>();
  const allConnections = new Set<Connection>();
  const pending = new Map<string, Map<string, PendingCall>>();
  const waiters = new Map<string, Set<Waiter>>();
  let closed = false;

  const unavailable = (computerId: string, message: string) =>
    new RoostError("computer_unavailable", message, {
      details: { computerId },
      retryAfterMs: 1000,
    });

  // ── upgrade and authentication ────────────────────────────────────────────────────────────────

  const isGatewayPath = (request: IncomingMessage): boolean => {
    try {
      return new URL(request.url ?? "/", "http://gateway.invalid").pathname === gatewayPath;
    } catch {
      return false; // not a path we could own; an exception here would take the HTTP server down
    }
  };

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!isGatewayPath(request)) return; // another handler's path
    socket.on("error", () => undefined);
    void authenticate(request, socket, head, undefined);
  };

  /** `boundTo`: the computer whose socket the request arrived on (G8); undefined on the HTTP server. */
  async function authenticate(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    boundTo: string | undefined,
  ): Promise<void> {
    const remoteAddress = request.socket.remoteAddress;
    if (closed)
      return refuse(socket, 503, "the gateway is shutting down; reconnect later", remoteAddress);
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
    const token = match?.[1];
    if (token === undefined) {
      return refuse(
        socket,
        401,
        "worker token is required (send Authorization: Bearer <token>)",
        remoteAddress,
      );
    }
    let identity: TokenIdentity | undefined;
    try {
      identity = await options.verifyToken(token); // G7
    } catch {
      return refuse(
        socket,
        503,
        "the worker token could not be checked right now; reconnect later",
        remoteAddress,
      );
    }
    if (identity === undefined) {
      return refuse(
        socket,
        401,
        "worker token is invalid or expired (tokens are rotated on every wake; restart the worker with the current one)",
        remoteAddress,
      );
    }
    if (boundTo !== undefined && identity.computerId !== boundTo) {
      logger.warn("refused a worker token of another computer on a computer's gateway socket", {
        socketOf: boundTo,
        tokenOf: identity.computerId,
      });
      return refuse(
        socket,
        403,
        `this socket belongs to computer ${boundTo}; the token is another computer's`,
        remoteAddress,
      ); // G8
    }
    if (boundTo === undefined && identity.boundToSocket === true) {
      logger.warn("refused a socket-bound worker token on the shared gateway path", {
        computerId: identity.computerId,
        remoteAddress,
      });
      return refuse(
        socket,
        403,
        `computer ${identity.computerId}'s worker connects through its own socket; its token is not accepted here`,
        remoteAddress,
      ); // G8
    }
    if (closed)
      return refuse(socket, 503, "the gateway is shutting down; reconnect later", remoteAddress);
    if (socket.destroyed) return;
    const { computerId } = identity;
    wss.handleUpgrade(request, socket, head, (ws) => accept(ws, computerId, remoteAddress)); // G1
  }

  function refuse(
    socket: Duplex,
    status: number,
    reason: string,
    remoteAddress: string | undefined,
  ): void {
    emit({ type: "upgrade_refused", status, reason, remoteAddress });
    if (status === 401) warnRefusedToken({ status, reason, remoteAddress });
    if (socket.destroyed) return;
    const body = `${reason}\n`;
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }

  // ── connections ───────────────────────────────────────────────────────────────────────────────

  function accept(ws: WebSocket, computerId: string, remoteAddress: string | undefined): void {
    const connection: Connection = {
      ws,
      computerId,
      remoteAddress,
      state: "hello",
      worker: undefined,
      lastHeardAt: now(),
      helloTimer: undefined,
      heartbeatTimer: undefined,
      onHeard: undefined,
      link: { computerId, send: (frame) => send(connection, frame) },
    };
    allConnections.add(connection);
    connection.helloTimer = setTimeout(
      () =>
        closeConnection(
          connection,
          closeCodes.helloTimeout,
          `no hello within ${helloTimeoutMs} ms`,
        ),
      helloTimeoutMs,
    );
    ws.on("message", (data, isBinary) => onMessage(connection, data, isBinary));
    ws.on("close", (code, reason) => onClose(connection, code, reason.toString()));
    ws.on("error", (error: Error & { code?: string }) => {
      // ws closes the connection itself after a protocol-level error (G2), e.g. 1009 above the
      // hard cap or 1007 for text that is not UTF-8.
      emit({
        type: "frame_rejected",
        computerId,
        code:
          error.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH"
            ? closeCodes.messageTooBig
            : closeCodes.protocolError,
        reason: error.message,
      });
    });
  }

  function closeConnection(connection: Connection, code: number, reason: string): void {
    if (connection.state === "closed") return;
    const { ws } = connection;
    ws.close(code, truncateReason(reason));
    // A peer that does not answer the close handshake is cut off.
    setTimeout(() => ws.terminate(), 2000).unref();
  }

  function refuseFrame(connection: Connection, code: number, reason: string): void {
    emit({ type: "frame_rejected", computerId: connection.computerId, code, reason });
    closeConnection(connection, code, reason); // G2: this connection only
  }

  function send(connection: Connection, frame: GatewayFrame | string): void {
    if (connection.ws.readyState !== connection.ws.OPEN) return;
    connection.ws.send(typeof frame === "string" ? frame : encodeFrame(frame));
  }

  function onMessage(connection: Connection, data: WebSocket.RawData, isBinary: boolean): void {
    if (connection.state === "closed") return;
    connection.lastHeardAt = now();
    connection.onHeard?.();
    if (isBinary)
      return refuseFrame(
        connection,
        closeCodes.protocolError,
        "binary frames are not part of the protocol",
      );
    const parsed = parseFrame(rawText(data), "worker", { maxBytes: maxFrameBytes });
    if (!parsed.ok) {
      const code =
        parsed.error.code === "too_large" ? closeCodes.messageTooBig : closeCodes.protocolError;
      return refuseFrame(connection, code, parsed.error.message); // G2
    }
    const frame = parsed.frame;
    if (connection.state === "hello") {
      if (frame.type !== "hello")
        return refuseFrame(
          connection,
          closeCodes.protocolError,
          `expected hello first, got ${frame.type}`,
        );
      return onHello(connection, frame);
    }
    if (connection.state === "probing") {
      return refuseFrame(
        connection,
        closeCodes.protocolError,
        `expected nothing before welcome, got ${frame.type}`,
      );
    }
    const computerId = connection.computerId;
    switch (frame.type) {
      case "hello":
        return refuseFrame(
          connection,
          closeCodes.protocolError,
          "hello may be sent only once per connection",
        );
      case "chunk": {
        const call = pending.get(computerId)?.get(frame.callId); // G1: only this computer's calls
        for (const caller of call?.callers ?? [])
          caller.options.onChunk?.({ stream: frame.stream, data: frame.data });
        return;
      }
      case "progress": {
        const call = pending.get(computerId)?.get(frame.callId);
        for (const caller of call?.callers ?? []) caller.options.onProgress?.(frame.elapsedMs);
        return;
      }
      case "result":
        send(connection, { type: "ack", callId: frame.callId }); // G6
        return onResult(computerId, frame);
      case "ack":
        emit({ type: "call_received", computerId, callId: frame.callId });
        return;
      case "ping":
        return send(
          connection,
          frame.nonce === undefined ? { type: "pong" } : { type: "pong", nonce: frame.nonce },
        );
      case "pong":
        return;
      case "tunnel_opened":
      case "tunnel_refused":
        return tunnels.handleOpened(connection.link, frame); // G10: this connection's tunnels
      case "tunnel_data":
      case "tunnel_credit":
      case "tunnel_end":
      case "tunnel_close":
        return tunnels.handleFrame(connection.link, frame);
      default:
        return assertNever(frame);
    }
  }

  function onHello(connection: Connection, hello: HelloFrame): void {
    if (hello.protocol !== PROTOCOL_VERSION) {
      return refuseFrame(
        connection,
        closeCodes.unsupportedProtocol,
        `protocol ${hello.protocol} is not supported (this gateway speaks ${PROTOCOL_VERSION}); update the worker`,
      );
    }
    const previous = connections.get(connection.computerId);
    if (previous === undefined || previous.worker?.workerId === hello.workerId) {
      return welcome(connection, hello); // G4: nobody else, or the same worker again
    }
    // G4: another worker id while a connection is current: it wins only if that one is gone.
    connection.state = "probing";
    const probeStartedAt = now();
    const nonce = `probe-${probeStartedAt}-${Math.random().toString(36).slice(2)}`;
    let decided = false;
    const decide = (alive: boolean): void => {
      if (decided) return;
      decided = true;
      clearTimeout(probeTimer);
      previous.onHeard = undefined;
      if (connection.state !== "probing") return; // the newcomer went away meanwhile
      if (
        !alive ||
        previous.state === "closed" ||
        connections.get(connection.computerId) !== previous
      ) {
        welcome(connection, hello);
        return;
      }
      const reason = `another worker of computer ${connection.computerId} is connected and answering; this one was refused`;
      logger.warn("refused a hello from another worker while the current one answers", {
        computerId: connection.computerId,
        workerId: hello.workerId,
        remoteAddress: connection.remoteAddress,
      });
      emit({
        type: "hello_refused",
        computerId: connection.computerId,
        workerId: hello.workerId,
        reason,
      });
      closeConnection(connection, closeCodes.inUse, reason);
    };
    previous.onHeard = () => decide(true);
    const probeTimer = setTimeout(
      () => decide(previous.lastHeardAt > probeStartedAt),
      probeTimeoutMs,
    );
    send(previous, { type: "ping", nonce });
  }

  function welcome(connection: Connection, hello: HelloFrame): void {
    clearTimeout(connection.helloTimer);
    const { computerId } = connection;
    const worker: WorkerInfo = {
      workerId: hello.workerId,
      bootId: hello.bootId,
      protocol: hello.protocol,
      capabilities: hello.capabilities,
      inflight: hello.inflight,
      connectedAt: now(),
    };
    connection.state = "ready";
    connection.worker = worker;

    const previous = connections.get(computerId);
    if (previous !== undefined) {
      detach(previous);
      closeConnection(
        previous,
        closeCodes.replaced,
        "replaced by a newer connection for this computer",
      ); // G4
    }
    connections.set(computerId, connection);
    send(connection, {
      type: "welcome",
      computerId,
      protocol: PROTOCOL_VERSION,
      heartbeatMs,
      maxFrameBytes,
    }); // G1
    connection.heartbeatTimer = setInterval(() => {
      if (now() - connection.lastHeardAt > heartbeatTimeoutMs) {
        closeConnection(
          connection,
          closeCodes.heartbeatTimeout,
          `nothing heard for ${heartbeatTimeoutMs} ms`,
        );
        connection.ws.terminate();
        return;
      }
      send(connection, { type: "ping" });
    }, heartbeatMs);
    emit({ type: "connected", computerId, worker, replaced: previous !== undefined });

    for (const waiter of waiters.get(computerId) ?? []) waiter.resolve(worker);
    waiters.delete(computerId);
    for (const call of pending.get(computerId)?.values() ?? []) dispatch(call, connection, true); // G3
  }

  /** Forgets a connection as its computer's current one; its calls wait for the next (G3). */
  function detach(connection: Connection): void {
    clearInterval(connection.heartbeatTimer);
    clearTimeout(connection.helloTimer);
    if (connections.get(connection.computerId) === connection)
      connections.delete(connection.computerId);
    for (const call of pending.get(connection.computerId)?.values() ?? []) {
      if (call.sentOn === connection) {
        call.sentOn = undefined;
        startWaiting(call);
      }
    }
  }

  function onClose(connection: Connection, code: number, reason: string): void {
    const wasCurrent = connections.get(connection.computerId) === connection;
    detach(connection);
    connection.state = "closed";
    allConnections.delete(connection);
    tunnels.linkClosed(connection.link, `the computer's worker disconnected (${code})`); // G10
    if (wasCurrent || connection.worker !== undefined) {
      emit({
        type: "disconnected",
        computerId: connection.computerId,
        workerId: connection.worker?.workerId,
        code,
        reason,
      });
    }
  }

  // ── calls ─────────────────────────────────────────────────────────────────────────────────────

  function dispatch(call: PendingCall, connection: Connection, resend: boolean): void {
    clearTimeout(call.waitTimer);
    call.waitTimer = undefined;
    call.sentOn = connection;
    send(connection, call.frameText);
    emit({
      type: "call_sent",
      computerId: call.computerId,
      callId: call.callId,
      tool: call.tool,
      resend,
    });
  }

  function startWaiting(call: PendingCall): void {
    if (call.waitTimer !== undefined) return;
    call.waitTimer = setTimeout(() => {
      fail(
        call,
        unavailable(
          call.computerId,
          `no worker connected for computer ${call.computerId} within ${workerWaitMs} ms (is it awake? the call can be retried with the same id)`,
        ),
      );
    }, workerWaitMs);
  }

  function settle(call: PendingCall): Set<Caller> {
    clearTimeout(call.deadlineTimer);
    clearTimeout(call.waitTimer);
    const calls = pending.get(call.computerId);
    if (calls?.get(call.callId) === call) {
      calls.delete(call.callId);
      if (calls.size === 0) pending.delete(call.computerId);
    }
    for (const caller of call.callers) {
      if (caller.onAbort !== undefined)
        caller.options.signal?.removeEventListener("abort", caller.onAbort);
    }
    return call.callers;
  }

  function fail(call: PendingCall, error: RoostError): void {
    emit({
      type: "call_failed",
      computerId: call.computerId,
      callId: call.callId,
      code: error.code,
      message: error.message,
    });
    for (const caller of settle(call)) caller.reject(error); // G5
  }

  function onResult(computerId: string, frame: ResultFrame): void {
    const call = pending.get(computerId)?.get(frame.callId);
    if (call === undefined) return; // answered already, or a call another gateway process sent
    let result: CallResult = frame.ok
      ? { ok: true, output: frame.output }
      : { ok: false, error: frame.error };
    if (frame.ok && isToolName(call.tool)) {
      const checked = toolOutputSchemas[call.tool].safeParse(frame.output);
      if (checked.success) {
        result = { ok: true, output: checked.data };
      } else {
        const issue = checked.error.issues[0];
        result = {
          ok: false,
          error: {
            code: "invalid_output",
            message: `the worker's ${call.tool} output does not match the protocol${issue === undefined ? "" : ` at ${issue.path.join(".")}: ${issue.message}`}`,
          },
        };
      }
    }
    emit({
      type: "call_finished",
      computerId,
      callId: frame.callId,
      ok: result.ok,
      durationMs: now() - call.createdAt,
    });
    for (const caller of settle(call)) caller.resolve(result);
  }

  function call(
    computerId: string,
    request: CallRequest,
    callOptions: CallOptions = {},
  ): Promise<CallResult> {
    return new Promise<CallResult>((resolve, rejectCall) => {
      if (closed) return rejectCall(unavailable(computerId, "the gateway is closed"));
      if (callOptions.signal?.aborted === true) return rejectCall(abortReason(callOptions.signal));
      const parsed = callFrameSchema.safeParse({ type: "call", ...request });
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return rejectCall(
          new InvalidRequestError(
            `invalid call${issue === undefined ? "" : ` at ${issue.path.join(".")}: ${issue.message}`}`,
          ),
        );
      }
      const caller: Caller = {
        resolve,
        reject: rejectCall,
        options: callOptions,
        onAbort: undefined,
      };
      let calls = pending.get(computerId);
      const existing = calls?.get(request.callId);
      if (existing !== undefined) {
        addCaller(existing, caller); // same id, same call: attach
        return;
      }
      const frameText = encodeFrame(parsed.data);
      const size = frameBytes(frameText);
      if (size > maxFrameBytes) {
        return resolve({
          ok: false,
          error: {
            code: "too_large",
            message: `the call is ${size} bytes, over the ${maxFrameBytes}-byte frame limit; send less at once`,
          },
        });
      }
      const entry: PendingCall = {
        computerId,
        callId: request.callId,
        tool: request.tool,
        frameText,
        createdAt: now(),
        callers: new Set(),
        sentOn: undefined,
        waitTimer: undefined,
        deadlineTimer: setTimeout(() => {
          if (entry.sentOn !== undefined)
            send(entry.sentOn, { type: "cancel", callId: entry.callId });
          fail(
            entry,
            new RoostError(
              "timeout",
              `no result for call ${entry.callId} (${entry.tool}) within ${request.timeoutMs + resultGraceMs} ms; the worker may still finish it, and a retry with the same id returns its result`,
              { details: { computerId, callId: entry.callId }, retryAfterMs: 1000 },
            ),
          );
        }, request.timeoutMs + resultGraceMs),
      };
      if (calls === undefined) {
        calls = new Map();
        pending.set(computerId, calls);
      }
      calls.set(request.callId, entry);
      addCaller(entry, caller);
      const connection = connections.get(computerId);
      if (connection !== undefined)
        dispatch(entry, connection, false); // G1: the computer's own connection
      else startWaiting(entry);
    });
  }

  function addCaller(entry: PendingCall, caller: Caller): void {
    entry.callers.add(caller);
    const signal = caller.options.signal;
    if (signal === undefined) return;
    caller.onAbort = () => {
      entry.callers.delete(caller);
      caller.reject(abortReason(signal));
      if (entry.callers.size > 0) return;
      if (entry.sentOn !== undefined) send(entry.sentOn, { type: "cancel", callId: entry.callId });
      settle(entry);
    };
    signal.addEventListener("abort", caller.onAbort, { once: true });
  }

  async function listenComputer(computerId: string, socketPath: string): Promise<GatewayListener> {
    if (closed) throw unavailable(computerId, "the gateway is closed");
    const server = createServer({
      headersTimeout: headersTimeoutMs, // G9
      requestTimeout: headersTimeoutMs * 2,
      maxHeaderSize: 16_384,
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(headersTimeoutMs / 2))),
    });
    const accepted = new Set<Socket>();
    server.on("connection", (socket: Socket) => {
      if (accepted.size >= maxConnectionsPerComputer) {
        warnLimit({ computerId, limit: maxConnectionsPerComputer }); // G9
        socket.on("error", () => undefined);
        socket.destroy();
        return;
      }
      accepted.add(socket);
      socket.once("close", () => accepted.delete(socket));
    });
    server.on("clientError", (error: Error & { code?: string }, socket: Duplex) => {
      if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") warnHeaders({ computerId }); // G9
      socket.destroy();
    });
    server.on("request", (_request, response) => {
      response.writeHead(426, { "content-type": "text/plain; charset=utf-8", connection: "close" });
      response.end(
        `this is computer ${computerId}'s gateway socket; open a WebSocket on ${gatewayPath}\n`,
      );
    });
    server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on("error", () => undefined);
      if (!isGatewayPath(request)) {
        socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      void authenticate(request, socket, head, computerId); // G8
    });
    await rm(socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (error) => logger.warn("gateway socket failed", { computerId, error }));
    let stopped: Promise<void> | undefined;
    const listener: GatewayListener = {
      close: () =>
        (stopped ??= (async () => {
          computerListeners.delete(listener);
          const closing = new Promise<void>((resolve) => server.close(() => resolve()));
          for (const socket of accepted) socket.destroy();
          await closing;
          await rm(socketPath, { force: true });
        })()),
    };
    computerListeners.add(listener);
    return listener;
  }

  options.server.on("upgrade", onUpgrade);

  function openTunnel(
    computerId: string,
    port: number,
    tunnelOptions: { signal?: AbortSignal } = {},
  ): Promise<TunnelStream> {
    if (closed) return Promise.reject(unavailable(computerId, "the gateway is closed"));
    const connection = connections.get(computerId); // G10: the computer's current connection
    if (connection === undefined)
      return Promise.reject(
        unavailable(
          computerId,
          `computer ${computerId}'s worker is not connected to this server (it may be waking up, or connected to another node); try again shortly`,
        ),
      );
    if (connection.worker?.capabilities.includes(tunnelCapability) !== true)
      return Promise.reject(
        new RoostError(
          "computer_unavailable",
          `computer ${computerId}'s worker does not offer tunnels (it is older than port previews; update it, or let the computer sleep and wake)`,
          { details: { computerId } },
        ),
      );
    return tunnels.open(connection.link, port, tunnelOptions.signal);
  }

  return {
    call,
    listenComputer,
    openTunnel,
    tunnelCount: (computerId) => tunnels.count(computerId),

    waitForWorker(computerId, timeoutMs = 60_000, signal) {
      const connected = connections.get(computerId)?.worker;
      if (connected !== undefined) return Promise.resolve(connected);
      if (closed) return Promise.reject(unavailable(computerId, "the gateway is closed"));
      return new Promise<WorkerInfo>((resolve, rejectWait) => {
        const cleanup = () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          waiters.get(computerId)?.delete(waiter);
        };
        const waiter: Waiter = {
          resolve: (worker) => {
            cleanup();
            resolve(worker);
          },
          reject: (error) => {
            cleanup();
            rejectWait(error);
          },
        };
        const onAbort = () => {
          if (signal !== undefined) waiter.reject(abortReason(signal));
        };
        const timer = setTimeout(
          () =>
            waiter.reject(
              unavailable(
                computerId,
                `the worker of computer ${computerId} did not connect within ${timeoutMs} ms (check that it started and can reach the gateway)`,
              ),
            ),
          timeoutMs,
        );
        signal?.addEventListener("abort", onAbort, { once: true });
        let set = waiters.get(computerId);
        if (set === undefined) {
          set = new Set();
          waiters.set(computerId, set);
        }
        set.add(waiter);
      });
    },

    isConnected(computerId) {
      return connections.has(computerId);
    },

    worker(computerId) {
      return connections.get(computerId)?.worker;
    },

    async disconnect(computerId, reason = "the computer is going to sleep") {
      const connection = connections.get(computerId);
      for (const entry of [...(pending.get(computerId)?.values() ?? [])]) {
        fail(
          entry,
          unavailable(
            computerId,
            `computer ${computerId} was disconnected (${reason}); retry the call with the same id after it wakes`,
          ),
        );
      }
      if (connection === undefined) return;
      const closedPromise = new Promise<void>((resolve) =>
        connection.ws.once("close", () => resolve()),
      );
      detach(connection);
      closeConnection(connection, closeCodes.disconnected, reason);
      await closedPromise;
    },

    async close() {
      if (closed) return;
      closed = true;
      options.server.off("upgrade", onUpgrade);
      tunnels.closeAll("the gateway is shutting down");
      await Promise.all([...computerListeners].map((listener) => listener.close()));
      for (const calls of [...pending.values()]) {
        for (const entry of [...calls.values()])
          fail(entry, unavailable(entry.computerId, "the gateway is shutting down"));
      }
      for (const [computerId, set] of waiters) {
        for (const waiter of [...set])
          waiter.reject(unavailable(computerId, "the gateway is shutting down"));
      }
      const closing = [...allConnections].map(
        (connection) =>
          new Promise<void>((resolve) => {
            if (connection.ws.readyState === connection.ws.CLOSED) return resolve();
            connection.ws.once("close", () => resolve());
            detach(connection);
            closeConnection(connection, closeCodes.goingAway, "the gateway is shutting down");
          }),
      );
      await Promise.all(closing);
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error
    ? signal.reason
    : new DOMException("the call was aborted", "AbortError");
}

function rawText(data: WebSocket.RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString("utf8");
  return data.toString("utf8");
}

function assertNever(value: never): never {
  throw new Error(`unexpected frame ${JSON.stringify(value)}`);
}
