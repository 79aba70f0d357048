import { createAiSdkModel } from "./ai-sdk.ts";
import { createDemoModel } from "./demo.ts";
import { startFakeOpenAiServer } from "./testing/fake-openai-server.ts";
import type { FakeOpenAiReply, FakeOpenAiRequest } from "./testing/fake-openai-server.ts";
import { describeModelClientContract } from "./model-client-contract.ts";
import { startFakeAnthropicServer } from "./testing/fake-anthropic-server.ts";
import type { FakeAnthropicRequest } from "./testing/fake-anthropic-server.ts";
import type { FakeCompletionReply } from "./testing/fake-provider-server.ts";
import { startFakeXaiServer } from "./testing/fake-xai-server.ts";
import type { FakeXaiRequest } from "./testing/fake-xai-server.ts";
import { createScriptedModel } from "./testing/scripted.ts";
import type { ScriptedResponse } from "./testing/scripted.ts";
import type { InferRequest } from "./types.ts";

/** The contract's prompts, answered the way a cooperative model would. */
function answer(last: { role: string; text: string }, toolsOffered: boolean): ScriptedResponse {
  if (last.role === "tool") return { text: `The command printed: ${last.text}` };
  if (last.text.startsWith("$ ") && toolsOffered) {
    return {
      toolCalls: [{ id: "call_contract", name: "shell", input: { command: last.text.slice(2) } }],
    };
  }
  return { text: `You said: ${last.text}` };
}

function answerInferRequest(request: InferRequest): ScriptedResponse {
  const last = request.messages[request.messages.length - 1];
  if (last === undefined) return { text: "nothing to answer" };
  const text = last.role === "tool" ? last.output : last.text;
  return answer({ role: last.role, text }, request.tools.length > 0);
}

function asReply(response: ScriptedResponse): FakeCompletionReply {
  return {
    type: "completion",
    textChunks: response.text?.split(/(?= )/) ?? [],
    toolCalls: (response.toolCalls ?? []).map((call) => ({
      id: call.id,
      name: call.name,
      arguments: call.input as Record<string, unknown>,
    })),
  };
}

function answerWire(request: FakeOpenAiRequest): FakeOpenAiReply {
  const messages = request.body?.messages ?? [];
  // Images a tool returned follow its result in a user message of their own: answer the result.
  const imageFollowUp = (message: Record<string, unknown> | undefined): boolean =>
    message?.role === "user" && Array.isArray(message.content);
  const last = imageFollowUp(messages.at(-1)) ? messages.at(-2) : messages.at(-1);
  const content = typeof last?.content === "string" ? last.content : "";
  return asReply(
    answer(
      { role: typeof last?.role === "string" ? last.role : "user", text: content },
      (request.body?.tools ?? []).length > 0,
    ),
  );
}

function textOf(parts: unknown, textType: string): string {
  if (typeof parts === "string") return parts;
  if (!Array.isArray(parts)) return "";
  return (parts as Array<{ type: string; text?: string }>)
    .filter((part) => part.type === textType)
    .map((part) => part.text ?? "")
    .join("");
}

function answerAnthropic(request: FakeAnthropicRequest): FakeCompletionReply {
  const last = request.body?.messages?.at(-1);
  const blocks = typeof last?.content === "string" ? [] : (last?.content ?? []);
  const result = blocks.find((block) => block.type === "tool_result");
  const turn =
    result === undefined
      ? { role: "user", text: textOf(last?.content, "text") }
      : { role: "tool", text: textOf(result.content, "text") };
  return asReply(answer(turn, (request.body?.tools ?? []).length > 0));
}

function answerXai(request: FakeXaiRequest): FakeCompletionReply {
  const last = request.body?.input?.at(-1);
  const turn =
    last?.type === "function_call_output"
      ? { role: "tool", text: textOf(last.output, "input_text") }
      : { role: "user", text: textOf(last?.content, "input_text") };
  return asReply(answer(turn, (request.body?.tools ?? []).length > 0));
}

describeModelClientContract("demo", async () => ({ client: createDemoModel() }));

describeModelClientContract("scripted", async () => ({
  client: createScriptedModel(answerInferRequest),
}));

describeModelClientContract("ai-sdk openai-compatible", async () => {
  const server = await startFakeOpenAiServer(answerWire);
  return {
    client: createAiSdkModel({
      provider: "openai-compatible",
      model: "contract-model",
      baseUrl: server.baseUrl,
    }),
    close: () => server.close(),
  };
});

describeModelClientContract("ai-sdk openai", async () => {
  const server = await startFakeOpenAiServer(answerWire, { flavor: "openai", apiKey: "sk-test" });
  return {
    client: createAiSdkModel({
      provider: "openai",
      model: "gpt-4.1-mini",
      apiKey: "sk-test",
      baseUrl: server.baseUrl,
    }),
    close: () => server.close(),
  };
});

describeModelClientContract("ai-sdk openai-compatible, a vision model", async () => {
  const server = await startFakeOpenAiServer(answerWire);
  return {
    client: createAiSdkModel({
      provider: "openai-compatible",
      model: "qwen2.5vl:7b",
      baseUrl: server.baseUrl,
    }),
    close: () => server.close(),
  };
});

describeModelClientContract("ai-sdk anthropic", async () => {
  const server = await startFakeAnthropicServer(answerAnthropic, { apiKey: "sk-ant-test" });
  return {
    client: createAiSdkModel({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      apiKey: "sk-ant-test",
      baseUrl: server.baseUrl,
    }),
    close: () => server.close(),
  };
});

describeModelClientContract("ai-sdk xai", async () => {
  const server = await startFakeXaiServer(answerXai, { apiKey: "xai-test" });
  return {
    client: createAiSdkModel({
      provider: "xai",
      model: "grok-4",
      apiKey: "xai-test",
      baseUrl: server.baseUrl,
    }),
    close: () => server.close(),
  };
});
