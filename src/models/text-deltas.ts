/**
 * Delivering text deltas to live views: every model client streams through `emitTextDelta`, and
 * the offline models (demo, scripted) cut their replies into word-sized pieces so live views see
 * the same shape of deltas as from a real provider.
 */
import type { InferRequest } from "./types.ts";

/** Word-sized pieces (each word with the whitespace before it) whose concatenation is `text`. */
export function splitIntoWordPieces(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? [];
}

/**
 * Passes one delta to `request.onTextDelta`. A failing live view must not fail the model call:
 * deltas are not journaled and the final text is returned regardless.
 */
export function emitTextDelta(request: InferRequest, delta: string): void {
  if (request.onTextDelta === undefined || delta === "") return;
  try {
    request.onTextDelta(delta);
  } catch {
    // See above: deltas are best effort.
  }
}
