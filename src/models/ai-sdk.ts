/**
 * `ModelClient` for hosted and local providers through the Vercel AI SDK: OpenAI, Anthropic, xAI
 * and any OpenAI-compatible server (Ollama, vLLM, llama.cpp).
 *
 * Invariants:
 * A1 One model step per `infer`: tools have no `execute` and the SDK's own retries are off
 *    (`maxRetries: 0`); `retryModelCall` does the retrying so it can classify and explain errors.
 * A2 Credentials and endpoints come only from options: providers are never left to read
 *    `OPENAI_API_KEY`, `OPENAI_BASE_URL` and friends from the environment (only config/ reads the
 *    environment; a stray `OPENAI_BASE_URL` would send the key to another host).
 * A3 Text deltas from an attempt that later fails have already reached `onTextDelta` and cannot be
 *    taken back; the returned result holds only the successful attempt's text.
 * A4 A stream that stays silent for `idleTimeoutMs` is aborted and counted as a retryable timeout.
 * A5 Tool call ids in the prompt are provider-safe (CID2) and tool images take the provider's own
 *    route, or a note for models without image input (M4).
 * A6 With Anthropic, the stable part of the system prompt and the newest message carry cache
 *    breakpoints (its prompt cache works only with them); other providers cache by prefix alone,
 *    so their requests are left as they are.
 */
import { streamText } from "ai";
import type {
  FinishReason,
  Instructions,
  LanguageModel,
  LanguageModelUsage,
  ModelMessage as AiSdkModelMessage,
} from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createXai } from "@ai-sdk/xai";
import { ConfigError } from "../errors/index.ts";
import { toAiSdkMessages, toAiSdkTools } from "./ai-sdk-messages.ts";
import type { ToolMediaMode } from "./ai-sdk-messages.ts";
import { modelAcceptsImages } from "./media.ts";
import { ProviderTimeoutError } from "./provider-failure.ts";
import { providerEnvironmentVariables } from "./providers.ts";
import type { ModelProvider } from "./providers.ts";
import { retryModelCall } from "./retry.ts";
import { emitTextDelta } from "./text-deltas.ts";
import type { RetryOptions, Sleep } from "./retry.ts";
import type { InferRequest, InferResult, ModelClient, ToolCall } from "./types.ts";

/** Options for `createAiSdkModel`. */
export interface AiSdkModelOptions {
  provider: ModelProvider;
  /** The provider's model name, e.g. `gpt-4.1-mini` or `llama3.2:3b`. */
  model: string;
  /** Required for openai, anthropic and xai; optional for openai-compatible (A2). */
  apiKey?: string | undefined;
  /** Required for openai-compatible (e.g. `http://127.0.0.1:11434/v1`); overrides the default for the others. */
  baseUrl?: string | undefined;
  retry?: RetryOptions | undefined;
  /** Abort an attempt when the stream is silent this long (A4). @default 300000 */
  idleTimeoutMs?: number | undefined;
  /** Injectable wait between attempts, for tests. @default a real timer */
  sleep?: Sleep | undefined;
  /** Injectable jitter source in [0, 1), for tests. @default Math.random */
  random?: (() => number) | undefined;
  /**
   * Whether the model reads images in tool results.
   * @default by provider and model name (`modelAcceptsImages`): hosted vision models yes, local
   * models only when their name says so (llava, qwen2.5vl, gemma3, ...)
   */
  acceptsImages?: boolean | undefined;
  /** The client's id. @default `provider:model`; a named OpenAI-compatible server's is `name:model` */
  id?: string | undefined;
}

/** Default for `AiSdkModelOptions.idleTimeoutMs`: long enough for reasoning models to think. */
export const defaultIdleTimeoutMs = 300_000;

function trimTrailingSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

/** The providers' public endpoints, passed explicitly (A2). */
const defaultBaseUrls: Record<Exclude<ModelProvider, "openai-compatible">, string> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com/v1",
  xai: "https://api.x.ai/v1",
};

/** Builds the AI SDK language model for a provider (A2). */
function createLanguageModel(options: AiSdkModelOptions): LanguageModel {
  const { provider, model } = options;
  const baseURL = options.baseUrl === undefined ? undefined : trimTrailingSlash(options.baseUrl);
  if (provider === "openai-compatible") {
    if (baseURL === undefined || baseURL === "") {
      throw new ConfigError(
        `openai-compatible: a base URL is required (set ${providerEnvironmentVariables[provider].baseUrl}, e.g. http://127.0.0.1:11434/v1 for Ollama)`,
      );
    }
    return createOpenAICompatible({
      name: "openai-compatible",
      baseURL,
      ...(options.apiKey === undefined || options.apiKey === "" ? {} : { apiKey: options.apiKey }),
      includeUsage: true,
    }).chatModel(model);
  }
  const apiKey = options.apiKey;
  if (apiKey === undefined || apiKey === "") {
    throw new ConfigError(
      `${provider}: an API key is required (set ${providerEnvironmentVariables[provider].apiKey})`,
    );
  }
  // A2: always a base URL, else @ai-sdk/openai and @ai-sdk/anthropic read *_BASE_URL themselves.
  const settings = { apiKey, baseURL: baseURL ?? defaultBaseUrls[provider] };
  switch (provider) {
    case "openai":
      // Chat Completions rather than Responses: the same wire format as every OpenAI-compatible
      // server, and Roost keeps no server-side conversation state.
      return createOpenAI(settings).chat(model);
    case "anthropic":
      return createAnthropic(settings).languageModel(model);
    case "xai":
      return createXai(settings).languageModel(model);
  }
}

/** Where a provider's API takes tool images (M4): Chat Completions tool messages hold text only. */
const toolMediaRoutes: Record<ModelProvider, Exclude<ToolMediaMode, "drop">> = {
  openai: "user-message",
  "openai-compatible": "user-message",
  anthropic: "tool-result",
  xai: "tool-result",
};

function toFinishReason(
  reason: FinishReason | undefined,
  toolCallCount: number,
): InferResult["finishReason"] {
  // Some OpenAI-compatible servers (Ollama among them) report "stop" alongside tool calls.
  if (toolCallCount > 0 && (reason === "stop" || reason === undefined)) return "tool-calls";
  switch (reason) {
    case "stop":
    case "length":
    case "content-filter":
    case "tool-calls":
    case "error":
    case "other":
      return reason;
    case "interrupted":
    case undefined:
      return "other";
  }
}

function toUsage(usage: LanguageModelUsage | undefined): InferResult["usage"] {
  const cached = usage?.inputTokenDetails?.cacheReadTokens;
  return {
    inputTokens: usage?.inputTokens ?? 0,
    outputTokens: usage?.outputTokens ?? 0,
    // Usage records price cached input at the cached price (docs/usage.md). Providers that do
    // not report caching answer 0 here, so 0 says nothing and is left out.
    ...(cached === undefined || cached === 0 ? {} : { cachedInputTokens: cached }),
  };
}

/** Creates a `ModelClient` for `provider:model` through the AI SDK. Throws `ConfigError` when credentials are missing. */
export function createAiSdkModel(options: AiSdkModelOptions): ModelClient {
  const languageModel = createLanguageModel(options);
  const id = options.id ?? `${options.provider}:${options.model}`;
  const idleTimeoutMs = options.idleTimeoutMs ?? defaultIdleTimeoutMs;
  const acceptsImages =
    options.acceptsImages ?? modelAcceptsImages(options.provider, options.model);
  const media: ToolMediaMode = acceptsImages ? toolMediaRoutes[options.provider] : "drop";
  const context = {
    provider: options.provider,
    model: options.model,
    baseUrl: options.baseUrl === undefined ? undefined : trimTrailingSlash(options.baseUrl),
  };

  async function attempt(request: InferRequest): Promise<InferResult> {
    const idle = new AbortController();
    let idleTimer: NodeJS.Timeout | undefined;
    const touch = (): void => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(
        () => idle.abort(new ProviderTimeoutError(idleTimeoutMs)),
        idleTimeoutMs,
      ); // A4
    };
    const abortSignal =
      request.signal === undefined ? idle.signal : AbortSignal.any([request.signal, idle.signal]);
    touch();
    try {
      const caching = options.provider === "anthropic"; // A6
      const messages = toAiSdkMessages(request.messages, { media }); // A5
      if (caching) markCacheBreakpoint(messages.at(-1));
      const stream = streamText({
        model: languageModel,
        instructions: caching ? cachedInstructions(request) : request.system,
        messages,
        tools: toAiSdkTools(request.tools),
        maxRetries: 0, // A1
        abortSignal,
        // Errors arrive as `error` parts below; the default handler would only log them.
        onError: () => {},
      });

      let text = "";
      const toolCalls: ToolCall[] = [];
      let usage: LanguageModelUsage | undefined;
      let finishReason: FinishReason | undefined;
      let streamError: { error: unknown } | undefined;
      for await (const part of stream.fullStream) {
        touch();
        switch (part.type) {
          case "text-delta":
            text += part.text;
            emitTextDelta(request, part.text); // A3
            break;
          case "tool-call":
            // Invalid calls (unknown tool, unparsable JSON) come through too, with the raw input:
            // the loop answers them with a tool error so the model can correct itself.
            toolCalls.push({ id: part.toolCallId, name: part.toolName, input: part.input });
            break;
          case "finish-step":
            usage = part.usage;
            finishReason = part.finishReason;
            break;
          case "error":
            streamError ??= { error: part.error };
            break;
          default:
            break;
        }
      }
      if (idle.signal.aborted) throw idle.signal.reason; // A4
      request.signal?.throwIfAborted();
      if (streamError !== undefined) throw streamError.error;
      return {
        text,
        toolCalls,
        usage: toUsage(usage),
        finishReason: toFinishReason(finishReason, toolCalls.length),
        model: id,
      };
    } finally {
      clearTimeout(idleTimer);
    }
  }

  return {
    id,
    isDemo: false,
    acceptsImages,
    infer: (request) =>
      retryModelCall(() => attempt(request), {
        retry: options.retry,
        sleep: options.sleep,
        random: options.random,
        signal: request.signal,
        context,
        onRetry: request.onRetry,
      }),
  };
}

const ephemeral = { anthropic: { cacheControl: { type: "ephemeral" } } } as const;

/**
 * A6: Anthropic caches a prompt only up to explicit breakpoints. The system prompt is split where
 * its stable part ends (the rules, instructions, tool names and skills that stay the same turn
 * after turn), with a breakpoint after that part; memory and the summary, which change more
 * often, follow uncached.
 */
function cachedInstructions(request: InferRequest): Instructions {
  const cut = request.stableSystemChars ?? 0;
  const stable = request.system.slice(0, cut).trimEnd();
  const rest = request.system.slice(cut).trimStart();
  if (stable === "") return request.system;
  return [
    { role: "system", content: stable, providerOptions: ephemeral },
    ...(rest === "" ? [] : [{ role: "system" as const, content: rest }]),
  ];
}

/** A6: a breakpoint on the newest message, so the next call of the turn reads the whole prefix from the cache. */
function markCacheBreakpoint(message: AiSdkModelMessage | undefined): void {
  if (message === undefined) return;
  message.providerOptions = { ...message.providerOptions, ...ephemeral };
}
