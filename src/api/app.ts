/**
 * The HTTP API (docs/api.md). Every route but health is authenticated by bearer token.
 *
 * Invariants:
 *   API1 every read and write is checked against the caller's account: another account's ids
 *        answer 404, exactly like ids that do not exist (bots, conversations, tokens).
 *   API2 every request has a request id: a valid `x-request-id` from the client, else a new one,
 *        answered in `x-request-id`; every failed request logs one line with it (4xx at info,
 *        5xx at error with the stack), and no line holds a token (log/ LOG1).
 *   API3 rate limits, in limits.ts; API4 strict query parameters, in validation.ts.
 *   API5 every error answer has the one body of errors.ts, whatever raised it.
 *   API6 an outage (the store or the engine unavailable) is logged once when the first 503 goes
 *        out and once when answers succeed again, with the count in between: not per request.
 */
import { Hono, type Context, type Env, type Input, type MiddlewareHandler, type Next } from "hono";
import { bodyLimit } from "hono/body-limit";
import { matchedRoutes } from "hono/route";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { authenticate, issueApiToken } from "../auth/index.ts";
import { InvalidRequestError, NotFoundError, RoostError, toRoostError } from "../errors/index.ts";
import type { AccountEvent, ConversationEvent, EventHub } from "../events/index.ts";
import { newId } from "../ids.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, Bot, Conversation, Store } from "../store/index.ts";
import type { MemoryService } from "../memory/index.ts";
import type { ProviderSettings } from "../models/index.ts";
import { archiveLimits, type SkillService } from "../skills/index.ts";
import { portsPath, type PortPreviews } from "./computer-ports.ts";
import type { LiveView } from "./screens.ts";
import { maxUploadBytes, registerComputerRoutes, type ComputerService } from "./computer-routes.ts";
import { registerMemoryRoutes } from "./memory-routes.ts";
import { isSkillArchiveUpload, registerSkillRoutes } from "./skills-routes.ts";
import {
  registerRoutineRoutes,
  registerWebhookRoute,
  webhookPathPrefix,
  type RoutineRouteDependencies,
} from "./routine-routes.ts";
import {
  isResultsQueryRoute,
  registerResultsRoutes,
  type ResultsService,
} from "./results-routes.ts";
import type { UsageService } from "../usage/index.ts";
import { registerUsageRoutes } from "./usage-routes.ts";
import type { ApprovalsService } from "../policy/index.ts";
import { registerApprovalRoutes } from "./approval-routes.ts";
import type { SecretsService } from "../secrets/index.ts";
import { registerSecretRoutes } from "./secret-routes.ts";
import { registerTeamRoutes } from "./team-routes.ts";
import {
  registerSlackRoutes,
  registerSlackWebhookRoutes,
  type SlackRouteDependencies,
} from "./slack-routes.ts";
import { mayPublish, mayUseConversation, usableBotOf } from "../teams/index.ts";
import type { BlobStore } from "../blobs/index.ts";
import { deleteAttachmentBlobs, registerAttachmentRoutes } from "./attachment-routes.ts";
import { registerUploadRoutes, resolveMessageAttachments, uploadLimits } from "./upload-routes.ts";
import type { McpService } from "../mcp/index.ts";
import { registerMcpOAuthCallback, registerMcpRoutes } from "./mcp-routes.ts";
import type { HelpersService } from "../helpers/index.ts";
import { helperView, registerHelperRoutes } from "./helper-routes.ts";
import { postMessage, type AskDependencies } from "./ask.ts";
import { openAiErrorType, openAiPaths, registerOpenAiRoutes } from "./openai-routes.ts";
import { registerMcpServerRoute } from "./mcp-server-routes.ts";
import { registerProviderRoutes } from "./provider-routes.ts";
import { registerBranchRoutes } from "./branch-routes.ts";
import { defaultConversationTitle } from "../loop/index.ts";
import { registerSearchRoutes, searchPath } from "./search-routes.ts";
import { errorBody, httpStatus, retryAfterSeconds } from "./errors.ts";
import {
  createRequestLimiter,
  createStreamLimiter,
  defaultApiLimits,
  type ApiLimits,
} from "./limits.ts";
import {
  invalidRequest,
  queryInteger,
  readJson,
  readQuery,
  refuseBody,
  refuseQuery,
  text,
} from "./validation.ts";
import { botView, conversationView, stepView, tokenView } from "./views.ts";

export interface ApiDependencies {
  store: Store;
  events: EventHub;
  /**
   * Hand a new message to its conversation's durable loop (`waiter`: the follow-up promise the
   * store returned with it). Failure is logged, not fatal: a sweep retries.
   */
  kick(conversationId: string, messageId: string, waiter: string | null): Promise<void>;
  health(): Promise<Api.Health>;
  /** Validates a bot's model spec; throws a RoostError saying how to fix it. */
  checkModel(spec: string | null): void;
  /** Label of the model a bot with no model of its own uses. */
  defaultModel: () => { id: string; isDemo: boolean };
  maxBodyBytes: number;
  /** The caller's computer (absent until the platform has computers). */
  computers?: ComputerService;
  /** What bots remember (absent: no memory routes). */
  memory?: MemoryService;
  /** The account's skill library (absent: no skills routes). */
  skills?: SkillService;
  /** Port previews of the caller's computer (computer-ports.ts). */
  ports?: PortPreviews;
  /** The live view of the caller's screens (screens.ts). */
  liveView?: LiveView;
  /** Routines and their webhooks (absent: no routines routes). */
  routines?: Omit<RoutineRouteDependencies, "store" | "checkModel">;
  /** Drafts, notifications and the owner's webhooks (absent: no results routes). */
  results?: ResultsService;
  /** Usage and budgets (absent: no usage routes). */
  usage?: UsageService;
  /** Tool policy and approvals (absent: no approval routes). */
  approvals?: ApprovalsService;
  /** Secrets per bot and per user (absent: no secrets routes). */
  secrets?: SecretsService;
  /** Conversation attachments' bytes (absent: no attachments routes). */
  attachments?: { blobs: Pick<BlobStore, "get" | "list" | "delete" | "put"> };
  /** MCP servers per bot and per user (absent: no MCP server routes). */
  mcp?: McpService;
  /** Model providers from Settings → Models (absent: no provider routes, no accounts list). */
  providers?: ProviderSettings;
  /** Slack links and Slack's own URLs (absent: no Slack routes; docs/slack.md). */
  slack?: Omit<SlackRouteDependencies, "store" | "clock" | "publicUrl">;
  /** Helpers of conversations (absent: no helpers route; interrupts do not offer to stop them). */
  helpers?: HelpersService;
  /**
   * Stop the conversation's running turn (wherever it runs; the loop's interrupts). Answers
   * whether a turn was running.
   */
  interrupt(conversationId: string): boolean;
  /** The URL users reach this server at, for invitation links. @default the request's origin */
  publicUrl?: string;
  /** Keepalive comment interval of the events stream. @default 15000 */
  sseKeepAliveMs?: number;
  /** Where failed requests and failed kicks are logged (API2). @default silentLogger */
  logger?: Logger;
  /** Rate and stream limits of this node (API3). @default defaultApiLimits */
  limits?: Partial<ApiLimits>;
  /** Epoch milliseconds; tests move time for the rate limits. @default Date.now */
  clock?: () => number;
}

type Variables = {
  account: Account;
  tokenId: string;
  requestId: string;
  /** The error an answer reports, for the request's log line. */
  failure: RoostError;
};
type AppContext = Context<{ Variables: Variables }, string>;

/** API2: ids a client may choose; anything else is replaced, never echoed or logged. */
const requestIdPattern = /^[A-Za-z0-9._:+/=-]{1,128}$/;
/** A token's `lastUsedAt` is written at most this often. */
const tokenTouchIntervalMs = 60_000;

const modelSpec = z
  .string()
  .min(1)
  .max(200)
  .regex(/^(demo|[a-z-]+:[^\s]+)$/, {
    error: 'model must be "demo" or "provider:model", e.g. "openai:gpt-4.1-mini"',
  })
  .nullable();

const skillNames = z
  .array(
    z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, {
      error: "a skill name is 1–64 lowercase letters, digits and dashes",
    }),
    { error: "skills must be a list of skill names, or null for all of them" },
  )
  .max(200)
  .nullable();
const memoryReview = z.boolean({ error: "memoryReview must be true or false" });
const notify = z.boolean({ error: "notify must be true or false" });
const teamId = z
  .string({ error: "teamId must be a team's id (GET /v1/teams), or null to unpublish" })
  .min(1)
  .max(100)
  .nullable();
const browserRecording = z.boolean({ error: "browserRecording must be true or false" });
const createBotBody = z.strictObject({
  name: text("name", { min: 1, max: 80 }),
  instructions: text("instructions", { max: 20_000 }).optional(),
  model: modelSpec.optional(),
  memoryReview: memoryReview.optional(),
  skills: skillNames.optional(),
  notify: notify.optional(),
  teamId: teamId.optional(),
  browserRecording: browserRecording.optional(),
});
const patchBotBody = z
  .strictObject({
    name: text("name", { min: 1, max: 80 }).optional(),
    instructions: text("instructions", { max: 20_000 }).optional(),
    model: modelSpec.optional(),
    memoryReview: memoryReview.optional(),
    skills: skillNames.optional(),
    notify: notify.optional(),
    teamId: teamId.optional(),
    browserRecording: browserRecording.optional(),
  })
  .refine((body) => Object.keys(body).length > 0, {
    error:
      "send at least one of name, instructions, model, memoryReview, skills, notify, teamId, browserRecording",
  });
const createConversationBody = z.strictObject({
  botId: text("botId", { min: 1, max: 100 }),
  title: text("title", { max: 200 }).optional(),
  /** docs/teams.md: `shared` runs on the bot's shared computer with the bot's credentials. */
  place: z
    .enum(["direct", "shared"], {
      error:
        'place must be "direct" (one person\'s chat) or "shared" (a channel, group DM or thread)',
    })
    .optional(),
});
const patchConversationBody = z.strictObject({ title: text("title", { min: 1, max: 200 }) });
const postMessageBody = z.strictObject({
  /** May be empty when the message has attachments (checked in the route). */
  text: text("text", { min: 0, max: 100_000 }),
  /** Upload ids (POST /v1/conversations/{id}/uploads, docs/uploads.md). */
  attachments: z
    .array(z.string({ error: "attachments must be upload ids" }), {
      error: "attachments must be a list of upload ids",
    })
    .optional(),
  clientMessageId: text("clientMessageId", { min: 1, max: 200 }),
  /** The owner's message stops the running turn and starts the next one with itself. */
  interrupt: z.boolean({ error: "interrupt must be true or false" }).optional(),
});
const interruptBody = z
  .strictObject({
    stopHelpers: z.boolean({ error: "stopHelpers must be true or false" }).optional(),
  })
  .optional();
const createAccountBody = z.strictObject({ name: text("name", { min: 1, max: 80 }) });
const createTokenBody = z
  .strictObject({ name: text("name", { min: 1, max: 80 }).optional() })
  .optional();
const stepsQuery = z.strictObject({
  after: queryInteger("after", { min: 0 }).optional(),
  limit: queryInteger("limit", { min: 1, max: 1000 }).optional(),
});
const listConversationsQuery = z.strictObject({
  botId: z.string().max(100).optional(),
  limit: queryInteger("limit", { min: 1, max: 500 }).optional(),
});

/** API4: the routes of this file that take query parameters; each parses them with readQuery. */
const routesWithQuery = new Set([
  "GET /v1/conversations",
  "GET /v1/conversations/:id/steps",
  "POST /v1/conversations/:id/uploads", // ?name= (upload-routes.ts)
]);
/** The files routes (computer-routes.ts) parse their own `path` query with readQuery; a port
 * preview's query is the server's inside the computer (computer-ports.ts). */
const validatesOwnQuery = (path: string) =>
  path.startsWith("/v1/computers/me/files") ||
  path.endsWith("/memory/revisions") ||
  isResultsQueryRoute(path) ||
  path === "/v1/usage" ||
  path === "/v1/approvals" ||
  path.startsWith(`${portsPath}/`);

/** The route that will answer, as `METHOD /path/:param`; undefined when only middleware matched. */
function answeringRoute<E extends Env, P extends string, I extends Input>(
  context: Context<E, P, I>,
): { method: string; path: string } | undefined {
  const handler = matchedRoutes(context)
    .filter((route) => !route.path.endsWith("*"))
    .at(-1);
  return handler === undefined
    ? undefined
    : {
        method: handler.method === "ALL" ? context.req.method : handler.method,
        path: handler.path,
      };
}

export function createApi(deps: ApiDependencies): Hono<{ Variables: Variables }> {
  const { store, events } = deps;
  const logger = (deps.logger ?? silentLogger).child({ component: "api" });
  const clock = deps.clock ?? Date.now;
  const limits: ApiLimits = { ...defaultApiLimits, ...deps.limits };
  const requests = createRequestLimiter(limits, clock);
  const streams = createStreamLimiter(limits);
  /** The event streams open on this node, so a delete ends those of what it deleted. */
  const liveStreams = new Set<{ conversationId: string; botId: string; end: () => void }>();
  /** API6: the outage being answered with 503s, logged once when it starts and once when it ends. */
  const outage: { since: number | undefined; refused: number } = { since: undefined, refused: 0 };
  const app = new Hono<{ Variables: Variables }>();
  /** Posting a message and following its turn (ask.ts): the messages route, OpenAI and MCP. */
  const askDeps: AskDependencies = { store, events, kick: (...args) => deps.kick(...args), logger };

  /** API5: the one way an error becomes an answer. */
  const errorAnswer = <P extends string, I extends Input>(
    context: Context<{ Variables: Variables }, P, I>,
    error: RoostError,
  ) => {
    context.set("failure", error);
    const retryAfter = retryAfterSeconds(error);
    if (retryAfter !== undefined) context.header("retry-after", String(retryAfter));
    const body = errorBody(error);
    // OAI4: the OpenAI-compatible paths add OpenAI's `type` to the one body (docs/serve.md).
    if (openAiPaths.has(context.req.path))
      return context.json(
        { error: { ...body.error, type: openAiErrorType(httpStatus(error)) } },
        httpStatus(error),
      );
    return context.json(body, httpStatus(error));
  };

  app.onError((error, context) => errorAnswer(context, toRoostError(error)));
  app.notFound((context) =>
    errorAnswer(
      context,
      new RoostError(
        "not_found",
        `no route ${context.req.method} ${context.req.path} (see docs/api.md)`,
      ),
    ),
  );

  // API2: first of all, so every answer (errors, the web app, the streams) carries the id.
  app.use("*", async (context, next) => {
    const offered = context.req.header("x-request-id");
    const requestId =
      offered !== undefined && requestIdPattern.test(offered) ? offered : newId("req");
    context.set("requestId", requestId);
    context.header("x-request-id", requestId);
    const started = clock();
    await next();
    const status = context.res.status;
    const failure = context.get("failure");
    if (outage.since !== undefined && status < 500) {
      logger.info("answering again after an outage", {
        downMs: clock() - outage.since,
        answered503: outage.refused,
      });
      outage.since = undefined;
      outage.refused = 0;
    }
    if (status < 400) return;
    const fields = {
      requestId,
      method: context.req.method,
      path: context.req.path,
      route: answeringRoute(context)?.path,
      status,
      code: failure?.code,
      accountId: context.get("account")?.id,
      durationMs: clock() - started,
    };
    if (status === 503 && failure?.code === "unavailable") {
      // API6: one log line per outage (a store or engine that is down), not one per request.
      outage.refused += 1;
      if (outage.since !== undefined) return;
      outage.since = clock();
      const cause: unknown = failure.cause ?? failure;
      logger.error(
        `${context.req.method} ${context.req.path} failed: 503, answering 503 until it is back`,
        { ...fields, error: cause instanceof Error ? cause.message : failure.message },
      );
      return;
    }
    if (status >= 500) {
      const cause: unknown = failure?.cause ?? failure;
      logger.error(`${context.req.method} ${context.req.path} failed: ${status}`, {
        ...fields,
        error: cause instanceof Error ? cause : failure?.message,
      });
    } else {
      logger.info(`${context.req.method} ${context.req.path} refused: ${status}`, {
        ...fields,
        message: failure?.message,
      });
    }
  });

  // A preview host's requests are all the computer's server's, whatever their path (PORT1).
  if (deps.ports !== undefined) app.use("*", deps.ports.hostMiddleware);

  const limitBody = (
    maxSize: number,
    message = `the body is larger than ${maxSize} bytes; send less`,
  ): MiddlewareHandler<{ Variables: Variables }> =>
    bodyLimit({
      maxSize,
      // bodyLimit's callback gets an untyped context; it is this app's.
      onError: (context) =>
        errorAnswer(context as AppContext, new RoostError("payload_too_large", message)),
    });
  const jsonBodyLimit = limitBody(deps.maxBodyBytes);
  const uploadBodyLimit = limitBody(
    maxUploadBytes,
    `uploads are limited to ${maxUploadBytes} bytes (25 MiB); this one is larger`,
  );
  const skillArchiveBodyLimit = limitBody(
    archiveLimits.maxArchiveBytes,
    `a skill's archive is at most ${archiveLimits.maxArchiveBytes} bytes (6 MiB); this one is larger`,
  );
  // File uploads carry raw bytes up to the attachment limit, skill archives up to theirs; a port
  // preview's body is the server's inside the computer: streamed, never held (computer-ports.ts).
  // Everything else is small JSON.
  const attachmentBodyLimit = limitBody(
    uploadLimits.maxBytes,
    `an upload is at most ${uploadLimits.maxBytes} bytes (25 MiB); this one is larger`,
  );
  app.use("/v1/*", (context: Context<{ Variables: Variables }, string>, next: Next) =>
    context.req.method === "PUT" && context.req.path === "/v1/computers/me/files/content"
      ? uploadBodyLimit(context, next)
      : context.req.method === "POST" &&
          /^\/v1\/conversations\/[^/]+\/uploads$/.test(context.req.path)
        ? attachmentBodyLimit(context, next)
        : context.req.path.startsWith(`${portsPath}/`) ||
            context.req.path.startsWith(webhookPathPrefix)
          ? next() // a webhook's body has its own limit (routine-routes.ts RAPI4)
          : isSkillArchiveUpload(
                context.req.method,
                context.req.path,
                context.req.header("content-type"),
              )
            ? skillArchiveBodyLimit(context, next)
            : jsonBodyLimit(context, next),
  );

  // Exempt from the token limits and the query rules: load balancers and monitors poll it
  // without a token, some with a cache-busting query; a 400 there would take every node out.
  app.get("/v1/health", async (context) => {
    const health = await deps.health();
    return context.json(health satisfies Api.Health, health.ok ? 200 : 503);
  });

  // A routine's webhook carries the routine's own key, not an API token (RAPI2).
  const routineRoutes =
    deps.routines === undefined
      ? undefined
      : {
          ...deps.routines,
          store,
          checkModel: (spec: string) => deps.checkModel(spec),
          clock,
        };
  if (routineRoutes !== undefined)
    registerWebhookRoute(
      app as unknown as Parameters<typeof registerWebhookRoute>[0],
      routineRoutes,
    );

  // MCPAPI4: a browser's redirect back from an MCP server's OAuth flow, with no API token.
  if (deps.mcp !== undefined)
    registerMcpOAuthCallback(app as unknown as Parameters<typeof registerMcpOAuthCallback>[0], {
      mcp: deps.mcp,
    });

  // SAPI3: Slack's requests carry Slack's signature, not an API token.
  const slackRoutes =
    deps.slack === undefined
      ? undefined
      : {
          ...deps.slack,
          store,
          clock,
          ...(deps.publicUrl === undefined ? {} : { publicUrl: deps.publicUrl }),
        };
  if (slackRoutes !== undefined) registerSlackWebhookRoutes(app as unknown as Hono, slackRoutes);

  app.use("/v1/*", async (context, next) => {
    const header = context.req.header("authorization");
    const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header);
    if (match === null) {
      throw new RoostError(
        "unauthenticated",
        "send an API token as `Authorization: Bearer <token>` (embedded mode writes one to $ROOST_DATA_DIR/admin-token)",
      );
    }
    const found = await authenticate(store, match[1] ?? "");
    if (found === undefined)
      throw new RoostError(
        "unauthenticated",
        "the API token is not valid (create one with `roost token create`)",
      );
    context.set("account", found.account);
    context.set("tokenId", found.token.id);
    requests.take(found.token.id); // API3
    const now = clock();
    if (found.token.lastUsedAt === null || now - found.token.lastUsedAt >= tokenTouchIntervalMs) {
      // Bookkeeping: a failed write here must not fail the request it describes.
      await store.touchApiToken(found.token.id, now).catch((error: unknown) =>
        logger.warn("could not record a token's use", {
          requestId: context.get("requestId"),
          tokenId: found.token.id,
          error,
        }),
      );
    }
    // API4: routes that take no query parameters refuse every one.
    const route = answeringRoute(context);
    if (
      route !== undefined &&
      !routesWithQuery.has(`${route.method} ${route.path}`) &&
      !validatesOwnQuery(route.path) &&
      // search-routes.ts parses its own; `/:id` matches its path too and would be the last route.
      context.req.path !== searchPath
    ) {
      refuseQuery(context, `${route.method} ${route.path}`);
    }
    await next();
  });

  // A model this server cannot serve is a problem of the request (400), not of the server (500).
  const checkModel = (spec: string | null) => {
    try {
      deps.checkModel(spec);
    } catch (error) {
      const roost = toRoostError(error);
      if (roost.code !== "config_invalid") throw error;
      // `provider` (models/ G2) lets the web app say it in its own terms (Settings → Models).
      const provider = roost.details?.provider;
      throw new InvalidRequestError(`field "model": ${roost.message}`, {
        issues: [{ path: "model", message: roost.message }],
        ...(typeof provider === "string" ? { provider } : {}),
      });
    }
  };
  const requireAdmin = (context: AppContext) => {
    if (!context.get("account").isAdmin)
      throw new RoostError("forbidden", "only an admin account may do this");
  };
  /** API1, TACC2: a conversation the caller may use (their own, or a shared one of a team bot). */
  const ownConversation = async (context: AppContext, id: string) => {
    const conversation = await store.getConversation(id);
    if (
      conversation === undefined ||
      !(await mayUseConversation(store, context.get("account").id, conversation))
    ) {
      throw new NotFoundError("conversation", id);
    }
    return conversation;
  };
  /** Renaming and deleting a conversation is its starter's. */
  const startedConversation = async (context: AppContext, id: string) => {
    const conversation = await ownConversation(context, id);
    if (conversation.accountId !== context.get("account").id)
      throw new RoostError(
        "forbidden",
        "only the person who started this shared conversation may rename or delete it",
      );
    return conversation;
  };
  /** TACC1: a team bot's members may read it; only its owner edits or deletes it. */
  const editableBot = async (context: AppContext, id: string) => {
    const { bot, access } = await usableBotOf(store, context.get("account").id, id);
    if (access !== "owner")
      throw new RoostError(
        "forbidden",
        "only the bot's owner may change or delete a team bot; ask them, or create your own bot",
      );
    return bot;
  };
  /** TROLE3: the caller may publish to this team; 404 for a team they are not in (TAPI1). */
  const checkPublish = async (context: AppContext, id: string | null | undefined) => {
    if (id === undefined || id === null) return;
    const role = await store.getTeamRole(id, context.get("account").id);
    if (role === undefined) throw new NotFoundError("team", id);
    if (!mayPublish(role))
      throw new RoostError(
        "forbidden",
        "only a team's owners and admins publish bots to it; ask an owner to make you an admin",
      );
  };
  const teamBotView = async (bot: Bot, callerId: string): Promise<Api.Bot> => {
    const view = botView(bot, deps.defaultModel(), callerId);
    if (bot.accountId === callerId || bot.teamId === null) return view;
    const [team, owner] = await Promise.all([
      store.getTeam(bot.teamId),
      store.getAccount(bot.accountId),
    ]);
    return team === undefined
      ? view
      : { ...view, team: { id: team.id, name: team.name, ownerName: owner?.name ?? "" } };
  };
  const endStreams = (deleted: { conversationId: string } | { botId: string }) => {
    for (const live of liveStreams) {
      if (
        "botId" in deleted
          ? live.botId === deleted.botId
          : live.conversationId === deleted.conversationId
      )
        live.end();
    }
  };

  app.get("/v1/me", (context) => {
    const account = context.get("account");
    return context.json({
      id: account.id,
      name: account.name,
      isAdmin: account.isAdmin,
      defaultModel: deps.defaultModel(),
    } satisfies Api.Me);
  });

  app.post("/v1/accounts", async (context) => {
    requireAdmin(context);
    const body = await readJson(context, createAccountBody);
    const account = await store.createAccount({ name: body.name, isAdmin: false });
    const token = await issueApiToken(store, account.id, "default");
    await store.audit({
      accountId: context.get("account").id,
      action: "account.create",
      target: account.id,
      detail: { name: body.name },
    });
    return context.json(
      {
        account: { id: account.id, name: account.name, isAdmin: false },
        token: token.token,
      } satisfies Api.CreatedAccount,
      201,
    );
  });

  app.post("/v1/accounts/:id/tokens", async (context) => {
    const caller = context.get("account");
    const id = context.req.param("id");
    if (id !== caller.id && id !== "me") requireAdmin(context);
    const accountId = id === "me" ? caller.id : id;
    const body = await readJson(
      context,
      createTokenBody.transform((value) => value ?? {}),
    );
    if ((await store.getAccount(accountId)) === undefined)
      throw new NotFoundError("account", accountId);
    const token = await issueApiToken(store, accountId, body.name ?? "token");
    await store.audit({
      accountId: caller.id,
      action: "token.create",
      target: accountId,
      detail: { tokenId: token.id },
    });
    return context.json(
      { id: token.id, accountId, token: token.token } satisfies Api.CreatedToken,
      201,
    );
  });

  app.get("/v1/tokens", async (context) => {
    const tokens = await store.listApiTokens(context.get("account").id);
    const current = context.get("tokenId");
    return context.json({
      tokens: tokens.map((token) => tokenView(token, current)),
    } satisfies Api.TokenList);
  });

  app.delete("/v1/tokens/:id", async (context) => {
    const account = context.get("account");
    const id = context.req.param("id");
    await refuseBody(context, "DELETE /v1/tokens/{id}");
    // API1: the store matches the id within the caller's account only.
    await store.revokeApiToken({ id, accountId: account.id, actorAccountId: account.id });
    requests.forget(id);
    return context.body(null, 204);
  });

  if (deps.computers !== undefined) {
    // The computer routes read only `account` of the variables; their signature names only it.
    const computerApp = app as unknown as Parameters<typeof registerComputerRoutes>[0];
    registerComputerRoutes(computerApp, deps.computers, store);
  }
  if (deps.memory !== undefined) {
    const memoryApp = app as unknown as Parameters<typeof registerMemoryRoutes>[0];
    registerMemoryRoutes(memoryApp, { store, memory: deps.memory });
  }
  if (deps.skills !== undefined) {
    const skillsApp = app as unknown as Parameters<typeof registerSkillRoutes>[0];
    registerSkillRoutes(skillsApp, { skills: deps.skills });
  }
  if (routineRoutes !== undefined) {
    const routinesApp = app as unknown as Parameters<typeof registerRoutineRoutes>[0];
    registerRoutineRoutes(routinesApp, routineRoutes);
  }
  if (deps.usage !== undefined) {
    const usageApp = app as unknown as Parameters<typeof registerUsageRoutes>[0];
    registerUsageRoutes(usageApp, {
      store,
      usage: deps.usage,
      ...(deps.clock === undefined ? {} : { clock: deps.clock }),
    });
  }
  if (deps.approvals !== undefined)
    registerApprovalRoutes(app as unknown as Parameters<typeof registerApprovalRoutes>[0], {
      store,
      approvals: deps.approvals,
    });
  if (deps.secrets !== undefined)
    registerSecretRoutes(app as unknown as Parameters<typeof registerSecretRoutes>[0], {
      store,
      secrets: deps.secrets,
    });
  if (slackRoutes !== undefined)
    registerSlackRoutes(app as unknown as Parameters<typeof registerSlackRoutes>[0], slackRoutes);
  registerTeamRoutes(app as unknown as Parameters<typeof registerTeamRoutes>[0], {
    store,
    clock,
    ...(deps.publicUrl === undefined ? {} : { publicUrl: deps.publicUrl }),
  });
  if (deps.attachments !== undefined) {
    registerAttachmentRoutes(app as unknown as Parameters<typeof registerAttachmentRoutes>[0], {
      store,
      blobs: deps.attachments.blobs,
    });
    registerUploadRoutes(app as unknown as Parameters<typeof registerUploadRoutes>[0], {
      store,
      blobs: deps.attachments.blobs,
    });
  }
  if (deps.helpers !== undefined)
    registerHelperRoutes(app as unknown as Parameters<typeof registerHelperRoutes>[0], {
      store,
      helpers: deps.helpers,
    });
  if (deps.mcp !== undefined)
    registerMcpRoutes(app as unknown as Parameters<typeof registerMcpRoutes>[0], {
      store,
      mcp: deps.mcp,
    });
  // Chat branches and search (docs/api.md "Branches", "Search"); before /v1/conversations/:id.
  registerBranchRoutes(app as unknown as Parameters<typeof registerBranchRoutes>[0], {
    store,
    events,
    ask: askDeps,
    startedConversation: (context, id) => startedConversation(context as unknown as AppContext, id),
  });
  registerSearchRoutes(app as unknown as Parameters<typeof registerSearchRoutes>[0], {
    store,
    view: (accountId, conversations) => withActivity(accountId, conversations),
  });
  // Roost as a server for other agents' clients (docs/serve.md).
  const askRoutes = {
    ...askDeps,
    acquireStream: (accountId: string) => streams.acquire(accountId),
  };
  if (deps.providers !== undefined)
    registerProviderRoutes(app as unknown as Parameters<typeof registerProviderRoutes>[0], {
      store,
      providers: deps.providers,
      defaultModel: deps.defaultModel,
    });
  registerOpenAiRoutes(app as unknown as Parameters<typeof registerOpenAiRoutes>[0], askRoutes);
  registerMcpServerRoute(app as unknown as Parameters<typeof registerMcpServerRoute>[0], askRoutes);
  if (deps.ports !== undefined)
    deps.ports.register(app as unknown as Parameters<PortPreviews["register"]>[0]);
  if (deps.liveView !== undefined)
    deps.liveView.register(app as unknown as Parameters<LiveView["register"]>[0]);
  if (deps.results !== undefined)
    registerResultsRoutes(app as unknown as Parameters<typeof registerResultsRoutes>[0], {
      store,
      events,
      results: deps.results,
      acquireStream: (accountId) => streams.acquire(accountId), // API3
      keepAliveMs: deps.sseKeepAliveMs ?? 15_000,
    });
  /** The sidebar's state of each conversation (results-routes.ts; docs/results.md). */
  const withActivity = async (accountId: string, conversations: Conversation[]) => {
    const marks = await store.conversationMarks(
      accountId,
      conversations.map((conversation) => conversation.id),
    );
    return conversations.map((conversation) => {
      const state = events.turnState(conversation.id);
      const mark = marks.get(conversation.id);
      const activity: Api.ConversationActivity =
        state === "working"
          ? "working"
          : mark !== undefined && (mark.pendingDrafts > 0 || mark.unreadAttention > 0)
            ? "needs_attention"
            : mark !== undefined &&
                (mark.unreadOther > 0 || (mark.seenSeq ?? 0) < conversation.lastSeq)
              ? "unread"
              : "idle";
      return { ...conversationView(conversation, state), activity };
    });
  };

  app.post("/v1/bots", async (context) => {
    const body = await readJson(context, createBotBody);
    checkModel(body.model ?? null);
    await checkPublish(context, body.teamId);
    const account = context.get("account");
    const bot = await store.createBot({
      accountId: account.id,
      name: body.name,
      instructions: body.instructions ?? "",
      model: body.model ?? null,
      memoryReview: body.memoryReview ?? false,
      skills: body.skills ?? null,
      notify: body.notify ?? false,
      teamId: body.teamId ?? null,
      browserRecording: body.browserRecording ?? false,
    });
    await store.audit({
      accountId: account.id,
      action: "bot.create",
      target: bot.id,
      detail: { name: bot.name, ...(bot.teamId === null ? {} : { teamId: bot.teamId }) },
    });
    return context.json(botView(bot, deps.defaultModel(), account.id), 201);
  });

  app.get("/v1/bots", async (context) => {
    const callerId = context.get("account").id;
    const [own, team] = await Promise.all([
      store.listBots(callerId),
      store.listTeamBotsFor(callerId), // TACC1: teammates' bots published to the caller's teams
    ]);
    return context.json({
      bots: [
        ...own.map((bot) => botView(bot, deps.defaultModel(), callerId)),
        ...(await Promise.all(team.map((bot) => teamBotView(bot, callerId)))),
      ],
    } satisfies Api.BotList);
  });

  app.get("/v1/bots/:id", async (context) => {
    const callerId = context.get("account").id;
    const { bot } = await usableBotOf(store, callerId, context.req.param("id"));
    return context.json(await teamBotView(bot, callerId));
  });

  app.patch("/v1/bots/:id", async (context) => {
    const bot = await editableBot(context, context.req.param("id"));
    const body = await readJson(context, patchBotBody);
    if (body.model !== undefined) checkModel(body.model);
    await checkPublish(context, body.teamId);
    const updated = await store.updateBot(bot.id, body);
    await store.audit({
      accountId: context.get("account").id,
      action: "bot.update",
      target: bot.id,
      detail: {
        fields: Object.keys(body),
        ...(body.teamId === undefined ? {} : { teamId: body.teamId }),
      },
    });
    return context.json(botView(updated, deps.defaultModel(), context.get("account").id));
  });

  // A running turn of a deleted conversation finds it gone: its next step fails not_found
  // (STORE8) and the loop ends quietly (docs/api.md#delete-v1botsid).
  app.delete("/v1/bots/:id", async (context) => {
    const bot = await editableBot(context, context.req.param("id"));
    await refuseBody(context, "DELETE /v1/bots/{id}");
    await store.deleteBot({ id: bot.id, actorAccountId: context.get("account").id });
    if (deps.attachments !== undefined)
      await deleteAttachmentBlobs(
        deps.attachments.blobs,
        { accountId: bot.accountId, botId: bot.id },
        logger,
      ); // AAPI3
    endStreams({ botId: bot.id });
    return context.body(null, 204);
  });

  app.post("/v1/conversations", async (context) => {
    const body = await readJson(context, createConversationBody);
    const { bot } = await usableBotOf(store, context.get("account").id, body.botId); // TACC1
    const conversation = await store.createConversation({
      accountId: context.get("account").id,
      botId: bot.id,
      title: body.title ?? defaultConversationTitle(bot.name),
      place: body.place ?? "direct",
    });
    return context.json(conversationView(conversation, "idle"), 201);
  });

  app.get("/v1/conversations", async (context) => {
    const query = readQuery(context, listConversationsQuery);
    const accountId = context.get("account").id;
    const listed = await store.listConversations(accountId, query);
    // TACC2, TACC3: a conversation with a team bot the caller may no longer use is not theirs to list.
    const usable = new Map<string, Promise<boolean>>();
    const mayUse = (conversation: Conversation) => {
      let answer = usable.get(conversation.botId);
      if (answer === undefined) {
        answer = mayUseConversation(store, accountId, conversation);
        usable.set(conversation.botId, answer);
      }
      return answer;
    };
    const kept = await Promise.all(listed.map(mayUse));
    const conversations = listed.filter((_conversation, index) => kept[index]);
    return context.json({
      conversations: await withActivity(accountId, conversations),
    } satisfies Api.ConversationList);
  });

  app.get("/v1/conversations/:id", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const view = conversationView(conversation, events.turnState(conversation.id));
    // A helper's conversation names its helper and parent (docs/helpers.md).
    const helper =
      deps.helpers === undefined ? undefined : await store.helperOfConversation(conversation.id);
    return context.json(
      helper === undefined
        ? view
        : {
            ...view,
            helper: {
              id: helper.id,
              parentConversationId: helper.parentConversationId,
              status: helper.status,
            },
          },
    );
  });

  app.patch("/v1/conversations/:id", async (context) => {
    const conversation = await startedConversation(context, context.req.param("id"));
    const body = await readJson(context, patchConversationBody);
    const renamed = await store.renameConversation({
      id: conversation.id,
      title: body.title,
      actorAccountId: context.get("account").id,
    });
    events.publish({ type: "renamed", conversationId: renamed.id, title: renamed.title });
    return context.json(conversationView(renamed, events.turnState(renamed.id)));
  });

  app.delete("/v1/conversations/:id", async (context) => {
    const conversation = await startedConversation(context, context.req.param("id"));
    await refuseBody(context, "DELETE /v1/conversations/{id}");
    await store.deleteConversation({
      id: conversation.id,
      actorAccountId: context.get("account").id,
    });
    if (deps.attachments !== undefined)
      await deleteAttachmentBlobs(
        deps.attachments.blobs,
        {
          accountId: conversation.accountId,
          botId: conversation.botId,
          conversationId: conversation.id,
        },
        logger,
      ); // AAPI3
    endStreams({ conversationId: conversation.id });
    return context.body(null, 204);
  });

  /** UPL1, UPL5: the uploads a message names, checked to be its conversation's. */
  const messageAttachments = async (conversation: Conversation, ids: readonly string[]) => {
    if (ids.length === 0) return [];
    if (deps.attachments === undefined)
      throw new InvalidRequestError("this server keeps no uploads; send the message without them");
    return resolveMessageAttachments(store, conversation, ids);
  };

  app.post("/v1/conversations/:id/messages", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const body = await readJson(context, postMessageBody);
    const attachments = await messageAttachments(conversation, body.attachments ?? []);
    if (body.text.trim() === "" && attachments.length === 0)
      throw invalidRequest([
        {
          path: "text",
          message:
            "text must not be empty: write a message, or attach files (attachments: [upload ids])",
        },
      ]);
    const { message, created } = await postMessage(askDeps, {
      conversationId: conversation.id,
      clientMessageId: body.clientMessageId,
      authorAccountId: context.get("account").id,
      text: body.text.trim() === "" ? "" : body.text,
      ...(attachments.length === 0 ? {} : { attachments }),
      requestId: context.get("requestId"),
      // Only the conversation's owner may stop its turn (every conversation has one owner today).
      beforeKick: () => {
        if (body.interrupt === true && conversation.accountId === context.get("account").id)
          deps.interrupt(conversation.id);
      },
    });
    return context.json(
      { messageId: message.id, seq: message.seq, duplicate: !created } satisfies Api.PostedMessage,
      202,
    );
  });

  app.post("/v1/conversations/:id/interrupt", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    // The body is optional: nothing, or `{}` as JSON.
    const body =
      context.req.header("content-type") !== undefined
        ? await readJson(context, interruptBody)
        : undefined;
    const interrupted = deps.interrupt(conversation.id);
    // Helpers (docs/helpers.md): `stopHelpers: true` stops them too; otherwise the answer lists
    // the running ones, so the client can offer to stop them.
    const accountId = context.get("account").id;
    const stopped =
      deps.helpers !== undefined && body?.stopHelpers === true
        ? await deps.helpers.stopAll(accountId, conversation.id)
        : [];
    const running =
      deps.helpers === undefined
        ? []
        : (await deps.helpers.list(accountId, conversation.id)).filter(
            (helper) => helper.status === "running",
          );
    await store.audit({
      accountId,
      action: "conversation.interrupt",
      target: conversation.id,
      detail: { interrupted, ...(stopped.length > 0 ? { stoppedHelpers: stopped.length } : {}) },
    });
    return context.json(
      {
        interrupted,
        // Only when there is something to say about helpers: the answer is otherwise unchanged.
        ...(running.length > 0 || body?.stopHelpers === true
          ? { runningHelpers: running.map(helperView) }
          : {}),
        ...(body?.stopHelpers === true
          ? { stoppedHelpers: stopped.map((helper) => helper.id) }
          : {}),
      } satisfies Api.InterruptResult,
      interrupted ? 202 : 200,
    );
  });

  app.get("/v1/conversations/:id/steps", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const query = readQuery(context, stepsQuery);
    const steps = await store.listSteps(conversation.id, {
      afterSeq: query.after ?? 0,
      limit: query.limit ?? 500,
    });
    return context.json({
      steps: steps.map(stepView),
      lastSeq: (await store.getConversation(conversation.id))?.lastSeq ?? conversation.lastSeq,
    } satisfies Api.StepPage);
  });

  app.get("/v1/conversations/:id/events", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const release = streams.acquire(context.get("account").id); // API3
    const requestId = context.get("requestId");
    // No onError for streamSSE: it would send the error's message to the client.
    return streamSSE(context, async (stream) => {
      const queue: (ConversationEvent | AccountEvent)[] = [];
      let wake: (() => void) | undefined;
      let ended = false;
      const push = (event: ConversationEvent | AccountEvent) => {
        queue.push(event);
        wake?.();
      };
      const end = () => {
        ended = true;
        wake?.();
      };
      const unsubscribeConversation = events.subscribe(conversation.id, push);
      // The account's computer is this conversation's computer: its state changes come along.
      const unsubscribeAccount = events.subscribeAccount(context.get("account").id, push);
      const live = { conversationId: conversation.id, botId: conversation.botId, end };
      liveStreams.add(live);
      const unsubscribeResync = events.onResync(end); // the client reloads from its hello
      stream.onAbort(end);
      try {
        const latest = await store.getConversation(conversation.id);
        await stream.writeSSE({
          event: "hello",
          data: JSON.stringify({
            seq: latest?.lastSeq ?? 0,
            state: events.turnState(conversation.id),
          }),
        });
        const keepAliveMs = deps.sseKeepAliveMs ?? 15_000;
        while (!stream.aborted && !ended) {
          const event = queue.shift();
          if (event === undefined) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, keepAliveMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = undefined;
            if (queue.length === 0 && !stream.aborted && !ended)
              await stream.write(": keepalive\n\n");
            continue;
          }
          if (event.type === "interrupt") continue; // for nodes, not clients
          if (event.type === "notification" || event.type === "draft") continue; // GET /v1/events
          await stream.writeSSE({ event: event.type, data: JSON.stringify(eventData(event)) });
        }
      } catch (error) {
        logger.warn("event stream failed", { requestId, conversationId: conversation.id, error });
      } finally {
        unsubscribeConversation();
        unsubscribeAccount();
        unsubscribeResync();
        liveStreams.delete(live);
        release();
      }
    });
  });

  return app;
}

/** What an SSE event carries: the event minus its routing fields. */
function eventData(event: ConversationEvent | AccountEvent): Record<string, unknown> {
  if (event.type === "computer")
    return {
      computerId: event.computerId,
      state: event.state,
      ...(event.heldByTurns === undefined ? {} : { heldByTurns: event.heldByTurns }),
    };
  if ("accountId" in event) return {};
  const { type: _type, conversationId: _conversationId, ...data } = event;
  return data;
}
