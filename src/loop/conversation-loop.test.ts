import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelError } from "../errors/index.ts";
import { createEventHub, type ConversationEvent } from "../events/index.ts";
import type { InferRequest, InferResult, ModelClient } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import type { ToolRouter } from "../tools/index.ts";
import { runConversation, type LoopDependencies } from "./conversation-loop.ts";
import { createMemoryDurable } from "./testing/memory-durable.ts";

type Script = (
  request: InferRequest,
  index: number,
) => Promise<Partial<InferResult>> | Partial<InferResult>;

function scriptedModel(script: Script): ModelClient & { requests: InferRequest[] } {
  const requests: InferRequest[] = [];
  return {
    id: "scripted",
    isDemo: false,
    requests,
    async infer(request) {
      requests.push({ ...request, messages: [...request.messages] });
      const partial = await script(request, requests.length - 1);
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

const lastUserTexts = (request: InferRequest) =>
  request.messages.filter((message) => message.role === "user").map((message) => message.text);

describe("conversation loop decisions (scripted model, memory durable)", () => {
  let dir: string;
  let store: Store;
  let conversationId: string;
  let accountId: string;
  let events: ConversationEvent[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-loop-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    const account = await store.createAccount({ name: "ada", isAdmin: false });
    accountId = account.id;
    const bot = await store.createBot({
      accountId,
      name: "helper",
      instructions: "Answer briefly.",
      model: null,
    });
    conversationId = (await store.createConversation({ accountId, botId: bot.id, title: "t" })).id;
    events = [];
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = (text: string, clientMessageId = text) =>
    store.appendMessage({ conversationId, clientMessageId, authorAccountId: accountId, text });

  function deps(model: ModelClient, overrides: Partial<LoopDependencies> = {}): LoopDependencies {
    const hub = createEventHub();
    hub.subscribe(conversationId, (event) => events.push(event));
    return {
      store,
      events: hub,
      resolveModel: () => model,
      tools: { specs: async () => [], execute: async () => ({ output: "", isError: false }) },
      followUpWindowMs: 20,
      ...overrides,
    };
  }

  it("exits at once when the inbox is empty", async () => {
    const model = scriptedModel(() => ({ text: "never" }));
    const durable = createMemoryDurable();
    expect(await runConversation(durable, deps(model), conversationId)).toEqual({ turns: 0 });
    expect(model.requests).toHaveLength(0);
    expect(durable.steps).toEqual(["take-inbox"]);
  });

  it("answers messages that arrived together in one turn", async () => {
    await send("first");
    await send("second");
    const model = scriptedModel(() => ({ text: "both seen" }));
    const result = await runConversation(createMemoryDurable(), deps(model), conversationId);
    expect(result.turns).toBe(1);
    expect(model.requests).toHaveLength(1);
    expect(lastUserTexts(model.requests[0]!)).toEqual(["first", "second"]);
    expect(model.requests[0]!.system).toContain("Answer briefly.");
    const steps = await store.listSteps(conversationId);
    expect(steps.map((step) => [step.seq, step.kind])).toEqual([
      [1, "message"],
      [2, "message"],
      [3, "reply"],
    ]);
    expect(steps[2]!.payload).toMatchObject({
      text: "both seen",
      usage: { inputTokens: 1, outputTokens: 1 },
    });
    expect(
      events
        .filter((event) => event.type === "turn")
        .map((event) => event.type === "turn" && event.state),
    ).toEqual(["working", "idle"]);
  });

  it("injects a message sent mid-turn at the next step boundary, in the same turn", async () => {
    await send("list files");
    const tools: ToolRouter = {
      specs: async () => [{ name: "shell", description: "run", inputSchema: { type: "object" } }],
      execute: async () => {
        await send("also show hidden ones"); // arrives while the tool runs
        return { output: "a.txt", isError: false };
      },
    };
    const model = scriptedModel((_request, index) =>
      index === 0
        ? { toolCalls: [{ id: "provider-1", name: "shell", input: { command: "ls" } }] }
        : { text: "done" },
    );
    const result = await runConversation(
      createMemoryDurable("inv1"),
      deps(model, { tools }),
      conversationId,
    );
    expect(result.turns).toBe(1);
    expect(model.requests).toHaveLength(2);
    const second = model.requests[1]!.messages;
    expect(second.map((message) => message.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(second[3]).toEqual({ role: "user", text: "also show hidden ones" });
    const kinds = (await store.listSteps(conversationId)).map((step) => step.kind);
    expect(kinds).toEqual(["message", "model", "message", "tool", "reply"]);
    const tool = (await store.listSteps(conversationId)).find((step) => step.kind === "tool")!;
    // The call id comes from the journal position, not from the provider.
    expect(tool.payload).toMatchObject({
      callId: "inv1:turn:0:0:0",
      name: "shell",
      output: "a.txt",
    });
  });

  it("waits for follow-ups after a reply, runs another turn, then exits when the window passes", async () => {
    await send("one");
    const model = scriptedModel((request) => ({ text: `re: ${lastUserTexts(request).at(-1)}` }));
    const durable = createMemoryDurable();
    const run = runConversation(durable, deps(model, { followUpWindowMs: 60_000 }), conversationId);
    await durable.waiting();
    await send("two");
    durable.signal();
    await durable.waiting();
    durable.signal(); // a wake with an empty inbox ends the loop
    expect(await run).toEqual({ turns: 2 });
    const replies = (await store.listSteps(conversationId)).filter((step) => step.kind === "reply");
    expect(replies.map((step) => step.payload.text)).toEqual(["re: one", "re: two"]);
  });

  it("exits after the follow-up window with nothing new", async () => {
    await send("one");
    const model = scriptedModel(() => ({ text: "ok" }));
    const durable = createMemoryDurable();
    expect(
      await runConversation(durable, deps(model, { followUpWindowMs: 10 }), conversationId),
    ).toEqual({ turns: 1 });
    expect(durable.steps.slice(-2)).toEqual(["take-inbox", "take-inbox"]);
  });

  it("starts the next turn at once for a message that arrived during the reply", async () => {
    await send("one");
    const model = scriptedModel(async (_request, index) => {
      if (index === 0) await send("two");
      return { text: `reply ${index}` };
    });
    const durable = createMemoryDurable();
    expect(await runConversation(durable, deps(model), conversationId)).toEqual({ turns: 2 });
    expect(lastUserTexts(model.requests[1]!)).toEqual(["one", "two"]);
  });

  it("reports a model failure as an error step the user can read", async () => {
    await send("hello");
    const model = scriptedModel(() => {
      throw new ModelError("openai: 401 Unauthorized: set ROOST_OPENAI_API_KEY to a valid key");
    });
    await runConversation(createMemoryDurable(), deps(model), conversationId);
    const last = (await store.listSteps(conversationId)).at(-1)!;
    expect(last.kind).toBe("error");
    expect(last.payload).toMatchObject({
      code: "model_error",
      message: expect.stringContaining("ROOST_OPENAI_API_KEY"),
    });
  });

  it("ends a turn whose step keeps failing with an error step, and goes on with the next message", async () => {
    await send("first");
    let failing = true;
    const tools: ToolRouter = {
      specs: async () => {
        if (failing) throw new Error("tool registry unavailable");
        return [];
      },
      execute: async () => ({ output: "", isError: false }),
    };
    const model = scriptedModel(() => ({ text: "answered" }));
    const durable = createMemoryDurable();
    const run = runConversation(
      durable,
      deps(model, { tools, followUpWindowMs: 60_000 }),
      conversationId,
    );
    await durable.waiting();
    const failed = (await store.listSteps(conversationId)).at(-1)!;
    expect(failed.kind).toBe("error");
    expect(failed.payload).toMatchObject({
      code: "step_failed",
      message: expect.stringContaining("tool registry unavailable"),
    });
    failing = false;
    await send("second");
    durable.signal();
    await durable.waiting();
    durable.signal();
    await run;
    expect((await store.listSteps(conversationId)).at(-1)!.payload).toMatchObject({
      text: "answered",
    });
  });

  it("stops a turn that never replies", async () => {
    await send("loop forever");
    const model = scriptedModel(() => ({ toolCalls: [{ id: "x", name: "shell", input: {} }] }));
    await runConversation(
      createMemoryDurable(),
      deps(model, { maxModelCallsPerTurn: 3 }),
      conversationId,
    );
    const last = (await store.listSteps(conversationId)).at(-1)!;
    expect(last.payload).toMatchObject({ code: "turn_too_long" });
    expect(model.requests).toHaveLength(3);
  });

  it("re-running an invocation after a crash duplicates no step (idempotent ids)", async () => {
    await send("hello");
    const model = scriptedModel(() => ({ text: "hi" }));
    await runConversation(createMemoryDurable("inv-crash"), deps(model), conversationId);
    // Same invocation id, as an engine retry after a crash between save and journal would have.
    await runConversation(createMemoryDurable("inv-crash"), deps(model), conversationId);
    const steps = await store.listSteps(conversationId);
    expect(steps.map((step) => step.kind)).toEqual(["message", "reply"]);
  });

  it("tells live views to drop text streamed by a model attempt that is being retried", async () => {
    await send("hello");
    const model: ModelClient = {
      id: "flaky",
      isDemo: false,
      async infer(request) {
        request.onTextDelta?.("Hal");
        request.onRetry?.({ attempt: 1, delayMs: 10 });
        request.onTextDelta?.("Hello");
        return {
          text: "Hello",
          toolCalls: [],
          usage: { inputTokens: 0, outputTokens: 0 },
          finishReason: "stop",
          model: "f",
        };
      },
    };
    await runConversation(createMemoryDurable(), deps(model), conversationId);
    const deltas = events.filter((event) => event.type === "delta");
    expect(
      deltas.map((event) => (event.type === "delta" ? [event.text, event.reset === true] : [])),
    ).toEqual([
      ["Hal", false],
      ["", true],
      ["Hello", false],
    ]);
  });

  it("streams text deltas as events", async () => {
    await send("hello");
    const model: ModelClient = {
      id: "streamer",
      isDemo: false,
      async infer(request) {
        for (const piece of ["Hel", "lo"]) request.onTextDelta?.(piece);
        return {
          text: "Hello",
          toolCalls: [],
          usage: { inputTokens: 0, outputTokens: 0 },
          finishReason: "stop",
          model: "s",
        };
      },
    };
    await runConversation(createMemoryDurable(), deps(model), conversationId);
    expect(
      events
        .filter((event) => event.type === "delta")
        .map((event) => event.type === "delta" && event.text),
    ).toEqual(["Hel", "lo"]);
  });
});
