/**
 * Which log entries go into a prompt: the most relevant `limit` of a bot's dated log, by lexical
 * match against the turn's new messages (the store's full-text search: SQLite FTS5, Postgres
 * tsvector) and recency. An embedding ranker can implement the same interface later.
 */
import type { MemoryFact, Store } from "../store/index.ts";

export interface MemoryRanker {
  /** The `limit` most relevant log entries, oldest first (prompt order). */
  relevantLog(input: {
    accountId: string;
    botId: string;
    query: string;
    now: number;
    limit: number;
  }): Promise<MemoryFact[]>;
}

export interface LexicalRankerOptions {
  /** Recency halves an entry's weight every this long. @default 14 days */
  halfLifeMs?: number;
  /** Share of the score that comes from matching words (the rest from recency). @default 0.7 */
  lexicalWeight?: number;
}

export function createLexicalRanker(
  store: Store,
  options: LexicalRankerOptions = {},
): MemoryRanker {
  const halfLifeMs = options.halfLifeMs ?? 14 * 86_400_000;
  const lexicalWeight = options.lexicalWeight ?? 0.7;
  return {
    async relevantLog({ accountId, botId, query, now, limit }) {
      const [hits, recent] = await Promise.all([
        store.searchMemoryLog({ accountId, botId, text: query, limit: limit * 3 }),
        store.listMemoryFacts({
          accountId,
          botId,
          tiers: ["log"],
          now,
          newestFirst: true,
          limit: limit * 2,
        }),
      ]);
      const best = Math.max(0, ...hits.map((hit) => hit.score));
      const scored = new Map<string, { fact: MemoryFact; score: number }>();
      const recency = (fact: MemoryFact) => 2 ** (-Math.max(0, now - fact.createdAt) / halfLifeMs);
      for (const fact of recent)
        scored.set(fact.id, { fact, score: (1 - lexicalWeight) * recency(fact) });
      for (const hit of hits) {
        const lexical = best > 0 ? hit.score / best : 0;
        scored.set(hit.id, {
          fact: hit,
          score: lexicalWeight * lexical + (1 - lexicalWeight) * recency(hit),
        });
      }
      return [...scored.values()]
        .sort((a, b) => b.score - a.score || b.fact.createdAt - a.fact.createdAt)
        .slice(0, limit)
        .map((entry) => entry.fact)
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
    },
  };
}
