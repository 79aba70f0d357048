/**
 * The rules of memory (ARCHITECTURE.md §8; issue "Memory, skills and compaction"): tiers and
 * their limits, who may change what, reverts, and review mode. The store keeps each change atomic
 * (store MEM1–MEM4); this module decides what a change is.
 *
 * Invariants:
 *   MEMS1 user facts belong to the account (every bot of it sees them); profile, log and note
 *         belong to one bot. A change names its tier, and the tier decides the owner.
 *   MEMS2 the limits are enforced on every write with an error that tells the writer what to do:
 *         "profile is full (100 facts): replace or remove one".
 *   MEMS3 a revert is itself a revision (author: the person), and undoes exactly what its
 *         revision did: an add is removed, a replace is replaced back, a removal is restored
 *         under the same fact id.
 */
import { InvalidRequestError, NotFoundError, RoostError } from "../errors/index.ts";
import type {
  MemoryAuthor,
  MemoryFact,
  MemoryLimits,
  MemoryRevision,
  MemoryTier,
  Store,
} from "../store/index.ts";

/** MEMS2: the numbers of ARCHITECTURE.md §14 (user facts share the profile's). */
export const memoryLimits = {
  user: { maxFacts: 100, maxChars: 4000 },
  profile: { maxFacts: 100, maxChars: 4000 },
  note: { maxFacts: 30, maxChars: 6000 },
  log: { maxFacts: Number.MAX_SAFE_INTEGER, maxChars: Number.MAX_SAFE_INTEGER },
  team: { maxFacts: 100, maxChars: 6000 },
} as const satisfies Record<MemoryTier, MemoryLimits>;

/** Longest single fact, per tier. */
export const maxFactChars: Record<MemoryTier, number> = {
  user: 500,
  profile: 500,
  note: 500,
  log: 2000,
  team: 500,
};

/** How long a note lives unless told otherwise, and at most. */
export const defaultNoteTtlMs = 7 * 24 * 3600_000;
export const maxNoteTtlMs = 90 * 24 * 3600_000;

/** How many log entries go into the prompt (ARCHITECTURE.md §14). */
export const promptLogEntries = 30;

export interface MemoryEdit {
  accountId: string;
  /** The bot the change is made for (ignored for user facts, which are the account's). */
  botId: string;
  tier: MemoryTier;
  action: "add" | "replace" | "remove";
  /** For replace and remove. */
  factId?: string;
  /** For add and replace. */
  text?: string;
  author: MemoryAuthor;
  conversationId?: string;
  turnId?: string;
  /** Notes: how long the note lives. @default 7 days */
  ttlMs?: number;
  /** Review mode: record the change as a proposal. */
  propose?: boolean;
  /** A repeat with the same key changes nothing (a retried tool call). */
  key?: string;
  /** Provenance: the person the change is made for (the talking person). */
  byAccountId?: string;
  /** @default Date.now() */
  now?: number;
}

export interface MemoryView {
  user: MemoryFact[];
  profile: MemoryFact[];
  note: MemoryFact[];
  log: MemoryFact[];
}

export function ownerOf(tier: MemoryTier, botId: string): string | null {
  return tier === "user" ? null : botId; // MEMS1
}

function cleanText(tier: MemoryTier, text: string | undefined): string {
  const trimmed = (text ?? "").trim().replace(/\s+/g, " ");
  if (trimmed === "")
    throw new InvalidRequestError(`say what to remember: text must not be empty`, {
      field: "text",
    });
  if (trimmed.length > maxFactChars[tier])
    throw new InvalidRequestError(
      `a ${tier} fact is at most ${maxFactChars[tier]} characters (this one has ${trimmed.length}): shorten it, or keep long text in a file`,
      { field: "text" },
    );
  return trimmed;
}

export interface MemoryService {
  change(edit: MemoryEdit): Promise<{ revision: MemoryRevision; fact: MemoryFact }>;
  /** MEMS3 */
  revert(
    revisionId: string,
    by: { accountId: string; botId: string | null },
  ): Promise<{ revision: MemoryRevision; fact: MemoryFact }>;
  /** Accept or reject a proposal from the memory inbox. */
  decide(
    revisionId: string,
    decision: "accept" | "reject",
    by: { accountId: string; botId: string | null },
  ): Promise<{ revision: MemoryRevision; fact: MemoryFact }>;
  /** The current facts a bot works with, by tier (the log newest first, at most `logLimit`). */
  view(
    accountId: string,
    botId: string,
    options?: { logLimit?: number; now?: number },
  ): Promise<MemoryView>;
}

export function createMemoryService(store: Store): MemoryService {
  async function ownRevision(revisionId: string, by: { accountId: string; botId: string | null }) {
    const revision = await store.getMemoryRevision(revisionId);
    // Another owner's revision is as absent as one that does not exist.
    if (
      revision === undefined ||
      revision.accountId !== by.accountId ||
      revision.botId !== by.botId
    )
      throw new NotFoundError("memory revision", revisionId);
    return revision;
  }

  return {
    async change(edit) {
      const now = edit.now ?? Date.now();
      const botId = ownerOf(edit.tier, edit.botId);
      if (edit.action !== "add" && (edit.factId === undefined || edit.factId === ""))
        throw new InvalidRequestError(`say which fact to ${edit.action}: give its id`, {
          field: "id",
        });
      const text = edit.action === "remove" ? undefined : cleanText(edit.tier, edit.text);
      let expiresAt: number | null = null;
      if (edit.tier === "note" && edit.action === "add") {
        const ttl = edit.ttlMs ?? defaultNoteTtlMs;
        if (!(ttl > 0 && ttl <= maxNoteTtlMs))
          throw new InvalidRequestError(
            `a note lives between 1 hour and ${maxNoteTtlMs / 86_400_000} days`,
            { field: "expiresInHours" },
          );
        expiresAt = now + ttl;
      }
      return store.changeMemory({
        accountId: edit.accountId,
        botId,
        tier: edit.tier,
        action: edit.action,
        ...(edit.factId === undefined || edit.action === "add" ? {} : { factId: edit.factId }),
        ...(text === undefined ? {} : { text }),
        author: edit.author,
        conversationId: edit.conversationId ?? null,
        turnId: edit.turnId ?? null,
        expiresAt,
        limits: memoryLimits[edit.tier], // MEMS2
        ...(edit.propose === true ? { propose: true } : {}),
        ...(edit.key === undefined ? {} : { key: edit.key }),
        ...(edit.byAccountId === undefined ? {} : { byAccountId: edit.byAccountId }),
      });
    },

    async revert(revisionId, by) {
      const revision = await ownRevision(revisionId, by);
      if (revision.status !== "applied")
        throw new RoostError(
          "conflict",
          `revision ${revisionId} is ${revision.status}, so there is nothing to revert (accept or reject proposals instead)`,
        );
      const fact = await store.getMemoryFact(revision.factId);
      const base = {
        accountId: revision.accountId,
        botId: revision.botId,
        tier: revision.tier,
        author: "user" as const,
        revertOf: revision.id,
        limits: memoryLimits[revision.tier],
      };
      switch (revision.action) {
        case "add":
          if (fact === undefined || fact.removedAt !== null)
            throw new RoostError("conflict", "that fact is already gone; nothing to revert");
          return store.changeMemory({ ...base, action: "remove", factId: fact.id });
        case "replace":
          if (fact === undefined || fact.removedAt !== null)
            return store.changeMemory({
              ...base,
              action: "add",
              factId: revision.factId,
              text: revision.before ?? "",
            });
          return store.changeMemory({
            ...base,
            action: "replace",
            factId: fact.id,
            text: revision.before ?? "",
          });
        case "remove":
          if (fact !== undefined && fact.removedAt === null)
            throw new RoostError("conflict", "that fact is back already; nothing to revert");
          return store.changeMemory({
            ...base,
            action: "add",
            factId: revision.factId,
            text: revision.before ?? "",
          });
      }
    },

    async decide(revisionId, decision, by) {
      const revision = await ownRevision(revisionId, by);
      return store.decideMemoryRevision(revision.id, decision, memoryLimits[revision.tier]);
    },

    async view(accountId, botId, options = {}) {
      const now = options.now ?? Date.now();
      const [user, own] = await Promise.all([
        store.listMemoryFacts({ accountId, botId: null, tiers: ["user"], now }),
        store.listMemoryFacts({ accountId, botId, tiers: ["profile", "note"], now }),
      ]);
      const log = await store.listMemoryFacts({
        accountId,
        botId,
        tiers: ["log"],
        now,
        newestFirst: true,
        limit: options.logLimit ?? 50,
      });
      return {
        user,
        profile: own.filter((fact) => fact.tier === "profile"),
        note: own.filter((fact) => fact.tier === "note"),
        log,
      };
    },
  };
}
