import { describe, expect, test } from "vitest";
import { ConfigError, ModelError } from "../errors/index.ts";
import { createAiSdkModel } from "./ai-sdk.ts";
import type { AiSdkModelOptions } from "./ai-sdk.ts";
import { startFakeAnthropicServer } from "./testing/fake-anthropic-server.ts";
import { fakeTextReply, startFakeOpenAiServer } from "./testing/fake-openai-server.ts";
import { startFakeXaiServer } from "./testing/fake-xai-server.ts";
import type { FakeOpenAiHandler } from "./testing/fake-openai-server.ts";
import type { Sleep } from "./retry.ts";
import type { InferRequest, ToolSpec } from "./types.ts";

const shellTool: ToolSpec = {
  name: "shell",
  description: "Run a shell command on the bot's computer.",
  inputSchema: {
    type: "object",
    properties: { command: { type: "string" } },
    required: ["command"],
  },
};

function hello(overrides: Partial<InferRequest> = {}): InferRequest {
  return {
    system: "You are a test bot.",
    messages: [{ role: "user", text: "hello" }],
    tools: [],
    ...overrides,
  };
}

/** A sleep that returns at once and records what it was asked to wait. */
function recordingSleep(): { sleep: Sleep; waits: number[] } {
  const waits: number[] = [];
  return { waits, sleep: async (milliseconds) => void waits.push(milliseconds) };
}

async function withServer(
  handler: FakeOpenAiHandler,
  run: (server: Awaited<ReturnType<typeof startFakeOpenAiServer>>) => Promise<void>,
): Promise<void> {
  const server = await startFakeOpenAiServer(handler);
  try {
    await run(server);
  } finally {
    await server.close();
  }
}

function compatible(
  baseUrl: string,
  extra: Partial<AiSdkModelOptions> = {},
): ReturnType<typeof createAiSdkModel> {
  return createAiSdkModel({
    provider: "openai-compatible",
    model: "llama3.2:3b",
    baseUrl,
    ...extra,
  });
}

async function rejectionOf(promise: Promise<unknown>): Promise<ModelError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe("createAiSdkModel against a fake OpenAI-compatible server", () => {
  test("streams text to onTextDelta in pieces and returns the whole text, usage and model id", async () => {
    await withServer(
      () => ({
        type: "completion",
        textChunks: ["Hel", "lo ", "world"],
        usage: { promptTokens: 12, completionTokens: 34 },
      }),
      async (server) => {
        const deltas: string[] = [];
        const result = await compatible(server.baseUrl).infer(
          hello({ onTextDelta: (delta) => deltas.push(delta) }),
        );
        expect(deltas).toEqual(["Hel", "lo ", "world"]);
        expect(result).toEqual({
          text: "Hello world",
          toolCalls: [],
          usage: { inputTokens: 12, outputTokens: 34 },
          finishReason: "stop",
          model: "openai-compatible:llama3.2:3b",
        });
        expect(server.requests).toHaveLength(1);
        expect(server.requests[0]?.path).toBe("/v1/chat/completions");
        expect(server.requests[0]?.body?.stream_options).toEqual({ include_usage: true });
      },
    );
  });

  test("returns a tool call with its JSON arguments parsed, even when split across chunks", async () => {
    await withServer(
      () => ({
        type: "completion",
        textChunks: ["Let me look."],
        toolCalls: [{ id: "call_abc", name: "shell", arguments: { command: "ls -la /home/user" } }],
      }),
      async (server) => {
        const result = await compatible(server.baseUrl).infer(hello({ tools: [shellTool] }));
        expect(result.toolCalls).toEqual([
          { id: "call_abc", name: "shell", input: { command: "ls -la /home/user" } },
        ]);
        expect(result.text).toBe("Let me look.");
        expect(result.finishReason).toBe("tool-calls");
      },
    );
  });

  test("passes an unparsable tool call through with its raw input, for the loop to answer", async () => {
    await withServer(
      () => ({
        type: "completion",
        toolCalls: [{ id: "call_bad", name: "shell", arguments: '{"command": "ls' }],
      }),
      async (server) => {
        const result = await compatible(server.baseUrl).infer(hello({ tools: [shellTool] }));
        expect(result.toolCalls).toEqual([
          { id: "call_bad", name: "shell", input: '{"command": "ls' },
        ]);
      },
    );
  });

  test("sends the system prompt, the conversation and the tools in the OpenAI wire format", async () => {
    await withServer(
      () => fakeTextReply("ok"),
      async (server) => {
        await compatible(server.baseUrl).infer({
          system: "Be brief.",
          tools: [shellTool],
          messages: [
            { role: "user", text: "list files" },
            {
              role: "assistant",
              text: "",
              toolCalls: [{ id: "call_1", name: "shell", input: { command: "ls" } }],
            },
            {
              role: "tool",
              callId: "call_1",
              name: "shell",
              output: "a.txt\nb.txt",
              isError: false,
            },
          ],
        });
        const body = server.requests[0]?.body;
        expect(body?.model).toBe("llama3.2:3b");
        expect(body?.messages).toEqual([
          { role: "system", content: "Be brief." },
          { role: "user", content: "list files" },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call_1",
                type: "function",
                function: { name: "shell", arguments: '{"command":"ls"}' },
              },
            ],
          },
          { role: "tool", tool_call_id: "call_1", content: "a.txt\nb.txt" },
        ]);
        expect(body?.tools).toEqual([
          {
            type: "function",
            function: {
              name: "shell",
              description: shellTool.description,
              parameters: shellTool.inputSchema,
            },
          },
        ]);
      },
    );
  });

  test("rate limited with retry-after: waits what the server asked, then succeeds", async () => {
    await withServer(
      (_request, index) =>
        index === 0
          ? { type: "error", status: 429, headers: { "retry-after": "2" } }
          : fakeTextReply("finally"),
      async (server) => {
        const { sleep, waits } = recordingSleep();
        const result = await compatible(server.baseUrl, { sleep }).infer(hello());
        expect(result.text).toBe("finally");
        expect(waits).toEqual([2000]);
        expect(server.requests).toHaveLength(2);
      },
    );
  });

  test("tells live views before each retry, so text from the failed attempt can be dropped", async () => {
    await withServer(
      (_request, index) =>
        index === 0 ? { type: "error", status: 503 } : fakeTextReply("second", " try"),
      async (server) => {
        const { sleep } = recordingSleep();
        const seen: string[] = [];
        const result = await compatible(server.baseUrl, { sleep }).infer(
          hello({
            onTextDelta: (text) => seen.push(text),
            onRetry: ({ attempt }) => seen.push(`<retry after attempt ${attempt}>`),
          }),
        );
        expect(result.text).toBe("second try");
        expect(seen).toEqual(["<retry after attempt 1>", "second", " try"]);
      },
    );
  });

  test("rate limited with retry-after-ms: honors the millisecond header", async () => {
    await withServer(
      (_request, index) =>
        index === 0
          ? { type: "error", status: 429, headers: { "retry-after-ms": "1500" } }
          : fakeTextReply("ok"),
      async (server) => {
        const { sleep, waits } = recordingSleep();
        await compatible(server.baseUrl, { sleep }).infer(hello());
        expect(waits).toEqual([1500]);
      },
    );
  });

  test("rate limited every time: gives up after the configured attempts and says to try later", async () => {
    await withServer(
      () => ({ type: "error", status: 429 }),
      async (server) => {
        const { sleep, waits } = recordingSleep();
        const model = createAiSdkModel({
          provider: "openai",
          model: "gpt-4.1-mini",
          apiKey: "sk-test",
          baseUrl: server.baseUrl,
          sleep,
          random: () => 0,
        });
        const error = await rejectionOf(model.infer(hello()));
        expect(error.message).toContain("rate limited after 4 attempts; try again later");
        expect(error.retryable).toBe(false);
        expect(server.requests).toHaveLength(4);
        // Equal jitter with random() = 0: half of 1s, 2s, 4s.
        expect(waits).toEqual([500, 1000, 2000]);
      },
    );
  });

  test("a server that asks to wait longer than maxDelayMs ends the retries at once", async () => {
    await withServer(
      () => ({ type: "error", status: 429, headers: { "retry-after": "600" } }),
      async (server) => {
        const { sleep, waits } = recordingSleep();
        const error = await rejectionOf(compatible(server.baseUrl, { sleep }).infer(hello()));
        expect(error.message).toContain("asks to wait 600s");
        expect(waits).toEqual([]);
        expect(server.requests).toHaveLength(1);
      },
    );
  });

  test("repeated 500: a terminal ModelError after N attempts, with exponential backoff between them", async () => {
    await withServer(
      () => ({ type: "error", status: 500 }),
      async (server) => {
        const { sleep, waits } = recordingSleep();
        const model = compatible(server.baseUrl, {
          sleep,
          random: () => 1,
          retry: { maxAttempts: 3, initialDelayMs: 100 },
        });
        const error = await rejectionOf(model.infer(hello()));
        expect(error.message).toBe(
          `openai-compatible at ${server.baseUrl}: 500 Internal Server Error after 3 attempts — the provider is having trouble; try again later (provider said: "The server had an error while processing your request")`,
        );
        expect(error.retryAfterMs).toBeUndefined();
        expect(error.details).toMatchObject({ kind: "server-error", status: 500, attempts: 3 });
        expect(server.requests).toHaveLength(3);
        expect(waits).toEqual([100, 200]);
      },
    );
  });

  test("401 is not retried and the message names the variable to set", async () => {
    await withServer(
      () => ({ type: "error", status: 401 }),
      async (server) => {
        const { sleep, waits } = recordingSleep();
        const model = createAiSdkModel({
          provider: "openai",
          model: "gpt-4.1-mini",
          apiKey: "sk-wrong",
          sleep,
          baseUrl: server.baseUrl,
        });
        const error = await rejectionOf(model.infer(hello()));
        expect(error.message).toContain(
          "401 Unauthorized — the API key was rejected; set ROOST_OPENAI_API_KEY to a valid key",
        );
        expect(error.details).toMatchObject({ kind: "unauthorized", status: 401, attempts: 1 });
        expect(server.requests).toHaveLength(1);
        expect(waits).toEqual([]);
      },
    );
  });

  test("404 from a local server says to check the base URL and pull the model", async () => {
    await withServer(
      () => ({ type: "error", status: 404 }),
      async (server) => {
        const error = await rejectionOf(compatible(server.baseUrl).infer(hello()));
        expect(error.message).toContain("404 Not Found");
        expect(error.message).toContain("ollama pull llama3.2:3b");
        expect(server.requests).toHaveLength(1);
      },
    );
  });

  test("connection refused: retried, then a message asking whether the server is running", async () => {
    const server = await startFakeOpenAiServer(() => fakeTextReply("never"));
    await server.close(); // Nothing listens on this port any more.
    const { sleep, waits } = recordingSleep();
    const error = await rejectionOf(compatible(server.baseUrl, { sleep }).infer(hello()));
    expect(error.message).toBe(
      `openai-compatible at ${server.baseUrl}: connection refused after 4 attempts — is the server running? (start it, or fix ROOST_OPENAI_COMPATIBLE_BASE_URL)`,
    );
    expect(waits).toHaveLength(3);
  });

  test("a dropped connection is retried and the next attempt succeeds", async () => {
    await withServer(
      (_request, index) => (index === 0 ? { type: "hang-up" } : fakeTextReply("back")),
      async (server) => {
        const { sleep } = recordingSleep();
        const result = await compatible(server.baseUrl, { sleep }).infer(hello());
        expect(result.text).toBe("back");
        expect(server.requests).toHaveLength(2);
      },
    );
  });

  test("a silent stream is aborted after idleTimeoutMs and retried", async () => {
    let releaseFirst: () => void = () => {};
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    await withServer(
      async (_request, index) => {
        if (index === 0) await firstHeld;
        return fakeTextReply("awake");
      },
      async (server) => {
        const { sleep } = recordingSleep();
        const result = await compatible(server.baseUrl, { sleep, idleTimeoutMs: 200 }).infer(
          hello(),
        );
        expect(result.text).toBe("awake");
        expect(server.requests).toHaveLength(2);
        releaseFirst();
      },
    );
  });

  test("aborting mid-stream rejects with the abort reason and does not retry", async () => {
    await withServer(
      () => ({
        type: "completion",
        textChunks: ["one ", "two ", "three ", "four"],
        chunkDelayMs: 100,
      }),
      async (server) => {
        const controller = new AbortController();
        const reason = new Error("turn interrupted");
        const deltas: string[] = [];
        const call = compatible(server.baseUrl).infer(
          hello({
            signal: controller.signal,
            onTextDelta: (delta) => {
              deltas.push(delta);
              controller.abort(reason);
            },
          }),
        );
        await expect(call).rejects.toBe(reason);
        expect(deltas).toEqual(["one "]);
        expect(server.requests).toHaveLength(1);
      },
    );
  });

  test("an already aborted signal sends no request", async () => {
    await withServer(
      () => fakeTextReply("no"),
      async (server) => {
        const controller = new AbortController();
        controller.abort(new Error("cancelled before start"));
        await expect(
          compatible(server.baseUrl).infer(hello({ signal: controller.signal })),
        ).rejects.toThrow("cancelled before start");
        expect(server.requests).toHaveLength(0);
      },
    );
  });

  test("a throwing onTextDelta does not fail the call", async () => {
    await withServer(
      () => fakeTextReply("still ", "fine"),
      async (server) => {
        const result = await compatible(server.baseUrl).infer(
          hello({
            onTextDelta: () => {
              throw new Error("live view broke");
            },
          }),
        );
        expect(result.text).toBe("still fine");
      },
    );
  });
});

describe("createAiSdkModel providers", () => {
  test("openai with baseUrl talks Chat Completions with a bearer key", async () => {
    await withServer(
      () => fakeTextReply("Hi", " there"),
      async (server) => {
        const model = createAiSdkModel({
          provider: "openai",
          model: "gpt-4.1-mini",
          apiKey: "sk-test",
          baseUrl: server.baseUrl,
        });
        expect(model.id).toBe("openai:gpt-4.1-mini");
        expect(model.isDemo).toBe(false);
        const result = await model.infer(hello());
        expect(result).toMatchObject({
          text: "Hi there",
          model: "openai:gpt-4.1-mini",
          usage: { inputTokens: 10, outputTokens: 5 },
        });
        expect(server.requests[0]?.path).toBe("/v1/chat/completions");
        expect(server.requests[0]?.headers.authorization).toBe("Bearer sk-test");
      },
    );
  });

  test("anthropic sends its key to <baseUrl>/messages and a rejected key names the variable", async () => {
    await using server = await startFakeAnthropicServer(() => fakeTextReply("never"), {
      apiKey: "sk-ant-right",
    });
    const model = createAiSdkModel({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      apiKey: "sk-ant-test",
      baseUrl: server.baseUrl,
    });
    const error = await rejectionOf(model.infer(hello()));
    expect(error.message).toContain("401 Unauthorized — the API key was rejected");
    expect(error.message).toContain("set ROOST_ANTHROPIC_API_KEY to a valid key");
    expect(error.message).toContain('provider said: "invalid x-api-key"');
    expect(server.requests[0]?.path).toBe("/v1/messages");
    expect(server.requests[0]?.headers["x-api-key"]).toBe("sk-ant-test");
  });

  test("xai sends its key to <baseUrl>/responses and its errors are classified", async () => {
    await using server = await startFakeXaiServer(() => ({ type: "error", status: 403 }));
    const model = createAiSdkModel({
      provider: "xai",
      model: "grok-4",
      apiKey: "xai-test",
      baseUrl: server.baseUrl,
    });
    const error = await rejectionOf(model.infer(hello()));
    expect(error.message).toContain('403 Forbidden — this API key may not use model "grok-4"');
    expect(server.requests[0]?.path).toBe("/v1/responses");
    expect(server.requests[0]?.headers.authorization).toBe("Bearer xai-test");
  });

  test("xai's 400 for a wrong key (its way of saying 401) is reported as a rejected key", async () => {
    await using server = await startFakeXaiServer(() => fakeTextReply("never"), {
      apiKey: "xai-right",
    });
    const model = createAiSdkModel({
      provider: "xai",
      model: "grok-4",
      apiKey: "xai-wrong",
      baseUrl: server.baseUrl,
    });
    const error = await rejectionOf(model.infer(hello()));
    expect(error.message).toContain("400 Bad Request — the API key was rejected");
    expect(error.message).toContain("set ROOST_XAI_API_KEY to a valid key");
    expect(server.requests[0]?.rejected?.status).toBe(400);
  });

  test("a stray OPENAI_BASE_URL or ANTHROPIC_BASE_URL in the environment does not redirect the key (A2)", async () => {
    await using openAiTrap = await startFakeOpenAiServer(() => fakeTextReply("captured"));
    await using anthropicTrap = await startFakeAnthropicServer(() => fakeTextReply("captured"));
    const saved = {
      openai: process.env.OPENAI_BASE_URL,
      anthropic: process.env.ANTHROPIC_BASE_URL,
    };
    process.env.OPENAI_BASE_URL = openAiTrap.baseUrl;
    process.env.ANTHROPIC_BASE_URL = anthropicTrap.baseUrl;
    try {
      for (const provider of ["openai", "anthropic"] as const) {
        const model = createAiSdkModel({
          provider,
          model: "m",
          apiKey: "secret-key",
          retry: { maxAttempts: 1 },
          // Only the trap would answer quickly; the public endpoint is not reachable from tests.
          idleTimeoutMs: 2000,
        });
        await model.infer(hello()).catch(() => undefined);
      }
      expect(openAiTrap.requests).toEqual([]);
      expect(anthropicTrap.requests).toEqual([]);
    } finally {
      for (const [name, value] of [
        ["OPENAI_BASE_URL", saved.openai],
        ["ANTHROPIC_BASE_URL", saved.anthropic],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  test("hosted providers without an API key fail at creation, naming the variable", () => {
    expect(() => createAiSdkModel({ provider: "openai", model: "gpt-4.1-mini" })).toThrow(
      ConfigError,
    );
    expect(() =>
      createAiSdkModel({ provider: "anthropic", model: "claude-sonnet-4-5", apiKey: "" }),
    ).toThrow("anthropic: an API key is required (set ROOST_ANTHROPIC_API_KEY)");
    expect(() => createAiSdkModel({ provider: "xai", model: "grok-4" })).toThrow(
      "ROOST_XAI_API_KEY",
    );
  });

  test("openai-compatible without a base URL fails at creation, naming the variable", () => {
    expect(() => createAiSdkModel({ provider: "openai-compatible", model: "llama3.2" })).toThrow(
      "openai-compatible: a base URL is required (set ROOST_OPENAI_COMPATIBLE_BASE_URL",
    );
  });
});
