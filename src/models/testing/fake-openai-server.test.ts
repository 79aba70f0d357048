import { describe, expect, test } from "vitest";
import { startFakeOpenAiServer } from "./fake-openai-server.ts";

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

interface ToolCallDelta {
  index: number;
  id?: string;
  function: { name?: string; arguments: string };
}

interface ChunkJson {
  object: string;
  choices: Array<{ delta?: { tool_calls?: ToolCallDelta[] }; finish_reason: string | null }>;
  usage?: Record<string, number>;
}

function dataLines(text: string): string[] {
  return text
    .split("\n\n")
    .filter((event) => event.startsWith("data: "))
    .map((event) => event.slice("data: ".length));
}

describe("startFakeOpenAiServer", () => {
  test("streams chat.completion.chunk events, tool arguments in fragments, usage only when asked, then [DONE]", async () => {
    await using server = await startFakeOpenAiServer(() => ({
      type: "completion",
      textChunks: ["Hi"],
      toolCalls: [
        { id: "call_7", name: "shell", arguments: { command: "echo a long enough command" } },
      ],
      usage: { promptTokens: 3, completionTokens: 4 },
    }));
    const url = `${server.baseUrl}/chat/completions`;

    const withUsage = await post(url, {
      model: "m",
      stream: true,
      stream_options: { include_usage: true },
      messages: [],
    });
    expect(withUsage.headers.get("content-type")).toBe("text/event-stream");
    const lines = dataLines(await withUsage.text());
    expect(lines.at(-1)).toBe("[DONE]");
    const chunks = lines.slice(0, -1).map((line) => JSON.parse(line) as ChunkJson);
    expect(chunks.every((chunk) => chunk.object === "chat.completion.chunk")).toBe(true);
    const toolDeltas = chunks.flatMap(
      (chunk): ToolCallDelta[] => chunk.choices[0]?.delta?.tool_calls ?? [],
    );
    expect(toolDeltas.length).toBeGreaterThan(1);
    expect(toolDeltas[0]).toMatchObject({
      index: 0,
      id: "call_7",
      type: "function",
      function: { name: "shell" },
    });
    expect(toolDeltas.map((delta) => delta.function.arguments).join("")).toBe(
      '{"command":"echo a long enough command"}',
    );
    expect(
      chunks
        .map((chunk) => chunk.choices[0]?.finish_reason)
        .filter((reason) => typeof reason === "string"),
    ).toEqual(["tool_calls"]);
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });

    const withoutUsage = dataLines(
      await (await post(url, { model: "m", stream: true, messages: [] })).text(),
    );
    expect(withoutUsage.some((line) => line.includes('"usage"'))).toBe(false);
  });

  test("answers non-streaming requests with one chat.completion", async () => {
    await using server = await startFakeOpenAiServer(() => ({
      type: "completion",
      textChunks: ["a", "b"],
    }));
    const response = await post(`${server.baseUrl}/chat/completions`, { model: "m", messages: [] });
    expect(await response.json()).toMatchObject({
      object: "chat.completion",
      model: "m",
      choices: [{ message: { role: "assistant", content: "ab" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 5 },
    });
  });

  test("replies with an error status, headers and an OpenAI-shaped body, and records every request", async () => {
    await using server = await startFakeOpenAiServer(() => ({
      type: "error",
      status: 429,
      headers: { "retry-after": "3" },
    }));
    const response = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer k" },
      body: JSON.stringify({ model: "m" }),
    });
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("3");
    expect(await response.json()).toEqual({
      error: { message: "Rate limit reached", type: "fake_error", param: null, code: null },
    });
    expect(server.requests).toEqual([
      expect.objectContaining({
        method: "POST",
        path: "/v1/chat/completions",
        body: { model: "m" },
      }),
    ]);
    expect(server.requests[0]?.headers.authorization).toBe("Bearer k");
  });

  test("a hang-up closes the connection without a response", async () => {
    await using server = await startFakeOpenAiServer(() => ({ type: "hang-up" }));
    await expect(post(`${server.baseUrl}/chat/completions`, {})).rejects.toThrow("fetch failed");
    expect(server.requests).toHaveLength(1);
  });
});
