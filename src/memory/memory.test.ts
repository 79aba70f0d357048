import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import type { InferRequest, ModelClient } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter } from "../tools/index.ts";
import { demoPass, runMemoryPass, updateMemoryTool } from "./pass.ts";
import { createLexicalRanker } from "./ranker.ts";
import { createMemorySection } from "./section.ts";
import { createMemoryService, memoryLimits, type MemoryService } from "./service.ts";
import { createMemoryTools } from "./tool.ts";

let dir: string;
let store: Store;
let memory: MemoryService;
let accountId: string;
let botId: string;
let conversationId: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-memory-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  memory = createMemoryService(store);
  accountId = (await store.createAccount({ name: "ada", isAdmin: false })).id;
  botId = (await store.createBot({ accountId, name: "helper", instructions: "", model: null })).id;
  conversationId = (await store.createConversation({ accountId, botId, title: "t" })).id;
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const add = (tier: "user" | "profile" | "log" | "note", text: string) =>
  memory.change({ accountId, botId, tier, action: "add", text, author: "tool" });

describe("memory service", () => {
  it("a full profile is refused with what to do (MEMS2)", async () => {
    for (let index = 0; index < memoryLimits.profile.maxFacts; index++)
      await add("profile", `fact ${index}`);
    await expect(add("profile", "one more")).rejects.toMatchObject({
      code: "conflict",
      message: "profile is full (100 facts): replace or remove one",
    });
  });

  it("user facts belong to the account: every bot of it sees them (MEMS1)", async () => {
    await add("user", "The user's name is Ada.");
    const other = await store.createBot({
      accountId,
      name: "other",
      instructions: "",
      model: null,
    });
    const view = await memory.view(accountId, other.id);
    expect(view.user.map((fact) => fact.text)).toEqual(["The user's name is Ada."]);
    expect(view.profile).toEqual([]);
  });

  it("reverts an add, a replace and a removal, each as a new revision by the user (MEMS3)", async () => {
    const added = await add("profile", "likes tea");
    const replaced = await memory.change({
      accountId,
      botId,
      tier: "profile",
      action: "replace",
      factId: added.fact.id,
      text: "likes coffee",
      author: "pass",
    });
    const undoReplace = await memory.revert(replaced.revision.id, { accountId, botId });
    expect(undoReplace.revision).toMatchObject({
      author: "user",
      revertOf: replaced.revision.id,
      after: "likes tea",
    });
    const removed = await memory.change({
      accountId,
      botId,
      tier: "profile",
      action: "remove",
      factId: added.fact.id,
      author: "tool",
    });
    const undoRemove = await memory.revert(removed.revision.id, { accountId, botId });
    expect(undoRemove.fact).toMatchObject({
      id: added.fact.id,
      text: "likes tea",
      removedAt: null,
    });
    const undoAdd = await memory.revert(added.revision.id, { accountId, botId });
    expect(undoAdd.revision.action).toBe("remove");
    expect((await memory.view(accountId, botId)).profile).toEqual([]);
  });

  it("another account cannot revert or decide a revision (404 like a missing one)", async () => {
    const added = await add("profile", "secret plan");
    const eve = (await store.createAccount({ name: "eve", isAdmin: false })).id;
    await expect(memory.revert(added.revision.id, { accountId: eve, botId })).rejects.toMatchObject(
      { code: "not_found" },
    );
    await expect(
      memory.decide(added.revision.id, "accept", { accountId: eve, botId }),
    ).rejects.toMatchObject({ code: "not_found" });
  });

  it("refuses empty and overlong facts with what to do", async () => {
    await expect(add("profile", "   ")).rejects.toMatchObject({ code: "invalid_request" });
    await expect(add("profile", "x".repeat(501))).rejects.toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("at most 500 characters") as unknown,
    });
  });
});

describe("the memory tool", () => {
  const durable = () => createMemoryDurable();
  const call = async (input: unknown, callId = "call_1", d = durable()) => {
    const router = createToolRouter({ sources: [createMemoryTools(memory, store)] });
    return router.execute("memory", input, {
      accountId,
      botId,
      conversationId,
      turnId: "turn_1",
      callId,
      durable: d,
      signal: new AbortController().signal,
    });
  };

  it("adds, replaces by id (tier found from the id) and removes; every write is a revision of the turn", async () => {
    const added = await call({
      action: "add",
      tier: "profile",
      text: "Deploys happen on Fridays.",
    });
    expect(added.output).toMatch(/^Saved profile fact mem_/);
    const id = added.details!.factId as string;
    expect(
      (await call({ action: "replace", id, text: "Deploys happen on Thursdays." }, "call_2"))
        .isError,
    ).toBe(false);
    expect((await call({ action: "remove", id }, "call_3")).output).toMatch(
      /^Removed profile fact/,
    );
    const revisions = await store.listMemoryRevisions({ accountId, botId });
    expect(
      revisions.map((revision) => [revision.action, revision.author, revision.turnId]),
    ).toEqual([
      ["remove", "tool", "turn_1"],
      ["replace", "tool", "turn_1"],
      ["add", "tool", "turn_1"],
    ]);
  });

  it("a replayed call (same call id) writes nothing twice", async () => {
    await call({ action: "add", tier: "log", text: "Met Bob." }, "call_9");
    await call({ action: "add", tier: "log", text: "Met Bob." }, "call_9");
    expect((await memory.view(accountId, botId)).log).toHaveLength(1);
  });

  it("tells the model what to do when the profile is full or a fact is gone", async () => {
    for (let index = 0; index < 100; index++) await add("profile", `fact ${index}`);
    const full = await call({ action: "add", tier: "profile", text: "another" });
    expect(full).toMatchObject({
      isError: true,
      output: "profile is full (100 facts): replace or remove one",
    });
    const gone = await call({ action: "remove", id: "mem_nope" }, "call_2");
    expect(gone).toMatchObject({
      isError: true,
      output: expect.stringContaining("your memory in the prompt shows each fact's id") as unknown,
    });
  });

  it("cannot touch another bot's facts", async () => {
    const other = await store.createBot({
      accountId,
      name: "other",
      instructions: "",
      model: null,
    });
    const theirs = await memory.change({
      accountId,
      botId: other.id,
      tier: "profile",
      action: "add",
      text: "theirs",
      author: "tool",
    });
    const attempt = await call({ action: "remove", id: theirs.fact.id });
    expect(attempt.isError).toBe(true);
    expect((await memory.view(accountId, other.id)).profile).toHaveLength(1);
  });
});

describe("the memory section and the ranker", () => {
  it("shows user facts, profile, notes and the most relevant log entries, with ids", async () => {
    const ranker = createLexicalRanker(store);
    await add("user", "The user's name is Ada.");
    await add("profile", "Answers in English.");
    await memory.change({
      accountId,
      botId,
      tier: "note",
      action: "add",
      text: "Call the dentist",
      author: "tool",
      ttlMs: 3600_000,
    });
    for (let index = 0; index < 40; index++) await add("log", `Routine check number ${index}`);
    await add("log", "Migrated the billing database to Postgres");
    const text = await createMemorySection({ store, ranker }).build({
      accountId,
      botId,
      conversationId,
      newMessages: ["how did the billing migration go?"],
      now: Date.now(),
    });
    expect(text).toContain("The user's name is Ada.");
    expect(text).toContain("Answers in English.");
    expect(text).toContain("Call the dentist");
    expect(text).toContain("Migrated the billing database to Postgres");
    expect(text).toMatch(/\[mem_[A-Za-z0-9_-]+\]/);
    expect((text!.match(/Routine check/g) ?? []).length).toBeLessThanOrEqual(29);
  });

  it("ranks a matching old entry above recent unrelated ones", async () => {
    const ranker = createLexicalRanker(store);
    await add("log", "Renewed the TLS certificate for api.example.com");
    for (let index = 0; index < 60; index++) await add("log", `Daily standup ${index}`);
    const relevant = await ranker.relevantLog({
      accountId,
      botId,
      query: "certificate expiry",
      now: Date.now(),
      limit: 5,
    });
    expect(relevant.map((fact) => fact.text)).toContain(
      "Renewed the TLS certificate for api.example.com",
    );
    expect(relevant).toHaveLength(5);
  });
});

describe("the memory pass", () => {
  async function turn(texts: string[]) {
    let first = 0;
    for (const [index, text] of texts.entries()) {
      const { message } = await store.appendMessage({
        conversationId,
        clientMessageId: `m${index}-${text}`,
        authorAccountId: accountId,
        text,
      });
      first ||= message.seq;
    }
    const reply = await store.appendStep({
      conversationId,
      id: `reply-${first}`,
      turnId: "t",
      kind: "reply",
      payload: { text: "ok", model: "x" },
    });
    return { fromSeq: first, toSeq: reply.seq };
  }
  const modelAnswering = (input: unknown): ModelClient & { requests: InferRequest[] } => {
    const requests: InferRequest[] = [];
    return {
      id: "scripted",
      isDemo: false,
      requests,
      async infer(request) {
        requests.push(request);
        return {
          text: "",
          toolCalls: [{ id: "c", name: updateMemoryTool.name, input }],
          usage: { inputTokens: 1, outputTokens: 1 },
          finishReason: "tool-calls",
          model: "scripted",
        };
      },
    };
  };
  const deps = (model: ModelClient) => ({
    store,
    memory,
    ranker: createLexicalRanker(store),
    resolveModel: () => model,
  });

  it("applies what the model asks, but removes and replaces only facts it was shown (PASS1)", async () => {
    const shownFact = await add("profile", "Prefers tea.");
    const other = await store.createBot({
      accountId,
      name: "other",
      instructions: "",
      model: null,
    });
    const hidden = await memory.change({
      accountId,
      botId: other.id,
      tier: "profile",
      action: "add",
      text: "not yours",
      author: "tool",
    });
    const range = await turn(["Actually I prefer coffee now."]);
    const model = modelAnswering({
      add: [{ tier: "log", text: "Switched from tea to coffee." }],
      replace: [{ id: shownFact.fact.id, text: "Prefers coffee." }],
      remove: [hidden.fact.id],
    });
    const outcome = await runMemoryPass(createMemoryDurable(), deps(model), {
      accountId,
      botId,
      conversationId,
      turnId: "turn-1",
      ...range,
    });
    expect(outcome).toMatchObject({ applied: 2, proposed: 0 });
    expect(outcome.skipped).toEqual([
      { change: `remove ${hidden.fact.id}`, reason: "not a fact the pass was shown" },
    ]);
    expect((await memory.view(accountId, botId)).profile.map((fact) => fact.text)).toEqual([
      "Prefers coffee.",
    ]);
    expect((await memory.view(accountId, other.id)).profile).toHaveLength(1);
    // The model saw the facts with their ids, and the turn as data.
    expect(
      model.requests[0]!.messages[0]!.role === "user" && model.requests[0]!.messages[0]!.text,
    ).toContain(shownFact.fact.id);
    const revisions = await store.listMemoryRevisions({ accountId, botId });
    expect(
      revisions.every((revision) => revision.author !== "pass" || revision.turnId === "turn-1"),
    ).toBe(true);
  });

  it("a replayed pass writes nothing twice (PASS3)", async () => {
    const range = await turn(["Note that the office moved to Berlin."]);
    const model = modelAnswering({ add: [{ tier: "profile", text: "The office is in Berlin." }] });
    const first = createMemoryDurable({ invocationId: "inv-pass" });
    await runMemoryPass(first, deps(model), {
      accountId,
      botId,
      conversationId,
      turnId: "turn-2",
      ...range,
    });
    // The process died before the apply step was journaled: replay the journal up to it.
    const replay = createMemoryDurable({
      invocationId: "inv-pass",
      journal: first.journal.slice(0, -1),
    });
    await runMemoryPass(replay, deps(model), {
      accountId,
      botId,
      conversationId,
      turnId: "turn-2",
      ...range,
    });
    expect((await memory.view(accountId, botId)).profile.map((fact) => fact.text)).toEqual([
      "The office is in Berlin.",
    ]);
    expect(model.requests).toHaveLength(1);
  });

  it("in review mode the changes wait in the inbox (PASS4)", async () => {
    await store.updateBot(botId, { memoryReview: true });
    const range = await turn(["Remember that I am vegetarian."]);
    const model = modelAnswering({ add: [{ tier: "user", text: "The user is vegetarian." }] });
    const outcome = await runMemoryPass(createMemoryDurable(), deps(model), {
      accountId,
      botId,
      conversationId,
      turnId: "turn-3",
      ...range,
    });
    expect(outcome).toMatchObject({ applied: 0, proposed: 1 });
    expect((await memory.view(accountId, botId)).user).toEqual([]);
    const [proposal] = await store.listMemoryRevisions({
      accountId,
      botId: null,
      status: "proposed",
    });
    await memory.decide(proposal!.id, "accept", { accountId, botId: null });
    expect((await memory.view(accountId, botId)).user.map((fact) => fact.text)).toEqual([
      "The user is vegetarian.",
    ]);
  });

  it("an answer that is not an update changes nothing", async () => {
    const range = await turn(["hello"]);
    const model = modelAnswering({ add: "everything" });
    const outcome = await runMemoryPass(createMemoryDurable(), deps(model), {
      accountId,
      botId,
      conversationId,
      turnId: "turn-4",
      ...range,
    });
    expect(outcome).toEqual({ applied: 0, proposed: 0, skipped: [] });
  });

  it("the demo pass is deterministic: names, places and preferences become user facts, each turn a log entry (PASS5)", () => {
    const update = demoPass(
      ["Hi, my name is Ada Lovelace. I live in London and I prefer short answers."],
      [],
    );
    expect(update).toEqual({
      add: [
        { tier: "user", text: "The user's name is Ada Lovelace." },
        { tier: "user", text: "The user lives in London." },
        { tier: "user", text: "The user prefers short answers." },
        {
          tier: "log",
          text: "Asked: Hi, my name is Ada Lovelace. I live in London and I prefer short answers.",
        },
      ],
      replace: [],
      remove: [],
    });
    const renamed = demoPass(
      ["call me Ada"],
      [
        {
          id: "mem_1",
          accountId: "a",
          botId: null,
          tier: "user",
          text: "The user's name is Ada Lovelace.",
          createdAt: 0,
          updatedAt: 0,
          expiresAt: null,
          removedAt: null,
        },
      ],
    );
    expect(renamed.replace).toEqual([{ id: "mem_1", text: "The user's name is Ada." }]);
  });
});
