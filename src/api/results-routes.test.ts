/**
 * The results API (results-routes.ts) against a real SQLite store, with drafts sent in-process on
 * a journal (drafts/send.ts over memory-durable) through a recording channel: bad input gets a 4xx
 * that says what to fix and stores nothing; another account's ids answer 404 (RAPI1); the
 * account's streams are limited (API3); the sidebar's states.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { sendDraft, type ChannelAdapter } from "../drafts/index.ts";
import { createDestinationContext } from "../egress/index.ts";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { createEventHub, type EventHub } from "../events/index.ts";
import { createOwnerWebhookClient } from "../notifications/index.ts";
import type { Api } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let events: EventHub;
let app: ReturnType<typeof createApi>;
let alice: { id: string; token: string };
let bob: { id: string; token: string };
let sent: string[];

const channel: ChannelAdapter = {
  name: "recording",
  accepts: async () => true,
  async send(draft) {
    sent.push(draft.id);
    return { ok: true };
  },
};

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-results-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  events = createEventHub();
  sent = [];
  app = createApi({
    store,
    events,
    kick: async () => undefined,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 65_536,
    interrupt: () => false,
    limits: { eventStreamsPerAccount: 2 },
    sseKeepAliveMs: 60_000,
    results: {
      drafts: {
        send: (request) =>
          sendDraft(createMemoryDurable(), { store, events, channels: [channel] }, request),
      },
      webhooks: createOwnerWebhookClient({
        destination: createDestinationContext({
          hostAddresses: () => [],
          platformPorts: () => [7700],
        }),
      }),
    },
  });
  const account = async (name: string) => {
    const created = await store.createAccount({ name, isAdmin: false });
    return { id: created.id, token: (await issueApiToken(store, created.id, "test")).token };
  };
  alice = await account("alice");
  bob = await account("bob");
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

function request(
  who: { token: string },
  method: string,
  path: string,
  body?: unknown,
  raw?: string,
) {
  return app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${who.token}`,
      ...(body === undefined && raw === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(raw !== undefined
      ? { body: raw }
      : body === undefined
        ? {}
        : { body: JSON.stringify(body) }),
  });
}

function rowCounts(): Record<string, number> {
  const database = new DatabaseSync(join(dir, "roost.db"), { readOnly: true });
  try {
    const tables = ["drafts", "notifications", "owner_webhooks", "conversation_reads", "audit_log"];
    return Object.fromEntries(
      tables.map((name) => [
        name,
        Number((database.prepare(`SELECT count(*) AS n FROM ${name}`).get() as { n: number }).n),
      ]),
    );
  } finally {
    database.close();
  }
}

async function aliceDraft() {
  const bot = await store.createBot({
    accountId: alice.id,
    name: "writer",
    instructions: "",
    model: null,
  });
  const conversation = await store.createConversation({
    accountId: alice.id,
    botId: bot.id,
    title: "chat",
  });
  const { draft } = await store.createDraft({
    id: "dft_a",
    accountId: alice.id,
    botId: bot.id,
    conversationId: conversation.id,
    kind: "message",
    to: "Ada",
    subject: null,
    text: "hi",
  });
  return { bot, conversation, draft };
}

describe("results API: bad input stores nothing", () => {
  it("webhook bodies: a refused URL, no URL, an unknown field, not JSON, bad JSON", async () => {
    const before = rowCounts();
    const cases: [string | undefined, unknown, number, string][] = [
      [undefined, { url: "http://127.0.0.1:9/" }, 400, "address of the Roost host itself"],
      [undefined, { url: "http://169.254.169.254/" }, 400, "link-local"],
      [undefined, { url: "gopher://example.com/" }, 400, "http or https"],
      [undefined, {}, 400, "url is required"],
      [undefined, { url: "https://example.com/", secret: "mine" }, 400, 'unknown field "secret"'],
      ['{"url": ', undefined, 400, "not valid JSON"],
    ];
    for (const [raw, body, status, message] of cases) {
      const response = await request(alice, "PUT", "/v1/notifications/webhook", body, raw);
      expect(response.status, JSON.stringify(body ?? raw)).toBe(status);
      expect(((await response.json()) as Api.ErrorBody).error.message).toContain(message);
    }
    const text = await app.request("/v1/drafts/webhook", {
      method: "PUT",
      headers: { authorization: `Bearer ${alice.token}`, "content-type": "text/plain" },
      body: "https://example.com/",
    });
    expect(text.status).toBe(415);
    expect(rowCounts()).toEqual(before);
  });

  it("query parameters and bodies of the notification and draft routes", async () => {
    const { conversation } = await aliceDraft();
    const before = rowCounts();
    for (const path of [
      "/v1/notifications?unread=maybe",
      "/v1/notifications?limit=0",
      "/v1/notifications?limit=1e2",
      "/v1/notifications?before=yesterday",
      "/v1/notifications?page=2",
      "/v1/drafts?status=lost",
      "/v1/drafts?limit=201",
      `/v1/conversations/${conversation.id}/drafts?conversationId=x`,
    ]) {
      const response = await request(alice, "GET", path);
      expect(response.status, path).toBe(400);
    }
    for (const body of [{}, { ids: [] }, { all: false }, { ids: ["a"], all: true }]) {
      const response = await request(alice, "POST", "/v1/notifications/read", body);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    for (const body of [{ seq: -1 }, { seq: 1.5 }, {}, { seq: "3" }]) {
      const response = await request(
        alice,
        "POST",
        `/v1/conversations/${conversation.id}/seen`,
        body,
      );
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    const sendWithBody = await request(alice, "POST", "/v1/drafts/dft_a/send", { now: true });
    expect(sendWithBody.status).toBe(400);
    expect(rowCounts()).toEqual(before);
    expect(sent).toEqual([]);
  });
});

describe("results API: RAPI1, another account's ids answer 404", () => {
  it("drafts, conversations and notifications of another account", async () => {
    const { conversation, draft } = await aliceDraft();
    await store.putNotification({
      id: "n1",
      accountId: alice.id,
      kind: "finished",
      title: "done",
      body: "",
      botId: null,
      conversationId: conversation.id,
      subjectId: null,
    });
    const before = rowCounts();
    for (const [method, path, body] of [
      ["GET", `/v1/drafts/${draft.id}`],
      ["POST", `/v1/drafts/${draft.id}/send`],
      ["POST", `/v1/drafts/${draft.id}/discard`],
      ["GET", `/v1/conversations/${conversation.id}/drafts`],
      ["GET", `/v1/drafts?conversationId=${conversation.id}`],
      ["POST", "/v1/notifications/n1/read"],
      ["POST", `/v1/conversations/${conversation.id}/seen`, { seq: 1 }],
    ] as const) {
      const response = await request(bob, method, path, body);
      expect(response.status, `${method} ${path}`).toBe(404);
    }
    expect(
      await (await request(bob, "POST", "/v1/notifications/read", { ids: ["n1"] })).json(),
    ).toEqual({ marked: 0 });
    expect(rowCounts()).toEqual(before);
    expect((await store.getDraft(alice.id, draft.id))?.status).toBe("pending");
    expect(sent).toEqual([]);
  });
});

describe("results API: happy paths", () => {
  it("send, then the sidebar's states follow the draft, the notifications and what was seen", async () => {
    const { conversation, draft } = await aliceDraft();
    const activity = async () =>
      ((await (await request(alice, "GET", "/v1/conversations")).json()) as Api.ConversationList)
        .conversations[0]?.activity;
    expect(await activity()).toBe("needs_attention");
    const response = await request(alice, "POST", `/v1/drafts/${draft.id}/send`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      id: draft.id,
      status: "sent",
      channel: "recording",
    });
    expect(sent).toEqual([draft.id]);
    expect(await activity()).toBe("idle"); // nothing in the conversation yet
    await store.appendStep({
      conversationId: conversation.id,
      id: "s1",
      turnId: "t",
      kind: "reply",
      payload: { text: "x" },
    });
    expect(await activity()).toBe("unread");
    await store.putNotification({
      id: "n2",
      accountId: alice.id,
      kind: "needs_input",
      title: "help",
      body: "",
      botId: null,
      conversationId: conversation.id,
      subjectId: null,
    });
    expect(await activity()).toBe("needs_attention");
    const seen = await request(alice, "POST", `/v1/conversations/${conversation.id}/seen`, {
      seq: 99,
    });
    expect(await seen.json()).toEqual({ seq: 1, notificationsRead: 1 });
    expect(await activity()).toBe("idle");
    events.publish({
      type: "turn",
      conversationId: conversation.id,
      state: "working",
      turnId: "t2",
    });
    expect(await activity()).toBe("working");
  });

  it("the account stream ends on a resync of the hub, so its client reconnects and reloads", async () => {
    const response = await request(alice, "GET", "/v1/events");
    const reader = response.body!.getReader();
    await reader.read(); // hello
    events.resync();
    for (;;) if ((await reader.read()).done) break;
  });

  it("RAPI4 attack: the account stream carries the caller's events only", async () => {
    const { conversation } = await aliceDraft();
    const read = async (who: { token: string }) => {
      const response = await request(who, "GET", "/v1/events");
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      const until = async (done: (text: string) => boolean) => {
        const deadline = Date.now() + 3000;
        while (!done(text) && Date.now() < deadline) {
          const chunk: { value?: Uint8Array } | undefined = await Promise.race([
            reader.read() as Promise<{ value?: Uint8Array }>,
            new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 200)),
          ]);
          if (chunk?.value !== undefined) text += decoder.decode(chunk.value);
        }
        return text;
      };
      return { until, close: () => reader.cancel() };
    };
    const mine = await read(alice);
    const theirs = await read(bob);
    await mine.until((text) => text.includes("event: hello"));
    await theirs.until((text) => text.includes("event: hello"));
    events.publish({ type: "changed", conversationId: conversation.id, seq: 7 });
    events.publishAccount({
      type: "notification",
      accountId: alice.id,
      notification: { id: "n9", title: "for alice" },
    });
    const seen = await mine.until((text) => text.includes("for alice") && text.includes('"seq":7'));
    expect(seen).toContain("event: activity");
    expect(seen).toContain("event: notification");
    const other = await theirs.until(() => false);
    expect(other).not.toContain("activity");
    expect(other).not.toContain("for alice");
    await mine.close();
    await theirs.close();
  });

  it("API3 flood: the account's streams count against its limit", async () => {
    const open = () => request(alice, "GET", "/v1/events");
    const first = await open();
    const second = await open();
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await open();
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).not.toBeNull();
    await first.body?.cancel();
    await second.body?.cancel();
  });
});
