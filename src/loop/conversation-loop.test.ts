import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { ModelError, RoostError } from "../errors/index.ts";
import { createEventHub, type ConversationEvent } from "../events/index.ts";
import { createMemoryLogger } from "../log/testing/index.ts";
import type { InferRequest, InferResult, ModelClient } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { z } from "zod";
import { createToolRouter, defineToolSource, serverTool, type ToolRouter } from "../tools/index.ts";
import { providerSafeCallId } from "../models/index.ts";
import { runConversation, type LoopDependencies } from "./conversation-loop.ts";
import { createTurnInterrupts } from "./interrupts.ts";

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

/** A router with one `shell` server tool that runs `run`. */
function shellTool(
  run: (
    input: { command?: string },
    signal: AbortSignal,
  ) => Promise<{ output: string; isError: boolean }>,
): ToolRouter {
  return createToolRouter({
    sources: [
      defineToolSource("test", [
        serverTool({
          name: "shell",
          description: "run",
          input: z.object({ command: z.string().optional() }),
          run: (input, _context, signal) => run(input, signal),
        }),
      ]),
    ],
  });
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
      tools: createToolRouter({ sources: [] }),
      followUpWindowMs: 20,
      interrupts: createTurnInterrupts(),
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

  it("an edited message and a regenerated reply leave the model's history (HIS5)", async () => {
    const first = (await send("what is 2+2?")).message;
    const model = scriptedModel((_request, index) => ({ text: `answer ${index}` }));
    await runConversation(createMemoryDurable("inv_1"), deps(model), conversationId);
    const edited = await store.appendMessage({
      conversationId,
      clientMessageId: "edit",
      authorAccountId: accountId,
      text: "what is 3+3?",
      replaces: { seq: first.seq, reason: "edit" },
    });
    await runConversation(createMemoryDurable("inv_2"), deps(model), conversationId);
    expect(model.requests[1]!.messages).toEqual([{ role: "user", text: "what is 3+3?" }]);
    await store.appendMessage({
      conversationId,
      clientMessageId: "again",
      authorAccountId: accountId,
      text: "what is 3+3?",
      replaces: { seq: edited.message.seq, reason: "regenerate" },
    });
    await runConversation(createMemoryDurable("inv_3"), deps(model), conversationId);
    expect(model.requests[2]!.messages).toEqual([{ role: "user", text: "what is 3+3?" }]);
    // The record keeps all three versions and both earlier replies.
    const replies = (await store.listSteps(conversationId)).filter((step) => step.kind === "reply");
    expect(replies.map((step) => step.payload.text)).toEqual(["answer 0", "answer 1", "answer 2"]);
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
    const tools = shellTool(async () => {
      await send("also show hidden ones"); // arrives while the tool runs
      return { output: "a.txt", isError: false };
    });
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
    // The call id comes from the journal position, not from the provider, in a form every
    // provider accepts (Anthropic: ^[a-zA-Z0-9_-]+$; OpenAI: at most 40 characters).
    expect(tool.payload).toMatchObject({
      callId: providerSafeCallId("inv1:turn:0:0:0"),
      name: "shell",
      output: "a.txt",
    });
    expect(tool.payload.callId).toMatch(/^[A-Za-z0-9_-]{1,40}$/);
  });

  it("a self-hosted computer's prompt says what it is, and never /workspace", async () => {
    await send("where am I?");
    const model = scriptedModel(() => ({ text: "here" }));
    const tools = shellTool(async () => ({ output: "", isError: false }));
    await runConversation(
      createMemoryDurable(),
      deps(model, { tools, computerKind: async () => "self-hosted" }),
      conversationId,
    );
    expect(model.requests[0]!.system).toContain("the user's own machine");
    expect(model.requests[0]!.system).toContain("there is no /workspace");
    expect(model.requests[0]!.system).not.toContain("/workspace is the working directory");
    await send("and now?");
    const hosted = scriptedModel(() => ({ text: "there" }));
    await runConversation(
      createMemoryDurable(),
      deps(hosted, { tools, computerKind: async () => "hosted" }),
      conversationId,
    );
    expect(hosted.requests[0]!.system).toContain("/workspace is the working directory");
  });

  it("two model calls of one turn send the same system prompt and record the same section hashes (PRM2, PRM3)", async () => {
    await send("list files");
    const model = scriptedModel((_request, index) =>
      index === 0
        ? { toolCalls: [{ id: "p", name: "shell", input: { command: "ls" } }] }
        : { text: "done" },
    );
    await runConversation(
      createMemoryDurable(),
      deps(model, { tools: shellTool(async () => ({ output: "a.txt", isError: false })) }),
      conversationId,
    );
    expect(model.requests[1]!.system).toBe(model.requests[0]!.system);
    const steps = await store.listSteps(conversationId);
    const prompts = steps
      .filter((step) => step.kind === "model" || step.kind === "reply")
      .map((step) => step.payload.prompt);
    expect(prompts).toHaveLength(2);
    expect(prompts[1]).toEqual(prompts[0]);
    expect((prompts[0] as { name: string }[]).map((hash) => hash.name)).toEqual([
      "platform-rules",
      "bot-instructions",
      "tool-names",
      "turn-context",
      "history",
    ]);
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
    // The last take before the wait, the take after it, then the idle compaction check.
    expect(durable.steps.slice(-3)).toEqual(["take-inbox", "take-inbox", "compact:check"]);
  });

  it("a message sent while the bot writes its final answer gets its own model call, after that answer", async () => {
    await send("one");
    const model = scriptedModel(async (_request, index) => {
      if (index === 0) {
        await send("two"); // lands inside the delay of the first reply
        await send("three");
      }
      return { text: `reply ${index}` };
    });
    const durable = createMemoryDurable();
    expect(await runConversation(durable, deps(model), conversationId)).toEqual({ turns: 2 });
    expect(model.requests[1]!.messages).toEqual([
      { role: "user", text: "one" },
      { role: "assistant", text: "reply 0", toolCalls: [] },
      { role: "user", text: "two" },
      { role: "user", text: "three" },
    ]);
    // A later turn, which rebuilds the history from the store, keeps that order.
    await send("four");
    const later = scriptedModel(() => ({ text: "reply 2" }));
    await runConversation(createMemoryDurable("inv-later"), deps(later), conversationId);
    expect(
      later.requests[0]!.messages.map((message) =>
        message.role === "tool"
          ? "tool"
          : message.role === "user"
            ? message.text
            : `bot: ${message.text}`,
      ),
    ).toEqual(["one", "bot: reply 0", "two", "three", "bot: reply 1", "four"]);
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

  it("logs a model failure and a failed tool call, with the conversation and turn ids", async () => {
    await send("$ false");
    let calls = 0;
    const model = scriptedModel(() => {
      calls++;
      if (calls === 1)
        return { toolCalls: [{ id: "c1", name: "shell", input: { command: "false" } }] };
      throw new ModelError("openai: 429 Too Many Requests: the rate limit was reached");
    });
    const logger = createMemoryLogger();
    const tools = shellTool(async () => ({ output: "exit code 1", isError: true }));
    await runConversation(createMemoryDurable(), deps(model, { tools, logger }), conversationId);
    const failedTool = logger.entries.find((entry) => entry.message === "tool call failed")!;
    expect(failedTool).toMatchObject({ level: "warn", fields: { conversationId, tool: "shell" } });
    expect(failedTool.fields.turnId).toEqual(expect.any(String));
    const failedModel = logger.entries.find((entry) => entry.message === "model call failed")!;
    expect(failedModel).toMatchObject({
      level: "error",
      fields: { conversationId, code: "model_error", error: expect.stringContaining("429") },
    });
    expect(failedModel.fields.turnId).toBe(failedTool.fields.turnId);
  });

  it("ends a turn whose step keeps failing with an error step, and goes on with the next message", async () => {
    await send("first");
    let failing = true;
    const tools: ToolRouter = createToolRouter({
      sources: [
        {
          name: "flaky",
          specs: async () => {
            if (failing) throw new Error("tool registry unavailable");
            return [];
          },
          execute: async () => ({ output: "", isError: false }),
        },
      ],
    });
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
      deps(model, {
        maxModelCallsPerTurn: 3,
        tools: shellTool(async () => ({ output: "", isError: false })),
      }),
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

  describe("the owner's interrupt", () => {
    it("stops a running model call: the turn ends with an interrupted step and the next message starts a turn", async () => {
      await send("write a long essay");
      const interrupts = createTurnInterrupts();
      const model = scriptedModel(async (request, index) => {
        if (index > 0) return { text: `answer to ${lastUserTexts(request).at(-1)}` };
        await send("stop, answer this instead");
        interrupts.request(conversationId, Date.now());
        // A real provider stream ends with an abort error when its signal fires.
        await new Promise((_resolve, reject) => {
          if (request.signal?.aborted === true) reject(new Error("aborted"));
          request.signal?.addEventListener("abort", () => reject(new Error("aborted")), {
            once: true,
          });
        });
        return { text: "never" };
      });
      const result = await runConversation(
        createMemoryDurable(),
        deps(model, { interrupts }),
        conversationId,
      );
      expect(result.turns).toBe(2);
      const steps = await store.listSteps(conversationId);
      expect(steps.map((step) => step.kind)).toEqual([
        "message",
        "message",
        "interrupted",
        "reply",
      ]);
      expect(steps[2]!.payload).toEqual({ reason: "owner", stopped: [{ kind: "model" }] });
      expect(steps[3]!.payload.text).toBe("answer to stop, answer this instead");
      expect(events.some((event) => event.type === "delta" && event.reset === true)).toBe(true);
    });

    it("stops a running tool call and keeps the history valid: the call gets a result saying it was stopped", async () => {
      await send("run it");
      const interrupts = createTurnInterrupts();
      let toolSawAbort = false;
      const tools = shellTool(
        (_input, signal) =>
          new Promise((resolve) => {
            signal.addEventListener("abort", () => {
              toolSawAbort = true;
              resolve({ output: "killed", isError: true });
            });
            interrupts.request(conversationId, Date.now());
          }),
      );
      const model = scriptedModel((_request, index) =>
        index === 0
          ? {
              toolCalls: [
                { id: "a", name: "shell", input: { command: "sleep 60" } },
                { id: "b", name: "shell", input: { command: "echo never" } },
              ],
            }
          : { text: "unused" },
      );
      await runConversation(
        createMemoryDurable(),
        deps(model, { interrupts, tools }),
        conversationId,
      );
      expect(toolSawAbort).toBe(true);
      const steps = await store.listSteps(conversationId);
      expect(steps.map((step) => step.kind)).toEqual([
        "message",
        "model",
        "tool",
        "tool",
        "interrupted",
      ]);
      // The running call's own result, and the second call never started.
      expect(steps[2]!.payload).toMatchObject({ output: "killed" });
      expect(steps[3]!.payload).toMatchObject({
        output: expect.stringContaining("stopped") as unknown,
        details: { interrupted: true },
      });
      expect(steps[4]!.payload).toMatchObject({
        stopped: [{ kind: "tool", name: "shell" }],
      });
      expect(model.requests).toHaveLength(1);
    });

    it("does not stop a turn that starts after the interrupt was requested (INT1)", async () => {
      const interrupts = createTurnInterrupts();
      interrupts.request(conversationId, Date.now() - 1000);
      await send("hello");
      const model = scriptedModel(() => ({ text: "hi" }));
      await runConversation(createMemoryDurable(), deps(model, { interrupts }), conversationId);
      expect((await store.listSteps(conversationId)).at(-1)!.kind).toBe("reply");
    });
  });

  it("a crash after a tool ran: the replayed invocation runs neither the model nor the tool again", async () => {
    await send("list files");
    let toolRuns = 0;
    const tools = shellTool(async () => {
      toolRuns++;
      return { output: "a.txt", isError: false };
    });
    const model = scriptedModel((_request, index) =>
      index === 0
        ? { toolCalls: [{ id: "p1", name: "shell", input: { command: "ls" } }] }
        : { text: "done" },
    );
    const first = createMemoryDurable("inv-replay");
    await runConversation(first, deps(model, { tools }), conversationId);
    // The process died right after the tool result was journaled: replay that prefix.
    const cut = first.journal.findIndex(
      (entry) => entry.type === "step" && entry.name === "tool:shell",
    );
    const replayed = createMemoryDurable({
      invocationId: "inv-replay",
      journal: first.journal.slice(0, cut + 1),
    });
    const requestsBefore = model.requests.length;
    await runConversation(replayed, deps(model, { tools }), conversationId);
    expect(toolRuns).toBe(1);
    expect(model.requests.length - requestsBefore).toBe(1); // only the call after the tool
    expect(replayed.steps).not.toContain("tool:shell");
    expect((await store.listSteps(conversationId)).map((step) => step.kind)).toEqual([
      "message",
      "model",
      "tool",
      "reply",
    ]);
  });

  it("the store unavailable mid-turn: steps wait it out and the turn completes (DUR1)", async () => {
    await send("hello");
    let outage = 5;
    const flaky: Store = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (property !== "appendStep" || typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          if (outage-- > 0)
            throw new RoostError("unavailable", "the store is unreachable", { retryAfterMs: 10 });
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
    const model = scriptedModel(() => ({ text: "made it" }));
    await runConversation(createMemoryDurable(), deps(model, { store: flaky }), conversationId);
    const last = (await store.listSteps(conversationId)).at(-1)!;
    expect(last.kind).toBe("reply");
    expect(last.payload.text).toBe("made it");
    expect(model.requests).toHaveLength(1);
  });

  it("passes images from tool results to the model as media", async () => {
    await send("look at the chart");
    const tools = createToolRouter({
      sources: [
        defineToolSource("test", [
          serverTool({
            name: "read",
            description: "read",
            input: z.object({}),
            run: async () => ({
              output: "chart.png is an image",
              isError: false,
              media: [{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }],
            }),
          }),
        ]),
      ],
    });
    const model = scriptedModel((_request, index) =>
      index === 0 ? { toolCalls: [{ id: "r", name: "read", input: {} }] } : { text: "a chart" },
    );
    await runConversation(createMemoryDurable(), deps(model, { tools }), conversationId);
    const toolMessage = model.requests[1]!.messages.find((message) => message.role === "tool");
    expect(toolMessage).toMatchObject({
      media: [{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }],
    });
  });

  describe("uploads attached to a message (LOOP14, HIS6)", () => {
    const file = (name: string, mimeType: string) => ({
      id: `upl_${name}`,
      name,
      mimeType,
      size: 3,
      path: `/workspace/attachments/${conversationId}/${name}`,
    });
    const sendWith = (text: string, attachments: ReturnType<typeof file>[]) =>
      store.appendMessage({
        conversationId,
        clientMessageId: text,
        authorAccountId: accountId,
        text,
        attachments,
      });

    it("copies the files once, before the model reads the message that names their paths, and sends images as media", async () => {
      const image = file("chart.png", "image/png");
      const notes = file("notes.txt", "text/plain");
      await sendWith("what is this?", [image, notes]);
      const copies: string[][] = [];
      const uploads: LoopDependencies["uploads"] = {
        copy: async (forAccount, attachments) => {
          expect(forAccount).toBe(accountId);
          copies.push(attachments.map((attachment) => attachment.path));
          return { failed: [] };
        },
        images: async (attachments) =>
          attachments
            .filter((attachment) => attachment.mimeType.startsWith("image/"))
            .map(() => ({ type: "image" as const, mimeType: "image/png", data: "iVBORw0KGgo=" })),
      };
      const model = scriptedModel(() => {
        expect(copies).toHaveLength(1); // the copy came first
        return { text: "a chart" };
      });
      const first = createMemoryDurable("inv-uploads");
      await runConversation(first, deps(model, { uploads }), conversationId);
      expect(copies).toEqual([[image.path, notes.path]]);
      const user = model.requests[0]!.messages.find((message) => message.role === "user");
      expect(user).toEqual({
        role: "user",
        text: `[Attached files, copied into the computer: ${image.path} (image/png, 3 B); ${notes.path} (text/plain, 3 B)]\nwhat is this?`,
        media: [{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }],
      });
      // A replay of the journal copies nothing again.
      const replayed = createMemoryDurable({ invocationId: "inv-uploads", journal: first.journal });
      await runConversation(replayed, deps(model, { uploads }), conversationId);
      expect(copies).toHaveLength(1);
      expect(first.steps).toContain("copy-attachments");
    });

    it("a file that cannot be copied is said to the model, and the turn goes on", async () => {
      const notes = file("notes.txt", "text/plain");
      await sendWith("read it", [notes]);
      const uploads: LoopDependencies["uploads"] = {
        copy: async () => ({
          failed: [{ path: notes.path, reason: "/workspace/attachments is a symbolic link" }],
        }),
        images: async () => [],
      };
      const model = scriptedModel(() => ({ text: "sorry" }));
      await runConversation(createMemoryDurable(), deps(model, { uploads }), conversationId);
      expect(lastUserTexts(model.requests[0]!).at(-1)).toBe(
        `[Some attached files could not be copied into the computer: ${notes.path}: /workspace/attachments is a symbolic link. Tell the person, and ask them to attach them again.]`,
      );
      expect((await store.listSteps(conversationId)).at(-1)?.kind).toBe("reply");
    });
  });

  describe("seams for what starts and ends a turn", () => {
    it("a routine's message: the model reads where it came from, every hook and tool call is told the trigger (LOOP10, HIS4)", async () => {
      const source = { kind: "routine" as const, routineId: "rtn_1", runId: "run_1" };
      await store.appendMessage({
        conversationId,
        clientMessageId: "run_1",
        authorAccountId: accountId,
        text: "Check the inbox.",
        source,
      });
      const seen: unknown[] = [];
      const tools = createToolRouter({
        sources: [
          defineToolSource("test", [
            serverTool({
              name: "look",
              description: "look",
              input: z.object({}),
              run: async (_input, context) => {
                seen.push({ tool: context.trigger });
                return { output: "nothing new", isError: false };
              },
            }),
          ]),
        ],
      });
      const model = scriptedModel((_request, index) =>
        index === 0 ? { toolCalls: [{ id: "l", name: "look", input: {} }] } : { text: "done" },
      );
      await runConversation(
        createMemoryDurable(),
        deps(model, {
          tools,
          beforeModelCall: [
            async (_durable, call) => {
              seen.push({ before: call.index, trigger: call.trigger });
              return undefined;
            },
          ],
          afterTurn: [
            async (_durable, turn) => {
              seen.push({ turn: turn.outcome, trigger: turn.trigger });
            },
          ],
        }),
        conversationId,
      );
      expect(lastUserTexts(model.requests[0]!)).toEqual([
        "[Routine run run_1: sent by a schedule, not typed by a person]\nCheck the inbox.",
      ]);
      const trigger = { source, authorAccountId: accountId };
      expect(seen).toEqual([
        { before: 0, trigger },
        { tool: trigger },
        { before: 1, trigger },
        { turn: "reply", trigger },
      ]);
      const [message] = await store.listMessages(conversationId);
      expect(message!.source).toEqual(source);
    });

    it("a chat message's trigger is a chat from its author", async () => {
      await send("hi");
      const triggers: unknown[] = [];
      await runConversation(
        createMemoryDurable(),
        deps(
          scriptedModel(() => ({ text: "hello" })),
          { afterTurn: [async (_durable, turn) => void triggers.push(turn.trigger)] },
        ),
        conversationId,
      );
      expect(triggers).toEqual([{ source: { kind: "chat" }, authorAccountId: accountId }]);
    });

    it("a budget hook parks the turn before a model call and the same turn continues when let go, without repeating the tool call (LOOP11)", async () => {
      await send("do it");
      let toolRuns = 0;
      const tools = shellTool(async () => {
        toolRuns++;
        return { output: "ran", isError: false };
      });
      const model = scriptedModel((_request, index) =>
        index === 0
          ? { toolCalls: [{ id: "s", name: "shell", input: { command: "true" } }] }
          : { text: "finished" },
      );
      const durable = createMemoryDurable();
      let parkedId: string | undefined;
      const run = runConversation(
        durable,
        deps(model, {
          tools,
          beforeModelCall: [
            async (inner, call) => {
              if (call.index !== 1) return undefined;
              const release = inner.awaitExternal<boolean>();
              parkedId = release.id;
              await release.wait();
              return undefined;
            },
          ],
        }),
        conversationId,
      );
      await durable.waiting();
      expect(parkedId).toBeDefined();
      expect(model.requests).toHaveLength(1);
      expect(durable.resolveExternal(parkedId!, true)).toBe(true);
      await run;
      expect(toolRuns).toBe(1);
      expect(model.requests).toHaveLength(2);
      const steps = await store.listSteps(conversationId);
      expect(steps.map((step) => step.kind)).toEqual(["message", "model", "tool", "reply"]);
      expect(new Set(steps.slice(1).map((step) => step.turnId)).size).toBe(1);
    });

    it("a hook that answers stop ends the turn as interrupted without the model call (LOOP11, a parked turn the owner stopped)", async () => {
      await send("do it");
      const model = scriptedModel((_request, index) =>
        index === 0
          ? { toolCalls: [{ id: "s", name: "shell", input: { command: "true" } }] }
          : { text: "never" },
      );
      const outcomes: string[] = [];
      await runConversation(
        createMemoryDurable(),
        deps(model, {
          tools: shellTool(async () => ({ output: "ran", isError: false })),
          beforeModelCall: [
            async (_durable, call) => (call.index === 1 ? { stop: true } : undefined),
          ],
          afterTurn: [async (_durable, turn) => void outcomes.push(turn.outcome)],
        }),
        conversationId,
      );
      expect(model.requests).toHaveLength(1);
      const steps = await store.listSteps(conversationId);
      expect(steps.map((step) => step.kind)).toEqual(["message", "model", "tool", "interrupted"]);
      expect(steps.at(-1)!.payload).toEqual({ reason: "owner", stopped: [] });
      expect(outcomes).toEqual(["interrupted"]);
    });

    it("a hook may choose the model of one call (a routine's triage model) and after-call hooks see what it used (LOOP11)", async () => {
      await send("anything new?");
      const cheap = scriptedModel(() => ({
        toolCalls: [{ id: "e", name: "shell", input: {} }],
        model: "cheap-1",
        usage: { inputTokens: 10, outputTokens: 2 },
      }));
      const main = scriptedModel(() => ({ text: "yes", model: "main-1" }));
      const used: unknown[] = [];
      await runConversation(
        createMemoryDurable(),
        deps(main, {
          resolveModel: (spec) => (spec === "cheap" ? cheap : main),
          tools: shellTool(async () => ({ output: "ok", isError: false })),
          beforeModelCall: [
            async (_durable, call) => (call.index === 0 ? { model: "cheap" } : undefined),
          ],
          afterModelCall: [
            async (_durable, call) =>
              void used.push([call.index, call.spec, call.model, call.usage]),
          ],
        }),
        conversationId,
      );
      expect(cheap.requests).toHaveLength(1);
      expect(main.requests).toHaveLength(1);
      expect(used).toEqual([
        [0, "cheap", "cheap-1", { inputTokens: 10, outputTokens: 2 }],
        [1, null, "main-1", { inputTokens: 1, outputTokens: 1 }],
      ]);
    });

    it("a tool that ends the turn with no_reply: every call of that model call gets its result, then a no_reply step, and no model call follows (LOOP12)", async () => {
      await send("heartbeat");
      const tools = createToolRouter({
        sources: [
          defineToolSource("test", [
            serverTool({
              name: "quiet",
              description: "nothing to say",
              input: z.object({ reason: z.string() }),
              run: async (input) => ({
                output: "ok",
                isError: false,
                endTurn: { kind: "no_reply", reason: input.reason },
              }),
            }),
            serverTool({
              name: "note",
              description: "note",
              input: z.object({}),
              run: async () => ({ output: "noted", isError: false }),
            }),
          ]),
        ],
      });
      const model = scriptedModel(() => ({
        toolCalls: [
          { id: "q", name: "quiet", input: { reason: "nothing changed" } },
          { id: "n", name: "note", input: {} },
        ],
      }));
      const outcomes: string[] = [];
      await runConversation(
        createMemoryDurable(),
        deps(model, {
          tools,
          afterTurn: [async (_durable, turn) => void outcomes.push(turn.outcome)],
        }),
        conversationId,
      );
      expect(model.requests).toHaveLength(1);
      const steps = await store.listSteps(conversationId);
      expect(steps.map((step) => step.kind)).toEqual([
        "message",
        "model",
        "tool",
        "tool",
        "no_reply",
      ]);
      expect(steps.at(-1)!.payload).toEqual({ reason: "nothing changed" });
      expect(outcomes).toEqual(["no_reply"]);

      // The next turn's history is valid: the calls have results and the no_reply step is not sent.
      await send("and now?");
      const next = scriptedModel(() => ({ text: "still nothing" }));
      await runConversation(createMemoryDurable(), deps(next, { tools }), conversationId);
      expect(next.requests[0]!.messages.map((message) => message.role)).toEqual([
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
      ]);
    });

    it("a turn that fails for good is told to after-turn hooks as an error", async () => {
      await send("break");
      const outcomes: string[] = [];
      const model = scriptedModel(() => {
        throw new Error("bug");
      });
      await runConversation(
        createMemoryDurable(),
        deps(model, { afterTurn: [async (_durable, turn) => void outcomes.push(turn.outcome)] }),
        conversationId,
      );
      expect(outcomes).toEqual(["error"]);
    });
  });
});
