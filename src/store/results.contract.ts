/**
 * The results part of the store contract (results-types.ts RES1–RES4), run by SQLite and Postgres
 * alike from store.test.ts.
 */
import { describe, expect, it } from "vitest";
import { isRoostError } from "../errors/index.ts";
import type { Store } from "./types.ts";

async function setup(store: Store) {
  const owner = await store.createAccount({ name: "owner", isAdmin: false });
  const other = await store.createAccount({ name: "other", isAdmin: false });
  const a = await store.createBot({
    accountId: owner.id,
    name: "a",
    instructions: "",
    model: null,
  });
  const b = await store.createBot({
    accountId: owner.id,
    name: "b",
    instructions: "",
    model: null,
  });
  const foreign = await store.createBot({
    accountId: other.id,
    name: "x",
    instructions: "",
    model: null,
  });
  const chat = await store.createConversation({ accountId: owner.id, botId: a.id, title: "chat" });
  return { owner, other, a, b, foreign, chat };
}

const draftInput = (accountId: string, botId: string, conversationId: string, id = "dft_1") => ({
  id,
  accountId,
  botId,
  conversationId,
  kind: "email" as const,
  to: "ada@example.com",
  subject: "Hello",
  text: "Dear Ada",
});

async function rejection(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

export function resultsContract(
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

  describe(`results store contract: ${name}`, () => {
    it("RES1: two first messages at once make one thread conversation, owned by the receiver", () =>
      withStore(async (store) => {
        const { owner, a, b } = await setup(store);
        const input = { accountId: owner.id, fromBotId: a.id, toBotId: b.id, title: "From a" };
        const [first, second] = await Promise.all([
          store.ensureBotThread(input),
          store.ensureBotThread(input),
        ]);
        expect(first.conversationId).toBe(second.conversationId);
        expect([first.created, second.created].filter(Boolean)).toHaveLength(1);
        const conversation = await store.getConversation(first.conversationId);
        expect(conversation).toMatchObject({ accountId: owner.id, botId: b.id, title: "From a" });
        // The other direction is a conversation of its own.
        const back = await store.ensureBotThread({ ...input, fromBotId: b.id, toBotId: a.id });
        expect(back.conversationId).not.toBe(first.conversationId);
      }));

    it("RES1, RES4: another account's bot is never a receiver", () =>
      withStore(async (store) => {
        const { owner, a, foreign } = await setup(store);
        const error = await rejection(
          store.ensureBotThread({
            accountId: owner.id,
            fromBotId: a.id,
            toBotId: foreign.id,
            title: "x",
          }),
        );
        expect(isRoostError(error) && error.code).toBe("not_found");
        expect(await store.listConversations(owner.id)).toHaveLength(1);
      }));

    it("createDraft is idempotent by id; RES4: another account reads nothing", () =>
      withStore(async (store) => {
        const { owner, other, a, chat } = await setup(store);
        const made = await store.createDraft(draftInput(owner.id, a.id, chat.id));
        const again = await store.createDraft({
          ...draftInput(owner.id, a.id, chat.id),
          text: "changed",
        });
        expect(made.created).toBe(true);
        expect(again).toEqual({ draft: made.draft, created: false });
        expect(made.draft).toMatchObject({ status: "pending", sendAttempts: 0, subject: "Hello" });
        expect(await store.getDraft(other.id, made.draft.id)).toBeUndefined();
        expect(await store.listDrafts(other.id)).toEqual([]);
        expect(isRoostError(await rejection(store.claimDraft(other.id, made.draft.id)))).toBe(true);
        expect(
          isRoostError(
            await rejection(
              store.discardDraft({
                accountId: other.id,
                id: made.draft.id,
                actorAccountId: other.id,
              }),
            ),
          ),
        ).toBe(true);
        expect((await store.getDraft(owner.id, made.draft.id))?.status).toBe("pending");
      }));

    it("RES2: of two sends at once exactly one claims the draft; the other is a conflict naming its status", () =>
      withStore(async (store) => {
        const { owner, a, chat } = await setup(store);
        const { draft } = await store.createDraft(draftInput(owner.id, a.id, chat.id));
        const results = await Promise.allSettled([
          store.claimDraft(owner.id, draft.id),
          store.claimDraft(owner.id, draft.id),
        ]);
        const won = results.filter((result) => result.status === "fulfilled");
        const lost = results.filter((result) => result.status === "rejected");
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(1);
        const reason = (lost[0] as PromiseRejectedResult).reason as unknown;
        expect(isRoostError(reason) && reason.code).toBe("conflict");
        expect(isRoostError(reason) && reason.details).toMatchObject({ status: "sending" });
        expect((await store.getDraft(owner.id, draft.id))?.sendAttempts).toBe(1);
      }));

    it("RES2: a send racing a discard: one of them wins whole", () =>
      withStore(async (store) => {
        const { owner, a, chat } = await setup(store);
        for (let round = 0; round < 5; round++) {
          const { draft } = await store.createDraft(
            draftInput(owner.id, a.id, chat.id, `dft_race_${round}`),
          );
          const [claim, discard] = await Promise.allSettled([
            store.claimDraft(owner.id, draft.id),
            store.discardDraft({ accountId: owner.id, id: draft.id, actorAccountId: owner.id }),
          ]);
          expect(
            [claim.status, discard.status].filter((status) => status === "fulfilled"),
          ).toHaveLength(1);
          const final = await store.getDraft(owner.id, draft.id);
          expect(final?.status).toBe(claim.status === "fulfilled" ? "sending" : "discarded");
        }
      }));

    it("a failed send may be sent again; a sent draft may not be sent or discarded", () =>
      withStore(async (store) => {
        const { owner, a, chat } = await setup(store);
        const { draft } = await store.createDraft(draftInput(owner.id, a.id, chat.id));
        await store.claimDraft(owner.id, draft.id);
        const failed = await store.finishDraftSend(draft.id, {
          ok: false,
          channel: "webhook",
          error: "503",
        });
        expect(failed).toMatchObject({ status: "failed", error: "503", channel: "webhook" });
        const again = await store.claimDraft(owner.id, draft.id);
        expect(again).toMatchObject({ status: "sending", sendAttempts: 2, error: null });
        const sent = await store.finishDraftSend(draft.id, { ok: true, channel: "webhook" });
        expect(sent?.status).toBe("sent");
        expect(sent?.sentAt).toEqual(expect.any(Number));
        // A finish for a draft that is not sending changes nothing.
        expect(
          (await store.finishDraftSend(draft.id, { ok: false, channel: null, error: "late" }))
            ?.status,
        ).toBe("sent");
        // Each attempt starts only when it is awaited: one that failed unawaited is an unhandled rejection.
        for (const attempt of [
          () => store.claimDraft(owner.id, draft.id),
          () => store.discardDraft({ accountId: owner.id, id: draft.id, actorAccountId: owner.id }),
        ]) {
          const error = await rejection(attempt());
          expect(isRoostError(error) && error.code).toBe("conflict");
          expect((error as Error).message).toContain("sent already");
        }
      }));

    it("RES3: a notification is stored once per (account, id); another account's id is another notification", () =>
      withStore(async (store) => {
        const { owner, other, chat } = await setup(store);
        const input = {
          id: "missed:r1:1000",
          accountId: owner.id,
          kind: "missed_run" as const,
          title: "first",
          body: "",
          botId: null,
          conversationId: chat.id,
          subjectId: "r1",
        };
        const first = await store.putNotification(input);
        const repeat = await store.putNotification({ ...input, title: "second" });
        expect(first.created).toBe(true);
        expect(repeat).toEqual({ notification: first.notification, created: false });
        const theirs = await store.putNotification({ ...input, accountId: other.id });
        expect(theirs.created).toBe(true);
        expect(await store.listNotifications(owner.id)).toHaveLength(1);
        expect(await store.countUnreadNotifications(owner.id)).toBe(1);
        // RES4: marking another account's notification marks nothing of it.
        expect(await store.markNotificationsRead(other.id, { ids: [input.id] })).toBe(1);
        expect(await store.countUnreadNotifications(owner.id)).toBe(1);
        expect(await store.markNotificationsRead(owner.id, { conversationId: chat.id })).toBe(1);
        expect(await store.listNotifications(owner.id, { unread: true })).toEqual([]);
        expect(await store.markNotificationsRead(owner.id, { all: true })).toBe(0);
      }));

    it("conversation marks: seen seq never moves back; drafts and unread notifications are counted", () =>
      withStore(async (store) => {
        const { owner, other, a, chat } = await setup(store);
        await store.markConversationSeen(owner.id, chat.id, 5);
        await store.markConversationSeen(owner.id, chat.id, 3);
        await store.createDraft(draftInput(owner.id, a.id, chat.id));
        for (const [id, kind] of [
          ["n1", "finished"],
          ["n2", "draft"],
        ] as const)
          await store.putNotification({
            id,
            accountId: owner.id,
            kind,
            title: id,
            body: "",
            botId: a.id,
            conversationId: chat.id,
            subjectId: null,
          });
        const marks = await store.conversationMarks(owner.id, [chat.id, "conv_missing"]);
        expect(marks.get(chat.id)).toEqual({
          seenSeq: 5,
          pendingDrafts: 1,
          unreadAttention: 1,
          unreadOther: 1,
        });
        expect(marks.get("conv_missing")).toEqual({
          seenSeq: null,
          pendingDrafts: 0,
          unreadAttention: 0,
          unreadOther: 0,
        });
        // RES4: another account sees no marks of it.
        expect((await store.conversationMarks(other.id, [chat.id])).get(chat.id)).toEqual({
          seenSeq: null,
          pendingDrafts: 0,
          unreadAttention: 0,
          unreadOther: 0,
        });
      }));

    it("owner webhooks: replaced whole, audited without the secret, deleted once", () =>
      withStore(async (store) => {
        const { owner } = await setup(store);
        const first = await store.setOwnerWebhook({
          accountId: owner.id,
          purpose: "notifications",
          url: "https://a.example/hook",
          secret: "first-webhook-secret",
        });
        const second = await store.setOwnerWebhook({
          accountId: owner.id,
          purpose: "notifications",
          url: "https://b.example/hook",
          secret: "second-webhook-secret",
        });
        expect(second.createdAt).toBe(first.createdAt);
        expect(await store.getOwnerWebhook(owner.id, "notifications")).toMatchObject({
          url: "https://b.example/hook",
          secret: "second-webhook-secret",
        });
        expect(await store.getOwnerWebhook(owner.id, "drafts")).toBeUndefined();
        const audit = JSON.stringify(await store.listAudit({ accountId: owner.id }));
        expect(audit).toContain("webhook.notifications.set");
        // Secrets no random id could contain by chance (a two-letter one did, now and then).
        expect(audit).not.toContain("webhook-secret");
        expect(await store.deleteOwnerWebhook(owner.id, "notifications")).toBe(true);
        expect(await store.deleteOwnerWebhook(owner.id, "notifications")).toBe(false);
      }));

    it("STORE7: deleting a conversation or a bot takes its drafts, notifications, reads and threads", () =>
      withStore(async (store) => {
        const { owner, a, b, chat } = await setup(store);
        await store.createDraft(draftInput(owner.id, a.id, chat.id));
        await store.putNotification({
          id: "n",
          accountId: owner.id,
          kind: "finished",
          title: "t",
          body: "",
          botId: a.id,
          conversationId: chat.id,
          subjectId: null,
        });
        await store.markConversationSeen(owner.id, chat.id, 1);
        await store.deleteConversation({ id: chat.id, actorAccountId: owner.id });
        expect(await store.listDrafts(owner.id)).toEqual([]);
        expect(await store.listNotifications(owner.id)).toEqual([]);
        expect(
          (await store.conversationMarks(owner.id, [chat.id])).get(chat.id)?.seenSeq,
        ).toBeNull();

        const thread = await store.ensureBotThread({
          accountId: owner.id,
          fromBotId: a.id,
          toBotId: b.id,
          title: "From a",
        });
        await store.deleteBot({ id: a.id, actorAccountId: owner.id });
        // The receiver's conversation stays (it is b's); a new sender of the same id would get a new thread.
        expect(await store.getConversation(thread.conversationId)).toBeDefined();
        await store.deleteBot({ id: b.id, actorAccountId: owner.id });
        expect(await store.getConversation(thread.conversationId)).toBeUndefined();
      }));
  });
}
