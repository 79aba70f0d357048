/**
 * Search across one account's conversations (issue 16 §2, docs/chat.md "Search"): titles, the
 * messages people sent and the bots' replies.
 *
 * Invariants (both implementations; checked by search.contract.ts):
 *   SRCH1 only conversations the account started are searched: another account's titles and text
 *         never appear, whatever the query.
 *   SRCH2 the query is text, never a pattern: `%`, `_` and `\` match themselves; case is ignored.
 *   SRCH3 each conversation appears once, newest first, with the newest matching text (if any).
 */
import type { Conversation } from "./types.ts";

export interface SearchHit {
  conversation: Conversation;
  /** The newest message or reply that matched, when the text (not only the title) matched. */
  match: { seq: number; kind: "message" | "reply"; text: string } | null;
}

export interface SearchStore {
  /** SRCH1–SRCH3. `query` is trimmed by the caller and not empty. */
  searchConversations(
    accountId: string,
    query: string,
    options?: { limit?: number },
  ): Promise<SearchHit[]>;
}
