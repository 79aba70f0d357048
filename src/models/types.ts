/**
 * The seam between the loop and any language model. The loop only ever sees these types; the
 * AI SDK adapters, the demo model and the scripted test model implement `ModelClient`.
 */

/** A tool the model may call, as offered to it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's input object. */
  inputSchema: Record<string, unknown>;
}

export interface ToolCall {
  /** Stable id of this call (from the provider, or derived by the loop). */
  id: string;
  name: string;
  input: unknown;
}

/** An image (or later other media) a tool returned, for models that accept it. */
export interface MediaPart {
  type: "image";
  /** e.g. image/png */
  mimeType: string;
  /** base64 */
  data: string;
}

export type ModelMessage =
  | {
      role: "user";
      text: string;
      /** Images the person attached; dropped (the text names their files) for models without image input. */
      media?: MediaPart[];
    }
  | { role: "assistant"; text: string; toolCalls: ToolCall[] }
  | {
      role: "tool";
      callId: string;
      name: string;
      output: string;
      isError: boolean;
      /** Images the tool returned; dropped (the text says what they were) for models without image input. */
      media?: MediaPart[];
    };

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, how many the provider read from its prompt cache, when it says. */
  cachedInputTokens?: number;
}

export interface InferRequest {
  system: string;
  /**
   * The first this many characters of `system` stay the same for many turns (rules, the bot's
   * instructions, tool names, skills): providers with explicit prompt caching (Anthropic) get a
   * cache breakpoint there, and one on the last message. Others cache by prefix on their own.
   */
  stableSystemChars?: number;
  messages: ModelMessage[];
  tools: ToolSpec[];
  /** Called with each piece of text as the provider streams it. Not journaled; for live views only. */
  onTextDelta?: (delta: string) => void;
  /**
   * Called when an attempt failed and another follows: text streamed so far belongs to the
   * failed attempt, and live views should drop it.
   */
  onRetry?: (info: { attempt: number; delayMs: number }) => void;
  signal?: AbortSignal;
}

export interface InferResult {
  text: string;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  finishReason: "stop" | "tool-calls" | "length" | "content-filter" | "error" | "other";
  /** `provider:model` that produced this result, e.g. `openai:gpt-4.1-mini` or `demo`. */
  model: string;
}

export interface ModelClient {
  /** `provider:model`, or `demo`. */
  readonly id: string;
  /** True for the built-in offline demo model; UIs label its output. */
  readonly isDemo: boolean;
  /** How many tokens the model reads at most (prompt and history). @default 128000 */
  readonly contextWindowTokens?: number;
  /**
   * Whether images in tool results (`media`) reach the model. When false the client replaces them
   * with a note saying what was returned, so callers may always pass them. Absent means false.
   */
  readonly acceptsImages?: boolean;
  /**
   * One model call. Retries provider errors and rate limits with backoff itself; after the last
   * attempt throws a terminal `ModelError` whose message says what to do.
   */
  infer(request: InferRequest): Promise<InferResult>;
}
