/**
 * A small real Roost API server on 127.0.0.1:0 for testing the CLI on its own: the routes
 * `roost chat` uses, with the wire format of docs/api.md (bearer tokens, the error envelope, the
 * events stream) and the interrupt contract of issue 8 §4:
 *
 *   POST /v1/conversations/{id}/interrupt   (no body or `{}`)
 *     202 {"interrupted": true}   a running turn of the caller's conversation was stopped
 *     200 {"interrupted": false}  none was running
 *   A stopped turn ends with a step `interrupted {reason: "owner", stopped: [...]}`, then `turn idle`.
 *
 * It checks what the real server checks on these routes: the token, that the conversation is the
 * caller's (another account's answers 404 like a missing one), and the request bodies.
 *
 * Its bot runs the demo model's convention: a message `$ COMMAND` makes one `shell` call that
 * prints `started` and then runs until it is stopped; any other message is answered at once.
 */
import { serve, type ServerType } from "@hono/node-server";
import { Hono, type Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { AddressInfo } from "node:net";
import type { Api } from "../../protocol/index.ts";

export interface FakeRoostOptions {
  /**
   * Whether an interrupt stops the turn. `false`: the server answers 202 but the turn keeps
   * running (a stop that never lands), to test that a second Ctrl-C quits.
   * @default true
   */
  stopsTurns?: boolean;
  /** Whether a message starts a turn at all; `false`: it is stored and nothing runs. @default true */
  startsTurns?: boolean;
}

export interface FakeRoost {
  readonly url: string;
  /** The token of the account that owns the bot. */
  readonly token: string;
  /** A second account's token (no bots, no conversations). */
  readonly otherToken: string;
  /** Every interrupt request that reached a conversation, with its answer. */
  readonly interrupts: { conversationId: string; interrupted: boolean }[];
  /** Every message stored. */
  readonly messages: { conversationId: string; text: string; interrupt: boolean }[];
  /** True while a turn runs in this conversation. */
  running(conversationId: string): boolean;
  steps(conversationId: string): readonly Api.Step[];
  close(): Promise<void>;
}

interface Conversation {
  view: Api.Conversation;
  accountId: string;
  steps: Api.Step[];
  listeners: Set<(event: string, data: unknown) => void>;
  /** The running turn: `stop()` ends it with an `interrupted` step. */
  turn: { stop(): void } | undefined;
}

type Env = { Variables: { accountId: string } };

const accountId = "acct_owner";
const otherAccountId = "acct_other";

export async function startFakeRoost(options: FakeRoostOptions = {}): Promise<FakeRoost> {
  const stopsTurns = options.stopsTurns ?? true;
  const startsTurns = options.startsTurns ?? true;
  const tokens = new Map([
    ["roost_fake_owner", accountId],
    ["roost_fake_other", otherAccountId],
  ]);
  const now = () => new Date().toISOString();
  const bot: Api.Bot = {
    id: "bot_fake",
    name: "assistant",
    instructions: "",
    model: null,
    effectiveModel: "demo",
    isDemo: true,
    memoryReview: false,
    skills: null,
    notify: false,
    teamId: null,
    own: true,
    browserRecording: false,
    createdAt: now(),
    updatedAt: now(),
  };
  const conversations = new Map<string, Conversation>();
  const interrupts: FakeRoost["interrupts"] = [];
  const messages: FakeRoost["messages"] = [];
  const clientMessageIds = new Map<string, Api.PostedMessage>();
  let counter = 0;

  const fail = (context: Context<Env>, status: 400 | 404, code: string, message: string) =>
    context.json({ error: { code, message } }, status);

  const publish = (conversation: Conversation, event: string, data: unknown) => {
    for (const listener of conversation.listeners) listener(event, data);
  };

  const append = <K extends Api.StepKind>(
    conversation: Conversation,
    kind: K,
    payload: Extract<Api.Step, { kind: K }>["payload"],
    turnId: string | null,
  ) => {
    const seq = conversation.steps.length + 1;
    conversation.steps.push({
      seq,
      id: `step_${++counter}`,
      turnId,
      kind,
      payload,
      createdAt: now(),
    } as Api.Step);
    conversation.view.lastSeq = seq;
    publish(conversation, "changed", { seq });
  };

  const setState = (conversation: Conversation, state: Api.TurnState, turnId: string) => {
    conversation.view.state = state;
    publish(conversation, "turn", { state, turnId });
  };

  const runTurn = (conversation: Conversation, text: string) => {
    const turnId = `turn_${++counter}`;
    setState(conversation, "working", turnId);
    if (!text.startsWith("$ ")) {
      append(conversation, "reply", { text: `You said: "${text}"`, model: "demo" }, turnId);
      setState(conversation, "idle", turnId);
      return;
    }
    const callId = `call_${++counter}`;
    const command = text.slice(2);
    append(
      conversation,
      "model",
      { text: "", toolCalls: [{ id: callId, name: "shell", input: { command } }], model: "demo" },
      turnId,
    );
    publish(conversation, "tool-output", { callId, stream: "stdout", data: "started\n" });
    conversation.turn = {
      stop() {
        conversation.turn = undefined;
        append(
          conversation,
          "interrupted",
          { reason: "owner", stopped: [{ kind: "tool", callId, name: "shell" }] },
          turnId,
        );
        setState(conversation, "idle", turnId);
      },
    };
  };

  const app = new Hono<Env>();
  app.use("/v1/*", async (context, next) => {
    const header = context.req.header("authorization") ?? "";
    const account = tokens.get(header.replace(/^Bearer /, ""));
    if (account === undefined)
      return context.json(
        { error: { code: "unauthenticated", message: "the API token is not valid" } },
        401,
      );
    context.set("accountId", account);
    await next();
  });

  /** The caller's conversation; another account's is answered like a missing one. */
  const own = (context: Context<Env>) => {
    const conversation = conversations.get(context.req.param("id") ?? "");
    return conversation !== undefined && conversation.accountId === context.get("accountId")
      ? conversation
      : undefined;
  };
  const notFound = (context: Context<Env>, id: string | undefined) =>
    fail(context, 404, "not_found", `conversation ${JSON.stringify(id)} not found`);

  app.get("/v1/bots", (context) =>
    context.json({ bots: context.get("accountId") === accountId ? [bot] : [] }),
  );
  app.get("/v1/bots/:id", (context) =>
    context.req.param("id") === bot.id && context.get("accountId") === accountId
      ? context.json(bot)
      : fail(context, 404, "not_found", "bot not found"),
  );
  app.get("/v1/conversations", (context) =>
    context.json({
      conversations: [...conversations.values()]
        .filter((conversation) => conversation.accountId === context.get("accountId"))
        .map((conversation) => conversation.view)
        .reverse()
        .slice(0, Number(context.req.query("limit") ?? 50)),
    }),
  );
  app.post("/v1/conversations", async (context) => {
    const body = (await context.req.json().catch(() => undefined)) as { botId?: unknown };
    if (body?.botId !== bot.id || context.get("accountId") !== accountId)
      return fail(context, 404, "not_found", "bot not found");
    const id = `conv_${++counter}`;
    const view: Api.Conversation = {
      id,
      botId: bot.id,
      place: "direct",
      title: "New conversation",
      lastSeq: 0,
      state: "idle",
      createdAt: now(),
      updatedAt: now(),
    };
    conversations.set(id, {
      view,
      accountId: context.get("accountId"),
      steps: [],
      listeners: new Set(),
      turn: undefined,
    });
    return context.json(view, 201);
  });
  app.get("/v1/conversations/:id", (context) => {
    const conversation = own(context);
    return conversation === undefined
      ? notFound(context, context.req.param("id"))
      : context.json(conversation.view);
  });

  app.post("/v1/conversations/:id/messages", async (context) => {
    const conversation = own(context);
    if (conversation === undefined) return notFound(context, context.req.param("id"));
    const body = (await context.req.json().catch(() => undefined)) as
      Record<string, unknown> | undefined;
    const { text, clientMessageId, interrupt } = body ?? {};
    const unknown = Object.keys(body ?? {}).filter(
      (key) => !["text", "clientMessageId", "interrupt"].includes(key),
    );
    if (
      typeof text !== "string" ||
      text.trim() === "" ||
      typeof clientMessageId !== "string" ||
      (interrupt !== undefined && typeof interrupt !== "boolean") ||
      unknown.length > 0
    )
      return fail(
        context,
        400,
        "invalid_request",
        "send {text, clientMessageId, interrupt?: boolean}",
      );
    const seen = clientMessageIds.get(clientMessageId);
    if (seen !== undefined) return context.json({ ...seen, duplicate: true }, 202);
    if (interrupt === true) conversation.turn?.stop();
    const messageId = `msg_${++counter}`;
    append(conversation, "message", { messageId, text, authorAccountId: accountId }, null);
    messages.push({ conversationId: conversation.view.id, text, interrupt: interrupt === true });
    const posted = { messageId, seq: conversation.view.lastSeq, duplicate: false };
    clientMessageIds.set(clientMessageId, posted);
    if (startsTurns && conversation.turn === undefined) runTurn(conversation, text);
    return context.json(posted, 202);
  });

  app.post("/v1/conversations/:id/interrupt", async (context) => {
    const conversation = own(context);
    if (conversation === undefined) return notFound(context, context.req.param("id"));
    const raw = await context.req.text();
    if (raw.trim() !== "" && raw.trim() !== "{}")
      return fail(context, 400, "invalid_request", "the interrupt takes no body (or {})");
    const turn = conversation.turn;
    interrupts.push({ conversationId: conversation.view.id, interrupted: turn !== undefined });
    if (turn === undefined) return context.json({ interrupted: false }, 200);
    if (stopsTurns) turn.stop();
    return context.json({ interrupted: true }, 202);
  });

  app.get("/v1/conversations/:id/steps", (context) => {
    const conversation = own(context);
    if (conversation === undefined) return notFound(context, context.req.param("id"));
    const after = Number(context.req.query("after") ?? 0);
    const limit = Number(context.req.query("limit") ?? 100);
    if (!Number.isInteger(after) || !Number.isInteger(limit) || after < 0 || limit < 1)
      return fail(context, 400, "invalid_request", "after and limit are whole numbers");
    return context.json({
      steps: conversation.steps.filter((step) => step.seq > after).slice(0, limit),
      lastSeq: conversation.view.lastSeq,
    });
  });

  app.get("/v1/conversations/:id/events", (context) => {
    const conversation = own(context);
    if (conversation === undefined) return notFound(context, context.req.param("id"));
    return streamSSE(context, async (stream) => {
      const queue: [string, unknown][] = [];
      let wake: () => void = () => undefined;
      const listener = (event: string, data: unknown) => {
        queue.push([event, data]);
        wake();
      };
      conversation.listeners.add(listener);
      stream.onAbort(() => wake());
      try {
        await stream.writeSSE({
          event: "hello",
          data: JSON.stringify({ seq: conversation.view.lastSeq, state: conversation.view.state }),
        });
        while (!stream.aborted) {
          const next = queue.shift();
          if (next === undefined) {
            await new Promise<void>((resolve) => (wake = resolve));
            continue;
          }
          await stream.writeSSE({ event: next[0], data: JSON.stringify(next[1]) });
        }
      } finally {
        conversation.listeners.delete(listener);
      }
    });
  });

  const server = await new Promise<ServerType>((resolve) => {
    const started = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () =>
      resolve(started),
    );
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token: "roost_fake_owner",
    otherToken: "roost_fake_other",
    interrupts,
    messages,
    running: (conversationId) => conversations.get(conversationId)?.turn !== undefined,
    steps: (conversationId) => conversations.get(conversationId)?.steps ?? [],
    close: () =>
      new Promise<void>((resolve) => {
        if ("closeAllConnections" in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
