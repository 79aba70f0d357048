/**
 * What bots remember (ARCHITECTURE.md §8), as the store keeps it: facts in tiers, and every change
 * to them as a revision (who, where, before and after), so people can review and revert. The
 * rules (limits, review mode, what a pass may touch) live in src/memory/; the store makes each
 * change atomic.
 *
 * Invariants (both implementations; checked by store.contract.ts):
 *   MEM1 a fact changes only together with the revision that records the change (one transaction);
 *        a proposed revision changes nothing until it is accepted.
 *   MEM2 limits passed with a change are checked in the same transaction as the write, so two
 *        concurrent adds can never exceed them.
 *   MEM3 a change with a key is applied once: repeating it returns the revision it made.
 *   MEM4 a removed fact keeps its id and text (removedAt is set), so a revert restores it.
 *   MEM5 a log search costs the same however long the log is: each word of the query ranks at
 *        most `searchCandidatesPerWord` of the bot's entries that contain it, the newest ones. An
 *        entry with a rare word is always found; among hundreds of entries sharing only common
 *        words, the newer ones are (recency ranks them anyway).
 */

/**
 * user: shared by all of an account's bots; profile: one bot's facts; log: dated entries; note:
 * short-lived; team: a team bot's one team memory, kept under its owner's account and read by
 * everyone who talks to it (docs/teams.md "Memory").
 */
export type MemoryTier = "user" | "profile" | "log" | "note" | "team";
export const memoryTiers: readonly MemoryTier[] = ["user", "profile", "log", "note", "team"];

/** Who made a change: the bot's memory tool, the post-turn pass, or a person. */
export type MemoryAuthor = "tool" | "pass" | "user";
export type MemoryAction = "add" | "replace" | "remove";
export type MemoryRevisionStatus = "applied" | "proposed" | "rejected";

export interface MemoryFact {
  id: string;
  accountId: string;
  /** null for user facts (shared by the account's bots). */
  botId: string | null;
  tier: MemoryTier;
  text: string;
  createdAt: number;
  updatedAt: number;
  /** Notes expire; other tiers never do. */
  expiresAt: number | null;
  /** MEM4 */
  removedAt: number | null;
}

export interface MemoryRevision {
  id: string;
  accountId: string;
  botId: string | null;
  factId: string;
  tier: MemoryTier;
  action: MemoryAction;
  author: MemoryAuthor;
  conversationId: string | null;
  turnId: string | null;
  before: string | null;
  after: string | null;
  status: MemoryRevisionStatus;
  /** The revision this one reverts. */
  revertOf: string | null;
  /** Provenance: the person the change was made for (the talking person), when known. */
  byAccountId: string | null;
  createdAt: number;
}

export interface MemoryLimits {
  maxFacts: number;
  maxChars: number;
}

export interface MemoryChange {
  accountId: string;
  /** null for the user tier. */
  botId: string | null;
  tier: MemoryTier;
  action: MemoryAction;
  /** For replace and remove. */
  factId?: string;
  /** For add and replace. */
  text?: string;
  author: MemoryAuthor;
  conversationId?: string | null;
  turnId?: string | null;
  /** Epoch ms (notes). */
  expiresAt?: number | null;
  /** Record the change as proposed; apply nothing (review mode, MEM1). */
  propose?: boolean;
  revertOf?: string | null;
  /** MEM2: checked for add and replace, over the tier's active facts of the same owner. */
  limits?: MemoryLimits;
  /** MEM3 */
  key?: string;
  /** Provenance: the person the change is made for. */
  byAccountId?: string | null;
}

export interface MemoryLogHit extends MemoryFact {
  /** Lexical relevance: higher is better (0 when nothing matched). */
  score: number;
}

export interface MemoryStore {
  /** MEM1–MEM4. Throws `conflict` when a limit would be passed, `not_found` for a missing fact. */
  changeMemory(change: MemoryChange): Promise<{ revision: MemoryRevision; fact: MemoryFact }>;
  /** Applies (accept) or drops (reject) a proposed revision; limits are checked as for a change. */
  decideMemoryRevision(
    revisionId: string,
    decision: "accept" | "reject",
    limits?: MemoryLimits,
  ): Promise<{ revision: MemoryRevision; fact: MemoryFact }>;
  /** Active facts (not removed, not expired at `now`), oldest first. `botId` null = user facts. */
  listMemoryFacts(query: {
    accountId: string;
    botId: string | null;
    tiers?: readonly MemoryTier[];
    now?: number;
    /** Newest first instead of oldest first. */
    newestFirst?: boolean;
    limit?: number;
  }): Promise<MemoryFact[]>;
  getMemoryFact(id: string): Promise<MemoryFact | undefined>;
  /** Log entries of the bot matching any word of `text`, best first (full-text search). */
  searchMemoryLog(query: {
    accountId: string;
    botId: string;
    text: string;
    limit: number;
  }): Promise<MemoryLogHit[]>;
  getMemoryRevision(id: string): Promise<MemoryRevision | undefined>;
  /** Newest first; `before` pages by revision id. `botId` null = user-scope revisions. */
  listMemoryRevisions(query: {
    accountId: string;
    botId: string | null;
    status?: MemoryRevisionStatus;
    before?: string;
    limit?: number;
  }): Promise<MemoryRevision[]>;
}
