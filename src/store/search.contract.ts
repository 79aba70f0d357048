/**
 * The search part of the store contract (search-types.ts SRCH1–SRCH3) and the `replaces` field of
 * a message's step (protocol/branches.ts), run by SQLite and Postgres alike from store.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "./types.ts";

export function searchContract(
  name: string,
  open: () => Promise<{ store: Store; close: () => Promise<void> }>,
) {
  async function withStore(run: (store: Store) => Promise<void>) {
    const { store, close } = await open();
    try {
      await run(store);
    } finally {
      await close();
    }
  }
  async function personWithBot(store: Store, name: string) {
    const account = await store.createAccount({ name, isAdmin: false });
    const bot = await store.createBot({
      accountId: account.id,
      name: "b",
      instructions: "",
      model: null,
    });
    return { account, bot };
  }
  let counter = 0;
  async function say(store: Store, conversationId: string, authorAccountId: string, text: string) {
    return (
      await store.appendMessage({
        conversationId,
        clientMessageId: `c${counter++}`,
        authorAccountId,
        text,
      })
    ).message;
  }

  describe(`store search contract: ${name}`, () => {
    it("finds titles, messages and replies, case-insensitively, newest match first (SRCH2, SRCH3)", () =>
      withStore(async (store) => {
        const { account, bot } = await personWithBot(store, "ann");
        const titled = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "Kitchen Renovation",
        });
        const talked = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "Misc",
        });
        await say(store, talked.id, account.id, "what about the kitchen tiles?");
        await store.appendStep({
          conversationId: talked.id,
          id: "reply-1",
          turnId: "t1",
          kind: "reply",
          payload: { text: "The KITCHEN tiles are on order." },
        });
        const other = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "Garden",
        });
        await say(store, other.id, account.id, "roses");

        const hits = await store.searchConversations(account.id, "kitchen");
        expect(hits.map((hit) => hit.conversation.id).sort()).toEqual(
          [titled.id, talked.id].sort(),
        );
        const inText = hits.find((hit) => hit.conversation.id === talked.id)!;
        expect(inText.match).toMatchObject({ kind: "reply", seq: 2 }); // the newest match
        expect(hits.find((hit) => hit.conversation.id === titled.id)!.match).toBeNull();
        expect(await store.searchConversations(account.id, "ROSES")).toHaveLength(1);
        expect(await store.searchConversations(account.id, "nothing like this")).toEqual([]);
      }));

    it("never finds another account's conversations (SRCH1)", () =>
      withStore(async (store) => {
        const ann = await personWithBot(store, "ann");
        const bob = await personWithBot(store, "bob");
        const secret = await store.createConversation({
          accountId: bob.account.id,
          botId: bob.bot.id,
          title: "bob's secret plan",
        });
        await say(store, secret.id, bob.account.id, "the password is hunter2");
        await store.appendStep({
          conversationId: secret.id,
          id: "reply-secret",
          turnId: "t1",
          kind: "reply",
          payload: { text: "hunter2 noted" },
        });
        for (const query of ["secret", "hunter2", "noted", "%", "_", "b"])
          expect(await store.searchConversations(ann.account.id, query)).toEqual([]);
        expect(await store.searchConversations(bob.account.id, "hunter2")).toHaveLength(1);
      }));

    it("treats % _ and \\ as plain characters, not patterns (SRCH2)", () =>
      withStore(async (store) => {
        const { account, bot } = await personWithBot(store, "ann");
        const percent = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "up 50% today",
        });
        await store.createConversation({ accountId: account.id, botId: bot.id, title: "up 500" });
        const slash = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "C:\\temp",
        });
        await store.createConversation({ accountId: account.id, botId: bot.id, title: "a_b" });
        await store.createConversation({ accountId: account.id, botId: bot.id, title: "axb" });
        const ids = async (query: string) =>
          (await store.searchConversations(account.id, query)).map((hit) => hit.conversation.id);
        expect(await ids("50%")).toEqual([percent.id]);
        expect(await ids(":\\t")).toEqual([slash.id]);
        expect(await ids("a_b")).toHaveLength(1);
        // A reply's JSON key is not its text: "text" matches only where the words say it.
        expect(await ids('"')).toEqual([]);
      }));

    it("keeps a message's replaces in its step", () =>
      withStore(async (store) => {
        const { account, bot } = await personWithBot(store, "ann");
        const conversation = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "t",
        });
        const first = await say(store, conversation.id, account.id, "hello");
        await store.appendMessage({
          conversationId: conversation.id,
          clientMessageId: "edit-1",
          authorAccountId: account.id,
          text: "hello again",
          replaces: { seq: first.seq, reason: "edit" },
        });
        const steps = await store.listSteps(conversation.id);
        expect(steps.map((step) => step.payload.replaces)).toEqual([
          undefined,
          { seq: first.seq, reason: "edit" },
        ]);
      }));
  });
}
