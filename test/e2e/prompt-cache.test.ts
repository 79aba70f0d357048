/**
 * Prompt prefixes stay byte-identical where provider caches need them (issue "Memory, skills and
 * compaction" §5): two consecutive model calls of a turn, and the first call of the next turn,
 * send the same bytes up to the history; a memory change moves only the system prompt's text from
 * the memory section on. Roost runs as a child process; the model is a fake OpenAI-compatible
 * server that records each request as it arrived.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startFakeOpenAiServer,
  type FakeOpenAiRequest,
  type FakeOpenAiServer,
} from "../../src/models/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

const isPass = (request: FakeOpenAiRequest) =>
  (request.body?.tools ?? []).some((tool) => tool.function?.name === "update_memory");
/** The title request after a conversation's first reply (loop/titles.ts), not one of the turn's. */
const isTitle = (request: FakeOpenAiRequest) =>
  JSON.stringify(request.body?.messages ?? []).includes("Write a title for this conversation");
const messagesOf = (request: FakeOpenAiRequest) => request.body?.messages ?? [];
const systemOf = (request: FakeOpenAiRequest) => {
  const content = messagesOf(request)[0]?.content;
  return typeof content === "string" ? content : JSON.stringify(content);
};

describe("prompt prefixes for provider caches (fake OpenAI-compatible model)", () => {
  let dataDir: string;
  let roost: RoostProcess;
  let fake: FakeOpenAiServer;
  let api: ReturnType<typeof apiClient>;
  let turnCalls = 0;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-cache-"));
    fake = await startFakeOpenAiServer((request) => {
      if (isPass(request))
        return {
          type: "completion",
          toolCalls: [{ name: "update_memory", arguments: { add: [] } }],
        };
      turnCalls++;
      // The first call of the first turn uses a tool (one that changes nothing); the rest answer.
      if (turnCalls === 1)
        return {
          type: "completion",
          toolCalls: [{ name: "memory", arguments: { action: "remove", id: "mem_none" } }],
        };
      return { type: "completion", textChunks: [`answer ${turnCalls}`] };
    });
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
      },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
  });
  afterAll(async () => {
    await roost?.stop();
    await fake?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("consecutive calls, and the next turn's first call, share the exact prefix; a memory change moves only the sections from memory on", async () => {
    const bot = await api.createBot("cached");
    const { id: conversationId } = await api.createConversation(bot.id);
    await api.send(conversationId, "first question");
    await api.waitForSteps(conversationId, "reply", 1);
    await api.send(conversationId, "second question");
    await api.waitForSteps(conversationId, "reply", 2);
    const calls = fake.requests.filter((request) => !isPass(request) && !isTitle(request));
    expect(calls).toHaveLength(3);
    const [first, second, next] = calls.map(messagesOf) as [unknown[], unknown[], unknown[]];

    // Within the turn: the second call starts with every byte of the first.
    expect(JSON.stringify(second.slice(0, first.length))).toBe(JSON.stringify(first));
    expect(second.length).toBeGreaterThan(first.length);
    // The next turn: its first call starts with every byte of the turn before it.
    expect(JSON.stringify(next.slice(0, second.length))).toBe(JSON.stringify(second));

    // A memory change between turns: the system text is the same up to the memory section.
    await api.call("POST", "/v1/me/memory", { text: "The user likes tea." });
    await api.send(conversationId, "third question");
    await api.waitForSteps(conversationId, "reply", 3);
    const after = fake.requests.filter((request) => !isPass(request) && !isTitle(request)).at(-1)!;
    const before = calls[2]!;
    const cut = systemOf(before).indexOf("# Memory");
    expect(cut).toBeGreaterThan(0);
    expect(systemOf(after).slice(0, cut)).toBe(systemOf(before).slice(0, cut));
    expect(systemOf(after)).not.toBe(systemOf(before));
    expect(systemOf(after)).toContain("The user likes tea.");
  });
});
