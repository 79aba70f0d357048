/**
 * The contract every Store implementation runs (SQLite and Postgres alike). Each case opens a
 * fresh, empty store through `open`; `faults` makes the database fail one statement.
 */
import { describe, expect, it } from "vitest";
import { NotFoundError } from "../errors/index.ts";
import { searchCandidatesPerWord } from "./memory-queries.ts";
import type { SkillWrite, Store } from "./types.ts";

export interface StoreFaults {
  /** The next statement matching `pattern` fails as if the database had failed it. */
  failNext(pattern: RegExp): void;
}

export function storeContract(
  name: string,
  open: () => Promise<{ store: Store; faults: StoreFaults; close: () => Promise<void> }>,
) {
  async function withStore(run: (store: Store, faults: StoreFaults) => Promise<void>) {
    const { store, faults, close } = await open();
    try {
      await run(store, faults);
    } finally {
      await close();
    }
  }

  /** A conversation with a message and a step, and what a reader of it sees. */
  async function fill(store: Store, accountId: string, conversationId: string, tag: string) {
    await store.appendMessage({
      conversationId,
      clientMessageId: `${tag}-m`,
      authorAccountId: accountId,
      text: tag,
    });
    await store.appendStep({
      conversationId,
      id: `${tag}-s`,
      turnId: `${tag}-t`,
      kind: "reply",
      payload: { text: tag },
    });
  }
  async function visible(store: Store, conversationId: string) {
    return {
      conversation: (await store.getConversation(conversationId))?.id,
      steps: (await store.listSteps(conversationId)).length,
      messages: (await store.listMessages(conversationId)).length,
    };
  }
  /** STORE8: every read of a deleted conversation answers "nothing", and writes into it fail not_found. */
  async function expectGone(store: Store, conversationId: string, accountId: string) {
    expect(await visible(store, conversationId)).toEqual({
      conversation: undefined,
      steps: 0,
      messages: 0,
    });
    expect(await store.pendingMessages(conversationId)).toEqual([]);
    expect(await store.takeInbox(conversationId, "take-after-delete", "waiter")).toEqual([]);
    expect(
      (await store.listWaitingConversations()).map((waiting) => waiting.conversationId),
    ).not.toContain(conversationId);
    const step = store.appendStep({
      conversationId,
      id: `late-${conversationId}`,
      turnId: "t",
      kind: "reply",
      payload: {},
    });
    await expect(step).rejects.toBeInstanceOf(NotFoundError);
    await expect(step).rejects.toMatchObject({ code: "not_found", kind: "conversation" });
    await expect(
      store.appendMessage({
        conversationId,
        clientMessageId: "late",
        authorAccountId: accountId,
        text: "late",
      }),
    ).rejects.toMatchObject({ code: "not_found" });
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

    it("makes one admin however many callers race for it (STORE-ADMIN1)", () =>
      withStore(async (store) => {
        const answers = await Promise.all(
          Array.from({ length: 8 }, () => store.ensureAdminAccount("admin")),
        );
        expect(new Set(answers.map((answer) => answer.account.id)).size).toBe(1);
        expect(answers.filter((answer) => answer.created)).toHaveLength(1);
        expect(await store.ensureAdminAccount("admin")).toEqual({
          account: answers[0]!.account,
          created: false,
        });
        await expect(store.createAccount({ name: "second", isAdmin: true })).rejects.toThrow();
        expect(await store.createAccount({ name: "user", isAdmin: false })).toMatchObject({
          isAdmin: false,
        });
      }));

    it("finds accounts by token hash only (STORE5)", () =>
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

    it("numbers messages and steps gaplessly, in one sequence (STORE1)", () =>
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

    it("ignores a repeated step id and a repeated clientMessageId (STORE2, STORE3)", () =>
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
        // STORE6: a message stored after a take that set a waiter sees it.
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

    it("a computer's home host changes only from the home the caller saw: two hosts never both become it (STORE10)", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        const computer = await store.ensureComputer(account.id, "local");
        expect(computer.homeHost).toBeNull();
        // Two hosts race for the first wake: exactly one wins.
        const first = await Promise.all([
          store.claimComputerHome(computer.id, null, "node-a"),
          store.claimComputerHome(computer.id, null, "node-b"),
        ]);
        expect(first.filter(Boolean)).toHaveLength(1);
        const winner = first[0] === true ? "node-a" : "node-b";
        const loser = winner === "node-a" ? "node-b" : "node-a";
        expect((await store.getComputer(computer.id))?.homeHost).toBe(winner);
        // A host that saw an outdated home cannot take over; one that saw the current home can.
        expect(await store.claimComputerHome(computer.id, null, loser)).toBe(false);
        expect(await store.claimComputerHome(computer.id, "node-c", loser)).toBe(false);
        expect(await store.claimComputerHome(computer.id, winner, winner)).toBe(true); // the home again
        expect(await store.claimComputerHome(computer.id, winner, loser)).toBe(true);
        expect((await store.getComputer(computer.id))?.homeHost).toBe(loser);
        expect(await store.claimComputerHome(computer.id, winner, "node-c")).toBe(false);
        expect(await store.claimComputerHome("cmp_missing", null, "node-a")).toBe(false);
      }));

    it("a self-hosted token exists exactly while the computer is self-hosted; rotation and going back revoke it (STORE9)", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        const other = await store.createAccount({ name: "mallory", isAdmin: false });
        const computer = await store.ensureComputer(account.id, "local");
        const theirs = await store.ensureComputer(other.id, "local");
        expect(computer.kind).toBe("hosted");
        await store.setWorkerToken(computer.id, "hosted-hash", 2000);

        expect(await store.useSelfHosted(computer.id, "self-1")).toEqual({ rotated: false });
        expect((await store.getComputer(computer.id))?.kind).toBe("self-hosted");
        expect((await store.ensureComputer(account.id, "local")).kind).toBe("self-hosted");
        expect(await store.findSelfHostedComputer("self-1")).toBe(computer.id);
        // The hosted computer's token went with the switch: only the machine's token works.
        expect(await store.findComputerByWorkerToken("hosted-hash", 1000)).toBeUndefined();
        // Another account's computer is untouched.
        expect((await store.getComputer(theirs.id))?.kind).toBe("hosted");

        expect(await store.useSelfHosted(computer.id, "self-2")).toEqual({ rotated: true });
        expect(await store.findSelfHostedComputer("self-1")).toBeUndefined(); // the old one is dead
        expect(await store.findSelfHostedComputer("self-2")).toBe(computer.id);

        // A hash is unique across accounts: another computer cannot take it over.
        await expect(store.useSelfHosted(theirs.id, "self-2")).rejects.toThrow();
        expect((await store.getComputer(theirs.id))?.kind).toBe("hosted"); // nothing half-written
        expect(await store.findSelfHostedComputer("self-2")).toBe(computer.id);

        expect(await store.useHosted(computer.id)).toEqual({ changed: true });
        expect((await store.getComputer(computer.id))?.kind).toBe("hosted");
        expect(await store.findSelfHostedComputer("self-2")).toBeUndefined();
        expect(await store.useHosted(computer.id)).toEqual({ changed: false });
        await expect(store.useSelfHosted("cmp_missing", "self-3")).rejects.toThrow(/not found/);
      }));

    it("deleting a bot removes its conversations, messages and steps, and audits it (STORE7, STORE8)", () =>
      withStore(async (store) => {
        const { account, bot, conversation } = await seed(store);
        const second = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "second",
        });
        await fill(store, account.id, conversation.id, "a");
        await fill(store, account.id, second.id, "b");
        await store.appendMessage({
          conversationId: second.id,
          clientMessageId: "waiting",
          authorAccountId: account.id,
          text: "not taken yet",
        });
        // What must survive: the account's other bot, and another account's bot of the same name.
        const keptBot = await store.createBot({
          accountId: account.id,
          name: "kept",
          instructions: "",
          model: null,
        });
        const kept = await store.createConversation({
          accountId: account.id,
          botId: keptBot.id,
          title: "kept",
        });
        await fill(store, account.id, kept.id, "k");
        const other = await store.createAccount({ name: "bob", isAdmin: false });
        const othersBot = await store.createBot({
          accountId: other.id,
          name: "helper",
          instructions: "",
          model: null,
        });

        const counts = await store.deleteBot({ id: bot.id, actorAccountId: account.id });
        expect(counts).toEqual({ conversations: 2, messages: 3, steps: 5 });
        expect(await store.getBot(bot.id)).toBeUndefined();
        expect(await store.findBotByName(account.id, "helper")).toBeUndefined();
        expect((await store.listBots(account.id)).map((b) => b.id)).toEqual([keptBot.id]);
        expect((await store.listConversations(account.id)).map((c) => c.id)).toEqual([kept.id]);
        await expectGone(store, conversation.id, account.id);
        await expectGone(store, second.id, account.id);
        expect(await visible(store, kept.id)).toEqual({
          conversation: kept.id,
          steps: 2,
          messages: 1,
        });
        expect((await store.getBot(othersBot.id))?.name).toBe("helper");
        const [entry] = await store.listAudit({ accountId: account.id });
        expect(entry).toMatchObject({
          action: "bot.delete",
          target: bot.id,
          detail: { name: "helper", conversations: 2, messages: 3, steps: 5 },
        });
        // Gone for good: a second delete, and a conversation for it, are not_found.
        await expect(
          store.deleteBot({ id: bot.id, actorAccountId: account.id }),
        ).rejects.toBeInstanceOf(NotFoundError);
        await expect(
          store.createConversation({ accountId: account.id, botId: bot.id, title: "x" }),
        ).rejects.toMatchObject({ code: "not_found", kind: "bot" });
        // The name is free again.
        await store.createBot({
          accountId: account.id,
          name: "helper",
          instructions: "",
          model: null,
        });
      }));

    it.each([
      ["its steps", /^DELETE FROM steps/],
      ["its messages", /^DELETE FROM messages/],
      ["its conversations", /^DELETE FROM conversations/],
      ["the bot row", /^DELETE FROM bots/],
      ["the audit entry", /^INSERT INTO audit_log/],
    ])(
      "a database failure while deleting %s leaves the bot and everything of it in place (STORE7)",
      (_label, statement) =>
        withStore(async (store, faults) => {
          const { account, bot, conversation } = await seed(store);
          await fill(store, account.id, conversation.id, "a");
          faults.failNext(statement);
          await expect(store.deleteBot({ id: bot.id, actorAccountId: account.id })).rejects.toThrow(
            /injected fault/,
          );
          expect((await store.getBot(bot.id))?.id).toBe(bot.id);
          expect(await visible(store, conversation.id)).toEqual({
            conversation: conversation.id,
            steps: 2,
            messages: 1,
          });
          expect(await store.listAudit({ accountId: account.id })).toEqual([]);
          // And the store still works: the delete goes through when the database does.
          expect(await store.deleteBot({ id: bot.id, actorAccountId: account.id })).toEqual({
            conversations: 1,
            messages: 1,
            steps: 2,
          });
        }),
    );

    it("steps appended while their bot is deleted either go with it or fail not_found (STORE7)", () =>
      withStore(async (store) => {
        const { account, bot, conversation } = await seed(store);
        await fill(store, account.id, conversation.id, "a");
        const appends = Array.from({ length: 12 }, (_, index) =>
          index % 3 === 0
            ? store.appendMessage({
                conversationId: conversation.id,
                clientMessageId: `race-${index}`,
                authorAccountId: account.id,
                text: "race",
              })
            : store.appendStep({
                conversationId: conversation.id,
                id: `race-${index}`,
                turnId: "race",
                kind: "model",
                payload: {},
              }),
        );
        const conversations = Array.from({ length: 3 }, () =>
          store.createConversation({ accountId: account.id, botId: bot.id, title: "race" }),
        );
        const deleted = store.deleteBot({ id: bot.id, actorAccountId: account.id });
        const results = await Promise.allSettled([...appends, ...conversations]);
        const counts = await deleted;
        for (const result of results) {
          if (result.status === "rejected") expect(result.reason).toBeInstanceOf(NotFoundError);
        }
        const landed = (from: number, to: number) =>
          results.slice(from, to).filter((result) => result.status === "fulfilled").length;
        const landedMessages = results.filter(
          (result, index) =>
            index < appends.length && index % 3 === 0 && result.status === "fulfilled",
        ).length;
        // Whatever landed before the delete went with it; the rest failed not_found.
        expect(counts).toEqual({
          conversations: 1 + landed(appends.length, results.length),
          messages: 1 + landedMessages,
          steps: 2 + landed(0, appends.length),
        });
        expect(await visible(store, conversation.id)).toEqual({
          conversation: undefined,
          steps: 0,
          messages: 0,
        });
        expect(await store.listConversations(account.id)).toEqual([]);
      }));

    it("deleting a conversation removes its messages and steps only, and audits it (STORE7)", () =>
      withStore(async (store, faults) => {
        const { account, bot, conversation } = await seed(store);
        const sibling = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "sibling",
        });
        await fill(store, account.id, conversation.id, "a");
        await fill(store, account.id, sibling.id, "b");
        faults.failNext(/^DELETE FROM conversations/);
        await expect(
          store.deleteConversation({ id: conversation.id, actorAccountId: account.id }),
        ).rejects.toThrow(/injected fault/);
        expect((await visible(store, conversation.id)).steps).toBe(2);

        expect(
          await store.deleteConversation({ id: conversation.id, actorAccountId: account.id }),
        ).toEqual({ conversations: 1, messages: 1, steps: 2 });
        await expectGone(store, conversation.id, account.id);
        expect(await visible(store, sibling.id)).toEqual({
          conversation: sibling.id,
          steps: 2,
          messages: 1,
        });
        expect((await store.getBot(bot.id))?.id).toBe(bot.id);
        expect((await store.listAudit({ accountId: account.id }))[0]).toMatchObject({
          action: "conversation.delete",
          target: conversation.id,
          detail: { messages: 1, steps: 2 },
        });
        await expect(
          store.deleteConversation({ id: conversation.id, actorAccountId: account.id }),
        ).rejects.toMatchObject({ code: "not_found", kind: "conversation" });
      }));

    it("renames a conversation and audits it; an unknown one is not_found", () =>
      withStore(async (store) => {
        const { account, conversation } = await seed(store);
        const renamed = await store.renameConversation({
          id: conversation.id,
          title: "Plans for Tuesday",
          actorAccountId: account.id,
        });
        expect(renamed).toMatchObject({
          id: conversation.id,
          title: "Plans for Tuesday",
          lastSeq: 0,
          botId: conversation.botId,
        });
        expect(renamed.updatedAt).toBeGreaterThan(conversation.updatedAt);
        expect((await store.getConversation(conversation.id))?.title).toBe("Plans for Tuesday");
        expect((await store.listAudit({ accountId: account.id }))[0]).toMatchObject({
          action: "conversation.rename",
          target: conversation.id,
          detail: { title: "Plans for Tuesday" },
        });
        await expect(
          store.renameConversation({ id: "conv_missing", title: "x", actorAccountId: null }),
        ).rejects.toBeInstanceOf(NotFoundError);
      }));

    it("lists an account's tokens, records their use, and a revoked token matches nothing (STORE5, STORE7)", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        const other = await store.createAccount({ name: "bob", isAdmin: false });
        const laptop = await store.createApiToken({
          accountId: account.id,
          name: "laptop",
          tokenHash: "hash-laptop",
        });
        const phone = await store.createApiToken({
          accountId: account.id,
          name: "phone",
          tokenHash: "hash-phone",
        });
        const bobs = await store.createApiToken({
          accountId: other.id,
          name: "bob",
          tokenHash: "hash-bob",
        });
        expect(laptop.lastUsedAt).toBeNull();
        expect(await store.findApiToken("hash-laptop")).toEqual({ token: laptop, account });
        await store.touchApiToken(laptop.id, 12345);
        expect((await store.findApiToken("hash-laptop"))?.token.lastUsedAt).toBe(12345);
        expect((await store.listApiTokens(account.id)).map((t) => [t.name, t.lastUsedAt])).toEqual([
          ["laptop", 12345],
          ["phone", null],
        ]);

        // Another account's token id is not_found for this account, and stays.
        await expect(
          store.revokeApiToken({ id: bobs.id, accountId: account.id, actorAccountId: account.id }),
        ).rejects.toMatchObject({ code: "not_found", kind: "token" });
        expect((await store.findApiToken("hash-bob"))?.token.id).toBe(bobs.id);

        await store.revokeApiToken({
          id: laptop.id,
          accountId: account.id,
          actorAccountId: account.id,
        });
        expect(await store.findApiToken("hash-laptop")).toBeUndefined();
        expect(await store.findAccountByTokenHash("hash-laptop")).toBeUndefined();
        expect((await store.listApiTokens(account.id)).map((t) => t.id)).toEqual([phone.id]);
        expect((await store.listAudit({ accountId: account.id }))[0]).toMatchObject({
          action: "token.revoke",
          target: laptop.id,
          detail: { accountId: account.id, name: "laptop" },
        });
        await expect(
          store.revokeApiToken({
            id: laptop.id,
            accountId: account.id,
            actorAccountId: account.id,
          }),
        ).rejects.toBeInstanceOf(NotFoundError);
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

  describe(`store contract: ${name}: memory`, () => {
    const limits = { maxFacts: 2, maxChars: 40 };
    /** A second bot of the account, and a way to add log entries. */
    async function withLog(store: Store, accountId: string) {
      const other = await store.createBot({
        accountId,
        name: "other",
        instructions: "",
        model: null,
      });
      const log = (botId: string, text: string) =>
        store.changeMemory({ accountId, botId, tier: "log", action: "add", text, author: "tool" });
      return { other, log };
    }

    it("adds, replaces and removes facts, each with its revision (MEM1), and keeps a removed fact's text (MEM4)", () =>
      withStore(async (store) => {
        const { account, bot, conversation } = await seed(store);
        const base = {
          accountId: account.id,
          botId: bot.id,
          tier: "profile" as const,
          author: "tool" as const,
        };
        const added = await store.changeMemory({
          ...base,
          action: "add",
          text: "likes tea",
          conversationId: conversation.id,
          turnId: "turn-1",
        });
        expect(added.revision).toMatchObject({
          action: "add",
          before: null,
          after: "likes tea",
          status: "applied",
          author: "tool",
          conversationId: conversation.id,
          turnId: "turn-1",
        });
        const replaced = await store.changeMemory({
          ...base,
          action: "replace",
          factId: added.fact.id,
          text: "likes green tea",
        });
        expect(replaced.revision).toMatchObject({ before: "likes tea", after: "likes green tea" });
        expect(
          (await store.listMemoryFacts({ accountId: account.id, botId: bot.id })).map(
            (fact) => fact.text,
          ),
        ).toEqual(["likes green tea"]);
        const removed = await store.changeMemory({
          ...base,
          action: "remove",
          factId: added.fact.id,
        });
        expect(removed.revision).toMatchObject({ before: "likes green tea", after: null });
        expect(await store.listMemoryFacts({ accountId: account.id, botId: bot.id })).toEqual([]);
        expect(await store.getMemoryFact(added.fact.id)).toMatchObject({
          text: "likes green tea",
          removedAt: expect.any(Number) as unknown,
        });
        // Restored under its own id.
        const restored = await store.changeMemory({
          ...base,
          action: "add",
          factId: added.fact.id,
          text: "likes green tea",
          author: "user",
          revertOf: removed.revision.id,
        });
        expect(restored.fact.id).toBe(added.fact.id);
        const revisions = await store.listMemoryRevisions({ accountId: account.id, botId: bot.id });
        expect(revisions.map((revision) => revision.action)).toEqual([
          "add",
          "remove",
          "replace",
          "add",
        ]);
        expect(revisions[0]!.revertOf).toBe(removed.revision.id);
        const page = await store.listMemoryRevisions({
          accountId: account.id,
          botId: bot.id,
          before: revisions[1]!.id,
          limit: 1,
        });
        expect(page.map((revision) => revision.id)).toEqual([revisions[2]!.id]);
      }));

    it("keeps user facts apart from a bot's, and refuses changes to another owner's fact", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        await store.changeMemory({
          accountId: account.id,
          botId: null,
          tier: "user",
          action: "add",
          text: "is called Ada",
          author: "user",
        });
        const botFact = await store.changeMemory({
          accountId: account.id,
          botId: bot.id,
          tier: "profile",
          action: "add",
          text: "x",
          author: "tool",
        });
        expect(
          (await store.listMemoryFacts({ accountId: account.id, botId: null })).map(
            (fact) => fact.text,
          ),
        ).toEqual(["is called Ada"]);
        expect(
          (await store.listMemoryFacts({ accountId: account.id, botId: bot.id })).map(
            (fact) => fact.text,
          ),
        ).toEqual(["x"]);
        const other = await store.createAccount({ name: "eve", isAdmin: false });
        await expect(
          store.changeMemory({
            accountId: other.id,
            botId: bot.id,
            tier: "profile",
            action: "remove",
            factId: botFact.fact.id,
            author: "user",
          }),
        ).rejects.toMatchObject({ code: "not_found" });
        await expect(
          store.changeMemory({
            accountId: account.id,
            botId: null,
            tier: "user",
            action: "remove",
            factId: botFact.fact.id,
            author: "user",
          }),
        ).rejects.toMatchObject({ code: "not_found" });
      }));

    it("enforces limits in the write's transaction, even for concurrent adds (MEM2)", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const change = (text: string) =>
          store.changeMemory({
            accountId: account.id,
            botId: bot.id,
            tier: "profile",
            action: "add",
            text,
            author: "pass",
            limits,
          });
        const outcomes = await Promise.allSettled([change("a"), change("b"), change("c")]);
        expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(2);
        const refused = outcomes.find((outcome) => outcome.status === "rejected");
        expect((refused as PromiseRejectedResult).reason).toMatchObject({
          code: "conflict",
          message: "profile is full (2 facts): replace or remove one",
        });
        const [first] = await store.listMemoryFacts({ accountId: account.id, botId: bot.id });
        await expect(
          store.changeMemory({
            accountId: account.id,
            botId: bot.id,
            tier: "profile",
            action: "replace",
            factId: first!.id,
            text: "x".repeat(45),
            author: "tool",
            limits,
          }),
        ).rejects.toMatchObject({ code: "conflict" });
        expect((await store.listMemoryFacts({ accountId: account.id, botId: bot.id })).length).toBe(
          2,
        );
      }));

    it("applies a keyed change once (MEM3)", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const change = {
          accountId: account.id,
          botId: bot.id,
          tier: "log" as const,
          action: "add" as const,
          text: "met Bob",
          author: "tool" as const,
          key: "call_1",
        };
        const first = await store.changeMemory(change);
        const again = await store.changeMemory(change);
        expect(again.revision.id).toBe(first.revision.id);
        const [a, b] = await Promise.all([
          store.changeMemory({ ...change, key: "call_2", text: "met Carol" }),
          store.changeMemory({ ...change, key: "call_2", text: "met Carol" }),
        ]);
        expect(a.revision.id).toBe(b.revision.id);
        expect(await store.listMemoryFacts({ accountId: account.id, botId: bot.id })).toHaveLength(
          2,
        );
      }));

    it("holds proposed revisions until accepted or rejected (MEM1)", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const base = {
          accountId: account.id,
          botId: bot.id,
          tier: "profile" as const,
          author: "pass" as const,
        };
        const proposed = await store.changeMemory({
          ...base,
          action: "add",
          text: "prefers mornings",
          propose: true,
        });
        expect(proposed.revision.status).toBe("proposed");
        expect(await store.listMemoryFacts({ accountId: account.id, botId: bot.id })).toEqual([]);
        expect(
          (
            await store.listMemoryRevisions({
              accountId: account.id,
              botId: bot.id,
              status: "proposed",
            })
          ).map((revision) => revision.id),
        ).toEqual([proposed.revision.id]);
        const accepted = await store.decideMemoryRevision(proposed.revision.id, "accept");
        expect(accepted.revision.status).toBe("applied");
        expect(
          (await store.listMemoryFacts({ accountId: account.id, botId: bot.id })).map(
            (fact) => fact.text,
          ),
        ).toEqual(["prefers mornings"]);
        await expect(
          store.decideMemoryRevision(proposed.revision.id, "reject"),
        ).rejects.toMatchObject({ code: "conflict" });
        const second = await store.changeMemory({
          ...base,
          action: "remove",
          factId: accepted.fact.id,
          propose: true,
        });
        await store.decideMemoryRevision(second.revision.id, "reject");
        expect(await store.listMemoryFacts({ accountId: account.id, botId: bot.id })).toHaveLength(
          1,
        );
      }));

    it("deleting a bot deletes what it remembered, not the account's user facts", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        await store.changeMemory({
          accountId: account.id,
          botId: bot.id,
          tier: "log",
          action: "add",
          text: "deployed billing",
          author: "tool",
        });
        await store.changeMemory({
          accountId: account.id,
          botId: null,
          tier: "user",
          action: "add",
          text: "is called Ada",
          author: "user",
        });
        await store.deleteBot({ id: bot.id, actorAccountId: account.id });
        expect(await store.listMemoryRevisions({ accountId: account.id, botId: bot.id })).toEqual(
          [],
        );
        expect(
          (await store.listMemoryFacts({ accountId: account.id, botId: null })).map(
            (fact) => fact.text,
          ),
        ).toEqual(["is called Ada"]);
      }));

    it("lets notes expire", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        await store.changeMemory({
          accountId: account.id,
          botId: bot.id,
          tier: "note",
          action: "add",
          text: "call back at 3",
          author: "tool",
          expiresAt: Date.now() + 60_000,
        });
        expect(
          await store.listMemoryFacts({ accountId: account.id, botId: bot.id, tiers: ["note"] }),
        ).toHaveLength(1);
        expect(
          await store.listMemoryFacts({
            accountId: account.id,
            botId: bot.id,
            tiers: ["note"],
            now: Date.now() + 120_000,
          }),
        ).toHaveLength(0);
      }));

    it("finds log entries by words, best first, and never another bot's", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const { other, log } = await withLog(store, account.id);
        await log(bot.id, "Deployed the billing service to staging");
        await log(bot.id, "Lunch with Bob about the billing rewrite and billing bugs");
        await log(bot.id, "Renewed the TLS certificate");
        const removed = await log(bot.id, "billing notes, later removed");
        await store.changeMemory({
          accountId: account.id,
          botId: bot.id,
          tier: "log",
          action: "remove",
          factId: removed.fact.id,
          author: "user",
        });
        await log(other.id, "billing for the other bot");
        const hits = await store.searchMemoryLog({
          accountId: account.id,
          botId: bot.id,
          text: "What about Billing? (staging)",
          limit: 10,
        });
        expect(hits.map((hit) => hit.text).sort()).toEqual([
          "Deployed the billing service to staging",
          "Lunch with Bob about the billing rewrite and billing bugs",
        ]);
        expect(hits[0]!.score).toBeGreaterThanOrEqual(hits[1]!.score);
        expect(
          await store.searchMemoryLog({
            accountId: account.id,
            botId: bot.id,
            text: "?!",
            limit: 10,
          }),
        ).toEqual([]);
        // Replacing an entry re-indexes it.
        const tls = (
          await store.listMemoryFacts({ accountId: account.id, botId: bot.id, tiers: ["log"] })
        ).find((fact) => fact.text.includes("TLS"))!;
        await store.changeMemory({
          accountId: account.id,
          botId: bot.id,
          tier: "log",
          action: "replace",
          factId: tls.id,
          text: "Renewed the staging certificate",
          author: "user",
        });
        expect(
          (
            await store.searchMemoryLog({
              accountId: account.id,
              botId: bot.id,
              text: "certificate",
              limit: 10,
            })
          ).map((hit) => hit.text),
        ).toEqual(["Renewed the staging certificate"]);
      }));

    it("MEM5 finds an old entry by a rare word behind hundreds of newer common-word entries, and never another bot's", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const { other, log } = await withLog(store, account.id);
        await log(bot.id, "Standup: the zebrafish assay moved to Tuesday");
        for (let index = 0; index < searchCandidatesPerWord + 50; index++) {
          await log(bot.id, `Standup ${index}: reviewed the assay plan`);
          await log(other.id, `Standup ${index}: the other assay`);
        }
        const hits = await store.searchMemoryLog({
          accountId: account.id,
          botId: bot.id,
          text: "standup assay zebrafish",
          limit: 5,
        });
        expect(hits[0]!.text).toBe("Standup: the zebrafish assay moved to Tuesday");
        expect(hits).toHaveLength(5);
        expect(hits.every((hit) => hit.botId === bot.id)).toBe(true);
      }));
  });

  describe(`store contract: ${name}: skills`, () => {
    const limits = { maxSkills: 200, maxAccountBytes: 1 << 20 };
    const file = (path: string, text: string | Uint8Array, mode = 0o644) => {
      const content = typeof text === "string" ? new TextEncoder().encode(text) : text;
      return { path, mode, size: content.byteLength, sha256: `sha-${path}`, content };
    };
    const write = (accountId: string, name: string, overrides: Partial<SkillWrite> = {}) => ({
      accountId,
      name,
      description: `${name} does things`,
      body: `# ${name}`,
      digest: `digest-${name}`,
      files: [file("SKILL.md", `# ${name}`)],
      mode: "create" as const,
      limits,
      actorAccountId: accountId,
      source: "fields",
      ...overrides,
    });

    it("stores a skill with its files' bytes, replaces them as a whole, deletes it, and audits each (SKST1)", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        const binary = new Uint8Array([0, 1, 2, 0xff, 0xfe, 0x80, 0]);
        const { skill, created } = await store.putSkill(
          write(account.id, "report", {
            files: [file("SKILL.md", "# report"), file("bin/tool", binary, 0o755)],
          }),
        );
        expect(created).toBe(true);
        expect(skill).toMatchObject({ name: "report", totalBytes: 8 + 7, fileCount: 2 });
        expect(await store.getSkill(account.id, "report")).toMatchObject({
          body: "# report",
          description: "report does things",
          digest: "digest-report",
        });
        expect(await store.listSkillFiles(skill.id)).toEqual([
          { path: "SKILL.md", mode: 0o644, size: 8, sha256: "sha-SKILL.md" },
          { path: "bin/tool", mode: 0o755, size: 7, sha256: "sha-bin/tool" },
        ]);
        const read = await store.readSkillFile(skill.id, "bin/tool");
        expect(Array.from(read!.content)).toEqual(Array.from(binary));

        const replaced = await store.putSkill(
          write(account.id, "report", {
            mode: "replace",
            description: "reports",
            digest: "digest-2",
            files: [file("SKILL.md", "# v2"), file("run.sh", "echo 2", 0o755)],
          }),
        );
        expect(replaced).toMatchObject({ created: false, skill: { id: skill.id } });
        expect((await store.readSkillFiles(skill.id)).map((entry) => entry.path)).toEqual([
          "SKILL.md",
          "run.sh",
        ]);
        expect(await store.readSkillFile(skill.id, "bin/tool")).toBeUndefined();

        const deleted = await store.deleteSkill({
          accountId: account.id,
          name: "report",
          actorAccountId: account.id,
        });
        expect(deleted.digest).toBe("digest-2");
        expect(await store.getSkill(account.id, "report")).toBeUndefined();
        expect(await store.readSkillFiles(skill.id)).toEqual([]);
        expect(await store.listSkills(account.id)).toEqual([]);
        expect(
          (await store.listAudit({ accountId: account.id }))
            .map((entry) => entry.action)
            .filter((action) => action.startsWith("skill.")),
        ).toEqual(["skill.delete", "skill.update", "skill.create"]);
      }));

    it("keeps names unique per account, and another account's skill is as absent as a missing one (SKST3)", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        const other = await store.createAccount({ name: "eve", isAdmin: false });
        await store.putSkill(write(account.id, "shared-name"));
        await expect(store.putSkill(write(account.id, "shared-name"))).rejects.toMatchObject({
          code: "conflict",
        });
        // The same name in another account is another skill.
        await store.putSkill(write(other.id, "shared-name", { description: "eve's" }));
        expect((await store.getSkill(account.id, "shared-name"))?.description).toBe(
          "shared-name does things",
        );
        expect(await store.getSkill(other.id, "missing")).toBeUndefined();
        await expect(
          store.putSkill(write(other.id, "only-ada", { mode: "replace" })),
        ).rejects.toMatchObject({ code: "not_found" });
        await store.putSkill(write(account.id, "only-ada"));
        expect(await store.getSkill(other.id, "only-ada")).toBeUndefined();
        await expect(
          store.deleteSkill({ accountId: other.id, name: "only-ada", actorAccountId: other.id }),
        ).rejects.toMatchObject({ code: "not_found" });
        expect(await store.getSkill(account.id, "only-ada")).toBeDefined();
        expect((await store.listSkills(account.id)).map((skill) => skill.name)).toEqual([
          "only-ada",
          "shared-name",
        ]);
      }));

    it("a replace that fails half-way leaves the old skill whole (SKST1)", () =>
      withStore(async (store, faults) => {
        const { account } = await seed(store);
        const { skill } = await store.putSkill(
          write(account.id, "steady", {
            files: [file("SKILL.md", "# one"), file("a.txt", "a"), file("b.txt", "b")],
          }),
        );
        faults.failNext(/INSERT INTO skill_files/);
        await expect(
          store.putSkill(
            write(account.id, "steady", {
              mode: "replace",
              digest: "digest-new",
              files: [file("SKILL.md", "# two"), file("c.txt", "c")],
            }),
          ),
        ).rejects.toThrow(/injected fault/);
        expect((await store.getSkill(account.id, "steady"))?.digest).toBe("digest-steady");
        expect((await store.readSkillFiles(skill.id)).map((entry) => entry.path)).toEqual([
          "SKILL.md",
          "a.txt",
          "b.txt",
        ]);
        expect(
          (await store.listAudit({ accountId: account.id })).filter(
            (entry) => entry.action === "skill.update",
          ),
        ).toEqual([]);
      }));

    it("concurrent creates never exceed the account's skill count or bytes (SKST2)", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        const tight = { maxSkills: 3, maxAccountBytes: 1 << 20 };
        const outcomes = await Promise.allSettled(
          ["a", "b", "c", "d", "e", "f"].map((name) =>
            store.putSkill(write(account.id, name, { limits: tight })),
          ),
        );
        expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(3);
        expect(
          outcomes.find((outcome) => outcome.status === "rejected")?.reason as unknown,
        ).toMatchObject({ code: "conflict" });
        expect(await store.listSkills(account.id)).toHaveLength(3);

        const small = { maxSkills: 200, maxAccountBytes: 100 };
        const big = (name: string) =>
          store.putSkill(
            write(account.id, name, {
              limits: small,
              files: [file("SKILL.md", "x".repeat(40))],
            }),
          );
        // 3 skills of 4 bytes each are stored; two of 40 fit under 100, a third does not.
        const sized = await Promise.allSettled([big("x1"), big("x2"), big("x3")]);
        expect(sized.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(2);
        expect(
          sized.find((outcome) => outcome.status === "rejected")?.reason as unknown,
        ).toMatchObject({ code: "payload_too_large" });
        // Replacing a skill counts its new size, not old plus new.
        const stored = (await store.listSkills(account.id)).find((skill) =>
          skill.name.startsWith("x"),
        )!;
        await store.putSkill(
          write(account.id, stored.name, {
            mode: "replace",
            limits: small,
            files: [file("SKILL.md", "y".repeat(41))],
          }),
        );
      }));

    it("a write with ifDigest happens only while the skill still has that digest (SKST4)", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        await store.putSkill(write(account.id, "edited"));
        await store.putSkill(
          write(account.id, "edited", { mode: "replace", digest: "uploaded-meanwhile" }),
        );
        await expect(
          store.putSkill(
            write(account.id, "edited", {
              mode: "replace",
              ifDigest: "digest-edited",
              digest: "stale-edit",
            }),
          ),
        ).rejects.toMatchObject({ code: "conflict" });
        expect((await store.getSkill(account.id, "edited"))?.digest).toBe("uploaded-meanwhile");
        await store.putSkill(
          write(account.id, "edited", {
            mode: "replace",
            ifDigest: "uploaded-meanwhile",
            digest: "fresh-edit",
          }),
        );
        expect((await store.getSkill(account.id, "edited"))?.digest).toBe("fresh-edit");
      }));
  });
}
