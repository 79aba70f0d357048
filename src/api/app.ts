/**
 * The HTTP API (docs/api.md). Every route but health is authenticated by bearer token, and every
 * read and write is checked against the caller's account: another account's ids answer 404,
 * exactly like ids that do not exist.
 */
import { Hono, type Context, type MiddlewareHandler, type Next } from "hono";
import { bodyLimit } from "hono/body-limit";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { authenticate, issueApiToken } from "../auth/index.ts";
import { InvalidRequestError, NotFoundError, RoostError, toRoostError } from "../errors/index.ts";
import type { AccountEvent, ConversationEvent, EventHub } from "../events/index.ts";
import type { Account, Bot, Conversation, Store } from "../store/index.ts";
import { maxUploadBytes, registerComputerRoutes, type ComputerService } from "./computer-routes.ts";
import { errorBody, httpStatus } from "./errors.ts";
import { readJson, readQuery, text } from "./validation.ts";

export interface ApiDependencies {
  store: Store;
  events: EventHub;
  /**
   * Hand a new message to its conversation's durable loop (`waiter`: the follow-up promise the
   * store returned with it). Failure is logged, not fatal: a sweep retries.
   */
  kick(conversationId: string, messageId: string, waiter: string | null): Promise<void>;
  health(): Promise<{ ok: boolean; checks: Record<string, string> }>;
  /** Validates a bot's model spec; throws a RoostError saying how to fix it. */
  checkModel(spec: string | null): void;
  /** Label of the model a bot with no model of its own uses. */
  defaultModel: () => { id: string; isDemo: boolean };
  maxBodyBytes: number;
  /** The caller's computer (absent until the platform has computers). */
  computers?: ComputerService;
  /**
   * Stop the conversation's running turn (wherever it runs; the loop's interrupts). Answers
   * whether a turn was running.
   */
  interrupt(conversationId: string): boolean;
  /** Keepalive comment interval of the events stream. @default 15000 */
  sseKeepAliveMs?: number;
  log?: (message: string) => void;
}

type Variables = { account: Account };
type AppContext = Context<{ Variables: Variables }>;

const modelSpec = z
  .string()
  .min(1)
  .max(200)
  .regex(/^(demo|[a-z-]+:[^\s]+)$/, {
    error: 'model must be "demo" or "provider:model", e.g. "openai:gpt-4.1-mini"',
  })
  .nullable();

const createBotBody = z.strictObject({
  name: text("name", { min: 1, max: 80 }),
  instructions: text("instructions", { max: 20_000 }).optional(),
  model: modelSpec.optional(),
});
const patchBotBody = z
  .strictObject({
    name: text("name", { min: 1, max: 80 }).optional(),
    instructions: text("instructions", { max: 20_000 }).optional(),
    model: modelSpec.optional(),
  })
  .refine((body) => Object.keys(body).length > 0, {
    error: "send at least one of name, instructions, model",
  });
const createConversationBody = z.strictObject({
  botId: text("botId", { min: 1, max: 100 }),
  title: text("title", { max: 200 }).optional(),
});
const postMessageBody = z.strictObject({
  text: text("text", { min: 1, max: 100_000 }),
  clientMessageId: text("clientMessageId", { min: 1, max: 200 }),
  /** The owner's message stops the running turn and starts the next one with itself. */
  interrupt: z.boolean({ error: "interrupt must be true or false" }).optional(),
});
const interruptBody = z.strictObject({}).optional();
const createAccountBody = z.strictObject({ name: text("name", { min: 1, max: 80 }) });
const createTokenBody = z
  .strictObject({ name: text("name", { min: 1, max: 80 }).optional() })
  .optional();
const stepsQuery = z.strictObject({
  after: z.coerce.number({ error: "after must be a whole number ≥ 0" }).int().min(0).optional(),
  limit: z.coerce
    .number({ error: "limit must be a whole number from 1 to 1000" })
    .int()
    .min(1)
    .max(1000)
    .optional(),
});
const listConversationsQuery = z.strictObject({
  botId: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

const botView = (bot: Bot, defaultModel: { id: string; isDemo: boolean }) => ({
  id: bot.id,
  name: bot.name,
  instructions: bot.instructions,
  model: bot.model,
  effectiveModel: bot.model ?? defaultModel.id,
  isDemo: bot.model === "demo" || (bot.model === null && defaultModel.isDemo),
  createdAt: new Date(bot.createdAt).toISOString(),
  updatedAt: new Date(bot.updatedAt).toISOString(),
});
const conversationView = (conversation: Conversation, state: string) => ({
  id: conversation.id,
  botId: conversation.botId,
  title: conversation.title,
  lastSeq: conversation.lastSeq,
  state,
  createdAt: new Date(conversation.createdAt).toISOString(),
  updatedAt: new Date(conversation.updatedAt).toISOString(),
});

export function createApi(deps: ApiDependencies): Hono<{ Variables: Variables }> {
  const { store, events } = deps;
  const app = new Hono<{ Variables: Variables }>();

  app.onError((error, context) => {
    const roost = toRoostError(error);
    if (roost.code === "internal")
      deps.log?.(`api: ${context.req.method} ${context.req.path}: ${error.stack ?? error.message}`);
    return context.json(errorBody(roost), httpStatus(roost));
  });
  app.notFound((context) =>
    context.json(
      errorBody(
        new RoostError(
          "not_found",
          `no route ${context.req.method} ${context.req.path} (see docs/api.md)`,
        ),
      ),
      404,
    ),
  );

  const limitBody = (
    maxSize: number,
    message = `the body is larger than ${maxSize} bytes; send less`,
  ): MiddlewareHandler<{ Variables: Variables }> =>
    bodyLimit({
      maxSize,
      onError: (context) =>
        context.json(errorBody(new RoostError("payload_too_large", message)), 413),
    });
  const jsonBodyLimit = limitBody(deps.maxBodyBytes);
  const uploadBodyLimit = limitBody(
    maxUploadBytes,
    `uploads are limited to ${maxUploadBytes} bytes (25 MiB); this one is larger`,
  );
  // File uploads carry raw bytes up to the attachment limit; everything else is small JSON.
  app.use("/v1/*", (context: Context<{ Variables: Variables }, string>, next: Next) =>
    context.req.method === "PUT" && context.req.path === "/v1/computers/me/files/content"
      ? uploadBodyLimit(context, next)
      : jsonBodyLimit(context, next),
  );

  app.get("/v1/health", async (context) => {
    const health = await deps.health();
    return context.json(health, health.ok ? 200 : 503);
  });

  app.use("/v1/*", async (context, next) => {
    const header = context.req.header("authorization");
    const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header);
    if (match === null) {
      throw new RoostError(
        "unauthenticated",
        "send an API token as `Authorization: Bearer <token>` (embedded mode writes one to $ROOST_DATA_DIR/admin-token)",
      );
    }
    const account = await authenticate(store, match[1] ?? "");
    if (account === undefined)
      throw new RoostError(
        "unauthenticated",
        "the API token is not valid (create one with `roost token create`)",
      );
    context.set("account", account);
    await next();
  });

  // A model this server cannot serve is a problem of the request (400), not of the server (500).
  const checkModel = (spec: string | null) => {
    try {
      deps.checkModel(spec);
    } catch (error) {
      const roost = toRoostError(error);
      if (roost.code !== "config_invalid") throw error;
      throw new InvalidRequestError(`field "model": ${roost.message}`, {
        issues: [{ path: "model", message: roost.message }],
      });
    }
  };
  const requireAdmin = (context: AppContext) => {
    if (!context.get("account").isAdmin)
      throw new RoostError("forbidden", "only an admin account may do this");
  };
  const ownBot = async (context: AppContext, id: string) => {
    const bot = await store.getBot(id);
    if (bot === undefined || bot.accountId !== context.get("account").id)
      throw new NotFoundError("bot", id);
    return bot;
  };
  const ownConversation = async (context: AppContext, id: string) => {
    const conversation = await store.getConversation(id);
    if (conversation === undefined || conversation.accountId !== context.get("account").id) {
      throw new NotFoundError("conversation", id);
    }
    return conversation;
  };

  app.get("/v1/me", (context) => {
    const account = context.get("account");
    return context.json({
      id: account.id,
      name: account.name,
      isAdmin: account.isAdmin,
      defaultModel: deps.defaultModel(),
    });
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
      { account: { id: account.id, name: account.name, isAdmin: false }, token: token.token },
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
    return context.json({ id: token.id, accountId, token: token.token }, 201);
  });

  if (deps.computers !== undefined) registerComputerRoutes(app, deps.computers, store);

  app.post("/v1/bots", async (context) => {
    const body = await readJson(context, createBotBody);
    checkModel(body.model ?? null);
    const account = context.get("account");
    const bot = await store.createBot({
      accountId: account.id,
      name: body.name,
      instructions: body.instructions ?? "",
      model: body.model ?? null,
    });
    await store.audit({
      accountId: account.id,
      action: "bot.create",
      target: bot.id,
      detail: { name: bot.name },
    });
    return context.json(botView(bot, deps.defaultModel()), 201);
  });

  app.get("/v1/bots", async (context) => {
    const bots = await store.listBots(context.get("account").id);
    return context.json({ bots: bots.map((bot) => botView(bot, deps.defaultModel())) });
  });

  app.get("/v1/bots/:id", async (context) =>
    context.json(botView(await ownBot(context, context.req.param("id")), deps.defaultModel())),
  );

  app.patch("/v1/bots/:id", async (context) => {
    const bot = await ownBot(context, context.req.param("id"));
    const body = await readJson(context, patchBotBody);
    if (body.model !== undefined) checkModel(body.model);
    const updated = await store.updateBot(bot.id, body);
    await store.audit({
      accountId: context.get("account").id,
      action: "bot.update",
      target: bot.id,
      detail: { fields: Object.keys(body) },
    });
    return context.json(botView(updated, deps.defaultModel()));
  });

  app.post("/v1/conversations", async (context) => {
    const body = await readJson(context, createConversationBody);
    const bot = await ownBot(context, body.botId);
    const conversation = await store.createConversation({
      accountId: context.get("account").id,
      botId: bot.id,
      title: body.title ?? `Chat with ${bot.name}`,
    });
    return context.json(conversationView(conversation, "idle"), 201);
  });

  app.get("/v1/conversations", async (context) => {
    const query = readQuery(context, listConversationsQuery);
    const conversations = await store.listConversations(context.get("account").id, query);
    return context.json({
      conversations: conversations.map((conversation) =>
        conversationView(conversation, events.turnState(conversation.id)),
      ),
    });
  });

  app.get("/v1/conversations/:id", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    return context.json(conversationView(conversation, events.turnState(conversation.id)));
  });

  app.post("/v1/conversations/:id/messages", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const body = await readJson(context, postMessageBody);
    const { message, created, waiter } = await store.appendMessage({
      conversationId: conversation.id,
      clientMessageId: body.clientMessageId,
      authorAccountId: context.get("account").id,
      text: body.text,
    });
    if (created) {
      events.publish({ type: "changed", conversationId: conversation.id, seq: message.seq });
      // Only the conversation's owner may stop its turn (every conversation has one owner today).
      if (body.interrupt === true && conversation.accountId === context.get("account").id)
        deps.interrupt(conversation.id);
      deps.kick(conversation.id, message.id, waiter).catch((error: unknown) => {
        deps.log?.(
          `api: could not hand ${conversation.id} to its loop (the sweep will retry): ${toRoostError(error).message}`,
        );
      });
    }
    return context.json({ messageId: message.id, seq: message.seq, duplicate: !created }, 202);
  });

  app.post("/v1/conversations/:id/interrupt", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    // The body is optional: nothing, or `{}` as JSON.
    if (context.req.header("content-type") !== undefined) await readJson(context, interruptBody);
    const interrupted = deps.interrupt(conversation.id);
    await store.audit({
      accountId: context.get("account").id,
      action: "conversation.interrupt",
      target: conversation.id,
      detail: { interrupted },
    });
    return context.json({ interrupted }, interrupted ? 202 : 200);
  });

  app.get("/v1/conversations/:id/steps", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const query = readQuery(context, stepsQuery);
    const steps = await store.listSteps(conversation.id, {
      afterSeq: query.after ?? 0,
      limit: query.limit ?? 500,
    });
    return context.json({
      steps: steps.map((step) => ({
        seq: step.seq,
        id: step.id,
        turnId: step.turnId,
        kind: step.kind,
        payload: step.payload,
        createdAt: new Date(step.createdAt).toISOString(),
      })),
      lastSeq: (await store.getConversation(conversation.id))?.lastSeq ?? conversation.lastSeq,
    });
  });

  app.get("/v1/conversations/:id/events", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    return streamSSE(context, async (stream) => {
      const queue: (ConversationEvent | AccountEvent)[] = [];
      let wake: (() => void) | undefined;
      const push = (event: ConversationEvent | AccountEvent) => {
        queue.push(event);
        wake?.();
      };
      const unsubscribeConversation = events.subscribe(conversation.id, push);
      // The account's computer is this conversation's computer: its state changes come along.
      const unsubscribeAccount = events.subscribeAccount(conversation.accountId, push);
      const unsubscribe = () => {
        unsubscribeConversation();
        unsubscribeAccount();
      };
      stream.onAbort(() => {
        unsubscribe();
        wake?.();
      });
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
        while (!stream.aborted) {
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
            if (queue.length === 0 && !stream.aborted) await stream.write(": keepalive\n\n");
            continue;
          }
          if (event.type === "interrupt") continue; // for nodes, not clients
          await stream.writeSSE({ event: event.type, data: JSON.stringify(eventData(event)) });
        }
      } finally {
        unsubscribe();
      }
    });
  });

  return app;
}

/** What an SSE event carries: the event minus its routing fields. */
function eventData(event: ConversationEvent | AccountEvent): Record<string, unknown> {
  if (event.type === "computer") return { computerId: event.computerId, state: event.state };
  const { type: _type, conversationId: _conversationId, ...data } = event;
  return data;
}
