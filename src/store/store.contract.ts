/**
 * The contract every Store implementation runs (SQLite and Postgres alike). Each case opens a
 * fresh, empty store through `open`.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "./types.ts";

export function storeContract(
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

  async function seed(store: Store) {
    const account = await store.createAccount({ name: "ada", isAdmin: false });
    const bot = await store.createBot({
      accountId: account.id,
      name: "helper",
      instructions: "be brief",
      model: null,
    });
    const conversation = await store.createConversation({
      accountId: account.id,
      botId: bot.id,
      title: "t",
    });
    return { account, bot, conversation };
  }

  describe(`store contract: ${name}`, () => {
    it("migrating twice is harmless", () =>
      withStore(async (store) => {
        await store.migrate();
        await store.migrate();
        expect(await store.findAdminAccount()).toBeUndefined();
      }));

    it("finds accounts by token hash only (S5)", () =>
      withStore(async (store) => {
        const admin = await store.createAccount({ name: "root", isAdmin: true });
        await store.createApiToken({ accountId: admin.id, name: "cli", tokenHash: "h1" });
        expect((await store.findAccountByTokenHash("h1"))?.id).toBe(admin.id);
        expect(await store.findAccountByTokenHash("h2")).toBeUndefined();
        expect((await store.findAdminAccount())?.id).toBe(admin.id);
      }));

    it("creates, lists and updates bots; names are unique per account", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        await expect(
          store.createBot({ accountId: account.id, name: "helper", instructions: "", model: null }),
        ).rejects.toMatchObject({ code: "conflict" });
        const other = await store.createAccount({ name: "bob", isAdmin: false });
        await store.createBot({
          accountId: other.id,
          name: "helper",
          instructions: "",
          model: null,
        });
        const updated = await store.updateBot(bot.id, { instructions: "be kind", model: "demo" });
        expect(updated).toMatchObject({ name: "helper", instructions: "be kind", model: "demo" });
        expect((await store.getBot(bot.id))?.instructions).toBe("be kind");
        expect((await store.listBots(account.id)).map((b) => b.name)).toEqual(["helper"]);
        expect((await store.findBotByName(account.id, "helper"))?.id).toBe(bot.id);
        await store.updateBot(bot.id, { model: null });
        expect((await store.getBot(bot.id))?.model).toBeNull();
      }));

    it("numbers messages and steps gaplessly, in one sequence (S1)", () =>
      withStore(async (store) => {
        const { account, conversation } = await seed(store);
        const first = await store.appendMessage({
          conversationId: conversation.id,
          clientMessageId: "c1",
          authorAccountId: account.id,
          text: "hello",
        });
        expect(first).toMatchObject({ created: true, message: { seq: 1, text: "hello" } });
        const step = await store.appendStep({
          conversationId: conversation.id,
          id: "turn1:reply",
          turnId: "turn1",
          kind: "reply",
          payload: { text: "hi" },
        });
        expect(step.seq).toBe(2);
        const steps = await store.listSteps(conversation.id);
        expect(steps.map((s) => [s.seq, s.kind])).toEqual([
          [1, "message"],
          [2, "reply"],
        ]);
        expect(steps[1]?.payload).toEqual({ text: "hi" });
        expect((await store.listSteps(conversation.id, { afterSeq: 1 })).map((s) => s.seq)).toEqual(
          [2],
        );
        expect((await store.getConversation(conversation.id))?.lastSeq).toBe(2);
      }));

    it("ignores a repeated step id and a repeated clientMessageId (S2, S3)", () =>
      withStore(async (store) => {
        const { account, conversation } = await seed(store);
        const input = {
          conversationId: conversation.id,
          clientMessageId: "same",
          authorAccountId: account.id,
          text: "x",
        };
        const a = await store.appendMessage(input);
        const b = await store.appendMessage({ ...input, text: "changed" });
        expect(b).toEqual({ message: a.message, created: false, waiter: null });
        const stepInput = {
          conversationId: conversation.id,
          id: "s1",
          turnId: "t",
          kind: "model" as const,
          payload: { n: 1 },
        };
        const s1 = await store.appendStep(stepInput);
        const s2 = await store.appendStep({ ...stepInput, payload: { n: 2 } });
        expect(s2).toEqual(s1);
        expect(await store.listSteps(conversation.id)).toHaveLength(2);
      }));

    it("stays gapless under concurrent appends, including racing duplicates", () =>
      withStore(async (store) => {
        const { account, conversation } = await seed(store);
        await Promise.all([
          ...Array.from({ length: 20 }, (_, index) =>
            store.appendStep({
              conversationId: conversation.id,
              id: `s${index % 10}`,
              turnId: null,
              kind: "model",
              payload: {},
            }),
          ),
          ...Array.from({ length: 10 }, (_, index) =>
            store.appendMessage({
              conversationId: conversation.id,
              clientMessageId: `m${index % 5}`,
              authorAccountId: account.id,
              text: "x",
            }),
          ),
        ]);
        const seqs = (await store.listSteps(conversation.id)).map((s) => s.seq);
        expect(seqs).toEqual(Array.from({ length: 15 }, (_, index) => index + 1));
      }));

    it("takes the inbox once per take id, and a repeated take returns the same messages", () =>
      withStore(async (store) => {
        const { account, conversation } = await seed(store);
        const send = (id: string) =>
          store.appendMessage({
            conversationId: conversation.id,
            clientMessageId: id,
            authorAccountId: account.id,
            text: id,
          });
        await send("a");
        await send("b");
        expect((await store.pendingMessages(conversation.id)).map((m) => m.text)).toEqual([
          "a",
          "b",
        ]);
        const waiting = await store.listWaitingConversations();
        expect(waiting).toHaveLength(1);
        expect(waiting[0]?.conversationId).toBe(conversation.id);
        expect(waiting[0]?.oldestMessageId).toBe(
          (await store.pendingMessages(conversation.id))[0]?.id,
        );
        const take1 = await store.takeInbox(conversation.id, "take-1");
        expect(take1.map((m) => m.text)).toEqual(["a", "b"]);
        await send("c");
        expect((await store.takeInbox(conversation.id, "take-1")).map((m) => m.text)).toEqual([
          "a",
          "b",
          "c",
        ]);
        expect(await store.takeInbox(conversation.id, "take-2", "waiter-7")).toEqual([]);
        // S6: a message stored after a take that set a waiter sees it.
        expect((await send("d")).waiter).toBe("waiter-7");
        expect(await store.takeInbox(conversation.id, "take-3")).toHaveLength(1);
        expect((await send("e")).waiter).toBeNull();
        await store.takeInbox(conversation.id, "take-4");
        expect(await store.pendingMessages(conversation.id)).toEqual([]);
        expect(await store.listWaitingConversations()).toEqual([]);
      }));

    it("rejects a step for an unknown conversation and stores nothing", () =>
      withStore(async (store) => {
        await expect(
          store.appendStep({
            conversationId: "conv_missing",
            id: "x",
            turnId: null,
            kind: "model",
            payload: {},
          }),
        ).rejects.toMatchObject({ code: "not_found" });
        expect(await store.listSteps("conv_missing")).toEqual([]);
      }));

    it("lists conversations per account and bot, newest first", () =>
      withStore(async (store) => {
        const { account, bot, conversation } = await seed(store);
        const bot2 = await store.createBot({
          accountId: account.id,
          name: "b2",
          instructions: "",
          model: null,
        });
        const other = await store.createConversation({
          accountId: account.id,
          botId: bot2.id,
          title: "o",
        });
        await store.appendStep({
          conversationId: other.id,
          id: "x",
          turnId: null,
          kind: "model",
          payload: {},
        });
        expect((await store.listConversations(account.id)).map((c) => c.id)).toContain(
          conversation.id,
        );
        expect(
          (await store.listConversations(account.id, { botId: bot.id })).map((c) => c.id),
        ).toEqual([conversation.id]);
        const stranger = await store.createAccount({ name: "eve", isAdmin: false });
        expect(await store.listConversations(stranger.id)).toEqual([]);
      }));

    it("keeps one computer per account and one live worker token per computer", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        const [a, b] = await Promise.all([
          store.ensureComputer(account.id, "process"),
          store.ensureComputer(account.id, "process"),
        ]);
        expect(b.id).toBe(a.id);
        expect((await store.getComputer(a.id))?.accountId).toBe(account.id);
        await store.setWorkerToken(a.id, "hash-1", 2000);
        expect(await store.findComputerByWorkerToken("hash-1", 1000)).toBe(a.id);
        expect(await store.findComputerByWorkerToken("hash-1", 3000)).toBeUndefined(); // expired
        await store.setWorkerToken(a.id, "hash-2", 2000); // rotation revokes the old token
        expect(await store.findComputerByWorkerToken("hash-1", 1000)).toBeUndefined();
        expect(await store.findComputerByWorkerToken("hash-2", 1000)).toBe(a.id);
        expect(await store.getNetworkPolicy(a.id)).toBeNull();
        await store.setNetworkPolicy(a.id, { mode: "allowlist-only", allow: ["example.com"] });
        expect(await store.getNetworkPolicy(a.id)).toEqual({
          mode: "allowlist-only",
          allow: ["example.com"],
        });
        await store.clearWorkerToken(a.id);
        expect(await store.findComputerByWorkerToken("hash-2", 1000)).toBeUndefined();
      }));

    it("keeps an audit log", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        await store.audit({
          accountId: account.id,
          action: "bot.create",
          target: "bot_1",
          detail: { name: "x" },
        });
        const entries = await store.listAudit({ accountId: account.id });
        expect(entries).toHaveLength(1);
        expect(entries[0]).toMatchObject({
          action: "bot.create",
          target: "bot_1",
          detail: { name: "x" },
        });
      }));
  });
}
