/**
 * Tool call ids that every provider accepts. The loop names calls after the journal
 * (`inv_…:turn:0:0:0`), which is stable across replays but too long for OpenAI (at most 40
 * characters) and outside Anthropic's `^[a-zA-Z0-9_-]+$`.
 *
 * Invariants:
 * CID1 `providerSafeCallId` is a pure function of the journal id: a replay of the same step sends
 *      the same id, and distinct journal ids get distinct ids (144 bits of SHA-256).
 * CID2 Every id sent to a provider matches `providerSafeCallIdPattern`; ids that do not (a
 *      conversation stored before CID1) are mapped within the request, the same way for the tool
 *      call and its result, and never onto an id the request already uses.
 */
import { createHash } from "node:crypto";

/** What every provider accepts as a tool call id: Anthropic's alphabet, OpenAI's length. */
export const providerSafeCallIdPattern = /^[A-Za-z0-9_-]{1,40}$/;

/** Whether every provider accepts `id` as a tool call id as it is. */
export function isProviderSafeCallId(id: string): boolean {
  return providerSafeCallIdPattern.test(id);
}

/**
 * A short id every provider accepts (`call_` + 24 base64url characters of the SHA-256 of the
 * journal id), deterministic so that a replay sends the same id (CID1).
 */
export function providerSafeCallId(journalCallId: string): string {
  const digest = createHash("sha256").update(journalCallId, "utf8").digest("base64url");
  return `call_${digest.slice(0, 24)}`;
}

/**
 * Maps the ids of one request to provider-safe ids (CID2). Safe ids stay as they are; unsafe ones
 * become `providerSafeCallId(id)`, rehashed with a counter in the (astronomically unlikely) case
 * that the result is already taken by another id of the request.
 */
export function createCallIdMapper(ids: Iterable<string>): (id: string) => string {
  const all = new Set(ids);
  const taken = new Set([...all].filter(isProviderSafeCallId));
  const mapped = new Map<string, string>();
  for (const id of all) {
    if (isProviderSafeCallId(id)) continue;
    let candidate = providerSafeCallId(id);
    for (let attempt = 1; taken.has(candidate); attempt++) {
      candidate = providerSafeCallId(`${id}\u0000${attempt}`);
    }
    taken.add(candidate);
    mapped.set(id, candidate);
  }
  return (id) => mapped.get(id) ?? (isProviderSafeCallId(id) ? id : providerSafeCallId(id));
}
