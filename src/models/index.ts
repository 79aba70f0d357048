/**
 * models/: everything the loop needs to call a language model. Other folders import only from
 * here; `types.ts` is the seam (`ModelClient`).
 */
export type {
  InferRequest,
  InferResult,
  MediaPart,
  ModelClient,
  ModelMessage,
  TokenUsage,
  ToolCall,
  ToolSpec,
} from "./types.ts";
export {
  modelProviders,
  isModelProvider,
  providerEnvironmentVariables,
  defaultModelEnvironmentVariable,
} from "./providers.ts";
export type { ModelProvider } from "./providers.ts";
export { createAiSdkModel, defaultIdleTimeoutMs } from "./ai-sdk.ts";
export type { AiSdkModelOptions } from "./ai-sdk.ts";
export { defaultRetryOptions, realSleep } from "./retry.ts";
export type { RetryOptions, Sleep } from "./retry.ts";
export { createDemoModel } from "./demo.ts";
export { isProviderSafeCallId, providerSafeCallId, providerSafeCallIdPattern } from "./call-ids.ts";
export { attachedFilesPrefix, modelAcceptsImages } from "./media.ts";
export { maxToolSpecChars, toolSpecChars } from "./tool-specs.ts";
export {
  createModelResolver,
  fallbackModels,
  parseModelSpec,
  ProviderNotConfiguredError,
} from "./registry.ts";
export {
  createProviderSettings,
  curatedModels,
  parseBaseUrl,
  providerLabels,
} from "./provider-settings.ts";
export type { ProviderSettings, ProviderSettingsOptions } from "./provider-settings.ts";
export type {
  HostedProviderConfig,
  ModelResolver,
  ModelResolverOptions,
  ModelSpec,
  OpenAiCompatibleProviderConfig,
  ProvidersConfig,
} from "./registry.ts";
export {
  contextWindowOf,
  defaultContextWindowTokens,
  estimateTokens,
  isContextOverflow,
} from "./context.ts";
