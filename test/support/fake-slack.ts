/**
 * A fake Slack on 127.0.0.1 that speaks Slack's own wire format (docs/slack.md), for the Slack
 * tests and bench: Web API calls in (`POST /api/<method>`, form-encoded or JSON, with a Bearer
 * token), answered as Slack does (`{ ok: true, … }`, or `{ ok: false, error }` with
 * `invalid_auth`, `missing_scope` and `needed`, `channel_not_found`, `message_not_found`,
 * HTTP 429 `ratelimited` with `retry-after`), the upload URL of files.uploadV2, and signed
 * Events API and interactivity requests out to Roost.
 *
 * It checks what Slack checks: the token is the installed one (a revoked one answers
 * `token_revoked`), the scope of each method, and each method's required arguments.
 *
 * OAuth install (many workspaces): `GET /oauth/v2/authorize?client_id&scope&redirect_uri&state&team`
 * stands for the person approving the install in workspace `team` (Slack's own `team` parameter
 * picks the workspace) and redirects to `redirect_uri?code&state`; `oauth.v2.access` checks the
 * client id (`invalid_client_id`), the client secret (`bad_client_secret`), the code (unknown,
 * used or expired: `invalid_code`) and the redirect URL (`bad_redirect_uri`) as Slack does, and
 * answers that workspace's own bot token, which the Web API then accepts for that workspace.
 */
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

/** One Web API call Slack answered ok, with its arguments as Slack parsed them. */
export interface SlackCall {
  method: string;
  args: Record<string, string>;
  /** What Slack answered (a posted message's `ts`…). */
  answer: Record<string, unknown>;
  /** The bearer token the call carried (which workspace's install made it). */
  token: string;
  at: number;
}

const scopeOf: Record<string, string | null> = {
  "auth.test": null,
  "apps.connections.open": null,
  "chat.postMessage": "chat:write",
  "chat.update": "chat:write",
  "chat.postEphemeral": "chat:write",
  "files.getUploadURLExternal": "files:write",
  "files.completeUploadExternal": "files:write",
  "reactions.add": "reactions:write",
  "users.info": "users:read",
};
const required: Record<string, string[]> = {
  "chat.postMessage": ["channel"],
  "chat.update": ["channel", "ts"],
  "chat.postEphemeral": ["channel", "user"],
  "files.getUploadURLExternal": ["filename", "length"],
  "files.completeUploadExternal": ["files"],
  "reactions.add": ["channel", "timestamp", "name"],
  "users.info": ["user"],
};

export interface FakeSlack {
  readonly apiUrl: string;
  readonly teamId: string;
  readonly botUserId: string;
  readonly token: string;
  readonly signingSecret: string;
  /** Socket Mode's app-level token (`xapp-…`); only apps.connections.open takes it. */
  readonly appToken: string;
  /** The app's OAuth credentials (Basic Information). */
  readonly clientId: string;
  readonly clientSecret: string;
  /** The bot token an OAuth install gave workspace `teamId` (undefined before). */
  installedToken(teamId: string): string | undefined;
  /** Every call Slack answered ok, oldest first. */
  readonly calls: SlackCall[];
  /** Bytes uploaded to each file's upload URL, by file id. */
  readonly uploads: Map<string, string>;
  callsOf(method: string): SlackCall[];
  /** The next `times` calls of `method` fail: a Slack error code, or a 429 with retry-after. */
  failNext(
    method: string,
    failure: { error: string } | { rateLimitedSeconds: number },
    times?: number,
  ): void;
  /** The installed token stops working (`token_revoked`), or works again. */
  revoke(revoked: boolean): void;
  setScopes(scopes: string[]): void;
  /** Signs a body as Slack does (v0, HMAC-SHA256 of `v0:<timestamp>:<body>`). */
  sign(body: string, timestampSec?: number, secret?: string): Record<string, string>;
  /** Posts an Events API `event_callback` to `url`, signed; answers Roost's response. */
  sendEvent(
    url: string,
    event: Record<string, unknown>,
    options?: {
      eventId?: string;
      retryNum?: number;
      secret?: string;
      timestampSec?: number;
      /** The workspace the event is from. @default teamId */
      teamId?: string;
    },
  ): Promise<{ status: number; body: string; eventId: string; elapsedMs: number }>;
  /**
   * Posts an interactivity payload as Slack does (`payload=<json>`, form-encoded, signed): a
   * `block_actions` click by `user` on the button `actionId` of the message `card`.
   */
  click(
    url: string,
    input: { user: string; card: SlackCall; actionId: string },
  ): Promise<{ status: number; body: string }>;
  /** Waits until a Socket Mode client is connected (it opened apps.connections.open's URL). */
  socketConnected(timeoutMs?: number): Promise<void>;
  /**
   * Sends an `events_api` envelope over Socket Mode (the newest connection) and answers when the
   * client acknowledged it (`{envelope_id}`), with how long that took.
   */
  socketEvent(
    event: Record<string, unknown>,
    options?: { envelopeId?: string; retryAttempt?: number },
  ): Promise<{ envelopeId: string; ackMs: number }>;
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startFakeSlack(): Promise<FakeSlack> {
  const teamId = "T0FAKE01";
  const botUserId = "U0BOT001";
  const token = `xoxb-${randomBytes(12).toString("hex")}`;
  const signingSecret = randomBytes(16).toString("hex");
  const appToken = `xapp-1-${randomBytes(12).toString("hex")}`;
  const clientId = "1234567890.9876543210";
  const clientSecret = randomBytes(16).toString("hex");
  /** Each bot token's workspace: the default one, then one per OAuth install. */
  const workspaces = new Map<string, { teamId: string; teamName: string; botUserId: string }>([
    [token, { teamId, teamName: "Fake Co", botUserId }],
  ]);
  const installed = new Map<string, string>();
  const codes = new Map<
    string,
    { teamId: string; redirectUri: string; expiresAt: number; used: boolean }
  >();
  const sockets: WebSocket[] = [];
  const acks = new Map<string, () => void>();
  const wss = new WebSocketServer({ noServer: true });
  wss.on("connection", (socket) => {
    sockets.push(socket);
    // Slack's hello, then pings (the SDK closes a connection that hears none for 30 s).
    socket.send(
      JSON.stringify({
        type: "hello",
        num_connections: sockets.length,
        connection_info: { app_id: "A0FAKE01" },
      }),
    );
    const pinger = setInterval(() => socket.ping(), 5000);
    socket.on("close", () => {
      clearInterval(pinger);
      sockets.splice(sockets.indexOf(socket), 1);
    });
    socket.on("message", (data: Buffer) => {
      const message = JSON.parse(data.toString("utf8")) as { envelope_id?: string };
      if (message.envelope_id !== undefined) acks.get(message.envelope_id)?.();
    });
  });
  const calls: SlackCall[] = [];
  const uploads = new Map<string, string>();
  const failures = new Map<
    string,
    { failure: { error: string } | { rateLimitedSeconds: number }; times: number }
  >();
  const messages = new Map<string, { channel: string; text: string }>();
  let scopes = new Set([
    "chat:write",
    "files:write",
    "reactions:write",
    "users:read",
    "app_mentions:read",
    "im:history",
  ]);
  let revoked = false;
  let tsCounter = 0;
  let apiUrl = "";

  const answer = (
    response: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) => {
    response.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
    response.end(JSON.stringify(body));
  };

  const server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? "/", "http://127.0.0.1");
      const raw = await readBody(request);
      if (url.pathname.startsWith("/upload/")) {
        uploads.set(url.pathname.slice("/upload/".length), raw);
        response.writeHead(200, { "content-type": "text/plain" });
        response.end(`OK - ${Buffer.byteLength(raw)}`);
        return;
      }
      if (url.pathname === "/oauth/v2/authorize" && request.method === "GET") {
        // The person approves the install in workspace `team`; Slack redirects with a code.
        const redirectUri = url.searchParams.get("redirect_uri");
        const team = url.searchParams.get("team") ?? teamId;
        if (url.searchParams.get("client_id") !== clientId || redirectUri === null)
          return answer(response, 400, { ok: false, error: "invalid_client_id" });
        if (!(url.searchParams.get("scope") ?? "").split(",").includes("chat:write"))
          return answer(response, 400, { ok: false, error: "invalid_scope" });
        const code = `${Date.now()}.${randomBytes(10).toString("hex")}`;
        codes.set(code, {
          teamId: team,
          redirectUri,
          expiresAt: Date.now() + 600_000,
          used: false,
        });
        const target = new URL(redirectUri);
        target.searchParams.set("code", code);
        target.searchParams.set("state", url.searchParams.get("state") ?? "");
        response.writeHead(302, { location: target.toString() });
        response.end();
        return;
      }
      const match = /^\/api\/([a-zA-Z0-9.]+)$/.exec(url.pathname);
      if (request.method !== "POST" || match === null)
        return answer(response, 404, { ok: false, error: "unknown_method" });
      const method = match[1]!;
      const type = request.headers["content-type"] ?? "";
      let args: Record<string, string> = {};
      if (type.startsWith("application/json")) {
        const parsed = JSON.parse(raw === "" ? "{}" : raw) as Record<string, unknown>;
        args = Object.fromEntries(
          Object.entries(parsed).map(([key, value]) => [
            key,
            typeof value === "string" ? value : JSON.stringify(value),
          ]),
        );
      } else args = Object.fromEntries(new URLSearchParams(raw));
      if (method === "oauth.v2.access") {
        // Slack takes the client's credentials as Basic auth or as arguments.
        const basic = /^Basic (\S+)$/.exec(request.headers.authorization ?? "")?.[1];
        const [basicId, basicSecret] =
          basic === undefined ? [] : Buffer.from(basic, "base64").toString("utf8").split(":");
        const id = args.client_id ?? basicId;
        const secret = args.client_secret ?? basicSecret;
        if (id !== clientId)
          return answer(response, 200, { ok: false, error: "invalid_client_id" });
        if (secret !== clientSecret)
          return answer(response, 200, { ok: false, error: "bad_client_secret" });
        const grant = codes.get(args.code ?? "");
        if (grant === undefined || grant.used || grant.expiresAt < Date.now())
          return answer(response, 200, { ok: false, error: "invalid_code" });
        if (args.redirect_uri !== undefined && args.redirect_uri !== grant.redirectUri)
          return answer(response, 200, { ok: false, error: "bad_redirect_uri" });
        grant.used = true;
        const minted = `xoxb-${randomBytes(12).toString("hex")}`;
        const workspace = {
          teamId: grant.teamId,
          teamName: grant.teamId === teamId ? "Fake Co" : `Workspace ${grant.teamId}`,
          botUserId: grant.teamId === teamId ? botUserId : `UBOT${grant.teamId.slice(1, 8)}`,
        };
        const previous = installed.get(grant.teamId);
        if (previous !== undefined && previous !== token) workspaces.delete(previous);
        workspaces.set(minted, workspace);
        installed.set(grant.teamId, minted);
        const body = {
          ok: true,
          access_token: minted,
          token_type: "bot",
          scope: [...scopes].join(","),
          bot_user_id: workspace.botUserId,
          app_id: "A0FAKE01",
          team: { id: workspace.teamId, name: workspace.teamName },
          enterprise: null,
          authed_user: { id: "U0INSTALL" },
          is_enterprise_install: false,
        };
        calls.push({ method, args, answer: body, token: "", at: Date.now() });
        return answer(response, 200, body);
      }
      const bearer = /^Bearer (\S+)$/.exec(request.headers.authorization ?? "")?.[1] ?? args.token;
      if (!(method in scopeOf))
        return answer(response, 200, { ok: false, error: "unknown_method" });
      if (bearer === undefined) return answer(response, 200, { ok: false, error: "not_authed" });
      if (method === "apps.connections.open") {
        // Only the app-level token opens a connection; a bot token is refused as Slack does.
        if (bearer !== appToken)
          return answer(response, 200, {
            ok: false,
            error: bearer.startsWith("xoxb-") ? "not_allowed_token_type" : "invalid_auth",
          });
        const ticket = randomBytes(8).toString("hex");
        calls.push({ method, args, answer: { ok: true }, token: bearer, at: Date.now() });
        return answer(response, 200, {
          ok: true,
          url: `${apiUrl.replace(/^http/, "ws").replace(/\/api\/$/, "")}/socket/${ticket}`,
        });
      }
      const workspace = workspaces.get(bearer);
      if (workspace === undefined)
        return answer(response, 200, { ok: false, error: "invalid_auth" });
      if (revoked) return answer(response, 200, { ok: false, error: "token_revoked" });
      const failing = failures.get(method);
      if (failing !== undefined && failing.times > 0) {
        failing.times -= 1;
        if ("rateLimitedSeconds" in failing.failure)
          return answer(
            response,
            429,
            { ok: false, error: "ratelimited" },
            { "retry-after": String(failing.failure.rateLimitedSeconds) },
          );
        return answer(response, 200, { ok: false, error: failing.failure.error });
      }
      const scope = scopeOf[method];
      if (scope !== null && scope !== undefined && !scopes.has(scope))
        return answer(response, 200, {
          ok: false,
          error: "missing_scope",
          needed: scope,
          provided: [...scopes].join(","),
        });
      for (const name of required[method] ?? [])
        if (args[name] === undefined || args[name] === "")
          return answer(response, 200, {
            ok: false,
            error: `invalid_arguments`,
            response_metadata: { messages: [`[ERROR] missing required field: ${name}`] },
          });
      if (
        (method === "chat.postMessage" ||
          method === "chat.update" ||
          method === "chat.postEphemeral") &&
        args.text === undefined &&
        args.blocks === undefined
      )
        return answer(response, 200, { ok: false, error: "no_text" });
      if (method === "chat.update") {
        const old = messages.get(args.ts!);
        if (old === undefined || old.channel !== args.channel)
          return answer(response, 200, { ok: false, error: "message_not_found" });
        old.text = args.text ?? "";
      }
      const ok = (body: Record<string, unknown>) => {
        calls.push({ method, args, answer: body, token: bearer, at: Date.now() });
        answer(response, 200, body);
      };
      switch (method) {
        case "auth.test":
          return ok({
            ok: true,
            url: "https://fake.slack.com/",
            team: workspace.teamName,
            user: "roost",
            team_id: workspace.teamId,
            user_id: workspace.botUserId,
            bot_id: "B0FAKE01",
          });
        case "chat.postMessage": {
          tsCounter += 1;
          const ts = `${Math.floor(Date.now() / 1000)}.${String(tsCounter).padStart(6, "0")}`;
          messages.set(ts, { channel: args.channel!, text: args.text ?? "" });
          return ok({
            ok: true,
            channel: args.channel,
            ts,
            message: { text: args.text, ts, thread_ts: args.thread_ts },
          });
        }
        case "chat.update":
          return ok({ ok: true, channel: args.channel, ts: args.ts, text: args.text });
        case "chat.postEphemeral":
          return ok({ ok: true, message_ts: `${Math.floor(Date.now() / 1000)}.999999` });
        case "files.getUploadURLExternal": {
          const fileId = `F${randomBytes(5).toString("hex").toUpperCase()}`;
          return ok({
            ok: true,
            upload_url: `${apiUrl.replace(/\/api\/$/, "")}/upload/${fileId}`,
            file_id: fileId,
          });
        }
        case "files.completeUploadExternal": {
          const files = JSON.parse(args.files!) as { id: string; title?: string }[];
          if (files.some((file) => !uploads.has(file.id)))
            return answer(response, 200, { ok: false, error: "file_not_found" });
          return ok({ ok: true, files: files.map((file) => ({ id: file.id, title: file.title })) });
        }
        case "reactions.add":
          return ok({ ok: true });
        case "users.info":
          return ok({
            ok: true,
            user: {
              id: args.user,
              name: args.user!.toLowerCase(),
              real_name: `Person ${args.user}`,
            },
          });
        default:
          return answer(response, 200, { ok: false, error: "unknown_method" });
      }
    })().catch((error: unknown) => {
      response.writeHead(500);
      response.end(String(error));
    });
  });
  server.on("upgrade", (request, socket, head) => {
    if (!(request.url ?? "").startsWith("/socket/")) return socket.destroy();
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit("connection", ws, request));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;

  const sign = (
    body: string,
    timestampSec = Math.floor(Date.now() / 1000),
    secret = signingSecret,
  ) => ({
    "x-slack-request-timestamp": String(timestampSec),
    "x-slack-signature": `v0=${createHmac("sha256", secret).update(`v0:${timestampSec}:${body}`).digest("hex")}`,
  });

  return {
    apiUrl,
    teamId,
    botUserId,
    token,
    signingSecret,
    appToken,
    clientId,
    clientSecret,
    installedToken: (team) => installed.get(team),
    calls,
    uploads,
    callsOf: (method) => calls.filter((call) => call.method === method),
    failNext(method, failure, times = 1) {
      failures.set(method, { failure, times });
    },
    revoke(value) {
      revoked = value;
    },
    setScopes(value) {
      scopes = new Set(value);
    },
    sign,
    async sendEvent(url, event, options = {}) {
      const eventId = options.eventId ?? `Ev${randomBytes(6).toString("hex").toUpperCase()}`;
      const body = JSON.stringify({
        token: "deprecated-verification-token",
        team_id: options.teamId ?? teamId,
        api_app_id: "A0FAKE01",
        event,
        type: "event_callback",
        event_id: eventId,
        event_time: Math.floor(Date.now() / 1000),
      });
      const started = performance.now();
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...sign(body, options.timestampSec, options.secret),
          ...(options.retryNum === undefined
            ? {}
            : {
                "x-slack-retry-num": String(options.retryNum),
                "x-slack-retry-reason": "http_timeout",
              }),
        },
        body,
      });
      return {
        status: response.status,
        body: await response.text(),
        eventId,
        elapsedMs: performance.now() - started,
      };
    },
    async click(url, input) {
      const blocks = JSON.parse(input.card.args.blocks ?? "[]") as {
        type: string;
        elements?: { action_id: string; value: string }[];
      }[];
      const button = blocks
        .flatMap((block) => block.elements ?? [])
        .find((element) => element.action_id === input.actionId);
      if (button === undefined) throw new Error(`the card has no button ${input.actionId}`);
      const payload = {
        type: "block_actions",
        user: { id: input.user, team_id: teamId },
        team: { id: teamId },
        api_app_id: "A0FAKE01",
        channel: { id: input.card.args.channel },
        container: {
          type: "message",
          message_ts: input.card.answer.ts,
          channel_id: input.card.args.channel,
          ...(input.card.args.thread_ts === undefined
            ? {}
            : { thread_ts: input.card.args.thread_ts }),
        },
        message: { ts: input.card.answer.ts, text: input.card.args.text },
        trigger_id: "1.2.3",
        response_url: `${apiUrl.replace(/\/api\/$/, "")}/response`,
        actions: [
          {
            action_id: input.actionId,
            block_id: "roost_approval",
            value: button.value,
            type: "button",
            action_ts: "1.1",
          },
        ],
      };
      const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...sign(body) },
        body,
      });
      return { status: response.status, body: await response.text() };
    },
    async socketConnected(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (sockets.length === 0) {
        if (Date.now() > deadline) throw new Error("no Socket Mode client connected");
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async socketEvent(event, options = {}) {
      const socket = sockets.at(-1);
      if (socket === undefined) throw new Error("no Socket Mode client connected");
      const envelopeId = options.envelopeId ?? randomBytes(8).toString("hex");
      const acked = new Promise<void>((resolve) => acks.set(envelopeId, resolve));
      const started = performance.now();
      socket.send(
        JSON.stringify({
          envelope_id: envelopeId,
          type: "events_api",
          accepts_response_payload: false,
          retry_attempt: options.retryAttempt ?? 0,
          retry_reason: options.retryAttempt === undefined ? "" : "timeout",
          payload: {
            token: "deprecated",
            team_id: teamId,
            api_app_id: "A0FAKE01",
            event,
            type: "event_callback",
            event_id: `Ev${envelopeId.toUpperCase()}`,
            event_time: Math.floor(Date.now() / 1000),
          },
        }),
      );
      await acked;
      return { envelopeId, ackMs: performance.now() - started };
    },
    async close() {
      for (const socket of sockets) socket.terminate();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
