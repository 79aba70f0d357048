/**
 * The host-side egress proxy every computer's traffic leaves through: plain HTTP proxy requests
 * (absolute-form URLs) and CONNECT tunnels, each checked against the computer's policy
 * (policy.ts). docs/egress.md describes the behaviour for users and operators.
 *
 * Invariants:
 *   E1 A connection's computer comes from `identify(socket)` (by default its source address),
 *      never from anything the client sends; a connection that belongs to no computer is refused.
 *   E2 The proxy resolves names itself, checks EVERY address a name resolves to, and connects to
 *      a checked address, never to the name again (no DNS rebinding between check and connect).
 *   E3 Nothing is sent to a destination before the checks pass; a refusal is an HTTP 403 (for
 *      CONNECT too, before any tunnel exists) with a plain-text reason and `X-Roost-Egress: denied`.
 *   E4 Every request, allowed or refused, produces exactly one log entry (`onRequest`), written
 *      when it ends; a failing hook never affects traffic.
 *   E5 `setPolicy` applies to new requests at once and re-checks the computer's open connections
 *      at once; a periodic re-check (every `recheckIntervalMs`) closes any open connection its
 *      computer's current policy no longer allows, so changes reach running computers in time.
 *   E6 The proxy never connects to itself (listening address check, a `Via` marker on forwarded
 *      requests, and refusing connections that arrive from its own outgoing sockets).
 *   E7 Every socket has a deadline: DNS, connect, headers, and idle time on open connections.
 */
import { lookup } from "node:dns/promises";
import {
  createServer,
  request as httpRequest,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import type { Duplex } from "node:stream";
import { classifyAddress, normalizeIp, parseIp } from "./addresses.ts";
import {
  checkAddress,
  checkDestination,
  checkName,
  compilePolicy,
  formatTarget,
  normalizeHostName,
  parseEgressPolicy,
  type CompiledPolicy,
  type DestinationContext,
  type EgressDenial,
  type EgressPolicy,
  type EgressPolicyInput,
  type EgressTarget,
} from "./policy.ts";

/** Why the proxy refused or failed a request, beyond the policy's own denial codes. */
export type EgressRefusalCode =
  | EgressDenial["code"]
  | "unknown-computer"
  | "bad-request"
  | "too-many-connections"
  | "unresolvable"
  | "upstream-failed";

/** One request through the proxy, allowed or refused (E4). */
export interface EgressLogEntry {
  /** Null when the connection belongs to no computer. */
  computerId: string | null;
  /** Where the connection came from (the computer's side of its veth). */
  sourceAddress: string;
  method: string;
  /** The requested host name or IP address ("" when the request could not be parsed). */
  host: string;
  port: number;
  /** The checked address that was connected to, or the one that was refused. */
  resolvedAddress?: string;
  decision: "allowed" | "denied";
  /** For a refusal: the message the computer got. For an allowed request: why it ended early. */
  reason?: string;
  code?: EgressRefusalCode;
  /** Status sent to the computer; 200 for an opened tunnel. */
  status: number;
  /** Bytes written to the destination (for HTTP requests including the request head). */
  bytesUp: number;
  /** Bytes read from the destination. */
  bytesDown: number;
  durationMs: number;
}

export interface EgressAddress {
  host: string;
  port: number;
}

export interface EgressStats {
  listening: EgressAddress[];
  /** Requests and tunnels in progress. */
  open: number;
  allowed: number;
  denied: number;
  bytesUp: number;
  bytesDown: number;
}

export type EgressResolver = (hostname: string) => Promise<string[]>;

export interface EgressProxyOptions {
  /** Which computer a connection belongs to (E1). @default the source-address map of `assign` */
  identify?: (socket: Socket) => string | undefined;
  /** Name → addresses. @default dns.promises.lookup with `all: true` */
  resolve?: EgressResolver;
  /** Called once per request when it ends (E4). */
  onRequest?: (entry: EgressLogEntry) => void | Promise<void>;
  /** Policy of computers without one of their own. @default { mode: "defaults-and-allowlist" } */
  defaultPolicy?: EgressPolicyInput;
  /** The built-in hosts of `defaults-and-allowlist`. @default defaultHosts */
  defaults?: readonly string[];
  /** The host's own addresses (P4). @default every address of os.networkInterfaces(), re-read every 5 s */
  hostAddresses?: () => Iterable<string>;
  /** @default 30_000 */
  recheckIntervalMs?: number;
  /** @default 5_000 */
  dnsTimeoutMs?: number;
  /** Per address tried. @default 10_000 */
  connectTimeoutMs?: number;
  /** Time to receive a request's headers. @default 15_000 */
  headersTimeoutMs?: number;
  /** An open request or tunnel with no traffic either way for this long is closed. @default 300_000 */
  idleTimeoutMs?: number;
  /** Bytes of request or response headers. @default 16_384 */
  maxHeaderSize?: number;
  /** Open requests and tunnels per computer. @default 256 */
  maxConnectionsPerComputer?: number;
  now?: () => number;
  log?: (message: string) => void;
  signal?: AbortSignal;
}

export interface EgressProxy {
  /** Start accepting connections on host:port (port 0: any free port); may be called more than once. */
  listen(host: string, port: number): Promise<EgressAddress>;
  /** Set a computer's policy (validated; throws InvalidRequestError). Applies at once (E5). */
  setPolicy(computerId: string, policy: EgressPolicyInput): EgressPolicy;
  policyOf(computerId: string): EgressPolicy;
  /** Map a source address to a computer (used by the default `identify`). */
  assign(sourceAddress: string, computerId: string): void;
  unassign(sourceAddress: string): void;
  /** Forget a computer: its policy and source addresses; its open connections are closed. */
  removeComputer(computerId: string): void;
  /** Re-check every open connection against its computer's current policy now (E5). */
  recheck(): void;
  stats(): EgressStats;
  close(): Promise<void>;
}

/** The header every refusal carries (E3). */
export const egressHeader = "x-roost-egress";
const viaToken = "roost-egress";

const hopByHopHeaders = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

const defaultResolver: EgressResolver = async (hostname) =>
  (await lookup(hostname, { all: true, order: "verbatim" })).map((entry) => entry.address);

function readHostAddresses(): string[] {
  const addresses: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) addresses.push(entry.address);
  }
  return addresses;
}

class ProxyFailure extends Error {
  readonly status: number;
  readonly code: EgressRefusalCode;
  readonly resolvedAddress: string | undefined;
  constructor(status: number, code: EgressRefusalCode, message: string, resolvedAddress?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.resolvedAddress = resolvedAddress;
  }
}

type EntryBase = Pick<EgressLogEntry, "sourceAddress" | "method" | "host" | "port">;

interface Flow {
  computerId: string;
  target: EgressTarget;
  address: string;
  /** Close it; `status` is sent if the computer has not had a response yet. */
  close(reason: string, status: number): void;
}

/** Create the egress proxy. Call `listen` to start it and `close` to stop it. */
export function createEgressProxy(options: EgressProxyOptions = {}): EgressProxy {
  const resolve = options.resolve ?? defaultResolver;
  const now = options.now ?? Date.now;
  const log = options.log ?? ((message: string) => console.error(message));
  const recheckIntervalMs = options.recheckIntervalMs ?? 30_000;
  const dnsTimeoutMs = options.dnsTimeoutMs ?? 5_000;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const headersTimeoutMs = options.headersTimeoutMs ?? 15_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 300_000;
  const maxHeaderSize = options.maxHeaderSize ?? 16_384;
  const maxConnectionsPerComputer = options.maxConnectionsPerComputer ?? 256;
  const compileOptions = options.defaults === undefined ? {} : { defaults: options.defaults };
  const defaultPolicy = compilePolicy(
    parseEgressPolicy(options.defaultPolicy ?? { mode: "defaults-and-allowlist" }),
    compileOptions,
  );

  const policies = new Map<string, CompiledPolicy>();
  const sources = new Map<string, string>();
  const servers: { server: Server; address: EgressAddress }[] = [];
  const sockets = new Set<Socket>();
  const flows = new Set<Flow>();
  const openPerComputer = new Map<string, number>();
  /** `address:port` of the proxy's own outgoing sockets (E6). */
  const outgoing = new Set<string>();
  const totals = { allowed: 0, denied: 0, bytesUp: 0, bytesDown: 0 };
  let closed = false;

  let hostAddressCache: { at: number; set: Set<string> } | undefined;
  function hostAddressSet(): Set<string> {
    if (
      hostAddressCache === undefined ||
      now() - hostAddressCache.at > 5_000 ||
      options.hostAddresses
    ) {
      const set = new Set<string>();
      for (const address of options.hostAddresses?.() ?? readHostAddresses()) {
        const normalized = normalizeIp(address);
        if (normalized !== undefined) set.add(normalized);
      }
      hostAddressCache = { at: now(), set };
    }
    return hostAddressCache.set;
  }

  const context: DestinationContext = {
    isHostAddress: (address) => hostAddressSet().has(address),
    isProxy: (address, port) => {
      if (!servers.some((entry) => entry.address.port === port)) return false;
      const addressClass = classifyAddress(address);
      // Conservative: any address of this host on a port the proxy listens on is the proxy.
      return (
        addressClass === "loopback" ||
        addressClass === "unspecified" ||
        hostAddressSet().has(address)
      );
    },
  };

  const identify =
    options.identify ??
    ((socket: Socket) => {
      const source = normalizeIp(socket.remoteAddress ?? "");
      return source === undefined ? undefined : sources.get(source);
    });

  function policyFor(computerId: string): CompiledPolicy {
    return policies.get(computerId) ?? defaultPolicy;
  }

  function emit(entry: EgressLogEntry): void {
    if (entry.decision === "allowed") totals.allowed += 1;
    else totals.denied += 1;
    totals.bytesUp += entry.bytesUp;
    totals.bytesDown += entry.bytesDown;
    if (options.onRequest === undefined) return;
    try {
      const result = options.onRequest(entry);
      if (result instanceof Promise) {
        result.catch((error: unknown) =>
          log(`roost egress: request log hook failed: ${String(error)}`),
        );
      }
    } catch (error) {
      log(`roost egress: request log hook failed: ${String(error)}`); // E4
    }
  }

  function recheck(onlyComputer?: string): void {
    for (const flow of flows) {
      if (onlyComputer !== undefined && flow.computerId !== onlyComputer) continue;
      const denial = checkDestination(
        policyFor(flow.computerId),
        flow.target,
        [flow.address],
        context,
      );
      if (denial !== undefined) flow.close(`closed, no longer allowed: ${denial.message}`, 403); // E5
    }
  }

  const timer = setInterval(() => recheck(), recheckIntervalMs);
  timer.unref();

  async function resolveChecked(computerId: string, target: EgressTarget): Promise<string[]> {
    const policy = policyFor(computerId);
    const verdict = checkName(policy, target);
    if (!verdict.allowed) throw new ProxyFailure(403, verdict.denial.code, verdict.denial.message);
    let addresses: string[];
    if (parseIp(target.host) !== undefined) {
      addresses = [target.host];
    } else {
      addresses = await resolveWithTimeout(target.host);
    }
    for (const address of addresses) {
      // E2: every address, and the request is refused if any one is refused.
      const denial = checkAddress(policy, target, address, verdict.byName, context);
      if (denial !== undefined) throw new ProxyFailure(403, denial.code, denial.message, address);
    }
    return addresses;
  }

  async function resolveWithTimeout(hostname: string): Promise<string[]> {
    let timeout: NodeJS.Timeout | undefined;
    try {
      const raw = await Promise.race([
        resolve(hostname),
        new Promise<never>((_, reject) => {
          timeout = setTimeout(
            () => reject(Object.assign(new Error("timed out"), { code: "ETIMEOUT" })),
            dnsTimeoutMs,
          );
        }),
      ]);
      const addresses = [...new Set(raw.map((address) => normalizeIp(address) ?? address))];
      if (addresses.length === 0)
        throw Object.assign(new Error("no addresses"), { code: "ENODATA" });
      return addresses;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      throw new ProxyFailure(
        502,
        "unresolvable",
        `roost egress: could not resolve ${hostname} (${typeof code === "string" ? code : String(error)}).`,
      );
    } finally {
      clearTimeout(timeout);
    }
  }

  /** Connect to the first checked address that answers (E2: addresses, never the name). */
  async function connectTo(
    target: EgressTarget,
    addresses: readonly string[],
    isGone: () => boolean,
  ): Promise<Socket> {
    let lastError = "no address";
    for (const address of addresses) {
      if (isGone()) break;
      try {
        return await connectOne(address, target.port);
      } catch (error) {
        lastError = (error as { code?: string }).code ?? String(error);
      }
    }
    const status = lastError === "ETIMEDOUT" ? 504 : 502;
    throw new ProxyFailure(
      status,
      "upstream-failed",
      `roost egress: could not connect to ${formatTarget(target)} (${lastError}).`,
      addresses[0],
    );
  }

  function connectOne(address: string, port: number): Promise<Socket> {
    return new Promise((resolvePromise, reject) => {
      const socket = netConnect({ host: address, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(Object.assign(new Error("connect timed out"), { code: "ETIMEDOUT" }));
      }, connectTimeoutMs); // E7
      socket.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        const local = `${normalizeIp(socket.localAddress ?? "") ?? ""}:${socket.localPort ?? 0}`;
        outgoing.add(local); // E6
        socket.once("close", () => outgoing.delete(local));
        resolvePromise(socket);
      });
    });
  }

  function identifyOrRefuse(socket: Socket): string {
    const computerId = identify(socket);
    if (computerId !== undefined) return computerId;
    throw new ProxyFailure(
      403,
      "unknown-computer",
      `roost egress: connections from ${socket.remoteAddress ?? "unknown"} do not belong to any computer; refused.`,
    ); // E1
  }

  function reserve(computerId: string, target: EgressTarget): () => void {
    const open = openPerComputer.get(computerId) ?? 0;
    if (open >= maxConnectionsPerComputer) {
      throw new ProxyFailure(
        429,
        "too-many-connections",
        `roost egress: ${formatTarget(target)} refused: this computer already has ${open} open connections through the proxy (limit ${maxConnectionsPerComputer}).`,
      );
    }
    openPerComputer.set(computerId, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (openPerComputer.get(computerId) ?? 1) - 1;
      if (left <= 0) openPerComputer.delete(computerId);
      else openPerComputer.set(computerId, left);
    };
  }

  /** Close the race between the check and the connect: the policy may have changed meanwhile. */
  function checkAgain(computerId: string, target: EgressTarget, address: string): void {
    const denial = checkDestination(policyFor(computerId), target, [address], context);
    if (denial !== undefined) throw new ProxyFailure(403, denial.code, denial.message, address);
  }

  function failureOf(error: unknown): ProxyFailure {
    if (error instanceof ProxyFailure) return error;
    return new ProxyFailure(
      502,
      "upstream-failed",
      `roost egress: request failed (${String(error)}).`,
    );
  }

  function refusalBody(failure: ProxyFailure): { body: string; marker: string } {
    return { body: `${failure.message}\n`, marker: failure.status === 403 ? "denied" : "error" };
  }

  function baseEntry(socket: Socket, method: string, target: EgressTarget | undefined): EntryBase {
    return {
      sourceAddress: normalizeIp(socket.remoteAddress ?? "") ?? socket.remoteAddress ?? "",
      method,
      host: target?.host ?? "",
      port: target?.port ?? 0,
    };
  }

  function logRefusal(
    base: EntryBase,
    failure: ProxyFailure,
    started: number,
    computerId: string | null,
  ): void {
    emit({
      ...base,
      computerId,
      ...(failure.resolvedAddress === undefined
        ? {}
        : { resolvedAddress: failure.resolvedAddress }),
      decision: failure.code === "upstream-failed" ? "allowed" : "denied",
      reason: failure.message,
      code: failure.code,
      status: failure.status,
      bytesUp: 0,
      bytesDown: 0,
      durationMs: now() - started,
    });
  }

  async function handleRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = now();
    const socket = request.socket;
    const method = request.method ?? "GET";
    const parsed = parseAbsoluteUrl(request);
    const base = baseEntry(socket, method, "target" in parsed ? parsed.target : undefined);
    let computerId: string | null = null;
    let release: (() => void) | undefined;
    try {
      computerId = identifyOrRefuse(socket);
      if ("error" in parsed) throw new ProxyFailure(400, "bad-request", parsed.error);
      const { target, url } = parsed;
      if (String(request.headers.via ?? "").includes(viaToken)) {
        throw new ProxyFailure(
          403,
          "proxy-loop",
          `roost egress: ${formatTarget(target)}: the request came through this proxy already; refusing to loop.`,
        ); // E6
      }
      release = reserve(computerId, target);
      const addresses = await resolveChecked(computerId, target);
      const upstreamSocket = await connectTo(target, addresses, () => socket.destroyed);
      const address =
        normalizeIp(upstreamSocket.remoteAddress ?? "") ?? upstreamSocket.remoteAddress ?? "";
      try {
        checkAgain(computerId, target, address);
        if (socket.destroyed)
          throw new ProxyFailure(499, "upstream-failed", "roost egress: the client went away.");
      } catch (error) {
        upstreamSocket.destroy();
        throw error;
      }
      forward(request, response, {
        computerId,
        target,
        url,
        address,
        upstreamSocket,
        started,
        base,
        release,
      });
      release = undefined; // forward releases it
    } catch (error) {
      release?.();
      const failure = failureOf(error);
      logRefusal(base, failure, started, computerId);
      if (!response.headersSent && !response.destroyed) {
        const { body, marker } = refusalBody(failure);
        response.writeHead(failure.status, {
          "content-type": "text/plain; charset=utf-8",
          "content-length": Buffer.byteLength(body),
          [egressHeader]: marker,
        });
        response.end(body);
      }
    }
  }

  function forward(
    request: IncomingMessage,
    response: ServerResponse,
    flowInfo: {
      computerId: string;
      target: EgressTarget;
      url: URL;
      address: string;
      upstreamSocket: Socket;
      started: number;
      base: EntryBase;
      release: () => void;
    },
  ): void {
    const { computerId, target, url, address, upstreamSocket, started, base, release } = flowInfo;
    let endReason: string | undefined;
    let status = 502;
    let finished = false;

    const upstream = httpRequest({
      method: request.method ?? "GET",
      path: `${url.pathname}${url.search}`,
      headers: requestHeaders(request.rawHeaders, url),
      createConnection: () => upstreamSocket,
      maxHeaderSize,
    });

    const flow: Flow = {
      computerId,
      target,
      address,
      close: (reason, code) => {
        endReason ??= reason;
        upstream.destroy();
        upstreamSocket.destroy();
        sendError(code, reason);
      },
    };
    flows.add(flow);

    const finish = (): void => {
      if (finished) return;
      finished = true;
      flows.delete(flow);
      release();
      upstreamSocket.destroy();
      emit({
        ...base,
        computerId,
        resolvedAddress: address,
        decision: "allowed",
        ...(endReason === undefined ? {} : { reason: endReason }),
        status,
        bytesUp: upstreamSocket.bytesWritten,
        bytesDown: upstreamSocket.bytesRead,
        durationMs: now() - started,
      });
    };

    const sendError = (code: number, message: string): void => {
      status = code;
      if (response.headersSent || response.destroyed) {
        request.socket.destroy();
        return;
      }
      const body = `${message}\n`;
      response.writeHead(code, {
        "content-type": "text/plain; charset=utf-8",
        "content-length": Buffer.byteLength(body),
        [egressHeader]: code === 403 ? "denied" : "error",
      });
      response.end(body);
    };

    upstreamSocket.setTimeout(idleTimeoutMs, () => {
      endReason ??= `roost egress: ${formatTarget(target)} sent nothing for ${idleTimeoutMs} ms; closed.`;
      upstream.destroy();
      sendError(504, endReason);
    }); // E7

    upstream.on("response", (upstreamResponse) => {
      status = upstreamResponse.statusCode ?? 502;
      response.writeHead(
        status,
        upstreamResponse.statusMessage,
        responseHeaders(upstreamResponse.rawHeaders),
      );
      upstreamResponse.pipe(response);
      upstreamResponse.on("error", () => request.socket.destroy());
    });
    upstream.on("error", (error) => {
      const code = (error as { code?: string }).code ?? error.message;
      endReason ??= `roost egress: ${formatTarget(target)} failed (${code}).`;
      sendError(502, endReason);
    });
    request.pipe(upstream);
    response.on("close", finish);
    request.on("error", () => upstream.destroy());
  }

  async function handleConnect(
    request: IncomingMessage,
    clientSocket: Socket,
    head: Buffer,
  ): Promise<void> {
    const started = now();
    clientSocket.on("error", () => clientSocket.destroy());
    const parsed = parseAuthority(request.url ?? "");
    const base = baseEntry(clientSocket, "CONNECT", "target" in parsed ? parsed.target : undefined);
    let computerId: string | null = null;
    let release: (() => void) | undefined;
    let upstreamSocket: Socket | undefined;
    try {
      computerId = identifyOrRefuse(clientSocket);
      if ("error" in parsed) throw new ProxyFailure(400, "bad-request", parsed.error);
      const { target } = parsed;
      release = reserve(computerId, target);
      const addresses = await resolveChecked(computerId, target);
      upstreamSocket = await connectTo(target, addresses, () => clientSocket.destroyed);
      const address =
        normalizeIp(upstreamSocket.remoteAddress ?? "") ?? upstreamSocket.remoteAddress ?? "";
      checkAgain(computerId, target, address);
      if (clientSocket.destroyed)
        throw new ProxyFailure(499, "upstream-failed", "roost egress: the client went away.");
      tunnel(clientSocket, upstreamSocket, head, {
        computerId,
        target,
        address,
        started,
        base,
        release,
      });
      release = undefined;
    } catch (error) {
      release?.();
      upstreamSocket?.destroy();
      const failure = failureOf(error);
      logRefusal(base, failure, started, computerId);
      if (!clientSocket.destroyed) {
        const { body, marker } = refusalBody(failure);
        clientSocket.end(
          `HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status] ?? "Error"}\r\n` +
            `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
            `X-Roost-Egress: ${marker}\r\nConnection: close\r\n\r\n${body}`,
        ); // E3
      }
    }
  }

  function tunnel(
    clientSocket: Socket,
    upstreamSocket: Socket,
    head: Buffer,
    info: {
      computerId: string;
      target: EgressTarget;
      address: string;
      started: number;
      base: EntryBase;
      release: () => void;
    },
  ): void {
    const { computerId, target, address, started, base, release } = info;
    let endReason: string | undefined;
    let finished = false;
    const flow: Flow = {
      computerId,
      target,
      address,
      close: (reason) => {
        endReason ??= reason;
        clientSocket.destroy();
        upstreamSocket.destroy();
      },
    };
    flows.add(flow);
    const finish = (): void => {
      if (finished) return;
      finished = true;
      flows.delete(flow);
      release();
      clientSocket.destroy();
      upstreamSocket.destroy();
      emit({
        ...base,
        computerId,
        resolvedAddress: address,
        decision: "allowed",
        ...(endReason === undefined ? {} : { reason: endReason }),
        status: 200,
        bytesUp: upstreamSocket.bytesWritten,
        bytesDown: upstreamSocket.bytesRead,
        durationMs: now() - started,
      });
    };
    const onIdle = (): void => {
      endReason ??= `roost egress: tunnel to ${formatTarget(target)} was idle for ${idleTimeoutMs} ms; closed.`;
      finish();
    };
    clientSocket.setTimeout(idleTimeoutMs, onIdle); // E7
    upstreamSocket.setTimeout(idleTimeoutMs, onIdle);
    clientSocket.on("close", finish);
    upstreamSocket.on("close", finish);
    upstreamSocket.on("error", () => upstreamSocket.destroy());
    clientSocket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) upstreamSocket.write(head);
    clientSocket.pipe(upstreamSocket);
    upstreamSocket.pipe(clientSocket);
  }

  function createListener(): Server {
    const server = createServer({
      maxHeaderSize,
      headersTimeout: headersTimeoutMs, // E7
      requestTimeout: 0, // uploads may take long; idle time is bounded per socket instead
      keepAliveTimeout: 5_000,
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(headersTimeoutMs / 2))),
    });
    server.on("connection", (socket: Socket) => {
      const remote = `${normalizeIp(socket.remoteAddress ?? "") ?? ""}:${socket.remotePort ?? 0}`;
      if (outgoing.has(remote)) {
        socket.destroy(); // E6: our own outgoing connection came back to us
        return;
      }
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
      socket.setTimeout(idleTimeoutMs, () => socket.destroy());
    });
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      void handleRequest(request, response);
    });
    server.on("connect", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      void handleConnect(request, socket as Socket, head);
    });
    server.on("upgrade", (_request: IncomingMessage, socket: Duplex) => {
      const body =
        "roost egress: protocol upgrades are not proxied as plain HTTP; use CONNECT (HTTPS_PROXY / wss://).\n";
      socket.end(
        `HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nX-Roost-Egress: error\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    return server;
  }

  const proxy: EgressProxy = {
    async listen(host, port) {
      if (closed) throw new Error("roost egress: the proxy is closed");
      const server = createListener();
      await new Promise<void>((resolvePromise, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          resolvePromise();
        });
      });
      const bound = server.address();
      const address =
        bound !== null && typeof bound === "object"
          ? { host: bound.address, port: bound.port }
          : { host, port };
      servers.push({ server, address });
      server.on("error", (error) =>
        log(`roost egress: listener ${host}:${port} failed: ${String(error)}`),
      );
      return address;
    },
    setPolicy(computerId, input) {
      const policy = parseEgressPolicy(input);
      policies.set(computerId, compilePolicy(policy, compileOptions));
      recheck(computerId); // E5
      return policy;
    },
    policyOf(computerId) {
      return policyFor(computerId).policy;
    },
    assign(sourceAddress, computerId) {
      const normalized = normalizeIp(sourceAddress);
      if (normalized === undefined)
        throw new Error(`roost egress: ${JSON.stringify(sourceAddress)} is not an IP address`);
      sources.set(normalized, computerId);
    },
    unassign(sourceAddress) {
      const normalized = normalizeIp(sourceAddress);
      if (normalized !== undefined) sources.delete(normalized);
    },
    removeComputer(computerId) {
      policies.delete(computerId);
      for (const [source, owner] of sources) if (owner === computerId) sources.delete(source);
      for (const flow of flows) {
        if (flow.computerId === computerId)
          flow.close("roost egress: the computer was removed from the proxy.", 503);
      }
    },
    recheck: () => recheck(),
    stats() {
      return {
        listening: servers.map((entry) => ({ ...entry.address })),
        open: [...openPerComputer.values()].reduce((sum, count) => sum + count, 0),
        ...totals,
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      for (const flow of flows) flow.close("roost egress: the proxy is shutting down.", 503);
      const closing = servers.map(
        ({ server }) => new Promise<void>((resolvePromise) => server.close(() => resolvePromise())),
      );
      for (const { server } of servers) server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await Promise.all(closing);
    },
  };
  options.signal?.addEventListener("abort", () => void proxy.close(), { once: true });
  return proxy;
}

function parseAbsoluteUrl(
  request: IncomingMessage,
): { target: EgressTarget; url: URL } | { error: string } {
  const raw = request.url ?? "";
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    return {
      error: `roost egress: this is a proxy; send absolute URLs (http://host/path) or CONNECT host:port, not ${JSON.stringify(raw.slice(0, 100))}.`,
    };
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { error: `roost egress: ${JSON.stringify(raw.slice(0, 200))} is not a valid URL.` };
  }
  if (url.protocol !== "http:") {
    return {
      error: `roost egress: only http:// URLs are forwarded as plain requests; ${url.protocol}// goes through CONNECT (set HTTPS_PROXY).`,
    };
  }
  if (url.username !== "" || url.password !== "") {
    return {
      error:
        "roost egress: URLs with user names or passwords are not proxied; send an Authorization header.",
    };
  }
  const host = normalizeTargetHost(url.hostname);
  if (host === undefined)
    return { error: `roost egress: ${JSON.stringify(url.hostname)} is not a valid host.` };
  const port = url.port === "" ? 80 : Number(url.port);
  if (port < 1) return { error: `roost egress: port ${port} is not a destination port.` };
  return { target: { host, port }, url };
}

function parseAuthority(authority: string): { target: EgressTarget } | { error: string } {
  const match = /^(.+):(\d{1,5})$/.exec(authority);
  const port = Number(match?.[2]);
  if (match === null || port < 1 || port > 65535) {
    return {
      error: `roost egress: CONNECT needs host:port, not ${JSON.stringify(authority.slice(0, 200))}.`,
    };
  }
  let hostname: string;
  try {
    const url = new URL(`http://${match[1] ?? ""}`);
    if (url.pathname !== "/" || url.search !== "" || url.username !== "" || url.port !== "")
      throw new Error("extra");
    hostname = url.hostname;
  } catch {
    return {
      error: `roost egress: ${JSON.stringify(authority.slice(0, 200))} is not a valid host:port.`,
    };
  }
  const host = normalizeTargetHost(hostname);
  if (host === undefined)
    return { error: `roost egress: ${JSON.stringify(hostname)} is not a valid host.` };
  return { target: { host, port } };
}

/** WHATWG-normalized host (numeric IPv4 forms already canonical) → canonical IP or host name. */
function normalizeTargetHost(hostname: string): string | undefined {
  const bare =
    hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return normalizeIp(bare) ?? normalizeHostName(bare);
}

function connectionTokens(rawHeaders: readonly string[]): Set<string> {
  const tokens = new Set<string>();
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    if (rawHeaders[index]?.toLowerCase() !== "connection") continue;
    for (const token of (rawHeaders[index + 1] ?? "").split(","))
      tokens.add(token.trim().toLowerCase());
  }
  return tokens;
}

function filterHeaders(rawHeaders: readonly string[], drop: (name: string) => boolean): string[] {
  const tokens = connectionTokens(rawHeaders);
  const kept: string[] = [];
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    const name = rawHeaders[index] ?? "";
    const lower = name.toLowerCase();
    if (hopByHopHeaders.has(lower) || tokens.has(lower) || drop(lower)) continue;
    kept.push(name, rawHeaders[index + 1] ?? "");
  }
  return kept;
}

function requestHeaders(rawHeaders: readonly string[], url: URL): string[] {
  // The absolute URL decides the destination, so Host must match it (RFC 9112 §3.2.2).
  const headers = filterHeaders(rawHeaders, (name) => name === "host" || name === "via");
  const via = rawHeaders.reduce<string[]>(
    (list, value, index) =>
      index % 2 === 0 && value.toLowerCase() === "via"
        ? [...list, rawHeaders[index + 1] ?? ""]
        : list,
    [],
  );
  return [
    "Host",
    url.host,
    ...headers,
    "Via",
    [...via, `1.1 ${viaToken}`].join(", "), // E6
    "Connection",
    "close",
  ];
}

function responseHeaders(rawHeaders: readonly string[]): string[] {
  return filterHeaders(rawHeaders, () => false);
}
