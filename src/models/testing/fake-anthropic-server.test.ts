import { createAnthropic } from "@ai-sdk/anthropic";
import { APICallError, generateText } from "ai";
import { describe, expect, test } from "vitest";
import { startFakeAnthropicServer } from "./fake-anthropic-server.ts";
import type { FakeAnthropicServer } from "./fake-anthropic-server.ts";

const headers = {
  "content-type": "application/json",
  "x-api-key": "sk-ant-test",
  "anthropic-version": "2023-06-01",
};

function post(
  server: FakeAnthropicServer,
  body: unknown,
  extraHeaders: Record<string, string | undefined> = {},
): Promise<Response> {
  const merged = Object.fromEntries(
    Object.entries({ ...headers, ...extraHeaders }).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    ),
  );
  return fetch(`${server.baseUrl}/messages`, {
    method: "POST",
    headers: merged,
    body: JSON.stringify(body),
  });
}

/** A request whose assistant turn used a tool with `id` and whose next turn answers `resultId`. */
function toolTurn(id: string, resultId = id): Record<string, unknown> {
  return {
    model: "claude-sonnet-4-5",
    max_tokens: 1024,
    messages: [
      { role: "user", content: "list the files" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Listing." },
          { type: "tool_use", id, name: "shell", input: { command: "ls" } },
        ],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: resultId, content: "a.txt" }],
      },
    ],
  };
}

async function expectAnthropicError(
  response: Response,
  status: number,
  type: string,
  message: string,
): Promise<void> {
  expect(response.status).toBe(status);
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toEqual({
    type: "error",
    error: { type, message },
    request_id: expect.stringMatching(/^req_/),
  });
}

const never = () => ({ type: "completion", textChunks: ["never"] }) as const;

describe("startFakeAnthropicServer checks what Anthropic checks", () => {
  test("the loop's colon id (inv_abc:turn:0:0:0) as tool_use.id is refused with Anthropic's real 400", async () => {
    await using server = await startFakeAnthropicServer(never);
    await expectAnthropicError(
      await post(server, toolTurn("inv_abc:turn:0:0:0")),
      400,
      "invalid_request_error",
      "messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    );
    expect(server.requests[0]?.rejected?.status).toBe(400);
  });

  test("the same turn with a safe id is accepted", async () => {
    await using server = await startFakeAnthropicServer(() => ({
      type: "completion",
      textChunks: ["Done."],
    }));
    const response = await post(server, toolTurn("toolu_01A09q90qw90lq917835lq9"));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      type: "message",
      role: "assistant",
      content: [{ type: "text", text: "Done." }],
      stop_reason: "end_turn",
    });
  });

  test("the AI SDK's own Anthropic adapter, given colon ids, hits the same 400 (the defect as users saw it)", async () => {
    await using server = await startFakeAnthropicServer(never);
    const anthropic = createAnthropic({ apiKey: "sk-ant-test", baseURL: server.baseUrl });
    const error = await generateText({
      model: anthropic("claude-sonnet-4-5"),
      maxRetries: 0,
      messages: [
        { role: "user", content: "list the files" },
        {
          role: "assistant",
          content: [
            { type: "tool-call", toolCallId: "inv_abc:turn:0:0:0", toolName: "shell", input: {} },
          ],
        },
        {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: "inv_abc:turn:0:0:0",
              toolName: "shell",
              output: { type: "text", value: "a.txt" },
            },
          ],
        },
      ],
    }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(400);
    expect((error as APICallError).message).toBe(
      "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    );
  });

  test("a tool_result that answers no tool_use of the previous message is refused", async () => {
    await using server = await startFakeAnthropicServer(never);
    await expectAnthropicError(
      await post(server, toolTurn("toolu_1", "toolu_2")),
      400,
      "invalid_request_error",
      "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_2. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    );
  });

  test("a tool_use left without a tool_result in the next message is refused", async () => {
    await using server = await startFakeAnthropicServer(never);
    const body = toolTurn("toolu_1");
    (body.messages as Array<Record<string, unknown>>)[2] = { role: "user", content: "never mind" };
    await expectAnthropicError(
      await post(server, body),
      400,
      "invalid_request_error",
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    );
  });

  test("two user messages in a row are refused (roles must alternate)", async () => {
    await using server = await startFakeAnthropicServer(never);
    await expectAnthropicError(
      await post(server, {
        model: "claude-sonnet-4-5",
        max_tokens: 10,
        messages: [
          { role: "user", content: "one" },
          { role: "user", content: "two" },
        ],
      }),
      400,
      "invalid_request_error",
      'messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row',
    );
  });

  test("an empty assistant message in the middle of the history is refused", async () => {
    await using server = await startFakeAnthropicServer(never);
    await expectAnthropicError(
      await post(server, {
        model: "claude-sonnet-4-5",
        max_tokens: 10,
        messages: [
          { role: "user", content: "one" },
          { role: "assistant", content: [] },
          { role: "user", content: "two" },
        ],
      }),
      400,
      "invalid_request_error",
      "messages.1: all messages must have non-empty content except for the optional final assistant message",
    );
  });

  test("a missing x-api-key is a 401 authentication_error; a missing anthropic-version a 400", async () => {
    await using server = await startFakeAnthropicServer(never, { apiKey: "sk-ant-right" });
    const body = { model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] };
    await expectAnthropicError(
      await post(server, body, { "x-api-key": undefined }),
      401,
      "authentication_error",
      "x-api-key header is required",
    );
    await expectAnthropicError(
      await post(server, body, { "x-api-key": "sk-ant-wrong" }),
      401,
      "authentication_error",
      "invalid x-api-key",
    );
    await expectAnthropicError(
      await post(server, body, { "x-api-key": "sk-ant-right", "anthropic-version": undefined }),
      400,
      "invalid_request_error",
      "anthropic-version: header is required",
    );
  });

  test("an image whose bytes do not match its media type is refused", async () => {
    await using server = await startFakeAnthropicServer(never);
    const body = toolTurn("toolu_1");
    (body.messages as Array<Record<string, unknown>>)[2] = {
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: [
            {
              type: "image",
              source: {
                type: "base64",
                media_type: "image/png",
                data: Buffer.from("GIF89a....").toString("base64"),
              },
            },
          ],
        },
      ],
    };
    await expectAnthropicError(
      await post(server, body),
      400,
      "invalid_request_error",
      "messages.2.content.0.tool_result.content.0.image.source.base64: Image does not match the provided media type image/png",
    );
  });

  test("streams Anthropic's events in Anthropic's order, tool input in fragments after an empty one", async () => {
    await using server = await startFakeAnthropicServer(() => ({
      type: "completion",
      textChunks: ["Hi", " there"],
      toolCalls: [{ id: "toolu_9", name: "shell", arguments: { command: "echo hello world" } }],
      usage: { promptTokens: 7, completionTokens: 9 },
    }));
    const response = await post(server, {
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const events = (await response.text())
      .split("\n\n")
      .filter((chunk) => chunk.startsWith("event: "))
      .map((chunk) => {
        const [eventLine, dataLine] = chunk.split("\n");
        const data = JSON.parse(dataLine?.slice("data: ".length) ?? "{}") as Record<
          string,
          unknown
        >;
        expect(data.type).toBe(eventLine?.slice("event: ".length));
        return data;
      });
    expect(events.map((event) => event.type)).toEqual([
      "message_start",
      "content_block_start",
      "ping",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events[0]).toMatchObject({ message: { usage: { input_tokens: 7 } } });
    expect(events[6]).toMatchObject({
      index: 1,
      content_block: { type: "tool_use", id: "toolu_9", name: "shell", input: {} },
    });
    const fragments = events
      .slice(7, 11)
      .map((event) => (event.delta as { partial_json: string }).partial_json);
    expect(fragments[0]).toBe("");
    expect(fragments.join("")).toBe('{"command":"echo hello world"}');
    expect(events[12]).toMatchObject({
      delta: { stop_reason: "tool_use" },
      usage: { output_tokens: 9 },
    });
  });
});
