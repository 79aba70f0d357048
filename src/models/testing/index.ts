/** Test support for models/: the scripted model and a fake OpenAI-compatible server. Never imported by production code. */
export { createScriptedModel } from "./scripted.ts";
export type {
  Script,
  ScriptedModel,
  ScriptedModelOptions,
  ScriptedResponder,
  ScriptedResponse,
} from "./scripted.ts";
export { fakeTextReply, startFakeOpenAiServer } from "./fake-openai-server.ts";
export type {
  FakeChatCompletionBody,
  FakeCompletionReply,
  FakeErrorReply,
  FakeHangUpReply,
  FakeOpenAiHandler,
  FakeOpenAiReply,
  FakeOpenAiRequest,
  FakeOpenAiServer,
  FakeToolCall,
} from "./fake-openai-server.ts";
