/**
 * Node-to-node forwarding (issue 17 §2, decision 0039): a computer's worker is connected to one
 * node's gateway, and a tool call, a file operation, a port preview or a live-view stream made on
 * any other node reaches it through that node's internal endpoint.
 *
 * Two halves: {@link startNodeEndpoint} serves this node's gateway to the other nodes, and
 * {@link createForwardingGateway} is the Gateway the rest of the node uses: its own connections
 * first, then the node the store names as holding the worker.
 *
 * Invariants:
 *   NF1 The internal endpoint answers only requests carrying the node secret (compared in
 *       constant time); a user's API token, a worker token or nothing at all gets 401. It is a
 *       listener of its own, never a route of the public API.
 *   NF2 A forwarded call keeps its call id, so a retry after a node died midway is the same call
 *       to the worker (its done-log de-duplicates, G3).
 *   NF3 The holding node answers "not here" at once when the worker is not connected to it (a
 *       stale location): the caller looks again instead of waiting out `workerWaitMs` there.
 *   NF4 Aborting a forwarded call (the caller's signal, or the caller's node going away) aborts it
 *       on the holding node.
 *   NF5 A call's result, error code and retry hint cross nodes unchanged: a forwarded call fails
 *       exactly as a local one would.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { isRoostError, RoostError, type ErrorCode } from "../errors/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import { MAX_FRAME_BYTES } from "../protocol/index.ts";
import type { CallOptions, CallRequest, CallResult, Gateway, WorkerInfo } from "./gateway.ts";

/** Where workers are connected (the store's worker_locations, WL1–WL2). */
export interface WorkerLocations {
  getWorkerLocation(computerId: string): Promise<{ nodeUrl: string } | undefined>;
}

/** A Gateway whose tunnels may come from another node (a socket, not a TunnelStream). */
export type NodeGateway = Omit<Gateway, "openTunnel"> & {
  openTunnel(computerId: string, port: number, options?: { signal?: AbortSignal }): Promise<Duplex>;
  /** Whether the worker is connected here or, asking it, to the node the store names. */
  connectedAnywhere(computerId: string): Promise<boolean>;
};

const callsPath = "/node/v1/calls";
const workersPath = "/node/v1/workers/";
const tunnelsPath = "/node/v1/tunnels/";
const tunnelUpgrade = "roost-node-tunnel";
const computerIdPattern = /^[A-Za-z0-9_-]{1,100}$/;

/** One line of a forwarded call's answer (NDJSON). */
type CallLine =
  | { chunk: { stream: "stdout" | "stderr"; data: string } }
  | { progress: number }
  | { result: CallResult }
  | { error: WireError };

interface WireError {
  code: ErrorCode;
  message: string;
  retryAfterMs?: number;
  details?: Record<string, unknown>;
  /** NF3: the worker is not connected to the answering node. */
  notHere?: boolean;
}

function toWire(error: unknown): WireError {
  if (isRoostError(error))
    return {
      code: error.code,
      message: error.message,
      ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      ...(error.details === undefined ? {} : { details: error.details }),
    };
  return { code: "internal", message: error instanceof Error ? error.message : String(error) };
}

function fromWire(wire: WireError): RoostError {
  // NF5
  return new RoostError(wire.code, wire.message, {
    ...(wire.retryAfterMs === undefined ? {} : { retryAfterMs: wire.retryAfterMs }),
    ...(wire.details === undefined ? {} : { details: wire.details }),
  });
}

const digest = (value: string) => createHash("sha256").update(value).digest();

/** NF1: whether the request carries the node secret. */
function hasSecret(request: IncomingMessage, secretDigest: Buffer): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
  return match !== null && timingSafeEqual(digest(match[1]!), secretDigest);
}

const refusal = JSON.stringify({
  error: {
    code: "unauthenticated",
    message:
      "this is Roost's node-to-node endpoint: requests need the node secret (ROOST_NODE_SECRET), which only Roost nodes hold",
  },
});

/** Options of {@link startNodeEndpoint}. */
export interface NodeEndpointOptions {
  /** This node's own gateway (never a forwarding one: a forwarded call is not forwarded again). */
  gateway: Gateway;
  secret: string;
  /** @default 127.0.0.1 */
  host?: string;
  port: number;
  logger?: Logger;
}

export interface NodeEndpoint {
  readonly port: number;
  close(): Promise<void>;
}

/** Serves this node's gateway to the other nodes (NF1–NF5). */
export async function startNodeEndpoint(options: NodeEndpointOptions): Promise<NodeEndpoint> {
  const { gateway } = options;
  const secretDigest = digest(options.secret);
  const logger = (options.logger ?? silentLogger).child({ component: "node-endpoint" });
  const sockets = new Set<Socket>();

  const server: Server = createServer((request, response) => {
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(typeof body === "string" ? body : JSON.stringify(body));
    };
    if (!hasSecret(request, secretDigest)) return send(401, refusal); // NF1
    const path = new URL(request.url ?? "/", "http://node.invalid").pathname;
    if (request.method === "POST" && path === callsPath) {
      void readJson(request)
        .then((body) => forwardCall(body, response))
        .catch((error: unknown) => {
          const status = isRoostError(error) && error.code === "payload_too_large" ? 413 : 400;
          if (!response.headersSent) send(status, { error: toWire(error) });
          else response.destroy();
        });
      return;
    }
    if (path.startsWith(workersPath)) {
      const [computerId, action] = path.slice(workersPath.length).split("/");
      if (computerId === undefined || !computerIdPattern.test(computerId))
        return send(400, { error: { code: "invalid_request", message: "bad computer id" } });
      if (request.method === "GET" && action === undefined) {
        const worker = gateway.worker(computerId);
        return worker === undefined
          ? send(404, { error: { code: "computer_unavailable", message: "not connected here" } })
          : send(200, { worker });
      }
      if (request.method === "POST" && action === "disconnect") {
        void gateway
          .disconnect(computerId, "disconnected by another node")
          .then(() => send(200, { ok: true }))
          .catch((error: unknown) => send(500, { error: toWire(error) }));
        return;
      }
    }
    send(404, { error: { code: "not_found", message: `no ${request.method} ${path} here` } });
  });

  async function forwardCall(body: unknown, response: ServerResponse): Promise<void> {
    const { computerId, call } = parseCallBody(body);
    const write = (line: CallLine) => response.write(`${JSON.stringify(line)}\n`);
    response.writeHead(200, { "content-type": "application/x-ndjson" });
    if (!gateway.isConnected(computerId)) {
      // NF3
      write({
        error: {
          code: "computer_unavailable",
          message: `no worker of computer ${computerId} is connected to this node`,
          retryAfterMs: 200,
          notHere: true,
        },
      });
      response.end();
      return;
    }
    const abort = new AbortController();
    response.once("close", () => {
      if (!response.writableFinished) abort.abort(new Error("the calling node went away")); // NF4
    });
    try {
      const result = await gateway.call(computerId, call, {
        signal: abort.signal,
        onChunk: (chunk) => write({ chunk }),
        onProgress: (elapsedMs) => write({ progress: elapsedMs }),
      });
      write({ result });
    } catch (error) {
      write({ error: toWire(error) });
    }
    response.end();
  }

  // Tunnels: an upgraded connection becomes the tunnel's byte stream, both ways.
  server.on("upgrade", (request: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on("error", () => undefined);
    const answer = (status: number, body: string) => {
      socket.end(
        `HTTP/1.1 ${status} ${status === 401 ? "Unauthorized" : "Error"}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    if (!hasSecret(request, secretDigest)) return answer(401, refusal); // NF1
    const url = new URL(request.url ?? "/", "http://node.invalid");
    const computerId = url.pathname.startsWith(tunnelsPath)
      ? url.pathname.slice(tunnelsPath.length)
      : "";
    const port = Number(url.searchParams.get("port"));
    if (
      !computerIdPattern.test(computerId) ||
      !Number.isInteger(port) ||
      port < 1 ||
      port > 65_535 ||
      request.headers.upgrade !== tunnelUpgrade
    )
      return answer(
        400,
        JSON.stringify({ error: { code: "invalid_request", message: "bad tunnel request" } }),
      );
    gateway.openTunnel(computerId, port).then(
      (tunnel) => {
        socket.write(
          `HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: ${tunnelUpgrade}\r\n\r\n`,
        );
        if (head.length > 0) tunnel.write(head);
        pipeBoth(socket, tunnel);
      },
      (error: unknown) => {
        const status = isRoostError(error) && error.code === "not_found" ? 404 : 503;
        answer(status, JSON.stringify({ error: toWire(error) }));
      },
    );
  });

  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  logger.debug("node endpoint listening", { port: (server.address() as AddressInfo).port });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

function parseCallBody(body: unknown): { computerId: string; call: CallRequest } {
  const invalid = () =>
    new RoostError(
      "invalid_request",
      "a forwarded call is {computerId, call: {callId, tool, input, timeoutMs, botId?}}",
    );
  if (typeof body !== "object" || body === null) throw invalid();
  const { computerId, call } = body as { computerId?: unknown; call?: unknown };
  if (typeof computerId !== "string" || !computerIdPattern.test(computerId)) throw invalid();
  if (typeof call !== "object" || call === null) throw invalid();
  const { callId, tool, input, timeoutMs, botId } = call as Record<string, unknown>;
  if (
    typeof callId !== "string" ||
    typeof tool !== "string" ||
    typeof timeoutMs !== "number" ||
    !Number.isFinite(timeoutMs) ||
    (botId !== undefined && typeof botId !== "string")
  )
    throw invalid();
  return {
    computerId,
    call: { callId, tool, input, timeoutMs, ...(botId === undefined ? {} : { botId }) },
  };
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FRAME_BYTES * 2)
      throw new RoostError("payload_too_large", "a forwarded call is larger than a frame");
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new RoostError("invalid_json", "a forwarded call's body is not JSON");
  }
}

function pipeBoth(a: Duplex, b: Duplex): void {
  a.pipe(b);
  b.pipe(a);
  const destroyBoth = () => {
    a.destroy();
    b.destroy();
  };
  a.once("error", destroyBoth);
  b.once("error", destroyBoth);
  a.once("close", () => b.destroy());
  b.once("close", () => a.destroy());
}

/** Options of {@link createForwardingGateway}. */
export interface ForwardingOptions {
  /** This node's internal URL (ROOST_NODE_URL): a location naming it is ours. */
  selfUrl: string;
  secret: string;
  locations: WorkerLocations;
  /** How long a call waits for a worker to connect anywhere. @default 60_000 */
  workerWaitMs?: number;
  /** How long a remote worker counts as connected for isConnected(). @default 5_000 */
  remoteTtlMs?: number;
  logger?: Logger;
}

/** The node's Gateway: its own connections first, else the node holding the worker (NF2–NF5). */
export function createForwardingGateway(local: Gateway, options: ForwardingOptions): NodeGateway {
  const selfUrl = options.selfUrl.replace(/\/+$/, "");
  const workerWaitMs = options.workerWaitMs ?? 60_000;
  const remoteTtlMs = options.remoteTtlMs ?? 5_000;
  const logger = (options.logger ?? silentLogger).child({ component: "forwarding" });
  const authorization = `Bearer ${options.secret}`;
  /** Remote workers seen lately, for the synchronous isConnected()/worker(). */
  const remote = new Map<string, { nodeUrl: string; worker: WorkerInfo; seenAt: number }>();

  const unavailable = (computerId: string, message: string) =>
    new RoostError("computer_unavailable", message, {
      details: { computerId },
      retryAfterMs: 1_000,
    });

  /** The other node holding the computer's worker, if the store names one. */
  async function holder(computerId: string): Promise<string | undefined> {
    const location = await options.locations.getWorkerLocation(computerId);
    if (location === undefined) return undefined;
    const nodeUrl = location.nodeUrl.replace(/\/+$/, "");
    return nodeUrl === selfUrl ? undefined : nodeUrl;
  }

  async function remoteWorker(
    nodeUrl: string,
    computerId: string,
    signal?: AbortSignal,
  ): Promise<WorkerInfo | undefined> {
    const response = await fetch(`${nodeUrl}${workersPath}${computerId}`, {
      headers: { authorization },
      signal:
        signal === undefined
          ? AbortSignal.timeout(5_000)
          : AbortSignal.any([signal, AbortSignal.timeout(5_000)]),
    }).catch(() => undefined);
    if (response?.status !== 200) {
      await response?.body?.cancel();
      remote.delete(computerId);
      return undefined;
    }
    const { worker } = (await response.json()) as { worker: WorkerInfo };
    remote.set(computerId, { nodeUrl, worker, seenAt: Date.now() });
    return worker;
  }

  /** One forwarded attempt: the result, or "not-here" (NF3), or a thrown RoostError. */
  async function remoteCall(
    nodeUrl: string,
    computerId: string,
    request: CallRequest,
    callOptions: CallOptions,
  ): Promise<CallResult | "not-here" | "node-gone"> {
    let response: Response;
    try {
      response = await fetch(`${nodeUrl}${callsPath}`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify({ computerId, call: request }), // NF2: the same call id
        ...(callOptions.signal === undefined ? {} : { signal: callOptions.signal }), // NF4
      });
    } catch (error) {
      callOptions.signal?.throwIfAborted();
      logger.warn("forwarding a call failed: the holding node is not reachable", {
        computerId,
        nodeUrl,
        error: String(error),
      });
      return "node-gone";
    }
    if (response.status !== 200 || response.body === null) {
      const text = await response.text();
      throw new RoostError(
        "internal",
        `the node holding computer ${computerId}'s worker answered ${response.status}: ${text.slice(0, 300)} (check that every node has the same ROOST_NODE_SECRET)`,
      );
    }
    let buffered = "";
    const decoder = new TextDecoder();
    try {
      for await (const bytes of response.body as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(bytes, { stream: true });
        let newline: number;
        while ((newline = buffered.indexOf("\n")) >= 0) {
          const line = JSON.parse(buffered.slice(0, newline)) as CallLine;
          buffered = buffered.slice(newline + 1);
          if ("chunk" in line) callOptions.onChunk?.(line.chunk);
          else if ("progress" in line) callOptions.onProgress?.(line.progress);
          else if ("result" in line) return line.result;
          else if (line.error.notHere === true) return "not-here";
          else throw fromWire(line.error); // NF5
        }
      }
    } catch (error) {
      if (isRoostError(error)) throw error;
      callOptions.signal?.throwIfAborted();
      return "node-gone"; // the holding node died midway: look again (NF2)
    }
    return "node-gone";
  }

  async function waitForWorker(
    computerId: string,
    timeoutMs = 60_000,
    signal?: AbortSignal,
  ): Promise<WorkerInfo> {
    const here = local.worker(computerId);
    if (here !== undefined) return here;
    const stop = new AbortController();
    const stopSignal = signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]);
    const localWait = local.waitForWorker(computerId, timeoutMs, stopSignal);
    const remoteWait = (async () => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline && !stopSignal.aborted) {
        const nodeUrl = await holder(computerId).catch(() => undefined);
        if (nodeUrl !== undefined) {
          const worker = await remoteWorker(nodeUrl, computerId, stopSignal);
          if (worker !== undefined) return worker;
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return new Promise<WorkerInfo>(() => undefined); // the local wait rejects at the deadline
    })();
    try {
      return await Promise.race([localWait, remoteWait]);
    } finally {
      stop.abort(new Error("a worker was found"));
      localWait.catch(() => undefined);
    }
  }

  async function call(
    computerId: string,
    request: CallRequest,
    callOptions: CallOptions = {},
  ): Promise<CallResult> {
    const deadline = Date.now() + request.timeoutMs + workerWaitMs;
    for (;;) {
      callOptions.signal?.throwIfAborted();
      if (local.isConnected(computerId)) return local.call(computerId, request, callOptions);
      const nodeUrl = await holder(computerId);
      if (nodeUrl !== undefined) {
        const outcome = await remoteCall(nodeUrl, computerId, request, callOptions);
        if (outcome !== "not-here" && outcome !== "node-gone") return outcome;
      }
      if (Date.now() > deadline)
        throw unavailable(
          computerId,
          `no worker connected for computer ${computerId}, on any node`,
        );
      // Not connected anywhere we know of (or it just moved): wait for it, here or on another node.
      await waitForWorker(
        computerId,
        Math.max(1_000, Math.min(workerWaitMs, deadline - Date.now())),
        callOptions.signal,
      ).catch((error: unknown) => {
        if (isRoostError(error)) throw error;
        throw unavailable(
          computerId,
          `no worker connected for computer ${computerId} within ${workerWaitMs} ms, on any node`,
        );
      });
    }
  }

  async function openTunnel(
    computerId: string,
    port: number,
    tunnelOptions: { signal?: AbortSignal } = {},
  ): Promise<Duplex> {
    if (local.isConnected(computerId)) return local.openTunnel(computerId, port, tunnelOptions);
    const nodeUrl = await holder(computerId);
    if (nodeUrl === undefined) return local.openTunnel(computerId, port, tunnelOptions);
    return new Promise<Duplex>((resolve, reject) => {
      const target = new URL(`${nodeUrl}${tunnelsPath}${computerId}`);
      target.searchParams.set("port", String(port));
      const request = httpRequest(target, {
        headers: { authorization, connection: "upgrade", upgrade: tunnelUpgrade },
        ...(tunnelOptions.signal === undefined ? {} : { signal: tunnelOptions.signal }),
      });
      request.once("upgrade", (_response, socket: Socket, head: Buffer) => {
        if (head.length > 0) socket.unshift(head);
        resolve(socket);
      });
      request.once("response", (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (text += chunk));
        response.once("end", () => {
          try {
            reject(fromWire((JSON.parse(text) as { error: WireError }).error));
          } catch {
            reject(
              unavailable(
                computerId,
                `the node holding the worker answered ${response.statusCode}`,
              ),
            );
          }
        });
      });
      request.once("error", (error) =>
        reject(
          tunnelOptions.signal?.aborted === true
            ? (tunnelOptions.signal.reason as Error)
            : unavailable(
                computerId,
                `the node holding the worker is not reachable: ${error.message}`,
              ),
        ),
      );
      request.end();
    });
  }

  const fresh = (computerId: string) => {
    const seen = remote.get(computerId);
    if (seen === undefined || Date.now() - seen.seenAt > remoteTtlMs) {
      // Look again in the background, so the next question gets a current answer.
      void (async () => {
        const nodeUrl = await holder(computerId);
        if (nodeUrl === undefined) remote.delete(computerId);
        else await remoteWorker(nodeUrl, computerId);
      })().catch(() => undefined);
      return seen !== undefined && Date.now() - seen.seenAt <= remoteTtlMs * 2 ? seen : undefined;
    }
    return seen;
  };

  return {
    call,
    waitForWorker,
    isConnected: (computerId) => local.isConnected(computerId) || fresh(computerId) !== undefined,
    async connectedAnywhere(computerId) {
      if (local.isConnected(computerId)) return true;
      const nodeUrl = await holder(computerId);
      return nodeUrl !== undefined && (await remoteWorker(nodeUrl, computerId)) !== undefined;
    },
    worker: (computerId) => local.worker(computerId) ?? fresh(computerId)?.worker,
    async disconnect(computerId, reason) {
      await local.disconnect(computerId, reason);
      const nodeUrl = await holder(computerId).catch(() => undefined);
      remote.delete(computerId);
      if (nodeUrl === undefined) return;
      await fetch(`${nodeUrl}${workersPath}${computerId}/disconnect`, {
        method: "POST",
        headers: { authorization },
        signal: AbortSignal.timeout(5_000),
      })
        .then((response) => response.body?.cancel())
        .catch((error: unknown) =>
          logger.warn("could not disconnect a worker on another node", {
            computerId,
            nodeUrl,
            error: String(error),
          }),
        );
    },
    listenComputer: (computerId, socketPath) => local.listenComputer(computerId, socketPath),
    openTunnel,
    tunnelCount: (computerId) => local.tunnelCount(computerId),
    close: () => local.close(),
  };
}
