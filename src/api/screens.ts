/**
 * The live view (docs/live-view.md, decision 0026): the screens of the caller's computer (one
 * virtual display per bot, served by a VNC server on the computer's loopback), watched through a
 * WebSocket carrying RFB, tunnelled over the computer's own worker connection like a port
 * preview; and the single-controller lease that lets a person take a screen over.
 *
 * - `GET /v1/computers/me/screens`: the screens, with who controls each.
 * - `POST /v1/computers/me/screens/{id}/viewers`: a viewer id and a short-lived WebSocket address.
 * - `GET /v1/computers/me/screens/{id}/vnc` (WebSocket; `?ticket=` or the bearer header).
 * - `POST /v1/computers/me/screens/{id}/control {viewerId, durationMs?}`: take or renew the lease.
 * - `DELETE /v1/computers/me/screens/{id}/control`: hand back.
 *
 * Invariants:
 *   LV1 A screen is reachable only by its computer's owner: the computer is always the
 *       authenticated account's own, so another account's screen id is simply not found (404).
 *       A ticket is good only for its account, computer, screen and viewer, until it expires.
 *   LV2 Listing never wakes a computer: a sleeping one has no screens (`[]`); a VNC connection or
 *       a lease on a sleeping computer is 409 `computer_asleep`.
 *   LV3 View-only unless this viewer holds the lease, enforced here (rfb-filter.ts RFB1), with
 *       the lease as the store has it (re-read at least every `leasePollMs`, at once on this node).
 *   LV4 One controller per screen (SCL1): a second viewer's take is 409 until the lease ends.
 *   LV5 The worker is told of every lease that starts, is renewed or ends (`screens.control`); a
 *       take the worker did not hear of is undone.
 *   LV6 Floods are bounded: viewers per computer, messages per second per viewer (RFB4), bytes
 *       buffered towards a slow viewer (the tunnel pauses).
 *   LV7 The VNC port comes from the worker's list, so it is checked like a preview's: a reserved
 *       port (Roost's own, where the computer is the host) is never tunnelled to.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Hono } from "hono";
import WebSocket, { WebSocketServer } from "ws";
import { z } from "zod";
import { authenticate } from "../auth/index.ts";
import { InvalidRequestError, RoostError, toRoostError } from "../errors/index.ts";
import { newId } from "../ids.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import { screenIdSchema, screensListOutputSchema } from "../protocol/index.ts";
import type { Api, Screen, ScreenController } from "../protocol/index.ts";
import type { Account, ScreenLease, Store } from "../store/index.ts";
import { listFromWorker, type TunnelGateway } from "./worker-lists.ts";
import { errorBody, httpStatus } from "./errors.ts";
import { writeRawResponse } from "./port-proxy.ts";
import { createRfbFilter, RfbProtocolError } from "./rfb-filter.ts";
import { readJson } from "./validation.ts";

/** What the live view needs from the platform. */
export interface LiveViewService {
  /** The account's computer (made when it has none yet). */
  computerOf(accountId: string): Promise<string>;
  /** The control plane's state of the computer (`asleep`, `waking`, `awake`, `sleeping`, `failed`). */
  state(computerId: string): Promise<string>;
  /** Pushes the computer's idle timer back without waking it (a live view counts as activity). */
  touch(computerId: string, accountId: string): Promise<void>;
  gateway: TunnelGateway;
  /**
   * Ports of the computer no tunnel may reach, each with why (the previews' PORT3: Roost's own
   * ports where the computer's loopback is the host's). A screen naming one is refused (LV7).
   */
  reservedPorts?: () => ReadonlyMap<number, string>;
  /** Signs viewer tickets (at least 32 bytes; every node needs the same). */
  ticketSecret: Buffer;
  /**
   * The person handed the screen back (a release, or a lease that ran out): resume the bots
   * that asked for a handoff of it (ask_user_to_take_over). Answers how many were waiting.
   */
  handBack?(computerId: string, screenId: string): Promise<number>;
  /** A lease's length when the taker does not say. @default 180_000 (3 min) */
  leaseMs?: number;
  /** @default 600_000 (10 min) */
  maxLeaseMs?: number;
  /** @default 60_000 */
  ticketTtlMs?: number;
  /** LV6. @default 8 */
  maxViewersPerComputer?: number;
  /** LV3. @default 1000 */
  leasePollMs?: number;
  /** Messages a second a viewer may send (RFB4). @default 300 */
  maxMessagesPerSecond?: number;
}

export interface LiveView {
  register(app: Hono<{ Variables: { account: Account } }>): void;
  /** The HTTP server's `upgrade` listener for VNC WebSockets; leaves other paths alone. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Ends every poller and timer and closes open viewers. */
  close(): Promise<void>;
  /**
   * Calls `listener` when a screen's lease ends on this node (a release or its expiry), e.g. to
   * resume a bot that asked for a handoff. Answers a function that removes it.
   */
  onLeaseEnded(listener: (lease: ScreenLease, how: "released" | "expired") => void): () => void;
}

export const screensPath = "/v1/computers/me/screens";
const vncPathPattern = /^\/v1\/computers\/me\/screens\/([^/?#]*)\/vnc(?:\?.*)?$/;
const viewerIdSchema = z
  .string({ error: "viewerId is required: the id POST .../viewers answered" })
  .regex(/^vw_[A-Za-z0-9_-]{8,64}$/, {
    error: "viewerId must be the id POST /v1/computers/me/screens/{id}/viewers answered",
  });

const touchEveryMs = 60_000;

function parseScreenId(text: string): string {
  const parsed = screenIdSchema.safeParse(text);
  if (!parsed.success)
    throw new InvalidRequestError(
      `${JSON.stringify(text.slice(0, 40))} is not a screen id: use an id from GET ${screensPath} (e.g. s-bot_1)`,
    );
  return parsed.data;
}

interface TicketClaims {
  accountId: string;
  computerId: string;
  screenId: string;
  viewerId: string;
  expiresAt: number;
}

function ticketSigner(secret: Buffer) {
  if (secret.length < 32)
    throw new Error("the live view's ticket secret must be at least 32 bytes");
  const mac = (body: string) =>
    createHmac("sha256", secret).update(`vnc\0${body}`).digest("base64url");
  return {
    sign(claims: TicketClaims): string {
      const body = Buffer.from(
        JSON.stringify({
          a: claims.accountId,
          c: claims.computerId,
          s: claims.screenId,
          v: claims.viewerId,
          e: claims.expiresAt,
        }),
      ).toString("base64url");
      return `${body}.${mac(body)}`;
    },
    verify(token: string, now: number): TicketClaims | undefined {
      if (token.length > 1024) return undefined;
      const [body = "", signature = "", extra] = token.split(".");
      if (extra !== undefined) return undefined;
      const expected = Buffer.from(mac(body));
      const given = Buffer.from(signature);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined; // LV1
      let raw: unknown;
      try {
        raw = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
      } catch {
        return undefined;
      }
      const { a, c, s, v, e } = (raw ?? {}) as Record<string, unknown>;
      if (
        typeof a !== "string" ||
        typeof c !== "string" ||
        typeof s !== "string" ||
        typeof v !== "string" ||
        typeof e !== "number" ||
        e <= now
      )
        return undefined;
      return { accountId: a, computerId: c, screenId: s, viewerId: v, expiresAt: e };
    },
  };
}

const controlBody = z.strictObject({
  viewerId: viewerIdSchema,
  durationMs: z
    .number({ error: "durationMs must be a whole number of milliseconds" })
    .int({ error: "durationMs must be a whole number of milliseconds" })
    .min(10_000, { error: "durationMs must be at least 10000 (10 s)" })
    .optional(),
});

const toController = (lease: ScreenLease): Api.ScreenController => ({
  viewerId: lease.viewerId,
  until: new Date(lease.until).toISOString(),
  reason: lease.reason,
});

export function createLiveView(
  service: LiveViewService,
  store: Store,
  options: { logger?: Logger; clock?: () => number } = {},
): LiveView {
  const logger = (options.logger ?? silentLogger).child({ component: "live-view" });
  const clock = options.clock ?? Date.now;
  const leaseMs = service.leaseMs ?? 180_000;
  const maxLeaseMs = service.maxLeaseMs ?? 600_000;
  const ticketTtlMs = service.ticketTtlMs ?? 60_000;
  const maxViewers = service.maxViewersPerComputer ?? 8;
  const leasePollMs = service.leasePollMs ?? 1000;
  const tickets = ticketSigner(service.ticketSecret);
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 1024 * 1024,
    perMessageDeflate: false,
  });
  const viewersByComputer = new Map<string, number>();
  /** LV3: the lease of each watched screen as last read, by `computer/screen`. */
  const watched = new Map<
    string,
    { lease: ScreenLease | undefined; viewers: number; timer: NodeJS.Timeout }
  >();
  const expiryTimers = new Map<string, NodeJS.Timeout>();
  const endedListeners = new Set<(lease: ScreenLease, how: "released" | "expired") => void>();
  const sockets = new Set<WebSocket>();
  const lastTouch = new Map<string, number>();
  const key = (computerId: string, screenId: string) => `${computerId}/${screenId}`;

  function touch(computerId: string, accountId: string): void {
    const now = clock();
    if (now - (lastTouch.get(computerId) ?? 0) < touchEveryMs) return;
    lastTouch.set(computerId, now);
    if (lastTouch.size > 10_000) lastTouch.clear();
    service.touch(computerId, accountId).catch((error: unknown) =>
      logger.warn("could not count a live view as activity", {
        computerId,
        error: toRoostError(error).message,
      }),
    );
  }

  /** The worker is connected to this node, or to the one it is forwarded to. */
  async function connected(computerId: string): Promise<boolean> {
    return (
      service.gateway.isConnected(computerId) ||
      ((await service.gateway.connectedAnywhere?.(computerId)) ?? false)
    );
  }

  /** LV2: the worker is connected, or why not; never wakes it. */
  async function requireAwake(computerId: string): Promise<void> {
    if (await connected(computerId)) return;
    const state = await service.state(computerId);
    if (state === "asleep" || state === "sleeping" || state === "failed")
      throw new RoostError(
        "computer_asleep",
        "the computer is asleep, so it has no screens: a bot's browser or computer call wakes it (or POST /v1/computers/me/wake)",
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

  async function workerScreens(computerId: string, signal?: AbortSignal): Promise<Screen[]> {
    const listed = await listFromWorker(service.gateway, computerId, {
      tool: "screens.list",
      output: screensListOutputSchema,
      what: "screens",
      feature: "the live view",
      ...(signal === undefined ? {} : { signal }),
    });
    return listed.screens;
  }

  /** LV1: the screen of the caller's own computer, or 404. */
  async function findScreen(computerId: string, screenId: string, signal?: AbortSignal) {
    await requireAwake(computerId);
    const screen = (await workerScreens(computerId, signal)).find((each) => each.id === screenId);
    if (screen === undefined)
      throw new RoostError(
        "not_found",
        `no screen ${screenId} on your computer: GET ${screensPath} lists them (a bot's screen appears with its first browser or computer call)`,
      );
    return screen;
  }

  /** LV5: tells the worker who controls the screen now. */
  async function tellWorker(
    computerId: string,
    screenId: string,
    controller: ScreenController,
  ): Promise<void> {
    const result = await service.gateway.call(computerId, {
      callId: newId("screens"),
      tool: "screens.control",
      input: { screenId, controller },
      timeoutMs: 10_000,
    });
    if (!result.ok)
      throw new RoostError(
        "computer_unavailable",
        `the computer could not be told who controls ${screenId}: ${result.error.message}`,
        { details: { computerId, reason: result.error.code } },
      );
  }

  function leaseChanged(computerId: string, screenId: string, lease: ScreenLease | undefined) {
    const entry = watched.get(key(computerId, screenId));
    if (entry !== undefined) entry.lease = lease;
  }

  function ended(lease: ScreenLease, how: "released" | "expired"): void {
    for (const listener of endedListeners) {
      try {
        listener(lease, how);
      } catch (error) {
        logger.warn("a lease-ended listener failed", { error: toRoostError(error).message });
      }
    }
  }

  /** Ends a lease when it runs out (if this node took it and it was not renewed meanwhile). */
  function scheduleExpiry(lease: ScreenLease): void {
    const id = key(lease.computerId, lease.screenId);
    clearTimeout(expiryTimers.get(id));
    const timer = setTimeout(
      () => {
        expiryTimers.delete(id);
        void (async () => {
          const current = await store.getScreenLease(lease.computerId, lease.screenId);
          if (current === undefined || current.viewerId !== lease.viewerId) return;
          if (current.until > clock()) return scheduleExpiry(current);
          const released = await store.releaseScreenLease({
            computerId: lease.computerId,
            screenId: lease.screenId,
            viewerId: lease.viewerId,
            actorAccountId: lease.accountId,
          });
          if (released === undefined) return;
          leaseChanged(lease.computerId, lease.screenId, undefined);
          ended(released, "expired");
          await service.handBack?.(lease.computerId, lease.screenId);
          if (await connected(lease.computerId))
            await tellWorker(lease.computerId, lease.screenId, null);
        })().catch((error: unknown) =>
          logger.warn("could not end an expired screen lease", {
            computerId: lease.computerId,
            screenId: lease.screenId,
            error: toRoostError(error).message,
          }),
        );
      },
      Math.max(0, lease.until - clock()) + 50,
    );
    timer.unref();
    expiryTimers.set(id, timer);
  }

  /** Starts (or joins) the poller that keeps a watched screen's lease current (LV3). */
  async function watch(computerId: string, screenId: string) {
    const id = key(computerId, screenId);
    let entry = watched.get(id);
    if (entry === undefined) {
      const lease = await store.getScreenLease(computerId, screenId);
      entry = watched.get(id);
      if (entry === undefined) {
        const timer = setInterval(() => {
          store.getScreenLease(computerId, screenId).then(
            (fresh) => leaseChanged(computerId, screenId, fresh),
            (error: unknown) =>
              logger.warn("could not read a screen lease", { error: toRoostError(error).message }),
          );
        }, leasePollMs);
        timer.unref();
        entry = { lease, viewers: 0, timer };
        watched.set(id, entry);
      }
    }
    entry.viewers += 1;
    const current = entry;
    return {
      lease: () => current.lease,
      unwatch: () => {
        current.viewers -= 1;
        if (current.viewers === 0) {
          clearInterval(current.timer);
          watched.delete(id);
        }
      },
    };
  }

  function register(app: Hono<{ Variables: { account: Account } }>): void {
    app.get(screensPath, async (context) => {
      const account = context.get("account");
      const computerId = await service.computerOf(account.id);
      // LV2: a sleeping computer has no screens; listing does not wake it.
      if (!(await connected(computerId))) return context.json({ screens: [] });
      const [screens, leases] = await Promise.all([
        workerScreens(computerId, context.req.raw.signal),
        store.listScreenLeases(computerId),
      ]);
      const now = clock();
      const view: Api.ScreenList = {
        screens: screens.map((screen) => {
          const lease = leases.find((each) => each.screenId === screen.id && each.until > now);
          return {
            id: screen.id,
            botId: screen.botId,
            width: screen.width,
            height: screen.height,
            busy: screen.busy,
            controller: lease === undefined ? null : toController(lease),
          };
        }),
      };
      return context.json(view);
    });

    app.post(`${screensPath}/:id/viewers`, async (context) => {
      const account = context.get("account");
      const screenId = parseScreenId(context.req.param("id"));
      const computerId = await service.computerOf(account.id);
      await findScreen(computerId, screenId, context.req.raw.signal);
      const viewerId = `vw_${randomBytes(12).toString("base64url")}`;
      const expiresAt = clock() + ticketTtlMs;
      const ticket = tickets.sign({
        accountId: account.id,
        computerId,
        screenId,
        viewerId,
        expiresAt,
      });
      const view: Api.ScreenViewer = {
        viewerId,
        path: `${screensPath}/${screenId}/vnc?ticket=${ticket}`,
        expiresAt: new Date(expiresAt).toISOString(),
      };
      return context.json(view, 201);
    });

    app.post(`${screensPath}/:id/control`, async (context) => {
      const account = context.get("account");
      const screenId = parseScreenId(context.req.param("id"));
      const body = await readJson(context, controlBody);
      const durationMs = Math.min(body.durationMs ?? leaseMs, maxLeaseMs);
      const computerId = await service.computerOf(account.id);
      await findScreen(computerId, screenId, context.req.raw.signal);
      const result = await store.takeScreenLease({
        computerId,
        screenId,
        accountId: account.id,
        viewerId: body.viewerId,
        until: clock() + durationMs,
        reason: "person",
      });
      if (!result.taken)
        throw new RoostError(
          "conflict",
          `another live view holds control of ${screenId} until ${new Date(result.holder.until).toISOString()}: hand back there first, or wait for its lease to end`,
          { details: { screenId, until: new Date(result.holder.until).toISOString() } },
        ); // LV4
      try {
        await tellWorker(computerId, screenId, {
          accountId: account.id,
          until: result.lease.until,
        }); // LV5
      } catch (error) {
        if (!result.renewed)
          await store.releaseScreenLease({
            computerId,
            screenId,
            viewerId: body.viewerId,
            actorAccountId: account.id,
          });
        throw error;
      }
      leaseChanged(computerId, screenId, result.lease);
      scheduleExpiry(result.lease);
      const view: Api.ScreenControl = { screenId, controller: toController(result.lease) };
      return context.json(view);
    });

    app.delete(`${screensPath}/:id/control`, async (context) => {
      const account = context.get("account");
      const screenId = parseScreenId(context.req.param("id"));
      const computerId = await service.computerOf(account.id);
      const released = await store.releaseScreenLease({
        computerId,
        screenId,
        actorAccountId: account.id,
      });
      // A handoff the bot asked for ends with the hand-back, lease or not (nobody may have taken it).
      const resumed = (await service.handBack?.(computerId, screenId)) ?? 0;
      if (released === undefined) {
        if (resumed > 0) return context.body(null, 204);
        throw new RoostError(
          "not_found",
          `nobody holds control of ${screenId} and no bot waits for it: nothing to hand back`,
        );
      }
      clearTimeout(expiryTimers.get(key(computerId, screenId)));
      leaseChanged(computerId, screenId, undefined);
      if (await connected(computerId))
        await tellWorker(computerId, screenId, null).catch((error: unknown) =>
          logger.warn("could not tell the worker a lease ended", {
            computerId,
            screenId,
            error: toRoostError(error).message,
          }),
        ); // LV5; the worker ends it at `until` by itself otherwise
      ended(released, released.until <= clock() ? "expired" : "released");
      return context.body(null, 204);
    });
  }

  function refuseUpgrade(socket: Duplex, error: unknown): void {
    const roost = toRoostError(error);
    const status = httpStatus(roost);
    logger.info(`live view upgrade refused: ${status}`, {
      code: roost.code,
      message: roost.message,
    }); // no query: it holds the ticket
    writeRawResponse(
      socket,
      status,
      [["Content-Type", "application/json"]],
      JSON.stringify(errorBody(roost)),
    );
  }

  /** LV1: the account and viewer of an upgrade request. */
  async function viewerOf(
    request: IncomingMessage,
    screenId: string,
  ): Promise<{ account: Account; computerId: string; viewerId: string }> {
    const url = new URL(request.url ?? "/", "http://live-view.invalid");
    const ticket = url.searchParams.get("ticket");
    const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? "");
    if (bearer !== null) {
      const found = await authenticate(store, bearer[1] ?? "");
      if (found === undefined)
        throw new RoostError("unauthenticated", "the API token is invalid or revoked");
      const computerId = await service.computerOf(found.account.id);
      return {
        account: found.account,
        computerId,
        viewerId: `vw_${randomBytes(12).toString("base64url")}`,
      };
    }
    const claims = ticket === null ? undefined : tickets.verify(ticket, clock());
    if (claims === undefined)
      throw new RoostError(
        "unauthenticated",
        `a live view needs a ticket: POST ${screensPath}/${screenId}/viewers and open the path it answers within a minute (or send the API token as Authorization: Bearer)`,
      );
    const account = await store.getAccount(claims.accountId);
    const computerId = account === undefined ? undefined : await service.computerOf(account.id);
    if (account === undefined || computerId !== claims.computerId || claims.screenId !== screenId)
      throw new RoostError("unauthenticated", "this live view ticket is not for this screen");
    return { account, computerId, viewerId: claims.viewerId };
  }

  async function open(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    rawId: string,
  ): Promise<void> {
    let decoded: string;
    try {
      decoded = decodeURIComponent(rawId);
    } catch {
      decoded = rawId;
    }
    const screenId = parseScreenId(decoded);
    const { account, computerId, viewerId } = await viewerOf(request, screenId);
    const screen = await findScreen(computerId, screenId); // LV1, LV2
    const reserved = service.reservedPorts?.().get(screen.vncPort);
    if (reserved !== undefined)
      throw new RoostError(
        "computer_unavailable",
        `the computer's worker names port ${screen.vncPort} as ${screenId}'s VNC server, which no live view may reach: ${reserved}`,
      ); // LV7
    const count = viewersByComputer.get(computerId) ?? 0;
    if (count >= maxViewers)
      throw new RoostError(
        "rate_limited",
        `${maxViewers} live views of this computer are open already; close one first`,
        { retryAfterMs: 5000 },
      ); // LV6
    viewersByComputer.set(computerId, count + 1);
    let counted = true;
    const uncount = () => {
      if (!counted) return;
      counted = false;
      const left = (viewersByComputer.get(computerId) ?? 1) - 1;
      if (left <= 0) viewersByComputer.delete(computerId);
      else viewersByComputer.set(computerId, left);
    };
    let tunnel: Duplex;
    let watching: Awaited<ReturnType<typeof watch>>;
    try {
      watching = await watch(computerId, screenId);
      try {
        tunnel = await service.gateway.openTunnel(computerId, screen.vncPort);
      } catch (error) {
        watching.unwatch();
        throw error;
      }
    } catch (error) {
      uncount();
      throw error;
    }
    touch(computerId, account.id);
    const filter = createRfbFilter({
      canControl: () => {
        const lease = watching.lease();
        return (
          lease !== undefined &&
          lease.viewerId === viewerId &&
          lease.accountId === account.id &&
          lease.until > clock()
        ); // LV3
      },
      ...(service.maxMessagesPerSecond === undefined
        ? {}
        : { maxMessagesPerSecond: service.maxMessagesPerSecond }),
    });
    wss.handleUpgrade(request, socket, head, (ws) => {
      sockets.add(ws);
      const keepAwake = setInterval(() => touch(computerId, account.id), touchEveryMs);
      keepAwake.unref();
      let closed = false;
      const finish = (code: number, reason: string) => {
        if (closed) return;
        closed = true;
        clearInterval(keepAwake);
        sockets.delete(ws);
        watching.unwatch();
        uncount();
        tunnel.destroy();
        if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING)
          ws.close(code, reason.slice(0, 120));
      };
      // Screen → viewer, pausing the tunnel while the viewer is slow (LV6).
      tunnel.on("data", (chunk: Buffer) => {
        ws.send(chunk, { binary: true }, () => {
          if (tunnel.isPaused() && ws.bufferedAmount < 256 * 1024) tunnel.resume();
        });
        if (ws.bufferedAmount > 1024 * 1024) tunnel.pause();
      });
      tunnel.on("end", () => finish(1000, "the screen closed"));
      tunnel.on("close", () => finish(1000, "the screen closed"));
      tunnel.on("error", () => finish(1011, "the screen's connection failed"));
      // Viewer → screen, through the filter (LV3).
      ws.on("message", (data: Buffer, isBinary: boolean) => {
        if (!isBinary) return finish(1003, "the live view carries binary RFB messages only");
        let out: Buffer;
        try {
          out = filter.push(data);
        } catch (error) {
          if (error instanceof RfbProtocolError) {
            logger.info("live view closed: the viewer broke the rules", {
              computerId,
              screenId,
              message: error.message,
            });
            return finish(1008, error.message);
          }
          throw error;
        }
        if (out.length === 0) return;
        if (!tunnel.write(out)) {
          ws.pause();
          tunnel.once("drain", () => ws.resume());
        }
      });
      ws.on("close", () => finish(1000, ""));
      ws.on("error", () => finish(1011, ""));
    });
  }

  function handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const match = vncPathPattern.exec(request.url ?? "");
    if (match === null) return; // not a live view: another listener's
    socket.on("error", () => undefined);
    open(request, socket, head, match[1] ?? "").catch((error: unknown) =>
      refuseUpgrade(socket, error),
    );
  }

  return {
    register,
    handleUpgrade,
    onLeaseEnded(listener) {
      endedListeners.add(listener);
      return () => endedListeners.delete(listener);
    },
    async close() {
      for (const timer of expiryTimers.values()) clearTimeout(timer);
      expiryTimers.clear();
      for (const entry of watched.values()) clearInterval(entry.timer);
      watched.clear();
      for (const ws of sockets) ws.terminate();
      sockets.clear();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
