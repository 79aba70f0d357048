/**
 * Test support for models/: the scripted model and fake provider servers (OpenAI and
 * OpenAI-compatible, Anthropic, xAI). Never imported by production code.
 */
export { createScriptedModel } from "./scripted.ts";
export type {
  Script,
  ScriptedModel,
  ScriptedModelOptions,
  ScriptedResponder,
  ScriptedResponse,
} from "./scripted.ts";
export { fakeTextReply } from "./fake-provider-server.ts";
export type {
  FakeCompletionReply,
  FakeErrorReply,
  FakeHandler,
  FakeHangUpReply,
  FakeProviderRequest,
  FakeProviderServer,
  FakeReply,
  FakeToolCall,
} from "./fake-provider-server.ts";
export { openAiMaxCallIdLength, startFakeOpenAiServer } from "./fake-openai-server.ts";
export type {
  FakeChatCompletionBody,
  FakeOpenAiHandler,
  FakeOpenAiReply,
  FakeOpenAiRequest,
  FakeOpenAiServer,
  FakeOpenAiServerOptions,
} from "./fake-openai-server.ts";
export { anthropicToolIdPattern, startFakeAnthropicServer } from "./fake-anthropic-server.ts";
export type {
  AnthropicContentBlock,
  FakeAnthropicBody,
  FakeAnthropicHandler,
  FakeAnthropicRequest,
  FakeAnthropicServer,
  FakeAnthropicServerOptions,
} from "./fake-anthropic-server.ts";
export { startFakeXaiServer } from "./fake-xai-server.ts";
export type {
  FakeResponsesBody,
  FakeXaiHandler,
  FakeXaiRequest,
  FakeXaiServer,
  FakeXaiServerOptions,
} from "./fake-xai-server.ts";
