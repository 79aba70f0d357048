/**
 * Sending a draft (send.ts) on a journal (memory-durable), with a channel adapter that records
 * what it sends: a crash after the delivery replays without posting again (DRF1), a crash during
 * it posts again with the same delivery id (CHAN1), no adapter gives a clear failure (DRF3), and
 * the draft tool makes one draft per call (DRT1, DRT2).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable, type JournalEntry } from "../engine/testing/index.ts";
import { createEventHub } from "../events/index.ts";
import { createRecordingNotifier } from "../notifications/testing/index.ts";
import { openStore, type Draft, type Store } from "../store/index.ts";
import { createToolRouter } from "../tools/index.ts";
import type { ChannelAdapter } from "./channels.ts";
import { sendDraft } from "./send.ts";
import { createDraftTools, draftIdOf, draftLimits } from "./tool.ts";

let dir: string;
let store: Store;
let accountId: string;
let botId: string;
let conversationId: string;
let sends: { draftId: string; deliveryId: string }[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-drafts-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  accountId = (await store.createAccount({ name: "ada", isAdmin: false })).id;
  botId = (
    await store.createBot({
      accountId,
      name: "writer",
      instructions: "",
      model: null,
      notify: true,
    })
  ).id;
  conversationId = (await store.createConversation({ accountId, botId, title: "chat" })).id;
  sends = [];
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const recording = (
  answer: () => Promise<{ ok: true } | { ok: false; error: string }> = async () => ({ ok: true }),
): ChannelAdapter => ({
  name: "recording",
  accepts: async (_account, kind) => kind === "email",
  async send(draft: Draft, deliveryId: string) {
    sends.push({ draftId: draft.id, deliveryId });
    return answer();
  },
});

async function newDraft(kind: "email" | "slack" = "email") {
  const { draft } = await store.createDraft({
    id: `dft_${kind}`,
    accountId,
    botId,
    conversationId,
    kind,
    to: "ada@example.com",
    subject: null,
    text: "hello",
  });
  return draft;
}

function send(draftId: string, channels: ChannelAdapter[], journal?: JournalEntry[]) {
  const durable = createMemoryDurable(journal === undefined ? {} : { journal });
  return {
    durable,
    result: sendDraft(
      durable,
      { store, events: createEventHub(), channels },
      { accountId, draftId },
    ),
  };
}

const killed = new Error("killed -9");

/**
 * A journal whose process dies at step `at`: before it runs (`before`), or after its action ran
 * but before its result was journaled (`after`).
 */
function dyingAt(at: string, when: "before" | "after") {
  const journal = createMemoryDurable();
  const durable = {
    ...journal,
    step: async <T>(name: string, action: (signal: AbortSignal) => Promise<T>) => {
      if (name !== at) return journal.step(name, action);
      if (when === "after") await action(new AbortController().signal);
      throw killed;
    },
  };
  return { journal, durable };
}

async function sendUntilKilled(draftId: string, at: string, when: "before" | "after") {
  const dying = dyingAt(at, when);
  await expect(
    sendDraft(
      dying.durable,
      { store, events: createEventHub(), channels: [recording()] },
      { accountId, draftId },
    ),
  ).rejects.toBe(killed);
  return dying.journal;
}

describe("sending a draft", () => {
  it("DRF1 fault: killed after the delivery was journaled, the replay finishes without posting again", async () => {
    const draft = await newDraft();
    // The process dies as `finish` starts: claim and deliver are in the journal, finish is not.
    const dying = await sendUntilKilled(draft.id, "finish", "before");
    expect((await store.getDraft(accountId, draft.id))?.status).toBe("sending");
    expect(dying.journal.map((entry) => entry.type === "step" && entry.name)).toEqual([
      "claim",
      "deliver",
    ]);
    const replay = send(draft.id, [recording()], dying.journal);
    expect(await replay.result).toMatchObject({
      ok: true,
      draft: { status: "sent", channel: "recording" },
    });
    expect(replay.durable.steps).toEqual(["finish"]);
    expect(sends).toEqual([{ draftId: draft.id, deliveryId: `${draft.id}:1` }]);
  });

  it("CHAN1 fault: killed while the endpoint answered, the retry posts with the same delivery id", async () => {
    const draft = await newDraft();
    // The post goes out, then the process dies before `deliver` is journaled.
    const dying = await sendUntilKilled(draft.id, "deliver", "after");
    const retried = send(draft.id, [recording()], dying.journal);
    expect(await retried.result).toMatchObject({ ok: true, draft: { status: "sent" } });
    expect(sends.map((sent) => sent.deliveryId)).toEqual([`${draft.id}:1`, `${draft.id}:1`]);
  });

  it("a failed channel leaves the draft failed with the reason, and sendable again", async () => {
    const draft = await newDraft();
    const failed = await send(draft.id, [
      recording(async () => ({ ok: false, error: "webhook: the endpoint answered 503" })),
    ]).result;
    expect(failed).toMatchObject({
      ok: true,
      draft: {
        status: "failed",
        error: "webhook: the endpoint answered 503",
        channel: "recording",
      },
    });
    const sent = await send(draft.id, [recording()]).result;
    expect(sent).toMatchObject({ ok: true, draft: { status: "sent", channel: "recording" } });
    expect(sends.map((entry) => entry.deliveryId)).toEqual([`${draft.id}:1`, `${draft.id}:2`]);
    const audit = await store.listAudit({ accountId });
    expect(
      audit.filter((entry) => entry.action === "draft.send").map((entry) => entry.detail.ok),
    ).toEqual([true, false]); // newest first
  });

  it("DRF3: a kind no adapter takes fails with what to configure; nothing is posted", async () => {
    const draft = await newDraft("slack");
    const result = await send(draft.id, [recording()]).result;
    expect(result).toMatchObject({ ok: true, draft: { status: "failed", channel: null } });
    expect(result.ok && result.draft.error).toContain(
      "No Slack channel is configured on this server yet",
    );
    expect(sends).toEqual([]);
  });

  it("RES2: a send of a draft that was discarded or sent is a conflict, and another account's is not found", async () => {
    const draft = await newDraft();
    await store.discardDraft({ accountId, id: draft.id, actorAccountId: accountId });
    expect(await send(draft.id, [recording()]).result).toMatchObject({
      ok: false,
      code: "conflict",
    });
    const other = (await store.createAccount({ name: "mallory", isAdmin: false })).id;
    const durable = createMemoryDurable();
    const theirs = await sendDraft(
      durable,
      { store, events: createEventHub(), channels: [recording()] },
      { accountId: other, draftId: draft.id },
    );
    expect(theirs).toMatchObject({ ok: false, code: "not_found" });
    expect(sends).toEqual([]);
  });
});

describe("the draft tool", () => {
  it("DRT1, DRT2: one draft per call, in the turn's conversation, with one notification", async () => {
    const notifier = createRecordingNotifier();
    const router = createToolRouter({
      sources: [createDraftTools({ store, events: createEventHub(), notifier })],
    });
    const run = () =>
      router.execute(
        "draft",
        { kind: "email", to: "ada@example.com", subject: "Hi", text: "Dear Ada" },
        {
          accountId,
          botId,
          conversationId,
          turnId: "turn_1",
          callId: "call_1",
          durable: createMemoryDurable(),
          signal: new AbortController().signal,
        },
      );
    const first = await run();
    const again = await run(); // the step ran again (a crash before its result was journaled)
    expect(first.details).toEqual({
      draftId: draftIdOf("call_1"),
      kind: "email",
      to: "ada@example.com",
    });
    expect(again.details).toEqual(first.details);
    const drafts = await store.listDrafts(accountId);
    expect(drafts).toHaveLength(1);
    expect(drafts[0]).toMatchObject({ conversationId, botId, subject: "Hi", status: "pending" });
    expect(notifier.told).toHaveLength(1);
    expect(notifier.told[0]).toMatchObject({
      kind: "draft",
      title: "writer drafted an email to ada@example.com",
    });
  });

  it("flood: a bot that drafts in a loop is stopped at the conversation's limit of waiting drafts", async () => {
    const router = createToolRouter({
      sources: [
        createDraftTools({ store, events: createEventHub(), notifier: createRecordingNotifier() }),
      ],
    });
    const run = (index: number) =>
      router.execute(
        "draft",
        { kind: "message", to: "Ada", text: `note ${index}` },
        {
          accountId,
          botId,
          conversationId,
          turnId: "turn_1",
          callId: `call_${index}`,
          durable: createMemoryDurable(),
          signal: new AbortController().signal,
        },
      );
    for (let index = 0; index < draftLimits.pendingPerConversation; index++)
      expect((await run(index)).isError).toBe(false);
    const refused = await run(999);
    expect(refused).toMatchObject({ isError: true, details: { code: "too_many_drafts" } });
    // A replay of a call that made one of them still answers as it did.
    expect((await run(3)).isError).toBe(false);
    expect(await store.listDrafts(accountId, { limit: 200 })).toHaveLength(
      draftLimits.pendingPerConversation,
    );
  });

  it("bad input: a subject on a Slack message, an unknown kind, an empty text", async () => {
    const router = createToolRouter({
      sources: [
        createDraftTools({ store, events: createEventHub(), notifier: createRecordingNotifier() }),
      ],
    });
    for (const input of [
      { kind: "slack", to: "#general", subject: "x", text: "hi" },
      { kind: "fax", to: "x", text: "hi" },
      { kind: "email", to: "ada@example.com", text: "" },
    ]) {
      const result = await router.execute("draft", input, {
        accountId,
        botId,
        conversationId,
        turnId: "turn_1",
        callId: `call_${JSON.stringify(input)}`,
        durable: createMemoryDurable(),
        signal: new AbortController().signal,
      });
      expect(result.isError).toBe(true);
    }
    expect(await store.listDrafts(accountId)).toEqual([]);
  });
});
