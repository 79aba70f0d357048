/**
 * Asking a bot from inside the API: post a message into a conversation and follow its turn to
 * the reply, the way a client does (protocol/follow.ts), but on the node's event hub instead of
 * the events stream. Used by `POST /v1/conversations/{id}/messages` (app.ts) and by the endpoints that
 * serve Roost to other agents' clients (openai-routes.ts, mcp-server-routes.ts; docs/serve.md).
 *
 * Invariants:
 *   ASK1 the subscription exists before the message is stored, so no event of its turn is missed;
 *        the steps are the record (F1–F3), events only wake the follow.
 *   ASK2 a bot is found only among the caller's bots and the team bots they may use (TACC1):
 *        another account's bot answers 404, exactly like a missing one (API1).
 *   ASK3 a follow ends at the latest after `maxWaitMs`, and when the client goes away.
 */
import { randomUUID } from "node:crypto";
import { NotFoundError, RoostError, toRoostError } from "../errors/index.ts";
import type { ConversationEvent, EventHub } from "../events/index.ts";
import type { Logger } from "../log/index.ts";
import { followReply, type Api, type EndStep } from "../protocol/index.ts";
import type { Bot, Conversation, Message, Store } from "../store/index.ts";
import { mayUseConversation } from "../teams/index.ts";
import { titleFirstMessage } from "../loop/index.ts";
import { stepView } from "./views.ts";

export interface AskDependencies {
  store: Store;
  events: EventHub;
  kick(conversationId: string, messageId: string, waiter: string | null): Promise<void>;
  logger: Logger;
}

/** Stores a message and hands its conversation to the loop (the sweep retries a failed kick). */
export async function postMessage(
  deps: AskDependencies,
  input: {
    conversationId: string;
    authorAccountId: string;
    text: string;
    clientMessageId: string;
    requestId: string;
    /** Uploads it carries (resolved and checked by the caller, UPL1). */
    attachments?: Api.MessageAttachment[];
    /** Runs after the message is stored and announced, before the loop is kicked. */
    beforeKick?: () => void;
    /** It starts a branch (branch-routes.ts): regenerate or edit. */
    replaces?: Api.MessageReplaces;
    source?: Api.MessageSource;
  },
): Promise<{ message: Message; created: boolean }> {
  const { message, created, waiter } = await deps.store.appendMessage({
    conversationId: input.conversationId,
    clientMessageId: input.clientMessageId,
    authorAccountId: input.authorAccountId,
    text: input.text,
    ...(input.replaces === undefined ? {} : { replaces: input.replaces }),
    ...(input.source === undefined ? {} : { source: input.source }),
    ...(input.attachments === undefined ? {} : { attachments: input.attachments }),
  });
  if (created && message.seq === 1) {
    // TTL1: a conversation started without a title gets the rule's title of its first message.
    const title = await titleFirstMessage(deps.store, input.conversationId, input.text);
    if (title !== undefined)
      deps.events.publish({ type: "renamed", conversationId: input.conversationId, title });
  }
  if (created) {
    deps.events.publish({
      type: "changed",
      conversationId: input.conversationId,
      seq: message.seq,
    });
    input.beforeKick?.();
    deps.kick(input.conversationId, message.id, waiter).catch((error: unknown) => {
      deps.logger.warn("could not hand the conversation to its loop (the sweep will retry)", {
        requestId: input.requestId,
        conversationId: input.conversationId,
        messageId: message.id,
        error: toRoostError(error).message,
      });
    });
  }
  return { message, created };
}

/** ASK2: the caller's bots and the team bots they may use, in `GET /v1/bots` order. */
export async function askableBots(store: Store, accountId: string): Promise<Bot[]> {
  const [own, team] = await Promise.all([
    store.listBots(accountId),
    store.listTeamBotsFor(accountId),
  ]);
  return [...own, ...team];
}

/** ASK2: the bot named (or with the id) `model`; 404 when the caller has none such. */
export async function findAskableBot(store: Store, accountId: string, model: string): Promise<Bot> {
  const bots = await askableBots(store, accountId);
  const byId = bots.find((bot) => bot.id === model);
  if (byId !== undefined) return byId;
  const named = bots.filter((bot) => bot.name === model);
  if (named.length > 1)
    throw new RoostError(
      "conflict",
      `${named.length} of your bots are named "${model}"; name one by its id (GET /v1/bots)`,
    );
  const [bot] = named;
  if (bot === undefined) throw new NotFoundError("bot", model);
  return bot;
}

/** A conversation of `bot` the caller may use: the given one, or a new one. */
export async function askConversation(
  store: Store,
  accountId: string,
  bot: Bot,
  conversationId: string | undefined,
  title: string,
): Promise<Conversation> {
  if (conversationId === undefined)
    return store.createConversation({ accountId, botId: bot.id, title });
  const conversation = await store.getConversation(conversationId);
  if (
    conversation === undefined ||
    conversation.botId !== bot.id ||
    !(await mayUseConversation(store, accountId, conversation))
  )
    throw new NotFoundError("conversation", conversationId);
  return conversation;
}

export interface AskResult {
  end: EndStep;
  /** The reply's text; for a turn that ended without one, what happened, in words. */
  text: string;
  isError: boolean;
}

/** Sends `text` and follows the turn to its end (ASK1, ASK3). */
export async function askBot(
  deps: AskDependencies,
  input: {
    accountId: string;
    conversation: Conversation;
    text: string;
    requestId: string;
    onDelta?: (text: string, reset: boolean) => void;
    onStep?: (step: Api.Step) => void;
    signal?: AbortSignal;
    /** @default 600000 (ten minutes) */
    maxWaitMs?: number;
  },
): Promise<AskResult> {
  const conversationId = input.conversation.id;
  const maxWaitMs = input.maxWaitMs ?? 600_000;
  const timeout = AbortSignal.timeout(maxWaitMs);
  const signal = input.signal === undefined ? timeout : AbortSignal.any([input.signal, timeout]);
  const open = async () => {
    const stream = hubStream(deps.events, conversationId, signal);
    const latest = await deps.store.getConversation(conversationId);
    stream.push({
      type: "hello",
      seq: latest?.lastSeq ?? 0,
      state: deps.events.turnState(conversationId),
    });
    return stream;
  };
  const first = await open(); // ASK1
  try {
    const posted = await postMessage(deps, {
      conversationId,
      authorAccountId: input.accountId,
      text: input.text,
      clientMessageId: randomUUID(),
      requestId: input.requestId,
    });
    await first.iterator.next(); // the hello: followReply starts after it
    const end = await followReply({
      events: first.iterator,
      reconnect: async () => (await open()).iterator,
      listSteps: async (after, limit) =>
        (await deps.store.listSteps(conversationId, { afterSeq: after, limit })).map(stepView),
      afterSeq: posted.message.seq,
      onDelta: (event) => input.onDelta?.(event.text, event.reset === true),
      onStep: (step) => input.onStep?.(step),
      signal,
    });
    return describeEnd(end);
  } catch (error) {
    if (timeout.aborted)
      throw new RoostError(
        "timeout",
        `the bot did not answer within ${maxWaitMs / 1000} s; its turn goes on in conversation ${conversationId}`,
      );
    throw error;
  } finally {
    first.close();
  }
}

function describeEnd(end: EndStep): AskResult {
  switch (end.kind) {
    case "reply":
      return { end, text: end.payload.text, isError: false };
    case "no_reply":
      return { end, text: "", isError: false };
    case "error":
      return { end, text: `${end.payload.message} (${end.payload.code})`, isError: true };
    case "interrupted":
      return { end, text: "the bot's turn was stopped by its owner", isError: true };
  }
}

/** The hub's events of one conversation as the events stream would carry them. */
function hubStream(events: EventHub, conversationId: string, signal: AbortSignal) {
  const queue: Api.StreamEvent[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  const push = (event: Api.StreamEvent) => {
    queue.push(event);
    wake?.();
  };
  const unsubscribe = events.subscribe(conversationId, (event: ConversationEvent) => {
    const view = streamEvent(event);
    if (view !== undefined) push(view);
  });
  const close = () => {
    closed = true;
    unsubscribe();
    wake?.();
  };
  signal.addEventListener("abort", close, { once: true });
  const iterator: AsyncIterator<Api.StreamEvent> = {
    async next() {
      for (;;) {
        const event = queue.shift();
        if (event !== undefined) return { done: false, value: event };
        if (closed) return { done: true, value: undefined };
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    },
  };
  return { iterator, push, close };
}

function streamEvent(event: ConversationEvent): Api.StreamEvent | undefined {
  switch (event.type) {
    case "changed":
      return { type: "changed", seq: event.seq };
    case "delta":
      return {
        type: "delta",
        turnId: event.turnId,
        text: event.text,
        ...(event.reset === true ? { reset: true } : {}),
      };
    case "turn":
      return { type: "turn", state: event.state, turnId: event.turnId };
    case "tool-output":
    case "interrupt":
      return undefined;
  }
}
