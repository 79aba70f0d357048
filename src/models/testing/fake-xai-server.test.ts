import { describe, expect, test } from "vitest";
import { startFakeXaiServer } from "./fake-xai-server.ts";
import type { FakeXaiServer } from "./fake-xai-server.ts";

function post(
  server: FakeXaiServer,
  body: unknown,
  authorization: string | null = "Bearer xai-test",
): Promise<Response> {
  return fetch(`${server.baseUrl}/responses`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(authorization === null ? {} : { authorization }),
    },
    body: JSON.stringify(body),
  });
}

const never = () => ({ type: "completion", textChunks: ["never"] }) as const;

function withInput(input: unknown[]): Record<string, unknown> {
  return { model: "grok-4", input };
}

const call = {
  type: "function_call",
  id: "fc_1",
  call_id: "call_1",
  name: "shell",
  arguments: '{"command":"ls"}',
  status: "completed",
};

describe("startFakeXaiServer checks what xAI checks", () => {
  test("a function_call_output that answers no function_call is refused with xAI's { code, error }", async () => {
    await using server = await startFakeXaiServer(never);
    const response = await post(
      server,
      withInput([
        { role: "user", content: [{ type: "input_text", text: "hi" }] },
        { type: "function_call_output", call_id: "call_unknown", output: "a.txt" },
      ]),
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      code: "Client specified an invalid argument",
      error: "No tool call found for function call output with call_id call_unknown.",
    });
  });

  test("a function_call left without its output is refused", async () => {
    await using server = await startFakeXaiServer(never);
    const response = await post(
      server,
      withInput([{ role: "user", content: [{ type: "input_text", text: "hi" }] }, call]),
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe(
      "No tool output found for function call call_1.",
    );
  });

  test("no Authorization header is a 401; a wrong key a 400, as xAI answers them", async () => {
    await using server = await startFakeXaiServer(never, { apiKey: "xai-right" });
    const body = withInput([{ role: "user", content: [{ type: "input_text", text: "hi" }] }]);
    expect((await post(server, body, null)).status).toBe(401);
    const wrong = await post(server, body, "Bearer xai-wrong");
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: string }).error).toMatch(
      /^Incorrect API key provided/,
    );
  });

  test("streams Responses API events in their order, with the completed response and usage last", async () => {
    await using server = await startFakeXaiServer(() => ({
      type: "completion",
      textChunks: ["Hi", "!"],
      toolCalls: [{ id: "call_7", name: "shell", arguments: { command: "uname -a" } }],
      usage: { promptTokens: 4, completionTokens: 6 },
    }));
    const response = await post(server, {
      ...withInput([
        { role: "user", content: [{ type: "input_text", text: "hi" }] },
        call,
        { type: "function_call_output", call_id: "call_1", output: "a.txt" },
      ]),
      stream: true,
    });
    expect(response.status).toBe(200);
    const events = (await response.text())
      .split("\n\n")
      .filter((chunk) => chunk.includes("data: "))
      .map((chunk) => JSON.parse(chunk.split("data: ")[1] ?? "{}") as Record<string, unknown>);
    expect(events.map((event) => event.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.at(-1)).toMatchObject({
      response: {
        status: "completed",
        usage: { input_tokens: 4, output_tokens: 6, total_tokens: 10 },
        output: [
          { type: "message", content: [{ type: "output_text", text: "Hi!" }] },
          { type: "function_call", call_id: "call_7", arguments: '{"command":"uname -a"}' },
        ],
      },
    });
  });
});
