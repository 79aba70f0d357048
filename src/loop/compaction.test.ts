import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { ModelError } from "../errors/index.ts";
import { createEventHub } from "../events/index.ts";
import type { InferRequest, InferResult, ModelClient } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter } from "../tools/index.ts";
import { cutPoint } from "./compaction.ts";
import { runConversation, type LoopDependencies } from "./conversation-loop.ts";
import { createTurnInterrupts } from "./interrupts.ts";

let dir: string;
let store: Store;
let accountId: string;
let botId: string;
let conversationId: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-compaction-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  accountId = (await store.createAccount({ name: "ada", isAdmin: false })).id;
  botId = (await store.createBot({ accountId, name: "helper", instructions: "", model: null })).id;
  conversationId = (await store.createConversation({ accountId, botId, title: "t" })).id;
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A conversation of `turns` answered turns, stored directly (the loop's own steps). */
async function history(turns: number) {
  for (let index = 0; index < turns; index++) {
    await store.appendMessage({
      conversationId,
      clientMessageId: `old-${index}`,
      authorAccountId: accountId,
      text: `old question ${index} about the billing service`,
    });
    const [message] = await store.takeInbox(conversationId, `old-take-${index}`);
    void message;
    await store.appendStep({
      conversationId,
      id: `old-reply-${index}`,
      turnId: `old-turn-${index}`,
      kind: "reply",
      payload: { text: `old answer ${index}`, model: "x" },
    });
  }
}

type Responder = (
  request: InferRequest,
  index: number,
) => Partial<InferResult> | Promise<Partial<InferResult>>;
function model(respond: Responder, window = 4000): ModelClient & { requests: InferRequest[] } {
  const requests: InferRequest[] = [];
  return {
    id: "scripted",
    isDemo: false,
    contextWindowTokens: window,
    requests,
    async infer(request) {
      requests.push(request);
      const partial = await respond(request, requests.length - 1);
      return {
        text: "",
        toolCalls: [],
        usage: { inputTokens: 1, outputTokens: 1 },
        finishReason: "stop",
        model: "scripted",
        ...partial,
      };
    },
  };
}
const isSummarizer = (request: InferRequest) =>
  request.system.startsWith("You summarise a conversation");

function deps(client: ModelClient, overrides: Partial<LoopDependencies> = {}): LoopDependencies {
  return {
    store,
    events: createEventHub(),
    resolveModel: () => client,
    tools: createToolRouter({ sources: [] }),
    followUpWindowMs: 10,
    interrupts: createTurnInterrupts(),
    compaction: { share: 0.5, idleShare: 0.25, keepMessages: 4 },
    ...overrides,
  };
}

describe("compaction (LOOP9, CMP1–CMP3)", () => {
  it("a history over budget is summarised first: memory pass, then summary, then the last messages verbatim", async () => {
    await history(60);
    await store.appendMessage({
      conversationId,
      clientMessageId: "new",
      authorAccountId: accountId,
      text: "and now?",
    });
    const order: string[] = [];
    const client = model((request) => {
      if (isSummarizer(request)) {
        order.push("summarize");
        return { text: "We talked about the billing service sixty times." };
      }
      return { text: "answer" };
    });
    const ranges: { fromSeq: number; toSeq: number }[] = [];
    await runConversation(
      createMemoryDurable(),
      deps(client, {
        beforeCompaction: async (_durable, range) => {
          order.push("memory pass");
          ranges.push(range);
        },
      }),
      conversationId,
    );
    expect(order.slice(0, 2)).toEqual(["memory pass", "summarize"]); // CMP order
    const summary = await store.latestStepOfKind(conversationId, "summary");
    expect(summary?.payload).toMatchObject({
      text: "We talked about the billing service sixty times.",
      fromSeq: 1,
    });
    const covers = (summary!.payload as { coversThroughSeq: number }).coversThroughSeq;
    expect(ranges).toEqual([expect.objectContaining({ fromSeq: 1, toSeq: covers }) as unknown]);
    const answer = client.requests.filter((request) => !isSummarizer(request)).at(-1)!;
    expect(answer.system).toContain(
      "# Summary of the conversation so far\nWe talked about the billing service sixty times.",
    );
    // The last 4 user messages stay verbatim, the rest is in the summary only.
    const userTexts = answer.messages
      .filter((message) => message.role === "user")
      .map((message) => message.text);
    expect(userTexts).toEqual(
      [
        "old question 57 about the billing service",
        "old question 58 about the billing service",
        "old question 59 about the billing service",
        "and now?",
      ].slice(-4),
    );
    expect(answer.messages[0]!.role).toBe("user"); // CMP3: starts at a turn boundary
    // The full record stays.
    expect(
      (await store.listSteps(conversationId, { limit: 1000 })).filter(
        (step) => step.kind === "message",
      ),
    ).toHaveLength(61);
  });

  it("a crash during compaction resumes it: no second pass, one summary (CMP1)", async () => {
    await history(60);
    await store.appendMessage({
      conversationId,
      clientMessageId: "new",
      authorAccountId: accountId,
      text: "and now?",
    });
    const client = model((request) => ({
      text: isSummarizer(request) ? "summary text" : "answer",
    }));
    let passes = 0;
    const loopDeps = deps(client, {
      beforeCompaction: async (durable, range) => {
        // A journaled call, as the platform's is: a replay returns its result without calling.
        await durable.call(
          { object: "memory-pass", key: range.conversationId, handler: "afterTurn" },
          range,
        );
      },
    });
    const objects = { "memory-pass": async () => void passes++ };
    const first = createMemoryDurable({ invocationId: "inv-c", objects });
    await runConversation(first, loopDeps, conversationId);
    expect(passes).toBe(1);
    // Replay every prefix that ends inside the compaction: each must end the same way.
    const start = first.journal.findIndex(
      (entry) => entry.type === "step" && entry.name === "compact:plan",
    );
    const end = first.journal.findIndex(
      (entry) => entry.type === "step" && entry.name === "compact:save",
    );
    for (let cut = start; cut <= end; cut++) {
      const prefix = first.journal.slice(0, cut + 1);
      const before = passes;
      await runConversation(
        createMemoryDurable({ invocationId: "inv-c", objects, journal: prefix }),
        loopDeps,
        conversationId,
      );
      // The pass runs again only when the crash came before its call was journaled (so it had
      // not run); once journaled, a replay never runs it again.
      expect(passes - before).toBe(prefix.some((entry) => entry.type === "call") ? 0 : 1);
    }
    const steps = await store.listSteps(conversationId, { limit: 1000 });
    expect(steps.filter((step) => step.kind === "summary")).toHaveLength(1);
    expect(
      steps
        .filter((step) => step.kind === "reply")
        .map((step) => step.payload.text)
        .at(-1),
    ).toBe("answer");
  });

  it("a summariser that fails leaves the turn answering, with its history (CMP2)", async () => {
    await history(60);
    await store.appendMessage({
      conversationId,
      clientMessageId: "new",
      authorAccountId: accountId,
      text: "still there?",
    });
    const client = model((request) => {
      if (isSummarizer(request)) throw new ModelError("openai: 500 Internal Server Error");
      return { text: "yes" };
    });
    await runConversation(createMemoryDurable(), deps(client), conversationId);
    const steps = await store.listSteps(conversationId, { limit: 1000 });
    expect(steps.at(-1)).toMatchObject({ kind: "reply", payload: { text: "yes" } });
    expect(steps.filter((step) => step.kind === "error" || step.kind === "summary")).toEqual([]);
  });

  it("a context overflow from the provider is compacted and the call tried once more", async () => {
    await history(10); // under the budget: only the provider knows it is too long
    await store.appendMessage({
      conversationId,
      clientMessageId: "new",
      authorAccountId: accountId,
      text: "big question",
    });
    let refused = 0;
    const client = model((request) => {
      if (isSummarizer(request)) return { text: "short summary" };
      if (!request.system.includes("short summary")) {
        refused++;
        throw new ModelError(
          "openai: 400 Bad Request — the conversation is longer than model x accepts",
          {
            details: { kind: "bad-request", contextOverflow: true },
          },
        );
      }
      return { text: "answered after compacting" };
    }, 128_000);
    await runConversation(createMemoryDurable(), deps(client), conversationId);
    expect(refused).toBe(1);
    const steps = await store.listSteps(conversationId, { limit: 1000 });
    expect(steps.at(-1)).toMatchObject({
      kind: "reply",
      payload: { text: "answered after compacting" },
    });
    expect(steps.filter((step) => step.kind === "summary")).toHaveLength(1);
  });

  it("after the follow-up window a conversation past its idle budget is compacted, unless it wakes soon", async () => {
    await history(30);
    await store.appendMessage({
      conversationId,
      clientMessageId: "new",
      authorAccountId: accountId,
      text: "bye",
    });
    const client = model(
      (request) => ({ text: isSummarizer(request) ? "idle summary" : "ok" }),
      9000,
    );
    // Under the turn's budget (no compaction at its start), over the idle one.
    const idleOnly = { share: 0.9, idleShare: 0.1, keepMessages: 4 };
    await runConversation(
      createMemoryDurable(),
      deps(client, { wakesSoon: async () => true, compaction: idleOnly }),
      conversationId,
    );
    expect(await store.latestStepOfKind(conversationId, "summary")).toBeUndefined();
    await store.appendMessage({
      conversationId,
      clientMessageId: "new2",
      authorAccountId: accountId,
      text: "bye again",
    });
    await runConversation(
      createMemoryDurable({ invocationId: "inv-2" }),
      deps(client, { compaction: idleOnly }),
      conversationId,
    );
    expect((await store.latestStepOfKind(conversationId, "summary"))?.payload.text).toBe(
      "idle summary",
    );
  });

  it("cuts only before a user message, keeping the last N of them (CMP3)", () => {
    const step = (seq: number, kind: "message" | "model" | "tool" | "reply") => ({
      conversationId: "c",
      seq,
      id: `s${seq}`,
      turnId: null,
      kind,
      payload: {},
      createdAt: 0,
    });
    const steps = [
      step(1, "message"),
      step(2, "model"),
      step(3, "tool"),
      step(4, "reply"),
      step(5, "message"),
      step(6, "model"),
      step(7, "tool"),
      step(8, "reply"),
      step(9, "message"),
      step(10, "reply"),
    ];
    expect(cutPoint(steps, 2)).toBe(4);
    expect(cutPoint(steps, 1)).toBe(8);
    expect(cutPoint(steps, 3)).toBeUndefined();
  });
});
