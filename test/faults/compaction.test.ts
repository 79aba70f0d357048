/**
 * Compaction end to end and under faults (issue "Memory, skills and compaction" §3). Roost runs as
 * a child process with its embedded Restate; the model is a fake OpenAI-compatible server that can
 * hold the memory pass's or the summariser's request while the test kills the server. A
 * conversation of 2,000 messages is written into the store while Roost is stopped, with facts in
 * memory, and a small history budget makes the next turn compact.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  startFakeOpenAiServer,
  type FakeOpenAiReply,
  type FakeOpenAiRequest,
  type FakeOpenAiServer,
} from "../../src/models/testing/index.ts";
import { openStore } from "../../src/store/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

type Kind = "pass" | "summary" | "answer";
const kindOf = (request: FakeOpenAiRequest): Kind => {
  if ((request.body?.tools ?? []).some((tool) => tool.function?.name === "update_memory"))
    return "pass";
  const system = JSON.stringify(request.body?.messages?.[0]?.content ?? "");
  return system.includes("You summarise a conversation") ? "summary" : "answer";
};
const systemOf = (request: FakeOpenAiRequest) =>
  JSON.stringify(request.body?.messages?.[0]?.content ?? "");

/** OpenAI's own answer to a prompt over the model's context window. */
const contextOverflow: FakeOpenAiReply = {
  type: "error",
  status: 400,
  message:
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 12000 tokens. Please reduce the length of the messages.",
  errorType: "invalid_request_error",
  param: "messages",
  code: "context_length_exceeded",
};

describe("faults: compaction", () => {
  let dataDir: string;
  let roost: RoostProcess | undefined;
  let fake: FakeOpenAiServer | undefined;
  /** What the fake does with each kind of request; default: answer at once. */
  let behave: (kind: Kind, request: FakeOpenAiRequest) => Promise<FakeOpenAiReply | undefined>;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-compaction-"));
    behave = async () => undefined;
    fake = await startFakeOpenAiServer(async (request) => {
      const kind = kindOf(request);
      const special = await behave(kind, request);
      if (special !== undefined) return special;
      if (kind === "pass")
        return {
          type: "completion",
          toolCalls: [
            {
              name: "update_memory",
              arguments: { add: [{ tier: "log", text: "Compacted a long chat." }] },
            },
          ],
        };
      if (kind === "summary")
        return {
          type: "completion",
          textChunks: ["The user asked 1,000 questions about invoices."],
        };
      return { type: "completion", textChunks: ["answered"] };
    });
  });
  afterEach(async () => {
    await roost?.stop();
    await fake?.close();
    roost = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Roost with a 2,000-message conversation and two facts in memory, stopped again. */
  async function seeded(env: Record<string, string> = {}, turns = 1000) {
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake!.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_COMPACTION_BUDGET_TOKENS: "8000",
        ...env,
      },
    });
    await roost.start();
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("long");
    const { id: conversationId } = await api.createConversation(bot.id);
    await api.call("POST", "/v1/me/memory", { text: "The user's name is Ada." });
    await api.call("POST", `/v1/bots/${bot.id}/memory`, {
      tier: "profile",
      text: "Invoices go out on Fridays.",
    });
    await roost.stop();
    const store = await openStore({ kind: "sqlite", path: join(dataDir, "roost.db") });
    try {
      const account = (await store.findAdminAccount())!;
      for (let index = 0; index < turns; index++) {
        await store.appendMessage({
          conversationId,
          clientMessageId: `old-${index}`,
          authorAccountId: account.id,
          text: `question ${index} about invoice ${index * 7}`,
        });
        await store.takeInbox(conversationId, `old-take-${index}`);
        await store.appendStep({
          conversationId,
          id: `old-reply-${index}`,
          turnId: `old-${index}`,
          kind: "reply",
          payload: { text: `answer ${index}: invoice ${index * 7} is paid`, model: "fake" },
        });
      }
    } finally {
      await store.close();
    }
    await roost.start();
    return { api, conversationId, botId: bot.id };
  }

  const summaries = (steps: TestStep[]) => steps.filter((step) => step.kind === "summary");

  it("a 2,000-message conversation keeps answering, and every fact written before compaction is still in the prompt after it", async () => {
    const { api, conversationId } = await seeded();
    await api.send(conversationId, "what is my name?");
    const steps = await api.waitForSteps(conversationId, "reply", 1001, 60_000);
    expect(summaries(steps)).toHaveLength(1);
    const answer = fake!.requests.filter((request) => kindOf(request) === "answer").at(-1)!;
    expect(systemOf(answer)).toContain("The user asked 1,000 questions about invoices.");
    expect(systemOf(answer)).toContain("The user's name is Ada.");
    expect(systemOf(answer)).toContain("Invoices go out on Fridays.");
    // The prompt holds the summary and the last messages verbatim, not 2,000 messages.
    expect(answer.body!.messages!.length).toBeLessThan(60);
    // It goes on answering.
    // (One at a time: messages sent together would make one turn.)
    await api.send(conversationId, "and next?");
    await api.waitForSteps(conversationId, "reply", 1002, 60_000);
    await api.send(conversationId, "thanks");
    const later = await api.waitForSteps(conversationId, "reply", 1003, 60_000);
    expect(later.at(-1)!.kind).toBe("reply");
    // The record keeps every message.
    expect(later.filter((step) => step.kind === "message")).toHaveLength(1003);
  }, 180_000);

  for (const held of ["pass", "summary"] as const) {
    it(`server SIGKILLed during the compaction's ${held === "pass" ? "memory pass" : "summary"}: after restart it finishes once, and the turn is answered`, async () => {
      let release: (() => void) | undefined;
      let holding = true;
      behave = async (kind) => {
        if (kind === held && holding) {
          holding = false;
          await new Promise<void>((resolve) => (release = resolve));
        }
        return undefined;
      };
      const { api, conversationId, botId } = await seeded();
      await api.send(conversationId, "what is my name?");
      await waitFor(() => release !== undefined, {
        timeoutMs: 60_000,
        what: `the ${held} request`,
      });
      await roost!.kill("SIGKILL");
      release!();
      await roost!.start();
      const steps = await api.waitForSteps(conversationId, "reply", 1001, 90_000);
      expect(summaries(steps)).toHaveLength(1);
      expect(steps.filter((step) => step.kind === "error")).toEqual([]);
      // The pass's change is there once, however often its request was made.
      const memory = await api.call<{ log: { text: string }[] }>("GET", `/v1/bots/${botId}/memory`);
      expect(memory.log.filter((fact) => fact.text === "Compacted a long chat.")).toHaveLength(1);
    }, 240_000);
  }

  it("the provider's context_length_exceeded is recovered: compact, then the call once more", async () => {
    let refusedOnce = false;
    behave = async (kind) => {
      if (kind === "answer" && !refusedOnce) {
        refusedOnce = true;
        return contextOverflow;
      }
      return undefined;
    };
    // A history the loop does not compact by itself (under its step and token budgets): only the
    // provider knows it is too long.
    const { api, conversationId } = await seeded({ ROOST_COMPACTION_BUDGET_TOKENS: "500000" }, 100);
    await api.send(conversationId, "summarise everything");
    const steps = await api.waitForSteps(conversationId, "reply", 101, 60_000);
    expect(refusedOnce).toBe(true);
    expect(summaries(steps)).toHaveLength(1);
    expect(steps.at(-1)).toMatchObject({ kind: "reply", payload: { text: "answered" } });
    expect(steps.filter((step) => step.kind === "error")).toEqual([]);
  }, 180_000);
});
