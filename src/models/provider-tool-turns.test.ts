/**
 * Every provider through `createAiSdkModel`, against a fake that checks what the real API checks:
 * multi-step tool turns (issue 8 §5.1), ids from old conversations, and images in tool results.
 */
import { describe, expect, test } from "vitest";
import { ModelError } from "../errors/index.ts";
import { createAiSdkModel } from "./ai-sdk.ts";
import { providerSafeCallId, providerSafeCallIdPattern } from "./call-ids.ts";
import type { ModelProvider } from "./providers.ts";
import { startFakeAnthropicServer } from "./testing/fake-anthropic-server.ts";
import type { FakeAnthropicBody } from "./testing/fake-anthropic-server.ts";
import { startFakeOpenAiServer } from "./testing/fake-openai-server.ts";
import type { FakeChatCompletionBody } from "./testing/fake-openai-server.ts";
import type { FakeProviderRequest, FakeReply } from "./testing/fake-provider-server.ts";
import { startFakeXaiServer } from "./testing/fake-xai-server.ts";
import type { FakeResponsesBody } from "./testing/fake-xai-server.ts";
import type { InferResult, MediaPart, ModelClient, ModelMessage, ToolSpec } from "./types.ts";

/** A 1×1 PNG. */
const png =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const pngImage: MediaPart = { type: "image", mimeType: "image/png", data: png };

const tools: ToolSpec[] = [
  {
    name: "shell",
    description: "Run a command.",
    inputSchema: {
      type: "object",
      properties: { command: { type: "string", description: "The command." } },
      required: ["command"],
    },
  },
  {
    name: "read",
    description: "Read a file.",
    inputSchema: {
      type: "object",
      properties: { path: { type: "string", description: "The file." } },
      required: ["path"],
    },
  },
];

/** What a test needs to know of one provider's wire format. */
interface ProviderCase {
  provider: ModelProvider;
  model: string;
  /** A model of this provider that reads images. */
  visionModel: string;
  start(
    handler: (index: number) => FakeReply,
    apiKey: string,
  ): Promise<{
    baseUrl: string;
    requests: Array<FakeProviderRequest<unknown>>;
    close(): Promise<void>;
  }>;
  /** The tool call ids a request sends back: in the assistant's calls, and in the results. */
  sentCallIds(body: unknown): { calls: string[]; results: string[] };
  /** The base64 images a request carries, and where in it they are. */
  images(body: unknown): Array<{ where: string; mediaType: string; data: string }>;
  /** The text of the tool results a request carries. */
  resultTexts(body: unknown): string[];
}

function dataUrl(url: unknown): { mediaType: string; data: string } | undefined {
  const match = typeof url === "string" ? /^data:([^;]+);base64,(.*)$/s.exec(url) : null;
  return match === null ? undefined : { mediaType: match[1] ?? "", data: match[2] ?? "" };
}

const chatCompletions = {
  sentCallIds(body: unknown) {
    const messages = (body as FakeChatCompletionBody).messages ?? [];
    return {
      calls: messages.flatMap((message) =>
        ((message.tool_calls as Array<{ id: string }> | undefined) ?? []).map((call) => call.id),
      ),
      results: messages
        .filter((message) => message.role === "tool")
        .map((message) => String(message.tool_call_id)),
    };
  },
  images(body: unknown) {
    const messages = (body as FakeChatCompletionBody).messages ?? [];
    return messages.flatMap((message, index) =>
      Array.isArray(message.content)
        ? (message.content as Array<{ type: string; image_url?: { url: string } }>)
            .filter((part) => part.type === "image_url")
            .flatMap((part) => {
              const image = dataUrl(part.image_url?.url);
              return image === undefined
                ? []
                : [
                    {
                      where: `${String(message.role)} message after ${String(messages[index - 1]?.role)}`,
                      ...image,
                    },
                  ];
            })
        : [],
    );
  },
  resultTexts(body: unknown) {
    return ((body as FakeChatCompletionBody).messages ?? [])
      .filter((message) => message.role === "tool")
      .map((message) => String(message.content));
  },
};

type AnthropicBlock = { type: string; [key: string]: unknown };

function anthropicBlocks(body: unknown): Array<AnthropicBlock & { role: string }> {
  return ((body as FakeAnthropicBody).messages ?? []).flatMap((message) =>
    (typeof message.content === "string" ? [] : message.content).map((block) => ({
      ...block,
      role: message.role,
    })),
  );
}

type ResponsesItem = Record<string, unknown>;

function responsesInput(body: unknown): ResponsesItem[] {
  return (body as FakeResponsesBody).input ?? [];
}

const providers: ProviderCase[] = [
  {
    provider: "openai",
    model: "gpt-4.1-mini",
    visionModel: "gpt-4.1-mini",
    start: (handler, apiKey) =>
      startFakeOpenAiServer((_request, index) => handler(index), { flavor: "openai", apiKey }),
    ...chatCompletions,
  },
  {
    provider: "openai-compatible",
    model: "llama3.2:3b",
    visionModel: "qwen2.5vl:7b",
    start: (handler, apiKey) =>
      startFakeOpenAiServer((_request, index) => handler(index), {
        flavor: "openai-compatible",
        apiKey,
      }),
    ...chatCompletions,
  },
  {
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    visionModel: "claude-sonnet-4-5",
    start: (handler, apiKey) =>
      startFakeAnthropicServer((_request, index) => handler(index), { apiKey }),
    sentCallIds(body) {
      const blocks = anthropicBlocks(body);
      return {
        calls: blocks.filter((block) => block.type === "tool_use").map((block) => String(block.id)),
        results: blocks
          .filter((block) => block.type === "tool_result")
          .map((block) => String(block.tool_use_id)),
      };
    },
    images(body) {
      return anthropicBlocks(body)
        .filter((block) => block.type === "tool_result" && Array.isArray(block.content))
        .flatMap((block) =>
          (block.content as Array<{ type: string; source?: { media_type: string; data: string } }>)
            .filter((part) => part.type === "image" && part.source !== undefined)
            .map((part) => ({
              where: "image block inside tool_result",
              mediaType: part.source?.media_type ?? "",
              data: part.source?.data ?? "",
            })),
        );
    },
    resultTexts(body) {
      return anthropicBlocks(body)
        .filter((block) => block.type === "tool_result")
        .map((block) =>
          typeof block.content === "string"
            ? block.content
            : (block.content as Array<{ type: string; text?: string }>)
                .filter((part) => part.type === "text")
                .map((part) => part.text)
                .join("\n"),
        );
    },
  },
  {
    provider: "xai",
    model: "grok-4",
    visionModel: "grok-4",
    start: (handler, apiKey) => startFakeXaiServer((_request, index) => handler(index), { apiKey }),
    sentCallIds(body) {
      const input = responsesInput(body);
      return {
        calls: input
          .filter((item) => item.type === "function_call")
          .map((item) => String(item.call_id)),
        results: input
          .filter((item) => item.type === "function_call_output")
          .map((item) => String(item.call_id)),
      };
    },
    images(body) {
      return responsesInput(body)
        .filter((item) => item.type === "function_call_output" && Array.isArray(item.output))
        .flatMap((item) =>
          (item.output as Array<{ type: string; image_url?: string }>)
            .filter((part) => part.type === "input_image")
            .flatMap((part) => {
              const image = dataUrl(part.image_url);
              return image === undefined
                ? []
                : [{ where: "input_image inside function_call_output", ...image }];
            }),
        );
    },
    resultTexts(body) {
      return responsesInput(body)
        .filter((item) => item.type === "function_call_output")
        .map((item) =>
          typeof item.output === "string"
            ? item.output
            : (item.output as Array<{ type: string; text?: string }>)
                .filter((part) => part.type === "input_text")
                .map((part) => part.text)
                .join("\n"),
        );
    },
  },
];

const apiKey = "test-key-123";

/** Call 1: a tool call; call 2 (after its result): another tool call; call 3: text. */
function threeStepScript(index: number): FakeReply {
  switch (index) {
    case 0:
      return { type: "completion", toolCalls: [{ name: "shell", arguments: { command: "ls" } }] };
    case 1:
      return {
        type: "completion",
        textChunks: ["Reading it."],
        toolCalls: [{ name: "read", arguments: { path: "notes.txt" } }],
      };
    default:
      return { type: "completion", textChunks: ["All", " done."] };
  }
}

/**
 * Plays the loop: each tool call gets the journal id `inv_abc:turn:0:<step>:<index>`, passed
 * through `idFor`, and a result; stops at the first reply without tool calls.
 */
async function runToolTurn(
  client: ModelClient,
  idFor: (journalId: string) => string,
): Promise<{ results: InferResult[]; journalIds: string[] }> {
  const messages: ModelMessage[] = [{ role: "user", text: "Look around and read the notes." }];
  const results: InferResult[] = [];
  const journalIds: string[] = [];
  for (let step = 0; step < 5; step++) {
    const result = await client.infer({ system: "You are a test bot.", messages, tools });
    results.push(result);
    if (result.toolCalls.length === 0) break;
    const toolCalls = result.toolCalls.map((call, index) => {
      const journalId = `inv_abc:turn:0:${step}:${index}`;
      journalIds.push(journalId);
      return { ...call, id: idFor(journalId) };
    });
    messages.push({ role: "assistant", text: result.text, toolCalls });
    for (const call of toolCalls) {
      messages.push({
        role: "tool",
        callId: call.id,
        name: call.name,
        output: `output of ${call.name}`,
        isError: false,
      });
    }
  }
  return { results, journalIds };
}

async function errorOf(promise: Promise<unknown>): Promise<ModelError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

/** A conversation that ends in one tool result carrying `media`. */
function imageConversation(media: MediaPart[], isError = false): ModelMessage[] {
  const callId = providerSafeCallId("inv_abc:turn:0:0:0");
  return [
    { role: "user", text: "Show me the screenshot." },
    {
      role: "assistant",
      text: "",
      toolCalls: [{ id: callId, name: "read", input: { path: "shot.png" } }],
    },
    { role: "tool", callId, name: "read", output: "shot.png (1×1 PNG)", isError, media },
  ];
}

describe.each(providers)("$provider against its fake API", (subject) => {
  async function withFake(
    handler: (index: number) => FakeReply,
    run: (
      fake: Awaited<ReturnType<ProviderCase["start"]>>,
      client: (model?: string) => ModelClient,
    ) => Promise<void>,
  ): Promise<void> {
    const fake = await subject.start(handler, apiKey);
    try {
      await run(fake, (model = subject.model) =>
        createAiSdkModel({
          provider: subject.provider,
          model,
          apiKey,
          baseUrl: fake.baseUrl,
          retry: { maxAttempts: 1 },
        }),
      );
    } finally {
      await fake.close();
    }
  }

  test("a multi-step tool turn with provider-safe ids: tool call, tool call, then text", async () => {
    await withFake(threeStepScript, async (fake, client) => {
      const { results, journalIds } = await runToolTurn(client(), providerSafeCallId);
      expect(fake.requests.map((request) => request.rejected)).toEqual([
        undefined,
        undefined,
        undefined,
      ]);
      expect(results.map((result) => result.finishReason)).toEqual([
        "tool-calls",
        "tool-calls",
        "stop",
      ]);
      expect(results[0]?.toolCalls).toMatchObject([{ name: "shell", input: { command: "ls" } }]);
      expect(results[1]?.toolCalls).toMatchObject([{ name: "read", input: { path: "notes.txt" } }]);
      expect(results[2]?.text).toBe("All done.");

      const safeIds = journalIds.map(providerSafeCallId);
      expect(subject.sentCallIds(fake.requests[1]?.body)).toEqual({
        calls: safeIds.slice(0, 1),
        results: safeIds.slice(0, 1),
      });
      expect(subject.sentCallIds(fake.requests[2]?.body)).toEqual({
        calls: safeIds,
        results: safeIds,
      });
      expect(subject.resultTexts(fake.requests[2]?.body)).toEqual([
        "output of shell",
        "output of read",
      ]);
    });
  });

  test("an old conversation stored with colon ids (inv_abc:turn:0:0:0) still works: ids are mapped the same way in call and result", async () => {
    await withFake(threeStepScript, async (fake, client) => {
      const { results, journalIds } = await runToolTurn(client(), (journalId) => journalId);
      expect(fake.requests.every((request) => request.rejected === undefined)).toBe(true);
      expect(results[2]?.text).toBe("All done.");
      const sent = subject.sentCallIds(fake.requests[2]?.body);
      expect(sent.calls).toEqual(journalIds.map(providerSafeCallId));
      expect(sent.results).toEqual(sent.calls);
      for (const id of sent.calls) expect(id).toMatch(providerSafeCallIdPattern);
    });
  });

  test("a failed tool result reaches the model as an error and the turn goes on", async () => {
    await withFake(
      () => ({ type: "completion", textChunks: ["The file is missing."] }),
      async (fake, client) => {
        const callId = providerSafeCallId("inv_abc:turn:0:0:0");
        const result = await client().infer({
          system: "s",
          tools,
          messages: [
            { role: "user", text: "read it" },
            {
              role: "assistant",
              text: "",
              toolCalls: [{ id: callId, name: "read", input: { path: "x" } }],
            },
            { role: "tool", callId, name: "read", output: "not_found: x", isError: true },
          ],
        });
        expect(result.text).toBe("The file is missing.");
        expect(fake.requests[0]?.rejected).toBeUndefined();
        expect(subject.resultTexts(fake.requests[0]?.body).join("")).toContain("not_found: x");
      },
    );
  });

  test("an image a tool returned reaches a vision model as the provider's own image part", async () => {
    await withFake(
      () => ({ type: "completion", textChunks: ["A single pixel."] }),
      async (fake, client) => {
        const model = client(subject.visionModel);
        expect(model.acceptsImages).toBe(true);
        const result = await model.infer({
          system: "s",
          tools,
          messages: imageConversation([pngImage]),
        });
        expect(result.text).toBe("A single pixel.");
        expect(fake.requests[0]?.rejected).toBeUndefined();
        const images = subject.images(fake.requests[0]?.body);
        expect(images).toEqual([expect.objectContaining({ mediaType: "image/png", data: png })]);
        expect(images[0]?.where).toBe(
          subject.provider === "anthropic"
            ? "image block inside tool_result"
            : subject.provider === "xai"
              ? "input_image inside function_call_output"
              : "user message after tool",
        );
      },
    );
  });

  test('an "image" whose bytes are no image is refused by the fake as the provider refuses it', async () => {
    await withFake(
      () => ({ type: "completion", textChunks: ["never"] }),
      async (fake, client) => {
        // (A real image with the wrong type would not do: the AI SDK corrects the type from the bytes.)
        const notAnImage: MediaPart = {
          type: "image",
          mimeType: "image/png",
          data: Buffer.from("this is no image at all").toString("base64"),
        };
        const error = await errorOf(
          client(subject.visionModel).infer({
            system: "s",
            tools,
            messages: imageConversation([notAnImage]),
          }),
        );
        expect(fake.requests[0]?.rejected?.status).toBe(400);
        expect(error.message).toContain("400 Bad Request");
        expect(error.message).toContain(fake.requests[0]?.rejected?.message?.slice(0, 40));
      },
    );
  });

  test("a failed tool result's image is not sent; the model is told it was there", async () => {
    await withFake(
      () => ({ type: "completion", textChunks: ["ok"] }),
      async (fake, client) => {
        await client(subject.visionModel).infer({
          system: "s",
          tools,
          messages: imageConversation([pngImage], true),
        });
        expect(subject.images(fake.requests[0]?.body)).toEqual([]);
        expect(subject.resultTexts(fake.requests[0]?.body).join("")).toContain(
          "The tool also returned 1 image (image/png, 70 B); images are not sent with a failed tool result.",
        );
      },
    );
  });
});

describe("models without image input", () => {
  test.each([
    ["openai-compatible", "llama3.2:3b"],
    ["xai", "grok-3"],
    ["openai", "gpt-3.5-turbo"],
  ] as const)("%s:%s gets a note instead of the image", async (provider, model) => {
    const subject = providers.find((candidate) => candidate.provider === provider)!;
    const fake = await subject.start(() => ({ type: "completion", textChunks: ["ok"] }), apiKey);
    try {
      const client = createAiSdkModel({ provider, model, apiKey, baseUrl: fake.baseUrl });
      expect(client.acceptsImages).toBe(false);
      await client.infer({ system: "s", tools, messages: imageConversation([pngImage]) });
      expect(fake.requests[0]?.rejected).toBeUndefined();
      expect(subject.images(fake.requests[0]?.body)).toEqual([]);
      expect(subject.resultTexts(fake.requests[0]?.body)).toEqual([
        "shot.png (1×1 PNG)\n[The tool also returned 1 image (image/png, 70 B); this model does not accept images, so they are not shown.]",
      ]);
    } finally {
      await fake.close();
    }
  });

  test("acceptsImages overrides the guess from the model name", async () => {
    const fake = await providers[1]!.start(
      () => ({ type: "completion", textChunks: ["ok"] }),
      apiKey,
    );
    try {
      const client = createAiSdkModel({
        provider: "openai-compatible",
        model: "my-own-vision-finetune",
        apiKey,
        baseUrl: fake.baseUrl,
        acceptsImages: true,
      });
      expect(client.acceptsImages).toBe(true);
      await client.infer({ system: "s", tools, messages: imageConversation([pngImage]) });
      expect(providers[1]!.images(fake.requests[0]?.body)).toHaveLength(1);
    } finally {
      await fake.close();
    }
  });
});

describe("provider 400s are quoted, and blame the model only when the provider does", () => {
  test("Anthropic's complaint about a tool_use id is quoted, named a Roost bug, and not put on the model", async () => {
    const message =
      "messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'";
    await using fake = await startFakeAnthropicServer(() => ({
      type: "error",
      status: 400,
      message,
    }));
    const client = createAiSdkModel({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      apiKey,
      baseUrl: fake.baseUrl,
    });
    const error = await errorOf(
      client.infer({ system: "s", tools, messages: [{ role: "user", text: "hi" }] }),
    );
    expect(error.message).toContain(
      `400 Bad Request — the provider rejected the request (provider said: ${JSON.stringify(message)})`,
    );
    expect(error.message).toContain("this is a bug in Roost");
    expect(error.message).not.toMatch(/support tools/);
  });

  test("Ollama's 'does not support tools' is put on the model, with what to do", async () => {
    await using fake = await startFakeOpenAiServer(() => ({
      type: "error",
      status: 400,
      message: "registry.ollama.ai/library/gemma:2b does not support tools",
    }));
    const client = createAiSdkModel({
      provider: "openai-compatible",
      model: "gemma:2b",
      baseUrl: fake.baseUrl,
    });
    const error = await errorOf(
      client.infer({ system: "s", tools, messages: [{ role: "user", text: "hi" }] }),
    );
    expect(error.message).toContain('the provider says model "gemma:2b" does not support tools');
    expect(error.message).toContain("choose a model with tool calling in ROOST_MODEL");
  });
});
