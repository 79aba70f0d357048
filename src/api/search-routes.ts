/**
 * `GET /v1/conversations/search?q=` (docs/api.md "Search"): the caller's conversations whose
 * title, messages or replies hold the words (store search-types.ts SRCH1–SRCH3).
 *
 * Invariants:
 *   SAPI1 the account comes from the API token, never from the request: another account's
 *         conversations never appear (SRCH1), nor a team bot's the caller may no longer use (TACC2).
 *   SAPI2 a query is 1 to 200 characters of text once trimmed; anything else is a 400 saying so.
 */
import type { Hono } from "hono";
import { z } from "zod";
import type { Api } from "../protocol/index.ts";
import type { Account, Conversation } from "../store/index.ts";
import type { SearchStore, Store } from "../store/index.ts";
import { mayUseConversation } from "../teams/index.ts";
import { queryInteger, readQuery } from "./validation.ts";

export const searchPath = "/v1/conversations/search";

type SearchApp = Hono<{ Variables: { account: Account } }>;

const searchQuery = z.strictObject({
  q: z
    .string()
    .trim()
    .min(1, { error: "q must hold the words to find (1 to 200 characters)" })
    .max(200, { error: "q must be at most 200 characters" }),
  limit: queryInteger("limit", { min: 1, max: 50 }).optional(),
});

/** The matching text, cut to about `width` characters around its first match. */
export function snippetOf(text: string, query: string, width = 160): string {
  const flat = text.replace(/\s+/g, " ").trim();
  const at = flat.toLowerCase().indexOf(query.toLowerCase());
  if (flat.length <= width) return flat;
  const start = Math.max(0, Math.min(at - Math.floor(width / 3), flat.length - width));
  const cut = flat.slice(start, start + width).trim();
  return `${start > 0 ? "…" : ""}${cut}${start + width < flat.length ? "…" : ""}`;
}

export function registerSearchRoutes(
  app: SearchApp,
  deps: {
    store: Store & SearchStore;
    view(accountId: string, conversations: Conversation[]): Promise<Api.Conversation[]>;
  },
): void {
  app.get(searchPath, async (context) => {
    const query = readQuery(context, searchQuery); // SAPI2
    const accountId = context.get("account").id; // SAPI1
    const hits = await deps.store.searchConversations(accountId, query.q, {
      limit: query.limit ?? 20,
    });
    const usable = await Promise.all(
      hits.map((hit) => mayUseConversation(deps.store, accountId, hit.conversation)),
    );
    const kept = hits.filter((_hit, index) => usable[index]);
    const views = await deps.view(
      accountId,
      kept.map((hit) => hit.conversation),
    );
    return context.json({
      results: kept.map((hit, index) => ({
        conversation: views[index]!,
        match:
          hit.match === null
            ? null
            : {
                seq: hit.match.seq,
                kind: hit.match.kind,
                snippet: snippetOf(hit.match.text, query.q),
              },
      })),
    } satisfies Api.ConversationSearch);
  });
}
