/** Search across an account's conversations (search-types.ts, SRCH1–SRCH3), written once against `SqlDriver`. */
import type { SqlDriver } from "./driver.ts";
import type { SearchHit, SearchStore } from "./search-types.ts";
import type { Conversation } from "./types.ts";

/** How many matching rows of each kind one search reads before grouping. @default 400 */
const scannedRows = 400;

/** SRCH2: a LIKE pattern that matches `query` as plain text, anywhere, with `\` as the escape. */
export function likePattern(query: string): string {
  return `%${query.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
}

export function createSearchQueries<Row>(
  driver: SqlDriver,
  toConversation: (row: Row) => Conversation,
): SearchStore {
  return {
    async searchConversations(accountId, query, { limit = 20 } = {}) {
      const pattern = likePattern(query);
      const needle = query.toLowerCase();
      // SRCH1: every query joins on the account's own conversations.
      const [titled, messages, replies] = await Promise.all([
        driver.all<Row>(
          `SELECT * FROM conversations WHERE account_id = ? AND LOWER(title) LIKE ? ESCAPE '\\'
           ORDER BY updated_at DESC, id LIMIT ?`,
          [accountId, pattern, scannedRows],
        ),
        driver.all<{ conversation_id: string; seq: number | string; text: string }>(
          `SELECT m.conversation_id, m.seq, m.text FROM messages m
           JOIN conversations c ON c.id = m.conversation_id
           WHERE c.account_id = ? AND LOWER(m.text) LIKE ? ESCAPE '\\'
           ORDER BY m.seq DESC LIMIT ?`,
          [accountId, pattern, scannedRows],
        ),
        // The payload is JSON text: LIKE finds candidates, the parsed text decides (SRCH2).
        driver.all<{ conversation_id: string; seq: number | string; payload: string }>(
          `SELECT s.conversation_id, s.seq, s.payload FROM steps s
           JOIN conversations c ON c.id = s.conversation_id
           WHERE c.account_id = ? AND s.kind = 'reply' AND LOWER(s.payload) LIKE ? ESCAPE '\\'
           ORDER BY s.seq DESC LIMIT ?`,
          [accountId, pattern, scannedRows],
        ),
      ]);
      const matches = new Map<string, NonNullable<SearchHit["match"]>>();
      const offer = (conversationId: string, match: NonNullable<SearchHit["match"]>) => {
        const known = matches.get(conversationId);
        if (known === undefined || known.seq < match.seq) matches.set(conversationId, match); // SRCH3
      };
      for (const row of messages)
        offer(row.conversation_id, { seq: Number(row.seq), kind: "message", text: row.text });
      for (const row of replies) {
        const text = (JSON.parse(row.payload) as { text?: unknown }).text;
        if (typeof text === "string" && text.toLowerCase().includes(needle))
          offer(row.conversation_id, { seq: Number(row.seq), kind: "reply", text });
      }
      const conversations = new Map(
        titled.map(toConversation).map((conversation) => [conversation.id, conversation]),
      );
      const missing = [...matches.keys()].filter((id) => !conversations.has(id));
      if (missing.length > 0) {
        const rows = await driver.all<Row>(
          `SELECT * FROM conversations WHERE account_id = ? AND id IN (${missing.map(() => "?").join(", ")})`,
          [accountId, ...missing],
        );
        for (const conversation of rows.map(toConversation))
          conversations.set(conversation.id, conversation);
      }
      return [...conversations.values()]
        .sort((a, b) => b.updatedAt - a.updatedAt || a.id.localeCompare(b.id))
        .slice(0, limit)
        .map((conversation) => ({ conversation, match: matches.get(conversation.id) ?? null }));
    },
  };
}
