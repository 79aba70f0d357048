/**
 * The attachments part of the store contract (attachment-types.ts ATS1–ATS2), run by SQLite and
 * Postgres alike from store.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { AttachmentRecord, Store } from "./types.ts";

export function attachmentsContract(
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
  async function conversationOf(store: Store) {
    const account = await store.createAccount({ name: "a", isAdmin: false });
    const bot = await store.createBot({
      accountId: account.id,
      name: "b",
      instructions: "",
      model: null,
    });
    const conversation = await store.createConversation({
      accountId: account.id,
      botId: bot.id,
      title: "t",
    });
    return { account, bot, conversation };
  }
  const input = (
    accountId: string,
    conversationId: string,
    id: string,
  ): Omit<AttachmentRecord, "createdAt"> => ({
    id,
    accountId,
    conversationId,
    turnId: "turn_1",
    callId: "call_1",
    kind: "screenshot",
    name: "browser-1.png",
    mimeType: "image/png",
    size: 1234,
    blobKey: `attachments/${conversationId}/${id}`,
  });

  describe(`attachments store contract: ${name}`, () => {
    it("ATS1: putting the same id twice keeps the first row", () =>
      withStore(async (store) => {
        const { account, conversation } = await conversationOf(store);
        const first = await store.putAttachment(input(account.id, conversation.id, "att_1"));
        expect(first).toMatchObject({ id: "att_1", kind: "screenshot", size: 1234 });
        const again = await store.putAttachment({
          ...input(account.id, conversation.id, "att_1"),
          size: 99,
          name: "other.png",
        });
        expect(again).toEqual(first);
        await store.putAttachment({
          ...input(account.id, conversation.id, "att_2"),
          kind: "download",
          name: "report.pdf",
          mimeType: "application/pdf",
        });
        const listed = await store.listAttachments(conversation.id);
        expect(listed.map((row) => [row.id, row.kind])).toEqual([
          ["att_1", "screenshot"],
          ["att_2", "download"],
        ]);
        expect(await store.getAttachment("att_2")).toMatchObject({ name: "report.pdf" });
        expect(await store.getAttachment("att_missing")).toBeUndefined();
      }));

    it("ATS2: attachments go with their conversation, and with their bot", () =>
      withStore(async (store) => {
        const { account, bot, conversation } = await conversationOf(store);
        await store.putAttachment(input(account.id, conversation.id, "att_a"));
        await store.deleteConversation({ id: conversation.id, actorAccountId: account.id });
        expect(await store.getAttachment("att_a")).toBeUndefined();
        const second = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "u",
        });
        await store.putAttachment(input(account.id, second.id, "att_b"));
        await store.deleteBot({ id: bot.id, actorAccountId: account.id });
        expect(await store.listAttachments(second.id)).toEqual([]);
      }));

    it("keeps a bot's browserRecording setting", () =>
      withStore(async (store) => {
        const { bot } = await conversationOf(store);
        expect(bot.browserRecording).toBe(false);
        const on = await store.updateBot(bot.id, { browserRecording: true });
        expect(on.browserRecording).toBe(true);
        expect((await store.getBot(bot.id))?.browserRecording).toBe(true);
        expect((await store.updateBot(bot.id, { notify: true })).browserRecording).toBe(true);
      }));
  });
}
