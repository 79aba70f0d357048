/**
 * MEM5: the words SQLite's log index holds. Each word of an entry is indexed as one token with
 * its bot in front (`o<12 hex of the bot id's hash><word>`), so a one-word search reads only that
 * bot's entries and bm25 weighs a word by how rare it is in that bot's log. The SQLite driver
 * registers `logIndexWords` as the SQL function `roost_log_words` (migration 17 uses it).
 */
import { createHash } from "node:crypto";

/** The token every word of `botId`'s entries starts with; fixed length, so tokens parse one way. */
export function logOwnerToken(botId: string): string {
  return `o${createHash("sha256").update(botId).digest("hex").slice(0, 12)}`;
}

/** Letters and digits, at least two, lowercased: the words a search can ask for. */
export function textWords(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? [];
}

/** What the index stores for an entry: each word as its bot's token. */
export function logIndexWords(botId: string, text: string): string {
  const owner = logOwnerToken(botId);
  return textWords(text)
    .map((word) => owner + word)
    .join(" ");
}
