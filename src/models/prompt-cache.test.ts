/**
 * Prompt caching (issue "Memory, skills and compaction" §5, A6): Anthropic gets cache breakpoints
 * after the stable part of the system prompt and on the newest message, checked by the fake that
 * refuses what the real API refuses (more than four breakpoints, a type other than ephemeral);
 * OpenAI-compatible requests keep one plain system message (they cache by prefix alone).
 */
import { describe, expect, it } from "vitest";
import { createAiSdkModel } from "./ai-sdk.ts";
import { startFakeAnthropicServer } from "./testing/fake-anthropic-server.ts";
import { startFakeOpenAiServer } from "./testing/fake-openai-server.ts";
import type { ModelMessage } from "./types.ts";

const stable = "# Platform rules\nBe brief.\n\n# Your role\nYour name is Ada.\n\n# Tools\nshell";
const system = `${stable}\n\n# Memory\n- [mem_1] likes tea\n\n# Now\nToday is Tuesday.`;
const history: ModelMessage[] = [
  { role: "user", text: "hello" },
  { role: "assistant", text: "hi", toolCalls: [] },
  { role: "user", text: "what do I like?" },
];

describe("prompt caching", () => {
  it("Anthropic: a breakpoint after the stable sections and on the newest message; the rest follows uncached", async () => {
    const fake = await startFakeAnthropicServer(() => ({
      type: "completion",
      textChunks: ["tea"],
    }));
    try {
      const model = createAiSdkModel({
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        apiKey: "k",
        baseUrl: fake.baseUrl,
      });
      const result = await model.infer({
        system,
        stableSystemChars: stable.length,
        messages: history,
        tools: [],
      });
      expect(result.text).toBe("tea");
      const body = fake.requests[0]!.body!;
      expect(body.system).toEqual([
        { type: "text", text: stable, cache_control: { type: "ephemeral" } },
        { type: "text", text: "# Memory\n- [mem_1] likes tea\n\n# Now\nToday is Tuesday." },
      ]);
      const last = body.messages!.at(-1)!;
      expect(JSON.stringify(last.content)).toContain('"cache_control":{"type":"ephemeral"}');
      const cached = JSON.stringify(body).match(/cache_control/g) ?? [];
      expect(cached).toHaveLength(2);
    } finally {
      await fake.close();
    }
  });

  it("the Anthropic fake refuses a fifth breakpoint, as Anthropic does", async () => {
    const fake = await startFakeAnthropicServer(() => ({ type: "completion", textChunks: ["x"] }));
    try {
      const block = { type: "text", text: "t", cache_control: { type: "ephemeral" } };
      const response = await fetch(`${fake.baseUrl}/messages`, {
        method: "POST",
        headers: {
          "x-api-key": "k",
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
        },
        body: JSON.stringify({
          model: "m",
          max_tokens: 10,
          system: [block, block, block],
          messages: [{ role: "user", content: [block, block] }],
        }),
      });
      expect(response.status).toBe(400);
      expect(await response.text()).toContain("A maximum of 4 blocks with cache_control");
    } finally {
      await fake.close();
    }
  });

  it("OpenAI-compatible: one plain system message, unchanged by the breakpoint hint", async () => {
    const fake = await startFakeOpenAiServer(() => ({ type: "completion", textChunks: ["tea"] }));
    try {
      const model = createAiSdkModel({
        provider: "openai-compatible",
        model: "m",
        baseUrl: fake.baseUrl,
      });
      await model.infer({ system, stableSystemChars: stable.length, messages: history, tools: [] });
      const messages = fake.requests[0]!.body!.messages!;
      expect(messages[0]).toEqual({ role: "system", content: system });
      expect(JSON.stringify(messages)).not.toContain("cache_control");
    } finally {
      await fake.close();
    }
  });
});
