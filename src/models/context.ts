/**
 * How much a model can read, and how to tell that a call was too long for it. The loop uses this
 * to decide when to compact a conversation (memory issue §3).
 */
import { isRoostError } from "../errors/index.ts";
import type { ModelClient } from "./types.ts";

/** A context window for models that do not state theirs. @default 128000 tokens */
export const defaultContextWindowTokens = 128_000;

/** A rough token count: about four characters per token for English text and code. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export function contextWindowOf(model: Pick<ModelClient, "contextWindowTokens">): number {
  return model.contextWindowTokens ?? defaultContextWindowTokens;
}

/** A model call that failed because the conversation is longer than the model accepts. */
export function isContextOverflow(error: unknown): boolean {
  return (
    isRoostError(error) && error.code === "model_error" && error.details?.contextOverflow === true
  );
}
