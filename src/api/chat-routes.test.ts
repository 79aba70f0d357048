/**
 * The chat routes of issue 16 §2: branches (branch-routes.ts BAPI1–BAPI4) and search
 * (search-routes.ts SAPI1–SAPI2), with bad input, another account, a shared conversation's
 * member, a running turn and repeats.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub, type EventHub } from "../events/index.ts";
import { activeSteps, type Api } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let events: EventHub;
let app: ReturnType<typeof createApi>;
let kicked: string[];
interface Person {
  id: string;
  token: string;
}
let ann: Person;
let bob: Person;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-chat-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  events = createEventHub();
  kicked = [];
  app = createApi({
    store,
    events,
    kick: async (conversationId) => {
      kicked.push(conversationId);
    },
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1024 * 1024,
    limits: { requestsPerMinute: 100_000 },
  });
  const person = async (name: string): Promise<Person> => {
    const account = await store.createAccount({ name, isAdmin: false });
    return { id: account.id, token: (await issueApiToken(store, account.id, "t")).token };
  };
  ann = await person("ann");
  bob = await person("bob");
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function call<T = Record<string, unknown>>(
  as: Person,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T & { error?: { code: string; message: string } } }> {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${as.token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text === "" ? {} : JSON.parse(text)) as never };
}

/** A conversation of `who` with one answered message; the bot's reply is written as the loop would. */
async function answered(who: Person, text = "what is 2+2?") {
  const bot = await call<Api.Bot>(who, "POST", "/v1/bots", { name: "b", instructions: "" });
  const conversation = await call<Api.Conversation>(who, "POST", "/v1/conversations", {
    botId: bot.body.id,
  });
  const id = conversation.body.id;
  const posted = await call<Api.PostedMessage>(who, "POST", `/v1/conversations/${id}/messages`, {
    text,
    clientMessageId: "first",
  });
  await store.takeInbox(id, "take-1");
  await reply(id, "four");
  return { id, botId: bot.body.id, messageId: posted.body.messageId, seq: posted.body.seq };
}
let replies = 0;
async function reply(conversationId: string, text: string) {
  await store.takeInbox(conversationId, `take-${++replies}`);
  await store.appendStep({
    conversationId,
    id: `reply-${replies}`,
    turnId: `turn-${replies}`,
    kind: "reply",
    payload: { text },
  });
}
const active = async (conversationId: string) =>
  activeSteps(await store.listSteps(conversationId)).map((step) => [step.kind, step.payload.text]);

describe("regenerate (BAPI1–BAPI3)", () => {
  it("asks the last message again: the old reply leaves the active branch and stays stored", async () => {
    const { id, seq } = await answered(ann);
    const regenerated = await call<Api.PostedMessage>(
      ann,
      "POST",
      `/v1/conversations/${id}/regenerate`,
      { clientMessageId: "again" },
    );
    expect(regenerated.status).toBe(202);
    expect(regenerated.body.duplicate).toBe(false);
    const steps = await store.listSteps(id);
    expect(steps.at(-1)!.payload).toMatchObject({
      text: "what is 2+2?",
      replaces: { seq, reason: "regenerate" },
    });
    expect(kicked).toEqual([id, id]);
    expect(await active(id)).toEqual([["message", "what is 2+2?"]]);
    expect(steps.some((step) => step.payload.text === "four")).toBe(true);

    // BAPI3: a repeat stores nothing and answers the same message.
    const repeat = await call<Api.PostedMessage>(
      ann,
      "POST",
      `/v1/conversations/${id}/regenerate`,
      {
        clientMessageId: "again",
      },
    );
    expect(repeat.body).toEqual({ ...regenerated.body, duplicate: true });
    expect(await store.listSteps(id)).toHaveLength(steps.length);
  });

  it("is refused while the bot works, and when there is nothing to regenerate (BAPI2)", async () => {
    const { id } = await answered(ann);
    events.publish({ type: "turn", conversationId: id, state: "working", turnId: "t" });
    const working = await call(ann, "POST", `/v1/conversations/${id}/regenerate`, {
      clientMessageId: "x",
    });
    expect(working.status).toBe(409);
    expect(working.body.error!.message).toMatch(/stop it first/);
    events.publish({ type: "turn", conversationId: id, state: "idle", turnId: null });

    const empty = await call<Api.Conversation>(ann, "POST", "/v1/conversations", {
      botId: (await store.listBots(ann.id))[0]!.id,
    });
    const nothing = await call(ann, "POST", `/v1/conversations/${empty.body.id}/regenerate`, {
      clientMessageId: "x",
    });
    expect(nothing.status).toBe(409);
    expect(nothing.body.error!.message).toMatch(/send a message first/);
  });

  it("another account's conversation answers 404 and changes nothing (BAPI1)", async () => {
    const { id } = await answered(ann);
    const before = await store.listSteps(id);
    const stranger = await call(bob, "POST", `/v1/conversations/${id}/regenerate`, {
      clientMessageId: "x",
    });
    expect(stranger.status).toBe(404);
    const edit = await call(bob, "POST", `/v1/conversations/${id}/messages/${before[0]!.id}/edit`, {
      text: "hijack",
      clientMessageId: "x",
    });
    expect(edit.status).toBe(404);
    expect(await store.listSteps(id)).toEqual(before);
  });

  it("bad input is a 400 that says how to fix it", async () => {
    const { id, messageId } = await answered(ann);
    const missing = await call(ann, "POST", `/v1/conversations/${id}/regenerate`, {});
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toMatch(/clientMessageId/);
    const extra = await call(ann, "POST", `/v1/conversations/${id}/regenerate`, {
      clientMessageId: "x",
      seq: 1,
    });
    expect(extra.status).toBe(400);
    const empty = await call(ann, "POST", `/v1/conversations/${id}/messages/${messageId}/edit`, {
      text: "",
      clientMessageId: "x",
    });
    expect(empty.status).toBe(400);
    expect(JSON.stringify(empty.body)).toMatch(/text/);
    const huge = await call(ann, "POST", `/v1/conversations/${id}/messages/${messageId}/edit`, {
      text: "x".repeat(100_001),
      clientMessageId: "x",
    });
    expect(huge.status).toBe(400);
  });
});

describe("edit (BAPI2, BAPI4)", () => {
  it("branches from the edited message: later steps leave the active branch, all stay stored", async () => {
    const { id, messageId, seq } = await answered(ann);
    await call(ann, "POST", `/v1/conversations/${id}/messages`, {
      text: "and 3+3?",
      clientMessageId: "second",
    });
    await reply(id, "six");
    const edited = await call<Api.PostedMessage>(
      ann,
      "POST",
      `/v1/conversations/${id}/messages/${messageId}/edit`,
      { text: "what is 5+5?", clientMessageId: "edit-1" },
    );
    expect(edited.status).toBe(202);
    expect(await active(id)).toEqual([["message", "what is 5+5?"]]);
    const stored = (await store.listSteps(id)).map((step) => step.payload.text);
    expect(stored).toEqual(["what is 2+2?", "four", "and 3+3?", "six", "what is 5+5?"]);
    expect((await store.listSteps(id)).at(-1)!.payload.replaces).toEqual({ seq, reason: "edit" });

    // The earlier version is no longer in the active branch: say what to edit instead.
    await reply(id, "ten");
    const stale = await call(ann, "POST", `/v1/conversations/${id}/messages/${messageId}/edit`, {
      text: "again",
      clientMessageId: "edit-2",
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error!.message).toMatch(/earlier branch/);
    // The current version may be edited again.
    const again = await call(
      ann,
      "POST",
      `/v1/conversations/${id}/messages/${edited.body.messageId}/edit`,
      { text: "what is 7+7?", clientMessageId: "edit-3" },
    );
    expect(again.status).toBe(202);
    expect(await active(id)).toEqual([["message", "what is 7+7?"]]);
  });

  it("an unknown message is 404; a message another source wrote is 403", async () => {
    const { id } = await answered(ann);
    const unknown = await call(ann, "POST", `/v1/conversations/${id}/messages/msg_nope/edit`, {
      text: "x",
      clientMessageId: "x",
    });
    expect(unknown.status).toBe(404);
    const routine = await store.appendMessage({
      conversationId: id,
      clientMessageId: "routine-1",
      authorAccountId: ann.id,
      text: "daily report",
      source: { kind: "routine", routineId: "r1", runId: "run1" },
    });
    await reply(id, "report done");
    const refused = await call(
      ann,
      "POST",
      `/v1/conversations/${id}/messages/${routine.message.id}/edit`,
      { text: "x", clientMessageId: "x" },
    );
    expect(refused.status).toBe(403);
    expect(refused.body.error!.message).toMatch(/only a message you typed/);
  });

  it("a message the summary folded in can no longer be edited", async () => {
    const { id, messageId, seq } = await answered(ann);
    await store.appendStep({
      conversationId: id,
      id: "summary-1",
      turnId: null,
      kind: "summary",
      payload: { text: "they asked sums", coversThroughSeq: seq + 1 },
    });
    const refused = await call(ann, "POST", `/v1/conversations/${id}/messages/${messageId}/edit`, {
      text: "x",
      clientMessageId: "x",
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error!.message).toMatch(/already summarised/);
  });
});

describe("search (SAPI1, SAPI2)", () => {
  it("finds the caller's titles, messages and replies with a snippet; never another account's", async () => {
    const mine = await answered(ann, "plan the kitchen renovation budget");
    const theirs = await answered(bob, "my kitchen secret: hunter2");
    await store.renameConversation({ id: theirs.id, title: "kitchen", actorAccountId: bob.id });
    const found = await call<Api.ConversationSearch>(
      ann,
      "GET",
      "/v1/conversations/search?q=Kitchen",
    );
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.results.map((hit) => hit.conversation.id)).toEqual([mine.id]);
    expect(found.body.results[0]!.match).toMatchObject({
      kind: "message",
      snippet: "plan the kitchen renovation budget",
    });
    for (const q of ["hunter2", "secret", "%25", "_"]) {
      const none = await call<Api.ConversationSearch>(
        ann,
        "GET",
        `/v1/conversations/search?q=${q}`,
      );
      expect(none.body.results).toEqual([]);
    }
    const reply = await call<Api.ConversationSearch>(ann, "GET", "/v1/conversations/search?q=four");
    expect(reply.body.results[0]!.match).toMatchObject({ kind: "reply", snippet: "four" });
  });

  it("the search route is not taken for a conversation id, and plain GET by id still works", async () => {
    const { id } = await answered(ann);
    expect((await call(ann, "GET", `/v1/conversations/${id}`)).status).toBe(200);
    expect((await call(ann, "GET", "/v1/conversations/search")).status).toBe(400);
  });

  it("bad input is a 400 that names the parameter", async () => {
    for (const query of ["q=", "q=%20%20", `q=${"x".repeat(201)}`, "q=a&limit=0", "q=a&x=1"]) {
      const answer = await call(ann, "GET", `/v1/conversations/search?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error!.code).toBe("invalid_request");
    }
    const missing = await call(ann, "GET", "/v1/conversations/search");
    expect(JSON.stringify(missing.body)).toMatch(/q/);
  });
});
