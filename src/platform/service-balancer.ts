/**
 * A small HTTP/2 (h2c) balancer for the loop's service endpoint: the one URL every node registers
 * with Restate in scale mode, so that any node runs any loop (issue 17 §1, decision 0039).
 *
 * Restate speaks its service protocol as one HTTP/2 stream per invocation attempt, both ways at
 * once. The balancer forwards each incoming stream, as it is, to one healthy node and pipes both
 * directions; it never reads the protocol. When a node dies mid-stream the stream is reset, and
 * Restate retries the invocation from its journal: the retry is a new stream, which goes to a node
 * that is still up.
 *
 * Invariants:
 *   SB1 headers are forwarded unchanged (the request identity signature among them: it signs the
 *       path, which is not rewritten), apart from HTTP/2's connection-specific ones.
 *   SB2 a stream goes to a node only once its session is connected; a node that cannot be reached
 *       is marked down and the next one is tried, so one dead node costs no invocation attempt
 *       while another is up.
 *   SB3 a node is "up" while its session stands and its `/health` answers 200; a GOAWAY (a
 *       draining node, decision 0028) or a closed session marks it down at once, and the probe
 *       brings it back.
 *   SB4 a stream that fails on either side is reset on the other: the balancer never answers for
 *       a node, so Restate sees a failed attempt and retries it (nothing is replayed here).
 *   SB5 close() stops taking streams, closes the backend sessions and waits for nothing longer
 *       than its grace.
 */
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { Socket } from "node:net";
import type { Logger } from "../log/index.ts";

/** Options of {@link startServiceBalancer}. */
export interface ServiceBalancerOptions {
  /** Service endpoint URLs of the nodes (`http://10.0.0.5:9080`), h2c. */
  nodes: readonly string[];
  /** @default 127.0.0.1 */
  host?: string;
  /** 0 picks a free port. */
  port: number;
  /** How often each node's `/health` is probed. @default 1000 */
  probeIntervalMs?: number;
  /** A probe or a connection that takes longer fails. @default 2000 */
  probeTimeoutMs?: number;
  /** How long close() lets running streams go on. @default 2000 */
  closeGraceMs?: number;
  logger?: Logger;
}

/** What the balancer knows of one node. */
export interface BalancedNode {
  url: string;
  up: boolean;
  /** Streams forwarded to it since start. */
  streams: number;
}

export interface ServiceBalancer extends AsyncDisposable {
  /** `http://host:port`: the URL to register with Restate (ROOST_SERVICE_URL). */
  readonly url: string;
  readonly port: number;
  nodes(): BalancedNode[];
  close(): Promise<void>;
}

interface Backend extends BalancedNode {
  readonly origin: string;
  session: http2.ClientHttp2Session | undefined;
  connecting: Promise<http2.ClientHttp2Session> | undefined;
}

// SB1: hop-by-hop headers HTTP/2 forbids; node's http2 refuses to send them.
const connectionHeaders = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "host",
  http2.constants.HTTP2_HEADER_STATUS,
]);

/** Checks the node URLs given to the balancer and returns them as origins. */
export function parseBalancerNodes(nodes: readonly string[]): string[] {
  if (nodes.length === 0)
    throw new Error(
      "service balancer: give at least one node (--node http://HOST:PORT, each node's service endpoint)",
    );
  return nodes.map((node) => {
    let url: URL;
    try {
      url = new URL(node);
    } catch {
      throw new Error(
        `service balancer: --node must be a node's service endpoint URL, e.g. http://10.0.0.5:9080 (got ${JSON.stringify(node)})`,
      );
    }
    if (url.protocol !== "http:" || (url.pathname !== "/" && url.pathname !== "") || url.search)
      throw new Error(
        `service balancer: --node must be a plain http:// URL without a path (the balancer speaks h2c to the nodes), e.g. http://10.0.0.5:9080 (got ${JSON.stringify(node)})`,
      );
    return url.origin;
  });
}

/** Starts the balancer; resolves once it listens. */
export async function startServiceBalancer(
  options: ServiceBalancerOptions,
): Promise<ServiceBalancer> {
  const origins = parseBalancerNodes(options.nodes);
  const probeIntervalMs = options.probeIntervalMs ?? 1_000;
  const probeTimeoutMs = options.probeTimeoutMs ?? 2_000;
  const closeGraceMs = options.closeGraceMs ?? 2_000;
  const logger = options.logger;
  const backends: Backend[] = origins.map((origin) => ({
    url: origin,
    origin,
    up: false,
    streams: 0,
    session: undefined,
    connecting: undefined,
  }));
  let next = 0;
  let closing = false;

  function markDown(backend: Backend, why: string): void {
    if (backend.up) logger?.warn("service balancer: node down", { node: backend.url, why });
    backend.up = false;
    const session = backend.session;
    backend.session = undefined;
    if (session !== undefined && !session.destroyed) session.destroy();
  }

  function markUp(backend: Backend): void {
    if (!backend.up) logger?.info("service balancer: node up", { node: backend.url });
    backend.up = true;
  }

  /** SB2: a connected session to the node, or a rejection if it cannot be reached in time. */
  function connect(backend: Backend): Promise<http2.ClientHttp2Session> {
    const current = backend.session;
    if (current !== undefined && !current.destroyed && !current.closed)
      return Promise.resolve(current);
    if (backend.connecting !== undefined) return backend.connecting;
    const attempt = new Promise<http2.ClientHttp2Session>((resolve, reject) => {
      const session = http2.connect(backend.origin);
      const timer = setTimeout(() => {
        session.destroy();
        reject(new Error(`no connection within ${probeTimeoutMs} ms`));
      }, probeTimeoutMs);
      session.once("connect", () => {
        clearTimeout(timer);
        backend.session = session;
        resolve(session);
      });
      session.once("error", (error: Error) => {
        clearTimeout(timer);
        reject(error);
      });
      // SB3: a draining node says GOAWAY; a dead one closes the socket.
      session.once("goaway", () => {
        if (backend.session === session) {
          backend.session = undefined;
          backend.up = false;
          logger?.info("service balancer: node going away", { node: backend.url });
        }
        session.close();
      });
      session.once("close", () => {
        clearTimeout(timer);
        if (backend.session === session) markDown(backend, "connection closed");
      });
      session.on("error", () => undefined); // reported through close / the streams
    }).finally(() => {
      backend.connecting = undefined;
    });
    backend.connecting = attempt;
    return attempt;
  }

  async function probe(backend: Backend): Promise<void> {
    try {
      const session = await connect(backend);
      const status = await new Promise<number>((resolve, reject) => {
        const request = session.request({ ":method": "GET", ":path": "/health" });
        request.setTimeout(probeTimeoutMs, () => {
          request.close(http2.constants.NGHTTP2_CANCEL);
          reject(new Error(`/health did not answer within ${probeTimeoutMs} ms`));
        });
        request.once("response", (headers) => {
          resolve(Number(headers[http2.constants.HTTP2_HEADER_STATUS]));
          request.close();
        });
        request.once("error", reject);
        request.end();
      });
      if (status === 200) markUp(backend);
      else markDown(backend, `/health answered ${status}`);
    } catch (error) {
      markDown(backend, (error as Error).message);
    }
  }

  /** Up nodes first, round robin; then the down ones, in case the probe is behind. */
  function candidates(): Backend[] {
    const start = next++ % backends.length;
    const ordered = [...backends.slice(start), ...backends.slice(0, start)];
    return [...ordered.filter((backend) => backend.up), ...ordered.filter((b) => !b.up)];
  }

  async function forward(
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
  ): Promise<void> {
    let session: http2.ClientHttp2Session | undefined;
    let chosen: Backend | undefined;
    for (const backend of candidates()) {
      if (stream.destroyed) return;
      try {
        session = await connect(backend); // SB2
        chosen = backend;
        break;
      } catch (error) {
        markDown(backend, (error as Error).message);
      }
    }
    if (stream.destroyed) return;
    if (session === undefined || chosen === undefined) {
      // SB4: no node at all; Restate retries the attempt.
      stream.respond({ ":status": 503, "retry-after": "1" }, { endStream: true });
      return;
    }
    chosen.streams++;
    const forwarded: http2.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined || connectionHeaders.has(name)) continue;
      forwarded[name] = value; // SB1
    }
    let upstream: http2.ClientHttp2Stream;
    try {
      upstream = session.request(forwarded, { endStream: false });
    } catch (error) {
      markDown(chosen, (error as Error).message);
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    upstream.on("response", (responseHeaders) => {
      if (stream.destroyed || stream.headersSent) return;
      const answer: http2.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(responseHeaders)) {
        if (value === undefined) continue;
        if (name !== ":status" && connectionHeaders.has(name)) continue;
        answer[name] = value;
      }
      stream.respond(answer);
      upstream.pipe(stream);
    });
    stream.pipe(upstream);
    // SB4: a failure on one side resets the other.
    upstream.on("error", () => {
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    });
    upstream.on("close", () => {
      if (!stream.destroyed && upstream.rstCode !== http2.constants.NGHTTP2_NO_ERROR)
        stream.close(upstream.rstCode ?? http2.constants.NGHTTP2_INTERNAL_ERROR);
    });
    stream.on("error", () => {
      if (!upstream.destroyed) upstream.close(http2.constants.NGHTTP2_CANCEL);
    });
    stream.on("close", () => {
      if (!upstream.destroyed) upstream.close(http2.constants.NGHTTP2_CANCEL);
    });
  }

  const server = http2.createServer();
  const sockets = new Set<Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  server.on("stream", (stream, headers) => {
    stream.on("error", () => undefined);
    if (closing) {
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    forward(stream, headers).catch((error: unknown) => {
      logger?.warn("service balancer: forwarding failed", { error: String(error) });
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host ?? "127.0.0.1";

  await Promise.all(backends.map(probe));
  let probing = false;
  const prober = setInterval(() => {
    if (probing) return;
    probing = true;
    void Promise.all(backends.map(probe)).finally(() => {
      probing = false;
    });
  }, probeIntervalMs);
  prober.unref();

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      closing = true; // SB5
      clearInterval(prober);
      const cut = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
        for (const backend of backends) backend.session?.destroy();
      }, closeGraceMs);
      server.close(() => {
        clearTimeout(cut);
        for (const backend of backends) backend.session?.destroy();
        resolve();
      });
      for (const session of sessions) session.close(); // GOAWAY: running streams go on
    });
    return closed;
  };

  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    nodes: () => backends.map(({ url, up, streams }) => ({ url, up, streams })),
    close,
    [Symbol.asyncDispose]: close,
  };
}
