/**
 * Port previews (docs/api.md, "Ports"): a server listening on a TCP port inside the caller's
 * computer, reached through a tunnel over the computer's own worker connection
 * (gateway/tunnels.ts), so it works the same for a sandbox and for a self-hosted machine.
 *
 * - `GET /v1/computers/me/ports`: the ports listening inside the awake computer.
 * - `/v1/computers/me/ports/{port}/…` with the bearer token: any method, the rest of the path and
 *   the query are the server's own; WebSocket upgrades too (handleUpgrade).
 * - `POST /v1/computers/me/preview-links {port, path?}`: a short-lived link for a browser. It
 *   opens the preview on a host of its own, `p<port>-<label>.<preview domain>` (never Roost's own
 *   origin: a page from a computer must not run next to the web app's token), where an HttpOnly
 *   cookie of that host carries a session token (preview-tokens.ts).
 *
 * Invariants:
 *   PORT1 A preview reaches only the caller's own computer: on the API path the computer is the
 *         token's account's; on a preview host it is the one of a valid session for exactly that
 *         host, whose account still owns it. Anything else is 404 on the API path (nothing of
 *         yours there) and 401 on a preview host (no valid link or session).
 *   PORT2 A preview never wakes a computer: a sleeping one answers 409 `computer_asleep`.
 *   PORT3 A port outside 1–65535 is 400 before anything is sent; a reserved port (the computer's
 *         own proxy forwarders, Roost's ports where the computer is the host) is 400 too.
 *   PORT4 A cookie-authenticated request from another origin (its `Origin` header) is refused,
 *         and the link token is accepted only on GET and HEAD, then taken out of the address.
 *   PORT5 Every link is audited when it is made.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Context, Hono, MiddlewareHandler } from "hono";
import { z } from "zod";
import { authenticate } from "../auth/index.ts";
import { InvalidRequestError, RoostError, toRoostError } from "../errors/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import { GATEWAY_PATH, portsListOutputSchema } from "../protocol/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, Store } from "../store/index.ts";
import { listFromWorker, type TunnelGateway } from "./worker-lists.ts";
import { errorBody, httpStatus } from "./errors.ts";
import { proxyRequest, proxyUpgrade, writeRawResponse, cookieValues } from "./port-proxy.ts";
import { previewLabelPattern } from "./preview-tokens.ts";
import type { PreviewClaims, PreviewSigner } from "./preview-tokens.ts";
import { readJson, text } from "./validation.ts";

/** What the port previews need from the platform. */
export interface PortsService {
  /** The account's computer (made when it has none yet). */
  computerOf(accountId: string): Promise<string>;
  /** The account that owns a computer; undefined when there is no such computer. */
  ownerOf(computerId: string): Promise<string | undefined>;
  /** The control plane's state of the computer (`asleep`, `waking`, `awake`, `sleeping`, `failed`). */
  state(computerId: string): Promise<string>;
  /** Pushes the computer's idle timer back without waking it (previews count as activity). */
  touch(computerId: string, accountId: string): Promise<void>;
  gateway: TunnelGateway;
  signer: PreviewSigner;
  /** Ports of the computer no preview may reach, each with why. */
  reservedPorts(): ReadonlyMap<number, string>;
  /**
   * Where preview hosts live, e.g. `https://preview.example.com` (hosts are
   * `p<port>-<label>.preview.example.com`, a wildcard DNS name). Undefined: browser links work
   * only for a browser on this server's host, as `http://p<port>-<label>.localhost:<port>`.
   */
  previewBaseUrl: string | undefined;
  /** @default 300_000 (5 min) */
  linkTtlMs?: number;
  /** How long the cookie a link sets keeps the preview open. @default 3_600_000 (1 h) */
  sessionTtlMs?: number;
}

export interface PortPreviews {
  /** Serves every request addressed to a preview host; register it before any route. */
  hostMiddleware: MiddlewareHandler;
  /** `GET /v1/computers/me/ports`, `POST /v1/computers/me/preview-links`, `/v1/computers/me/ports/{port}/…`. */
  register(app: Hono<{ Variables: { account: Account } }>): void;
  /** The HTTP server's `upgrade` listener for previews (preview hosts and the API path); leaves others alone. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** The API path of previews; everything below `/{port}` is the server's own. */
export const portsPath = "/v1/computers/me/ports";
/** The query parameter of a browser link's token. */
export const previewLinkParameter = "roost_preview_link";
/** The preview host's cookie. */
export const previewCookie = "roost_preview";

const touchEveryMs = 60_000;

const linkBody = z.strictObject({
  port: z
    .number({ error: "port must be a whole number from 1 to 65535" })
    .int({ error: "port must be a whole number from 1 to 65535" })
    .min(1, { error: "port must be a whole number from 1 to 65535" })
    .max(65_535, { error: "port must be a whole number from 1 to 65535" }),
  path: text("path", { min: 1, max: 2048 })
    .refine((value) => value.startsWith("/") && !value.startsWith("//"), {
      error: "path must start with a single / (the server's own path, e.g. /docs?x=1)",
    })
    .optional(),
});

/** PORT3: the port of a URL segment, or a 400 saying what a port is. */
export function parsePort(text: string): number {
  const port = /^[0-9]{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    throw new InvalidRequestError(
      `${JSON.stringify(text.slice(0, 20))} is not a port: give a whole number from 1 to 65535, e.g. ${portsPath}/8000/`,
    );
  return port;
}

function isLoopbackName(name: string): boolean {
  return name === "localhost" || name === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

function splitHost(host: string): { name: string; port: string | undefined } {
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(host.toLowerCase());
  return { name: match?.[1] ?? host.toLowerCase(), port: match?.[2] };
}

export function createPortPreviews(
  service: PortsService,
  store: Store,
  options: { logger?: Logger; clock?: () => number } = {},
): PortPreviews {
  const logger = (options.logger ?? silentLogger).child({ component: "ports" });
  const clock = options.clock ?? Date.now;
  const linkTtlMs = service.linkTtlMs ?? 300_000;
  const sessionTtlMs = service.sessionTtlMs ?? 3_600_000;
  const base = service.previewBaseUrl === undefined ? undefined : new URL(service.previewBaseUrl);
  const previewDomain = base === undefined ? undefined : splitHost(base.host).name;
  const lastTouch = new Map<string, number>();

  /** The preview host a `Host` header names, if it names one. */
  function previewHost(host: string | undefined): { label: string; port: number } | undefined {
    if (host === undefined) return undefined;
    const { name } = splitHost(host);
    const dot = name.indexOf(".");
    if (dot < 0) return undefined;
    const suffix = name.slice(dot + 1);
    if (suffix !== "localhost" && suffix !== previewDomain) return undefined;
    const match = previewLabelPattern.exec(name.slice(0, dot));
    if (match === null) return undefined;
    const port = Number(match[1]);
    return port >= 1 && port <= 65_535 ? { label: name.slice(0, dot), port } : undefined;
  }

  const protocolOf = (host: string): "http" | "https" =>
    base !== undefined && splitHost(host).name.endsWith(`.${previewDomain}`)
      ? (base.protocol.replace(":", "") as "http" | "https")
      : "http";

  /** Counts a preview as activity, at most once a minute per computer. */
  function touch(computerId: string, accountId: string): void {
    const now = clock();
    if (now - (lastTouch.get(computerId) ?? 0) < touchEveryMs) return;
    lastTouch.set(computerId, now);
    if (lastTouch.size > 10_000) lastTouch.clear();
    service.touch(computerId, accountId).catch((error: unknown) =>
      logger.warn("could not count a preview as activity", {
        computerId,
        error: toRoostError(error).message,
      }),
    );
  }

  function checkReserved(port: number): void {
    const reason = service.reservedPorts().get(port);
    if (reason !== undefined)
      throw new InvalidRequestError(`port ${port} cannot be previewed: ${reason}`); // PORT3
  }

  /** The worker is connected to this node, or to the one it is forwarded to. */
  async function connected(computerId: string): Promise<boolean> {
    return (
      service.gateway.isConnected(computerId) ||
      ((await service.gateway.connectedAnywhere?.(computerId)) ?? false)
    );
  }

  /** PORT2: the computer's worker is connected, or why not; never wakes it. */
  async function requireAwake(computerId: string, what: string): Promise<void> {
    if (await connected(computerId)) return;
    const state = await service.state(computerId);
    if (state === "asleep" || state === "sleeping")
      throw new RoostError(
        "computer_asleep",
        `the computer is asleep; nothing listens on ${what}. Wake it (POST /v1/computers/me/wake) and start the server first`,
        { details: { computerId, state } },
      );
    if (state === "failed")
      throw new RoostError(
        "computer_unavailable",
        "the computer failed to start; wake it again (POST /v1/computers/me/wake)",
        { details: { computerId, state } },
      );
    throw new RoostError(
      "computer_unavailable",
      state === "waking"
        ? "the computer is waking up; try again in a moment"
        : "the computer's worker is not connected to this server right now; try again shortly",
      { details: { computerId, state }, retryAfterMs: 1000 },
    );
  }

  /** Opens the tunnel, counting it as activity while it stays open. */
  async function tunnel(
    computerId: string,
    accountId: string,
    port: number,
    signal: AbortSignal | undefined,
  ): Promise<Duplex> {
    checkReserved(port);
    await requireAwake(computerId, `port ${port}`);
    touch(computerId, accountId);
    const stream = await service.gateway.openTunnel(
      computerId,
      port,
      signal === undefined ? {} : { signal },
    );
    const keepAwake = setInterval(() => touch(computerId, accountId), touchEveryMs);
    keepAwake.unref();
    stream.once("close", () => clearInterval(keepAwake));
    return stream;
  }

  /** PORT1: the session a preview host's request carries, for exactly that host. */
  async function session(
    host: { label: string; port: number },
    cookie: string | undefined,
  ): Promise<PreviewClaims> {
    const now = clock();
    for (const value of cookieValues(cookie, previewCookie)) {
      const claims = service.signer.verify(value, "session", now);
      if (claims !== undefined && (await matches(claims, host))) return claims;
    }
    throw new RoostError(
      "unauthenticated",
      "this preview needs a link from Roost: open the port from your computer's panel (or POST /v1/computers/me/preview-links) to get a new one",
    );
  }

  /** PVT2/PORT1: the token is for this host's computer and port, and its account still owns it. */
  async function matches(claims: PreviewClaims, host: { label: string; port: number }) {
    if (claims.port !== host.port) return false;
    if (service.signer.hostLabel(claims.computerId, claims.port) !== host.label) return false;
    return (await service.ownerOf(claims.computerId)) === claims.accountId;
  }

  /** PORT4: a cookie-authenticated request must come from the preview's own origin, if it says. */
  function checkOrigin(origin: string | undefined, host: string): void {
    if (origin === undefined) return;
    if (origin.toLowerCase() === `${protocolOf(host)}://${host.toLowerCase()}`) return;
    throw new RoostError(
      "forbidden",
      "a preview answers only its own pages: this request came from another origin",
    );
  }

  const rawTarget = (context: Context): string => {
    const incoming = (context.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (incoming?.url !== undefined) return incoming.url;
    const url = new URL(context.req.url);
    return `${url.pathname}${url.search}`;
  };
  const remoteAddress = (context: Context): string | undefined =>
    (context.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.remoteAddress;
  /** Ends the client's connection abruptly (an answer cut off inside), when served by node. */
  const cutter = (context: Context): (() => void) | undefined => {
    const outgoing = (context.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    return outgoing === undefined ? undefined : () => outgoing.destroy();
  };

  const refuseMethod = (method: string) => {
    if (method.toUpperCase() === "TRACE")
      throw new InvalidRequestError("TRACE is not forwarded to previews");
  };

  const hostMiddleware: MiddlewareHandler = async (context, next) => {
    const hostHeader = context.req.header("host");
    const host = previewHost(hostHeader);
    if (host === undefined || hostHeader === undefined) return next();
    refuseMethod(context.req.method);
    const target = rawTarget(context);
    const url = new URL(target, "http://preview.invalid");
    const link = url.searchParams.get(previewLinkParameter);
    if (link !== null && (context.req.method === "GET" || context.req.method === "HEAD")) {
      // PORT4: trade the link for a session cookie, and take the token out of the address.
      const claims = service.signer.verify(link, "link", clock());
      if (claims === undefined || !(await matches(claims, host)))
        throw new RoostError(
          "unauthenticated",
          "this preview link is invalid or has expired: open the port again from your computer's panel (or POST /v1/computers/me/preview-links) to get a new one",
        );
      const sessionToken = service.signer.sign({
        ...claims,
        kind: "session",
        expiresAt: clock() + sessionTtlMs,
      });
      url.searchParams.delete(previewLinkParameter);
      const secure = protocolOf(hostHeader) === "https" ? "; Secure" : "";
      context.header(
        "set-cookie",
        `${previewCookie}=${sessionToken}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${Math.floor(sessionTtlMs / 1000)}${secure}`,
      );
      context.header("cache-control", "no-store");
      context.header("referrer-policy", "no-referrer");
      return context.redirect(`${url.pathname}${url.search}`, 303);
    }
    const claims = await session(host, context.req.header("cookie")); // PORT1
    checkOrigin(context.req.header("origin"), hostHeader); // PORT4
    const stream = await tunnel(
      claims.computerId,
      claims.accountId,
      host.port,
      context.req.raw.signal,
    );
    return proxyRequest(
      stream,
      context.req.raw,
      target,
      {
        port: host.port,
        prefix: "",
        publicHost: hostHeader,
        publicProtocol: protocolOf(hostHeader),
        sessionCookie: previewCookie,
      },
      remoteAddress(context),
      cutter(context),
    );
  };

  /** The API path: `/v1/computers/me/ports/<port><rest>` → port and the server's own path. */
  function apiTarget(raw: string): { port: number; path: string; prefix: string } | undefined {
    const match = /^\/v1\/computers\/me\/ports\/([^/?#]*)(.*)$/.exec(raw);
    if (match === null) return undefined;
    const port = parsePort(match[1] ?? "");
    const rest = match[2] ?? "";
    const path = rest === "" ? "/" : rest.startsWith("?") ? `/${rest}` : rest;
    return { port, path, prefix: `${portsPath}/${match[1]}` };
  }

  function register(app: Hono<{ Variables: { account: Account } }>): void {
    app.get(portsPath, async (context) => {
      const account = context.get("account");
      const computerId = await service.computerOf(account.id);
      await requireAwake(computerId, "any port");
      const listed = await listFromWorker(service.gateway, computerId, {
        tool: "ports.list",
        output: portsListOutputSchema,
        what: "ports",
        feature: "port previews",
        signal: context.req.raw.signal,
      });
      const reserved = service.reservedPorts();
      const byPort = new Map<number, string[]>();
      for (const entry of listed.ports) {
        if (reserved.has(entry.port)) continue;
        const addresses = byPort.get(entry.port) ?? [];
        if (!addresses.includes(entry.address)) addresses.push(entry.address);
        byPort.set(entry.port, addresses);
      }
      const view: Api.ListeningPorts = {
        ports: [...byPort]
          .sort(([a], [b]) => a - b)
          .map(([port, addresses]) => ({ port, addresses })),
      };
      return context.json(view);
    });

    app.post("/v1/computers/me/preview-links", async (context) => {
      const account = context.get("account");
      const body = await readJson(context, linkBody);
      checkReserved(body.port);
      const computerId = await service.computerOf(account.id);
      const hostHeader = context.req.header("host") ?? "";
      let origin: string;
      const label = service.signer.hostLabel(computerId, body.port);
      if (base !== undefined) {
        origin = `${base.protocol}//${label}.${base.host}`;
      } else {
        const { name, port } = splitHost(hostHeader);
        if (!isLoopbackName(name))
          throw new RoostError(
            "unavailable",
            "browser previews need a domain of their own on this server (a page from a computer must not share Roost's origin): the operator sets ROOST_PREVIEW_URL to a wildcard name that points here (docs/computers.md#port-previews); until then previews work with the bearer token at /v1/computers/me/ports/{port}/",
          );
        origin = `http://${label}.localhost${port === undefined ? "" : `:${port}`}`;
      }
      const expiresAt = clock() + linkTtlMs;
      const token = service.signer.sign({
        kind: "link",
        computerId,
        accountId: account.id,
        port: body.port,
        expiresAt,
      });
      const path = body.path ?? "/";
      const url = `${origin}${path}${path.includes("?") ? "&" : "?"}${previewLinkParameter}=${token}`;
      await store.audit({
        accountId: account.id,
        action: "computer.preview_link",
        target: computerId,
        detail: { port: body.port, expiresAt: new Date(expiresAt).toISOString() },
      }); // PORT5
      const view: Api.PreviewLink = {
        url,
        port: body.port,
        expiresAt: new Date(expiresAt).toISOString(),
      };
      return context.json(view, 201);
    });

    const viaApi = async (context: Context<{ Variables: { account: Account } }>) => {
      refuseMethod(context.req.method);
      const raw = rawTarget(context);
      const target = apiTarget(raw);
      if (target === undefined) throw new RoostError("not_found", `no route for ${raw}`);
      const account = context.get("account");
      const computerId = await service.computerOf(account.id); // PORT1: the caller's own
      const stream = await tunnel(computerId, account.id, target.port, context.req.raw.signal);
      const hostHeader = context.req.header("host") ?? "localhost";
      return proxyRequest(
        stream,
        context.req.raw,
        target.path,
        {
          port: target.port,
          prefix: target.prefix,
          publicHost: hostHeader,
          publicProtocol: "http",
          sessionCookie: undefined,
        },
        remoteAddress(context),
        cutter(context),
      );
    };
    app.all(`${portsPath}/:port`, viaApi);
    app.all(`${portsPath}/:port/*`, viaApi);
  }

  function refuseUpgrade(socket: Duplex, error: unknown, request: IncomingMessage): void {
    const roost = toRoostError(error);
    const status = httpStatus(roost);
    // The path only: a query is the server's, and no log line may hold a token (LOG1).
    const path = new URL(request.url ?? "/", "http://preview.invalid").pathname;
    logger.info(`upgrade ${path} refused: ${status}`, {
      code: roost.code,
      message: roost.message,
    });
    writeRawResponse(
      socket,
      status,
      [["Content-Type", "application/json"]],
      JSON.stringify(errorBody(roost)),
    );
  }

  function handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const hostHeader = request.headers.host;
    const host = previewHost(hostHeader);
    const raw = request.url ?? "/";
    let run: () => Promise<void>;
    if (host !== undefined && hostHeader !== undefined) {
      // A page's own `/v1/gateway` WebSocket is the gateway's listener's (it refuses browsers).
      if (new URL(raw, "http://preview.invalid").pathname === GATEWAY_PATH) return;
      run = async () => {
        const claims = await session(host, request.headers.cookie); // PORT1
        checkOrigin(request.headers.origin, hostHeader); // PORT4
        const stream = await tunnel(claims.computerId, claims.accountId, host.port, undefined);
        await proxyUpgrade(stream, request, socket, head, raw, {
          port: host.port,
          prefix: "",
          publicHost: hostHeader,
          publicProtocol: protocolOf(hostHeader),
          sessionCookie: previewCookie,
        });
      };
    } else if (raw.startsWith(`${portsPath}/`)) {
      run = async () => {
        const target = apiTarget(raw)!;
        const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? "");
        const found = match === null ? undefined : await authenticate(store, match[1] ?? "");
        if (found === undefined)
          throw new RoostError(
            "unauthenticated",
            "send an API token as `Authorization: Bearer <token>` with the upgrade request",
          );
        const computerId = await service.computerOf(found.account.id); // PORT1
        const stream = await tunnel(computerId, found.account.id, target.port, undefined);
        await proxyUpgrade(stream, request, socket, head, target.path, {
          port: target.port,
          prefix: target.prefix,
          publicHost: hostHeader ?? "localhost",
          publicProtocol: "http",
          sessionCookie: undefined,
        });
      };
    } else return; // not a preview: another listener's (the gateway's)
    socket.on("error", () => undefined);
    run().catch((error: unknown) => refuseUpgrade(socket, error, request));
  }

  return { hostMiddleware, register, handleUpgrade };
}
