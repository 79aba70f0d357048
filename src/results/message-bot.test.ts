/**
 * `message_bot` and `no_reply` through the real tool router and a journal (memory-durable): a
 * crash after the send replays without sending again (BOT3), the hop is carried and bounded
 * (BOT2), and another account's bot is unreachable (BOT1).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable, type JournalEntry } from "../engine/testing/index.ts";
import type { Api } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter, type TurnTrigger } from "../tools/index.ts";
import { createResultTools } from "./index.ts";

let dir: string;
let store: Store;
let accountId: string;
let alpha: string;
let beta: string;
let chat: string;
let delivered: number;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-message-bot-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  accountId = (await store.createAccount({ name: "ada", isAdmin: false })).id;
  alpha = (await store.createBot({ accountId, name: "alpha", instructions: "", model: null })).id;
  beta = (await store.createBot({ accountId, name: "beta", instructions: "", model: null })).id;
  chat = (await store.createConversation({ accountId, botId: alpha, title: "chat" })).id;
  delivered = 0;
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function router(maxHops = 4) {
  return createToolRouter({
    sources: [
      createResultTools({
        store,
        maxHops,
        // Kicker.deliver without the kick: the store is what makes it idempotent.
        deliver: async (message) => {
          delivered++;
          const { message: stored, created } = await store.appendMessage(message);
          return { message: stored, created };
        },
      }),
    ],
  });
}

function call(
  input: unknown,
  options: {
    journal?: JournalEntry[];
    trigger?: TurnTrigger;
    conversationId?: string;
    name?: string;
  } = {},
) {
  const durable = createMemoryDurable(
    options.journal === undefined ? {} : { journal: options.journal },
  );
  const result = router().execute(options.name ?? "message_bot", input, {
    accountId,
    botId: alpha,
    conversationId: options.conversationId ?? chat,
    turnId: "turn_1",
    callId: "call_1",
    durable,
    signal: new AbortController().signal,
    ...(options.trigger === undefined ? {} : { trigger: options.trigger }),
  });
  return { durable, result };
}

const botMessages = async (conversationId: string) =>
  (await store.listMessages(conversationId)).filter((message) => message.source?.kind === "bot");

describe("message_bot", () => {
  it("BOT3 fault: a crash after the send replays the journaled result; a retry of the step itself stores one message", async () => {
    const first = call({ to: "beta", text: "hi" });
    const result = await first.result;
    expect(result.isError).toBe(false);
    const { conversationId } = result.details as { conversationId: string };
    // The process died after the step was journaled: the replay does not send.
    const replay = call({ to: "beta", text: "hi" }, { journal: first.durable.journal });
    expect(await replay.result).toEqual(result);
    expect(replay.durable.steps).toEqual([]);
    // It died before the journal took the result: the step runs again with the same call id.
    expect((await call({ to: "beta", text: "hi" }).result).details).toEqual(result.details);
    expect(delivered).toBe(2);
    const messages = await botMessages(conversationId);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.source).toEqual({
      kind: "bot",
      fromBotId: alpha,
      fromConversationId: chat,
      hop: 1,
    });
    expect(await store.getConversation(conversationId)).toMatchObject({
      botId: beta,
      title: "From alpha",
    });
  });

  it("BOT2: the hop is one more than the trigger's; past the limit nothing is sent", async () => {
    const thread = await store.ensureBotThread({
      accountId,
      fromBotId: beta,
      toBotId: alpha,
      title: "From beta",
    });
    const trigger = (hop: number): TurnTrigger => ({
      source: { kind: "bot", fromBotId: beta, fromConversationId: "conv_elsewhere", hop },
      authorAccountId: accountId,
    });
    const third = await call(
      { to: "beta", text: "x" },
      { trigger: trigger(2), conversationId: thread.conversationId },
    ).result;
    expect(third.details).toMatchObject({ hop: 3 });
    const refused = await call(
      { to: "beta", text: "x" },
      { trigger: trigger(4), conversationId: thread.conversationId },
    ).result;
    expect(refused).toMatchObject({
      isError: true,
      details: { code: "hop_limit", hop: 5, maxHops: 4 },
    });
    expect(refused.output).toContain("limit of 4 hops");
    expect(delivered).toBe(1);
  });

  it("BOT2: bot messages that joined a turn a person started count, so the chain cannot restart at 1", async () => {
    const source: Api.MessageSource = {
      kind: "bot",
      fromBotId: beta,
      fromConversationId: "conv_x",
      hop: 3,
    };
    await store.appendMessage({
      conversationId: chat,
      clientMessageId: "p",
      authorAccountId: accountId,
      text: "start",
    });
    await store.appendMessage({
      conversationId: chat,
      clientMessageId: "b",
      authorAccountId: accountId,
      text: "answer",
      source,
    });
    await store.takeInbox(chat, "take_1");
    const result = await call({ to: "beta", text: "again" }).result; // the trigger is the person's chat
    expect(result.details).toMatchObject({ hop: 4 });
    // A person writing again starts a new chain.
    await store.appendMessage({
      conversationId: chat,
      clientMessageId: "p2",
      authorAccountId: accountId,
      text: "new",
    });
    await store.takeInbox(chat, "take_2");
    const fresh = await call({ to: "beta", text: "new" }, { journal: [] }).result;
    expect(fresh.details).toMatchObject({ hop: 1 });
  });

  it("an answer to the bot that started the turn goes back into the conversation it wrote from", async () => {
    const betaChat = await store.createConversation({
      accountId,
      botId: beta,
      title: "beta's chat",
    });
    const result = await call(
      { to: "beta", text: "here is the answer" },
      {
        trigger: {
          source: { kind: "bot", fromBotId: beta, fromConversationId: betaChat.id, hop: 1 },
          authorAccountId: accountId,
        },
      },
    ).result;
    expect(result.details).toMatchObject({ conversationId: betaChat.id, hop: 2 });
  });

  it("BOT1 attack: another account's bot, by id or by name, reads like a bot that does not exist", async () => {
    const other = (await store.createAccount({ name: "mallory", isAdmin: false })).id;
    const theirs = await store.createBot({
      accountId: other,
      name: "vault",
      instructions: "",
      model: null,
    });
    for (const to of [theirs.id, "vault", "nobody"]) {
      const result = await call({ to, text: "hi" }).result;
      expect(result.isError).toBe(true);
      expect(result.output).toMatch(
        /^There is no bot .* among the user's bots\. Their other bots: "beta"\.$/,
      );
    }
    expect(await call({ to: alpha, text: "hi" }).result).toMatchObject({
      isError: true,
      details: { code: "self" },
    });
    expect(delivered).toBe(0);
    expect(await store.listConversations(other)).toEqual([]);
  });

  it("bad input is refused before anything runs", async () => {
    const result = await call({ to: "beta" }).result;
    expect(result.isError).toBe(true);
    expect(result.output).toContain("Invalid input for message_bot");
    expect(delivered).toBe(0);
  });
});

describe("no_reply", () => {
  it("ends the turn deliberately (LOOP12) with the reason", async () => {
    const result = await call({ reason: "nothing new" }, { name: "no_reply" }).result;
    expect(result).toMatchObject({
      isError: false,
      endTurn: { kind: "no_reply", reason: "nothing new" },
    });
  });
});
