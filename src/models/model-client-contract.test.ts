import { createAiSdkModel } from "./ai-sdk.ts";
import { createDemoModel } from "./demo.ts";
import { startFakeOpenAiServer } from "./testing/fake-openai-server.ts";
import type { FakeOpenAiReply, FakeOpenAiRequest } from "./testing/fake-openai-server.ts";
import { describeModelClientContract } from "./model-client-contract.ts";
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

function answerWire(request: FakeOpenAiRequest): FakeOpenAiReply {
  const last = request.body?.messages?.at(-1);
  const content = typeof last?.content === "string" ? last.content : "";
  const response = answer(
    { role: typeof last?.role === "string" ? last.role : "user", text: content },
    (request.body?.tools ?? []).length > 0,
  );
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
  const server = await startFakeOpenAiServer(answerWire);
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
