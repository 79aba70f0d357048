/**
 * The host-side egress proxy every computer's traffic leaves through. Each awake computer gets two
 * unix sockets of its own (the local provider mounts them into its sandbox, where a forwarder
 * serves them at 127.0.0.1:3128 and 127.0.0.1:1080): one for plain HTTP proxy requests
 * (absolute-form URLs) and CONNECT tunnels, one for SOCKS5 (socks.ts). Every request is checked
 * against the computer's policy and what the operator and the host impose (policy.ts).
 * docs/egress.md describes the behaviour for users and operators.
 *
 * Invariants:
 *   E1 A connection's computer is the computer whose socket it arrived on (`listenComputer`),
 *      never anything the client sends and never an address.
 *   E2 The proxy resolves names itself, checks EVERY address a name resolves to, and connects to
 *      a checked address, never to the name again (no DNS rebinding between check and connect).
 *   E3 Nothing is sent to a destination before the checks pass; a refusal is an HTTP 403 (for
 *      CONNECT too, before any tunnel exists) with a plain-text reason and `X-Roost-Egress:
 *      denied`, or for SOCKS5 the reply "connection not allowed by ruleset".
 *   E4 Every request, allowed or refused, produces exactly one log entry (`onRequest`), written
 *      when it ends; a failing hook never affects traffic.
 *   E5 `setPolicy` applies to new requests at once and re-checks the computer's open connections
 *      at once; a periodic re-check (every `recheckIntervalMs`) closes any open connection its
 *      computer's current policy no longer allows, so changes reach running computers in time.
 *   E6 The proxy records the local end of every connection it opens (`isOwnConnection`), so the
 *      platform can refuse connections that come from it (local sign-in), and forwarded plain
 *      requests carry a `Via` marker; one that arrives carrying it is refused.
 *   E7 Every socket has a deadline: DNS, connect, headers (or the SOCKS5 handshake), and idle
 *      time on open connections.
 *   E8 A computer holds at most `maxConnectionsPerComputer` sockets to the proxy at once, idle
 *      and half-sent ones included; further ones are closed at once, and logged, so one
 *      computer cannot use up the server's file descriptors.
 *   E9 With an interceptor (the vault, intercept.ts), a plain request or a CONNECT is looked
 *      inside only for a host the interceptor claims, and only after the checks of E2/E3 passed;
 *      every other request is forwarded, and every other tunnel tunnelled, untouched.
 *   E10 An intercepted TLS session is answered with the interceptor's certificate; each request
 *      in it goes to the CONNECT's host and a checked address (its Host header rewritten, the
 *      policy re-checked), over TLS that verifies the upstream's certificate chain (Node's roots
 *      plus `upstreamCa`) and host name; a failed verification is a 502 naming the reason.
 */
import { lookup } from "node:dns/promises";
import { rm } from "node:fs/promises";
import {
  createServer,
  request as httpRequest,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import {
  connect as netConnect,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from "node:net";
import { networkInterfaces } from "node:os";
import { PassThrough, type Duplex } from "node:stream";
import {
  connect as tlsConnect,
  createSecureContext,
  rootCertificates,
  TLSSocket,
  type SecureContext,
} from "node:tls";
import { ConfigError } from "../errors/index.ts";
import { createThrottledWarning, silentLogger, type Logger } from "../log/index.ts";
import {
  classifyRange,
  formatRange,
  normalizeIp,
  operatorClasses,
  parseCidr,
  type IpRange,
} from "./addresses.ts";
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
import type { EgressInterception, EgressInterceptor } from "./intercept.ts";
import { encodeSocksReply, readSocksHandshake, socksReply, type SocksReplyCode } from "./socks.ts";

/** Why the proxy refused or failed a request, beyond the policy's own denial codes. */
export type EgressRefusalCode =
  EgressDenial["code"] | "proxy-loop" | "bad-request" | "unresolvable" | "upstream-failed";

/** One request through the proxy, allowed or refused (E4). */
export interface EgressLogEntry {
  computerId: string;
  /** `GET`, `CONNECT`, … for the HTTP socket; `SOCKS5` for the SOCKS socket. */
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
  /** HTTP status sent to the computer (200 for an opened tunnel); for SOCKS5 its HTTP equivalent. */
  status: number;
  /** Bytes written to the destination (for HTTP requests including the request head). */
  bytesUp: number;
  /** Bytes read from the destination. */
  bytesDown: number;
  durationMs: number;
  /** Set when the vault looked inside the request or TLS session (E9). */
  intercepted?: true;
}

/** The two sockets of one computer (host paths). */
export interface ComputerEgressSockets {
  /** Plain HTTP proxy requests and CONNECT. */
  http: string;
  /** SOCKS5. */
  socks: string;
}

/** A computer's listening sockets; `close` stops them and ends the connections they accepted. */
export interface EgressListener {
  close(): Promise<void>;
}

export interface EgressStats {
  /** Computers with sockets. */
  computers: number;
  /** Requests and tunnels in progress. */
  open: number;
  /** Client sockets connected to the proxy (E8 counts these). */
  sockets: number;
  allowed: number;
  denied: number;
  bytesUp: number;
  bytesDown: number;
}

export type EgressResolver = (hostname: string) => Promise<string[]>;

export interface EgressProxyOptions {
  /** Name → addresses. @default dns.promises.lookup with `all: true` */
  resolve?: EgressResolver;
  /** Opens a TCP connection to a checked address. @default node:net connect */
  connect?: (address: string, port: number) => Socket;
  /** Called once per request when it ends (E4). */
  onRequest?: (entry: EgressLogEntry) => void | Promise<void>;
  /** Policy of computers without one of their own. @default { mode: "defaults-and-allowlist" } */
  defaultPolicy?: EgressPolicyInput;
  /** The built-in hosts of `defaults-and-allowlist`. @default defaultHosts */
  defaults?: readonly string[];
  /** The host's own addresses (P3), read at every check. @default every address of os.networkInterfaces() */
  hostAddresses?: () => Iterable<string>;
  /** Private ranges the operator opens for computers (P4; ROOST_EGRESS_ALLOW_PRIVATE). @default none */
  allowPrivate?: readonly string[];
  /** Roost's own ports, refused on every non-public address (P3). @default none */
  platformPorts?: () => Iterable<number>;
  /** @default 30_000 */
  recheckIntervalMs?: number;
  /** @default 5_000 */
  dnsTimeoutMs?: number;
  /** Per address tried. @default 10_000 */
  connectTimeoutMs?: number;
  /** Time to receive a request's headers, or to finish the SOCKS5 handshake. @default 10_000 */
  headersTimeoutMs?: number;
  /** An open request or tunnel with no traffic either way for this long is closed. @default 300_000 */
  idleTimeoutMs?: number;
  /** Bytes of request or response headers. @default 16_384 */
  maxHeaderSize?: number;
  /** Sockets one computer may hold to the proxy at once, both protocols, idle ones included (E8). @default 256 */
  maxConnectionsPerComputer?: number;
  /** Looks inside the requests of the hosts it claims (the vault; E9, E10). @default none */
  intercept?: EgressInterceptor;
  now?: () => number;
  /** @default silent */
  logger?: Logger;
  signal?: AbortSignal;
}

export interface EgressProxy {
  /**
   * Serve a computer's connections on its two unix sockets (E1), created at these host paths
   * (a stale file there is replaced). The caller decides who may open them (file owner and mode).
   */
  listenComputer(computerId: string, sockets: ComputerEgressSockets): Promise<EgressListener>;
  /** Set a computer's policy (validated; throws InvalidRequestError). Applies at once (E5). */
  setPolicy(computerId: string, policy: EgressPolicyInput): EgressPolicy;
  policyOf(computerId: string): EgressPolicy;
  /** Forget a computer's policy and close its open connections. */
  removeComputer(computerId: string): void;
  /** Re-check every open connection against its computer's current policy now (E5). */
  recheck(): void;
  /** E6: whether `address:port` is the local end of a connection this proxy opened. */
  isOwnConnection(address: string, port: number): boolean;
  /** What the operator and the host impose beyond a computer's policy (P3, P4). */
  readonly context: DestinationContext;
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

function hostAddressSet(source: (() => Iterable<string>) | undefined): Set<string> {
  const set = new Set<string>();
  for (const address of source?.() ?? readHostAddresses()) {
    const normalized = normalizeIp(address);
    if (normalized !== undefined) set.add(normalized);
  }
  return set;
}

/**
 * What the operator's settings and the host impose on every destination (P3, P4), for the
 * proxy and for validating users' policies (`parseUserEgressPolicy`). The host's addresses are
 * read at every call: nothing is cached, so a new address is refused at once.
 */
export function createDestinationContext(options: {
  hostAddresses?: () => Iterable<string>;
  /** Validated by parseAllowPrivate (throws ConfigError). */
  allowPrivate?: readonly string[];
  platformPorts?: () => Iterable<number>;
}): DestinationContext {
  return {
    isHostAddress: (address) => hostAddressSet(options.hostAddresses).has(address),
    allowPrivate: parseAllowPrivate(options.allowPrivate ?? []),
    isPlatformPort: (port) => [...(options.platformPorts?.() ?? [])].includes(port),
  };
}

/**
 * The operator's private ranges (P4), validated: each must lie in private or CGNAT space, so no
 * setting opens loopback, link-local or anything public by mistake.
 */
export function parseAllowPrivate(ranges: readonly string[]): IpRange[] {
  return ranges.map((text) => {
    const range = parseCidr(text.trim());
    if (range === undefined) {
      throw new ConfigError(
        `ROOST_EGRESS_ALLOW_PRIVATE: ${JSON.stringify(text)} is not an IP range (write CIDRs such as 10.20.0.0/16,fd00:1::/64)`,
      );
    }
    const scope = classifyRange(range);
    if (!operatorClasses.has(scope)) {
      throw new ConfigError(
        `ROOST_EGRESS_ALLOW_PRIVATE: ${formatRange(range)} is ${scope === "public" ? "not entirely private" : scope}; only ranges inside 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 or fc00::/7 can be opened (loopback, link-local and the host's own addresses never can)`,
      );
    }
    return range;
  });
}

class ProxyFailure extends Error {
  readonly status: number;
  readonly code: EgressRefusalCode;
  readonly resolvedAddress: string | undefined;
  readonly socks: SocksReplyCode;
  constructor(
    status: number,
    code: EgressRefusalCode,
    message: string,
    options: { resolvedAddress?: string; socks?: SocksReplyCode } = {},
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.resolvedAddress = options.resolvedAddress;
    this.socks =
      options.socks ??
      (status === 403
        ? socksReply.notAllowed
        : code === "unresolvable"
          ? socksReply.hostUnreachable
          : socksReply.generalFailure);
  }
}

type EntryBase = Pick<EgressLogEntry, "computerId" | "method" | "host" | "port">;

interface Flow {
  computerId: string;
  target: EgressTarget;
  address: string;
  /** Close it; `status` is sent if the computer has not had a response yet. */
  close(reason: string, status: number): void;
}

/** Create the egress proxy. `listenComputer` gives a computer its sockets; `close` stops it. */
export function createEgressProxy(options: EgressProxyOptions = {}): EgressProxy {
  const resolve = options.resolve ?? defaultResolver;
  const dial =
    options.connect ?? ((address: string, port: number) => netConnect({ host: address, port }));
  const now = options.now ?? Date.now;
  const logger = (options.logger ?? silentLogger).child({ component: "egress" });
  const recheckIntervalMs = options.recheckIntervalMs ?? 30_000;
  const dnsTimeoutMs = options.dnsTimeoutMs ?? 5_000;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const headersTimeoutMs = options.headersTimeoutMs ?? 10_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 300_000;
  const maxHeaderSize = options.maxHeaderSize ?? 16_384;
  const maxConnectionsPerComputer = options.maxConnectionsPerComputer ?? 256;
  const compileOptions = options.defaults === undefined ? {} : { defaults: options.defaults };
  const defaultPolicy = compilePolicy(
    parseEgressPolicy(options.defaultPolicy ?? { mode: "defaults-and-allowlist" }),
    compileOptions,
  );
  const warnLimit = createThrottledWarning(
    logger,
    "a computer reached its limit of connections to the egress proxy; further ones are refused",
  );
  const warnHeaders = createThrottledWarning(
    logger,
    "a connection to the egress proxy did not finish its request headers (or SOCKS5 handshake) in time; closed",
  );

  const policies = new Map<string, CompiledPolicy>();
  const listeners = new Set<{ computerId: string; close: () => Promise<void> }>();
  const sockets = new Set<Socket>();
  const socketsPerComputer = new Map<string, number>();
  const flows = new Set<Flow>();
  /** `address:port` of the proxy's own outgoing sockets (E6). */
  const outgoing = new Set<string>();
  const totals = { allowed: 0, denied: 0, bytesUp: 0, bytesDown: 0 };
  let closed = false;

  const context = createDestinationContext(options);
  /** The context of one check or re-check pass: the host's addresses read once for it. */
  const checkContext = (): DestinationContext => {
    const hostAddresses = hostAddressSet(options.hostAddresses);
    return { ...context, isHostAddress: (address) => hostAddresses.has(address) };
  };

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
        result.catch((error: unknown) => logger.warn("egress request log hook failed", { error }));
      }
    } catch (error) {
      logger.warn("egress request log hook failed", { error }); // E4
    }
  }

  function recheck(onlyComputer?: string): void {
    const snapshot = checkContext();
    for (const flow of flows) {
      if (onlyComputer !== undefined && flow.computerId !== onlyComputer) continue;
      const denial = checkDestination(
        policyFor(flow.computerId),
        flow.target,
        [flow.address],
        snapshot,
      );
      if (denial !== undefined) flow.close(`closed, no longer allowed: ${denial.message}`, 403); // E5
    }
  }

  const timer = setInterval(() => recheck(), recheckIntervalMs);
  timer.unref();

  async function resolveChecked(computerId: string, target: EgressTarget): Promise<string[]> {
    const policy = policyFor(computerId);
    const verdict = checkName(policy, target); // P7: before any lookup
    if (!verdict.allowed) throw new ProxyFailure(403, verdict.denial.code, verdict.denial.message);
    const addresses =
      normalizeIp(target.host) === undefined
        ? await resolveWithTimeout(target.host)
        : [target.host];
    const snapshot = checkContext();
    for (const address of addresses) {
      // E2: every address, and the request is refused if any one is refused.
      const denial = checkAddress(policy, target, address, verdict.byName, snapshot);
      if (denial !== undefined)
        throw new ProxyFailure(403, denial.code, denial.message, { resolvedAddress: address });
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
  ): Promise<{ socket: Socket; address: string }> {
    let lastError = "no address";
    for (const address of addresses) {
      if (isGone()) break;
      try {
        return { socket: await connectOne(address, target.port), address };
      } catch (error) {
        lastError = (error as { code?: string }).code ?? String(error);
      }
    }
    const status = lastError === "ETIMEDOUT" ? 504 : 502;
    const socks =
      lastError === "ECONNREFUSED"
        ? socksReply.connectionRefused
        : lastError === "ENETUNREACH"
          ? socksReply.networkUnreachable
          : socksReply.hostUnreachable;
    throw new ProxyFailure(
      status,
      "upstream-failed",
      `roost egress: could not connect to ${formatTarget(target)} (${lastError}).`,
      { ...(addresses[0] === undefined ? {} : { resolvedAddress: addresses[0] }), socks },
    );
  }

  function connectOne(address: string, port: number): Promise<Socket> {
    return new Promise((resolvePromise, reject) => {
      const socket = dial(address, port);
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

  /** Close the race between the check and the connect: the policy may have changed meanwhile. */
  function checkAgain(computerId: string, target: EgressTarget, address: string): void {
    const denial = checkDestination(policyFor(computerId), target, [address], checkContext());
    if (denial !== undefined)
      throw new ProxyFailure(403, denial.code, denial.message, { resolvedAddress: address });
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

  function baseEntry(
    computerId: string,
    method: string,
    target: EgressTarget | undefined,
  ): EntryBase {
    return { computerId, method, host: target?.host ?? "", port: target?.port ?? 0 };
  }

  function logRefusal(base: EntryBase, failure: ProxyFailure, started: number): void {
    emit({
      ...base,
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

  /** Checks, resolves and connects for a tunnel (CONNECT or SOCKS5), or throws a ProxyFailure. */
  async function openTunnel(
    computerId: string,
    target: EgressTarget,
    clientSocket: Socket,
    resolved?: readonly string[],
  ): Promise<{ upstreamSocket: Socket; address: string }> {
    const addresses = resolved ?? (await resolveChecked(computerId, target));
    const { socket: upstreamSocket, address } = await connectTo(
      target,
      addresses,
      () => clientSocket.destroyed,
    );
    try {
      checkAgain(computerId, target, address);
      if (clientSocket.destroyed)
        throw new ProxyFailure(499, "upstream-failed", "roost egress: the client went away.");
    } catch (error) {
      upstreamSocket.destroy();
      throw error;
    }
    return { upstreamSocket, address };
  }

  async function handleRequest(
    computerId: string,
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<void> {
    const started = now();
    const socket = request.socket;
    const method = request.method ?? "GET";
    const parsed = parseAbsoluteUrl(request);
    const base = baseEntry(computerId, method, "target" in parsed ? parsed.target : undefined);
    try {
      if ("error" in parsed) throw new ProxyFailure(400, "bad-request", parsed.error);
      const { target, url } = parsed;
      if (String(request.headers.via ?? "").includes(viaToken)) {
        throw new ProxyFailure(
          403,
          "proxy-loop",
          `roost egress: ${formatTarget(target)}: the request came through this proxy already; refusing to loop.`,
        ); // E6
      }
      const addresses = await resolveChecked(computerId, target);
      const interception = await options.intercept?.interceptionFor(computerId, target); // E9
      const body = interception?.swapsBody === true ? await readBody(request, target) : undefined;
      const { upstreamSocket, address } = await openTunnel(computerId, target, socket, addresses);
      forward(request, response, {
        computerId,
        target,
        url,
        address,
        upstreamSocket,
        started,
        base,
        interception,
        ...(body === undefined ? {} : { body }),
      });
    } catch (error) {
      refuseRequest(response, base, error, started);
    }
  }

  function refuseRequest(
    response: ServerResponse,
    base: EntryBase,
    error: unknown,
    started: number,
  ): void {
    const failure = failureOf(error);
    logRefusal(base, failure, started);
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

  interface TlsSession {
    computerId: string;
    target: EgressTarget;
    addresses: readonly string[];
    interception: EgressInterception;
    started: number;
    base: EntryBase;
  }
  /** A request in an intercepted session to a host that has no brokered secret any more. */
  const passThrough: EgressInterception = {
    serverContext: () => {
      throw new Error("roost egress: no server context for a pass-through request");
    },
    swapsBody: false,
    requestHeaders: (rawHeaders) => [...rawHeaders],
    requestBody: (body) => body,
    responseHeaders: (rawHeaders) => [...rawHeaders],
    responseBody: () => new PassThrough(),
  };
  /** The TLS sessions the vault terminates, by their server-side socket (E10). */
  const sessions = new WeakMap<Duplex, TlsSession>();
  const interceptServer = createServer({
    maxHeaderSize,
    headersTimeout: headersTimeoutMs, // E7
    requestTimeout: 0,
    keepAliveTimeout: 5_000,
  });
  interceptServer.on("request", (request: IncomingMessage, response: ServerResponse) => {
    void handleIntercepted(request, response);
  });
  interceptServer.on("clientError", (_error: Error, socket: Duplex) => socket.destroy());
  interceptServer.on("upgrade", (_request: IncomingMessage, socket: Duplex) => {
    const body =
      "roost vault: protocol upgrades (WebSocket) are not brokered; brokered hosts take plain HTTP/1.1 requests.\n";
    socket.end(
      `HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Roost-Egress: error\r\nConnection: close\r\n\r\n${body}`,
    );
  });

  /** E10: answer the computer's TLS with the interceptor's certificate and serve HTTP inside. */
  function terminateTls(clientSocket: Socket, head: Buffer, session: TlsSession): void {
    const { computerId, target, addresses, started, base } = session;
    if (head.length > 0) clientSocket.unshift(head);
    const secure = new TLSSocket(clientSocket, {
      isServer: true,
      secureContext: session.interception.serverContext(),
      ALPNProtocols: ["http/1.1"],
    });
    sessions.set(secure, session);
    let endReason: string | undefined;
    let finished = false;
    const flow: Flow = {
      computerId,
      target,
      address: addresses[0] ?? target.host,
      close: (reason) => {
        endReason ??= reason;
        secure.destroy();
        clientSocket.destroy();
      },
    };
    flows.add(flow);
    const handshake = setTimeout(() => {
      endReason ??= `roost vault: the TLS handshake for ${formatTarget(target)} did not finish in ${headersTimeoutMs} ms; closed.`;
      secure.destroy();
    }, headersTimeoutMs); // E7
    secure.once("secure", () => clearTimeout(handshake));
    secure.on("error", (error: Error & { code?: string }) => {
      endReason ??= `roost vault: TLS with the computer failed (${error.code ?? error.message}); does it trust its vault CA (SSL_CERT_FILE)?`;
      secure.destroy();
    });
    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearTimeout(handshake);
      flows.delete(flow);
      clientSocket.destroy();
      emit({
        ...base,
        ...(addresses[0] === undefined ? {} : { resolvedAddress: addresses[0] }),
        decision: "allowed",
        ...(endReason === undefined ? {} : { reason: endReason }),
        status: 200,
        bytesUp: 0,
        bytesDown: 0,
        durationMs: now() - started,
        intercepted: true,
      });
    };
    secure.on("close", finish);
    clientSocket.on("close", finish);
    interceptServer.emit("connection", secure);
  }

  async function handleIntercepted(
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<void> {
    const started = now();
    const session = sessions.get(request.socket);
    const method = request.method ?? "GET";
    if (session === undefined) {
      request.socket.destroy();
      return;
    }
    const { computerId, target, addresses } = session;
    const base = baseEntry(computerId, method, target);
    try {
      // E9 per request: a secret removed since the CONNECT is not swapped into this one; the
      // session's certificate stays (the computer already trusts it for this host).
      const interception =
        (await options.intercept?.interceptionFor(computerId, target)) ?? passThrough;
      const raw = request.url ?? "";
      if (!raw.startsWith("/")) {
        throw new ProxyFailure(
          400,
          "bad-request",
          `roost vault: inside an HTTPS connection send origin-form request targets (/path), not ${JSON.stringify(raw.slice(0, 100))}.`,
        );
      }
      if (String(request.headers.via ?? "").includes(viaToken)) {
        throw new ProxyFailure(
          403,
          "proxy-loop",
          `roost egress: ${formatTarget(target)}: the request came through this proxy already; refusing to loop.`,
        ); // E6
      }
      // E10: the CONNECT's host, whatever Host the computer sent inside.
      const url = new URL(`https://${formatTarget(target)}${raw}`);
      const body = interception.swapsBody ? await readBody(request, target) : undefined;
      const { upstreamSocket, address } = await openTlsUpstream(
        computerId,
        target,
        addresses,
        request.socket,
      );
      forward(request, response, {
        computerId,
        target,
        url,
        address,
        upstreamSocket,
        started,
        base,
        interception,
        ...(body === undefined ? {} : { body }),
      });
    } catch (error) {
      refuseRequest(response, base, error, started);
    }
  }

  let upstreamSecureContext: SecureContext | undefined;
  /** Built once: parsing the public roots for every connection would cost milliseconds each. */
  function upstreamContext(): SecureContext {
    const extra = options.intercept?.upstreamCa ?? [];
    upstreamSecureContext ??= createSecureContext(
      extra.length === 0 ? {} : { ca: [...rootCertificates, ...extra] },
    );
    return upstreamSecureContext;
  }

  /** E10: a checked address, then TLS that verifies the upstream's chain and name. */
  async function openTlsUpstream(
    computerId: string,
    target: EgressTarget,
    addresses: readonly string[],
    clientSocket: Socket,
  ): Promise<{ upstreamSocket: Socket; address: string }> {
    const { upstreamSocket: plain, address } = await openTunnel(
      computerId,
      target,
      clientSocket,
      addresses,
    );
    const secure = tlsConnect({
      socket: plain,
      host: target.host,
      ...(normalizeIp(target.host) === undefined ? { servername: target.host } : {}),
      secureContext: upstreamContext(),
      ALPNProtocols: ["http/1.1"],
      rejectUnauthorized: true,
    });
    plain.on("error", () => secure.destroy());
    try {
      await new Promise<void>((resolvePromise, reject) => {
        const timer = setTimeout(
          () => reject(Object.assign(new Error("TLS handshake timed out"), { code: "ETIMEDOUT" })),
          connectTimeoutMs,
        ); // E7
        secure.once("secureConnect", () => {
          clearTimeout(timer);
          secure.removeAllListeners("error");
          resolvePromise();
        });
        secure.once("error", (error: Error) => {
          clearTimeout(timer);
          reject(error);
        });
      });
    } catch (error) {
      secure.destroy();
      plain.destroy();
      const code = (error as { code?: string }).code ?? "";
      throw new ProxyFailure(
        502,
        "upstream-failed",
        `roost vault: TLS to ${formatTarget(target)} failed: ${code === "" ? "" : `${code}: `}${(error as Error).message}. The upstream's certificate must chain to a trusted root (ROOST_VAULT_UPSTREAM_CA_FILE adds one) and name the host.`,
        { resolvedAddress: address },
      );
    }
    return { upstreamSocket: secure, address };
  }

  /** The whole body of a request whose body the vault rewrites, at most `maxBodyBytes`. */
  async function readBody(request: IncomingMessage, target: EgressTarget): Promise<Buffer> {
    const limit = options.intercept?.maxBodyBytes ?? 1_048_576;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) {
        throw new ProxyFailure(
          413,
          "bad-request",
          `roost vault: request bodies to ${target.host} are rewritten in memory, at most ${limit} bytes; send a smaller body, or broker the secret without body swapping.`,
        );
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks);
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
      interception: EgressInterception | undefined;
      /** The whole request body, read already, when the interception rewrites it. */
      body?: Buffer;
    },
  ): void {
    const { computerId, target, url, address, upstreamSocket, started, base, interception } =
      flowInfo;
    const method = request.method ?? "GET";
    const body =
      flowInfo.body === undefined ? undefined : interception?.requestBody(flowInfo.body, method);
    let endReason: string | undefined;
    let status = 502;
    let finished = false;
    let headers = requestHeaders(request.rawHeaders, url);
    if (interception !== undefined) {
      // Redaction needs the response as sent: ask for no content coding.
      headers = interception.requestHeaders(
        [
          ...filterHeaders(headers, (name) => name === "accept-encoding"),
          "Accept-Encoding",
          "identity",
        ],
        method,
      );
      if (body !== undefined)
        headers = [
          ...filterHeaders(headers, (name) => name === "content-length"),
          "Content-Length",
          String(body.length),
        ];
    }

    const upstream = httpRequest({
      method,
      path: `${url.pathname}${url.search}`,
      headers,
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
      upstreamSocket.destroy();
      emit({
        ...base,
        resolvedAddress: address,
        decision: "allowed",
        ...(endReason === undefined ? {} : { reason: endReason }),
        status,
        bytesUp: upstreamSocket.bytesWritten,
        bytesDown: upstreamSocket.bytesRead,
        durationMs: now() - started,
        ...(interception === undefined ? {} : { intercepted: true as const }),
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
      if (interception === undefined) {
        response.writeHead(
          status,
          upstreamResponse.statusMessage,
          responseHeaders(upstreamResponse.rawHeaders),
        );
        upstreamResponse.pipe(response);
      } else {
        // Redaction may change the length: the body goes out chunked (or until close).
        const kept = filterHeaders(
          upstreamResponse.rawHeaders,
          (name) => name === "content-length",
        );
        response.writeHead(
          status,
          upstreamResponse.statusMessage,
          interception.responseHeaders(kept),
        );
        const redactor = interception.responseBody();
        redactor.on("error", () => request.socket.destroy());
        upstreamResponse.pipe(redactor).pipe(response);
      }
      upstreamResponse.on("error", () => request.socket.destroy());
    });
    upstream.on("error", (error) => {
      const code = (error as { code?: string }).code ?? error.message;
      endReason ??= `roost egress: ${formatTarget(target)} failed (${code}).`;
      sendError(502, endReason);
    });
    if (body !== undefined) {
      upstream.end(body);
    } else {
      request.pipe(upstream);
    }
    response.on("close", finish);
    request.on("error", () => upstream.destroy());
  }

  async function handleConnect(
    computerId: string,
    request: IncomingMessage,
    clientSocket: Socket,
    head: Buffer,
  ): Promise<void> {
    const started = now();
    clientSocket.on("error", () => clientSocket.destroy());
    const parsed = parseAuthority(request.url ?? "");
    const base = baseEntry(computerId, "CONNECT", "target" in parsed ? parsed.target : undefined);
    try {
      if ("error" in parsed) throw new ProxyFailure(400, "bad-request", parsed.error);
      const addresses = await resolveChecked(computerId, parsed.target);
      const interception = await options.intercept?.interceptionFor(computerId, parsed.target); // E9
      if (interception !== undefined) {
        if (clientSocket.destroyed)
          throw new ProxyFailure(499, "upstream-failed", "roost egress: the client went away.");
        clientSocket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        terminateTls(clientSocket, head, {
          computerId,
          target: parsed.target,
          addresses,
          interception,
          started,
          base,
        });
        return;
      }
      const { upstreamSocket, address } = await openTunnel(
        computerId,
        parsed.target,
        clientSocket,
        addresses,
      );
      clientSocket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      tunnel(clientSocket, upstreamSocket, head, {
        target: parsed.target,
        address,
        started,
        base,
      });
    } catch (error) {
      const failure = failureOf(error);
      logRefusal(base, failure, started);
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

  async function handleSocks(computerId: string, clientSocket: Socket): Promise<void> {
    const started = now();
    const timer = setTimeout(() => {
      warnHeaders({ computerId, protocol: "socks5" });
      clientSocket.destroy();
    }, headersTimeoutMs); // E7
    const handshake = await readSocksHandshake(clientSocket);
    clearTimeout(timer);
    const target = handshake.ok
      ? normalizeSocksTarget(handshake.destination)
      : handshake.destination === undefined
        ? undefined
        : normalizeSocksTarget(handshake.destination);
    const base = baseEntry(computerId, "SOCKS5", target);
    try {
      if (!handshake.ok) {
        if (handshake.reply === undefined) {
          // SOX2: not SOCKS5, no acceptable method, or gone: nothing more to answer.
          clientSocket.end();
          setTimeout(() => clientSocket.destroy(), 1000).unref();
          if (handshake.message === "the client went away") return;
        }
        throw new ProxyFailure(400, "bad-request", `roost egress: SOCKS5: ${handshake.message}.`, {
          socks: handshake.reply ?? socksReply.generalFailure,
        });
      }
      if (target === undefined) {
        throw new ProxyFailure(
          400,
          "bad-request",
          `roost egress: SOCKS5: ${JSON.stringify(handshake.destination.host.slice(0, 200))} is not a valid host.`,
          { socks: socksReply.hostUnreachable },
        );
      }
      if (target.port < 1)
        throw new ProxyFailure(
          400,
          "bad-request",
          "roost egress: SOCKS5: port 0 is not a destination port.",
        );
      const { upstreamSocket, address } = await openTunnel(computerId, target, clientSocket);
      clientSocket.write(encodeSocksReply(socksReply.succeeded));
      tunnel(clientSocket, upstreamSocket, handshake.head, { target, address, started, base });
    } catch (error) {
      const failure = failureOf(error);
      logRefusal(base, failure, started);
      if (!clientSocket.destroyed) clientSocket.end(encodeSocksReply(failure.socks)); // E3
    }
  }

  function tunnel(
    clientSocket: Socket,
    upstreamSocket: Socket,
    head: Buffer,
    info: { target: EgressTarget; address: string; started: number; base: EntryBase },
  ): void {
    const { target, address, started, base } = info;
    let endReason: string | undefined;
    let finished = false;
    const flow: Flow = {
      computerId: base.computerId,
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
      clientSocket.destroy();
      upstreamSocket.destroy();
      emit({
        ...base,
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
    if (head.length > 0) upstreamSocket.write(head);
    clientSocket.pipe(upstreamSocket);
    upstreamSocket.pipe(clientSocket);
  }

  /**
   * E8: counts the socket against its computer's limit; false (and the socket closed) when the
   * computer is at the limit.
   */
  function admit(computerId: string, socket: Socket): boolean {
    const open = socketsPerComputer.get(computerId) ?? 0;
    if (open >= maxConnectionsPerComputer) {
      warnLimit({ computerId, limit: maxConnectionsPerComputer });
      socket.on("error", () => undefined);
      socket.destroy();
      return false;
    }
    socketsPerComputer.set(computerId, open + 1);
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      const left = (socketsPerComputer.get(computerId) ?? 1) - 1;
      if (left <= 0) socketsPerComputer.delete(computerId);
      else socketsPerComputer.set(computerId, left);
    });
    socket.setTimeout(idleTimeoutMs, () => socket.destroy());
    return true;
  }

  function createHttpListener(computerId: string): Server {
    const server = createServer({
      maxHeaderSize,
      headersTimeout: headersTimeoutMs, // E7
      requestTimeout: 0, // uploads may take long; idle time is bounded per socket instead
      keepAliveTimeout: 5_000,
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(headersTimeoutMs / 2))),
    });
    server.on("connection", (socket: Socket) => {
      // Destroyed at once: the HTTP parser is already attached, so an answer written now could
      // race a request it parses from the same packet.
      admit(computerId, socket);
    });
    server.on("clientError", (error: Error & { code?: string }, socket: Duplex) => {
      const status =
        error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? 408
          : error.code === "HPE_HEADER_OVERFLOW"
            ? 431
            : 400;
      if (status === 408) warnHeaders({ computerId, protocol: "http" }); // E7
      if (socket.writable && !(socket as Socket).destroyed) {
        socket.end(
          `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
        );
      }
      socket.destroy();
    });
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      void handleRequest(computerId, request, response);
    });
    server.on("connect", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      void handleConnect(computerId, request, socket as Socket, head);
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

  function createSocksListener(computerId: string): NetServer {
    return createNetServer((socket) => {
      if (!admit(computerId, socket)) return;
      socket.on("error", () => socket.destroy());
      void handleSocks(computerId, socket);
    });
  }

  async function listenOn(server: Server | NetServer, socketPath: string): Promise<void> {
    await rm(socketPath, { force: true });
    await new Promise<void>((resolvePromise, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolvePromise();
      });
    });
    server.on("error", (error) => logger.warn("egress listener failed", { socketPath, error }));
  }

  const proxy: EgressProxy = {
    async listenComputer(computerId, paths) {
      if (closed) throw new Error("roost egress: the proxy is closed");
      const http = createHttpListener(computerId);
      const socks = createSocksListener(computerId);
      const accepted = new Set<Socket>();
      for (const server of [http, socks])
        server.on("connection", (socket: Socket) => {
          accepted.add(socket);
          socket.once("close", () => accepted.delete(socket));
        });
      const stop = async (): Promise<void> => {
        listeners.delete(entry);
        const closing = [http, socks].map(
          (server) =>
            new Promise<void>((resolvePromise) => {
              if (!server.listening) return resolvePromise();
              server.close(() => resolvePromise());
            }),
        );
        http.closeAllConnections();
        for (const socket of accepted) socket.destroy();
        await Promise.all(closing);
        await Promise.all([rm(paths.http, { force: true }), rm(paths.socks, { force: true })]);
      };
      const entry = { computerId, close: stop };
      try {
        await listenOn(http, paths.http);
        await listenOn(socks, paths.socks);
      } catch (error) {
        await stop();
        throw error;
      }
      listeners.add(entry);
      let stopped: Promise<void> | undefined;
      return { close: () => (stopped ??= stop()) };
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
    removeComputer(computerId) {
      policies.delete(computerId);
      for (const flow of flows) {
        if (flow.computerId === computerId)
          flow.close("roost egress: the computer was removed from the proxy.", 503);
      }
    },
    recheck: () => recheck(),
    isOwnConnection(address, port) {
      return outgoing.has(`${normalizeIp(address) ?? address}:${port}`);
    },
    context,
    stats() {
      return {
        computers: new Set([...listeners].map((entry) => entry.computerId)).size,
        open: flows.size,
        sockets: sockets.size,
        ...totals,
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      for (const flow of flows) flow.close("roost egress: the proxy is shutting down.", 503);
      await Promise.all([...listeners].map((entry) => entry.close()));
      for (const socket of sockets) socket.destroy();
    },
  };
  options.signal?.addEventListener("abort", () => void proxy.close(), { once: true });
  return proxy;
}

function normalizeSocksTarget(destination: {
  host: string;
  port: number;
}): EgressTarget | undefined {
  const host = normalizeTargetHost(destination.host);
  return host === undefined ? undefined : { host, port: destination.port };
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
