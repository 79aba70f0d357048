import { describe, expect, test } from "vitest";
import { fakeTextReply, startFakeOpenAiServer } from "./fake-openai-server.ts";

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

const hi = [{ role: "user", content: "hi" }];

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
      messages: hi,
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
      await (await post(url, { model: "m", stream: true, messages: hi })).text(),
    );
    expect(withoutUsage.some((line) => line.includes('"usage"'))).toBe(false);
  });

  test("answers non-streaming requests with one chat.completion", async () => {
    await using server = await startFakeOpenAiServer(() => ({
      type: "completion",
      textChunks: ["a", "b"],
    }));
    const response = await post(`${server.baseUrl}/chat/completions`, { model: "m", messages: hi });
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
      body: JSON.stringify({ model: "m", messages: hi }),
    });
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("3");
    expect(await response.json()).toEqual({
      error: { message: "Rate limit reached", type: "requests", param: null, code: null },
    });
    expect(server.requests).toEqual([
      expect.objectContaining({
        method: "POST",
        path: "/v1/chat/completions",
        body: { model: "m", messages: hi },
      }),
    ]);
    expect(server.requests[0]?.headers.authorization).toBe("Bearer k");
  });

  test("a hang-up closes the connection without a response", async () => {
    await using server = await startFakeOpenAiServer(() => ({ type: "hang-up" }));
    await expect(
      post(`${server.baseUrl}/chat/completions`, { model: "m", messages: hi }),
    ).rejects.toThrow("fetch failed");
    expect(server.requests).toHaveLength(1);
  });

  describe("checks what OpenAI checks", () => {
    const journalId = "inv_1gdJBtdVEcM942bjcDmb1c1khoaJe11Hb:turn:0:0:0";
    const toolTurn = (callId: string, resultId = callId) => ({
      model: "gpt-4.1-mini",
      messages: [
        { role: "user", content: "list" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: callId, type: "function", function: { name: "shell", arguments: "{}" } },
          ],
        },
        { role: "tool", tool_call_id: resultId, content: "a.txt" },
      ],
    });
    const openAiPost = (server: { baseUrl: string }, body: unknown) =>
      fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
        body: JSON.stringify(body),
      });

    test("a 48-character tool call id is refused by OpenAI (at most 40) but not by a compatible server", async () => {
      await using openai = await startFakeOpenAiServer(() => fakeTextReply("ok"), {
        flavor: "openai",
      });
      const refused = await openAiPost(openai, toolTurn(journalId));
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({
        error: {
          message: `Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length ${journalId.length} instead.`,
          type: "invalid_request_error",
          param: "messages[1].tool_calls[0].id",
          code: "string_above_max_length",
        },
      });
      await using compatible = await startFakeOpenAiServer(() => fakeTextReply("ok"));
      expect((await openAiPost(compatible, toolTurn(journalId))).status).toBe(200);
    });

    test("a tool message that answers no tool call of the message before is refused", async () => {
      await using server = await startFakeOpenAiServer(() => fakeTextReply("ok"), {
        flavor: "openai",
      });
      const response = await openAiPost(server, toolTurn("call_1", "call_2"));
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
        "Invalid parameter: 'tool_call_id' of 'call_2' not found in 'tool_calls' of previous message.",
      );
      const orphan = await openAiPost(server, {
        model: "m",
        messages: [
          { role: "user", content: "hi" },
          { role: "tool", tool_call_id: "call_1", content: "x" },
        ],
      });
      expect(((await orphan.json()) as { error: { message: string } }).error.message).toBe(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
      );
    });

    test("a tool call left unanswered before the next message is refused", async () => {
      await using server = await startFakeOpenAiServer(() => fakeTextReply("ok"));
      const body = toolTurn("call_1");
      body.messages[2] = { role: "user", content: "never mind" };
      const response = await openAiPost(server, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
      );
    });

    test("an image inside a tool message is refused: images go in user messages only", async () => {
      await using server = await startFakeOpenAiServer(() => fakeTextReply("ok"));
      const body = toolTurn("call_1") as { messages: Array<Record<string, unknown>> };
      body.messages[2] = {
        role: "tool",
        tool_call_id: "call_1",
        content: [{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }],
      };
      const response = await openAiPost(server, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
        "Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL.",
      );
    });

    test("OpenAI without a bearer key is a 401; a compatible server without a key set takes none", async () => {
      await using openai = await startFakeOpenAiServer(() => fakeTextReply("ok"), {
        flavor: "openai",
      });
      expect(
        (await post(`${openai.baseUrl}/chat/completions`, { model: "m", messages: hi })).status,
      ).toBe(401);
      await using compatible = await startFakeOpenAiServer(() => fakeTextReply("ok"));
      expect(
        (await post(`${compatible.baseUrl}/chat/completions`, { model: "m", messages: hi })).status,
      ).toBe(200);
    });
  });
});
