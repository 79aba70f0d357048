/**
 * The memory part of the store (memory-types.ts, MEM1–MEM4), written once against `SqlDriver`.
 * Full-text search differs: SQLite keeps log entries in an FTS5 table maintained in the same
 * transactions; Postgres indexes a generated tsvector column.
 */
import { NotFoundError, RoostError } from "../errors/index.ts";
import type { IdGenerator } from "../ids.ts";
import type { SqlDriver, SqlExecutor } from "./driver.ts";
import { logIndexWords, logOwnerToken, textWords } from "./log-words.ts";
import type {
  MemoryChange,
  MemoryFact,
  MemoryLimits,
  MemoryLogHit,
  MemoryRevision,
  MemoryStore,
  MemoryTier,
} from "./memory-types.ts";

interface FactRow {
  id: string;
  account_id: string;
  bot_id: string | null;
  tier: string;
  text: string;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  removed_at: number | null;
}
interface RevisionRow {
  id: string;
  account_id: string;
  bot_id: string | null;
  fact_id: string;
  tier: string;
  action: string;
  author: string;
  conversation_id: string | null;
  turn_id: string | null;
  before_text: string | null;
  after_text: string | null;
  status: string;
  revert_of: string | null;
  by_account_id: string | null;
  created_at: number;
}

const factColumns =
  "id, account_id, bot_id, tier, text, created_at, updated_at, expires_at, removed_at";
const revisionColumns =
  "id, account_id, bot_id, fact_id, tier, action, author, conversation_id, turn_id, before_text, after_text, status, revert_of, created_at, by_account_id";

const toFact = (row: FactRow): MemoryFact => ({
  id: row.id,
  accountId: row.account_id,
  botId: row.bot_id,
  tier: row.tier as MemoryTier,
  text: row.text,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
  expiresAt: row.expires_at === null ? null : Number(row.expires_at),
  removedAt: row.removed_at === null ? null : Number(row.removed_at),
});
const toRevision = (row: RevisionRow): MemoryRevision => ({
  id: row.id,
  accountId: row.account_id,
  botId: row.bot_id,
  factId: row.fact_id,
  tier: row.tier as MemoryTier,
  action: row.action as MemoryRevision["action"],
  author: row.author as MemoryRevision["author"],
  conversationId: row.conversation_id,
  turnId: row.turn_id,
  before: row.before_text,
  after: row.after_text,
  status: row.status as MemoryRevision["status"],
  revertOf: row.revert_of,
  byAccountId: row.by_account_id ?? null,
  createdAt: Number(row.created_at),
});

/**
 * Words too common to tell entries apart: matching them would rank every entry and cost a scan of
 * the whole log.
 */
const stopWords = new Set(
  (
    "a about above after again all am an and any are as at be because been before being below " +
    "between both but by can could did do does doing down during each few for from further had has " +
    "have having he her here hers herself him himself his how i if in into is it its itself just " +
    "me more most my myself no nor not now of off on once only or other our ours ourselves out over " +
    "own same she should so some such than that the their theirs them themselves then there these " +
    "they this those through to too under until up very was we were what when where which while " +
    "who whom why will with would you your yours yourself yourselves please thanks hi hello ok yes"
  ).split(" "),
);

/** Words of a query, safe for either full-text syntax (letters and digits only), minus stop words. */
export function searchWords(text: string): string[] {
  const words = textWords(text).filter((word) => !stopWords.has(word));
  return [...new Set(words)].slice(0, 32);
}

/** MEM5: how many of the newest log entries matching one word a search ranks. */
export const searchCandidatesPerWord = 50;

const ownerClause = (botId: string | null) => (botId === null ? "bot_id IS NULL" : "bot_id = ?");
const ownerParams = (botId: string | null) => (botId === null ? [] : [botId]);

export function createMemoryQueries(
  driver: SqlDriver,
  now: () => number,
  ids: IdGenerator,
): MemoryStore {
  const sqlite = driver.kind === "sqlite";

  async function factById(executor: SqlExecutor, id: string) {
    const rows = await executor.all<FactRow>(
      `SELECT ${factColumns} FROM memory_facts WHERE id = ?`,
      [id],
    );
    return rows[0] === undefined ? undefined : toFact(rows[0]);
  }
  async function revisionById(executor: SqlExecutor, id: string) {
    const rows = await executor.all<RevisionRow>(
      `SELECT ${revisionColumns} FROM memory_revisions WHERE id = ?`,
      [id],
    );
    return rows[0] === undefined ? undefined : toRevision(rows[0]);
  }

  /** MEM2: would `text` (replacing `replacing`, if any) keep the owner's tier within `limits`? */
  async function checkLimits(
    tx: SqlExecutor,
    fact: Pick<MemoryFact, "accountId" | "botId" | "tier">,
    text: string,
    replacing: string | undefined,
    limits: MemoryLimits | undefined,
    at: number,
  ) {
    if (limits === undefined) return;
    const rows = await tx.all<{ id: string; text: string }>(
      `SELECT id, text FROM memory_facts WHERE account_id = ? AND ${ownerClause(fact.botId)} AND tier = ?
         AND removed_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`,
      [fact.accountId, ...ownerParams(fact.botId), fact.tier, at],
    );
    const others = rows.filter((row) => row.id !== replacing);
    const label = fact.tier === "user" ? "the user's facts" : fact.tier;
    if (replacing === undefined && others.length + 1 > limits.maxFacts)
      throw new RoostError(
        "conflict",
        `${label} is full (${limits.maxFacts} facts): replace or remove one`,
        { details: { tier: fact.tier, limit: limits.maxFacts } },
      );
    const chars = others.reduce((sum, row) => sum + row.text.length, 0) + text.length;
    if (chars > limits.maxChars)
      throw new RoostError(
        "conflict",
        `${label} would hold ${chars} characters, over its ${limits.maxChars}: shorten it, or replace or remove a fact`,
        { details: { tier: fact.tier, limit: limits.maxChars } },
      );
  }

  /**
   * MEM2: serialize memory writes of one owner by locking its row (the bot's, or the account's for
   * user facts), so concurrent transactions cannot both see room under a limit.
   */
  async function lockOwner(tx: SqlExecutor, accountId: string, botId: string | null) {
    if (botId === null) await tx.run("UPDATE accounts SET name = name WHERE id = ?", [accountId]);
    else await tx.run("UPDATE bots SET updated_at = updated_at WHERE id = ?", [botId]);
  }

  async function indexLog(tx: SqlExecutor, fact: MemoryFact) {
    if (!sqlite || fact.tier !== "log") return; // Postgres indexes a generated column
    await tx.run("DELETE FROM memory_log_words WHERE fact_id = ?", [fact.id]);
    if (fact.removedAt === null)
      await tx.run("INSERT INTO memory_log_words (fact_id, words) VALUES (?, ?)", [
        fact.id,
        logIndexWords(fact.botId!, fact.text),
      ]);
  }

  /** Writes the fact as the revision says (MEM1, MEM4); returns it after. */
  async function apply(
    tx: SqlExecutor,
    revision: MemoryRevision,
    expiresAt: number | null,
    limits?: MemoryLimits,
  ) {
    const at = now();
    if (revision.action === "add") {
      const existing = await factById(tx, revision.factId);
      if (existing === undefined) {
        await checkLimits(tx, revision, revision.after ?? "", undefined, limits, at);
        const fact: MemoryFact = {
          id: revision.factId,
          accountId: revision.accountId,
          botId: revision.botId,
          tier: revision.tier,
          text: revision.after ?? "",
          createdAt: at,
          updatedAt: at,
          expiresAt,
          removedAt: null,
        };
        await tx.run(
          `INSERT INTO memory_facts (${factColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
          [fact.id, fact.accountId, fact.botId, fact.tier, fact.text, at, at, expiresAt],
        );
        await indexLog(tx, fact);
        return fact;
      }
      // A revert of a removal brings the same fact back (MEM4).
      await checkLimits(tx, existing, revision.after ?? "", undefined, limits, at);
      await tx.run(
        "UPDATE memory_facts SET text = ?, removed_at = NULL, updated_at = ? WHERE id = ?",
        [revision.after ?? "", at, existing.id],
      );
      const fact = { ...existing, text: revision.after ?? "", removedAt: null, updatedAt: at };
      await indexLog(tx, fact);
      return fact;
    }
    const existing = await factById(tx, revision.factId);
    if (existing === undefined || existing.removedAt !== null)
      throw new NotFoundError("memory fact", revision.factId);
    if (revision.action === "replace") {
      await checkLimits(tx, existing, revision.after ?? "", existing.id, limits, at);
      await tx.run("UPDATE memory_facts SET text = ?, updated_at = ? WHERE id = ?", [
        revision.after ?? "",
        at,
        existing.id,
      ]);
      const fact = { ...existing, text: revision.after ?? "", updatedAt: at };
      await indexLog(tx, fact);
      return fact;
    }
    await tx.run("UPDATE memory_facts SET removed_at = ?, updated_at = ? WHERE id = ?", [
      at,
      at,
      existing.id,
    ]);
    const fact = { ...existing, removedAt: at, updatedAt: at };
    await indexLog(tx, fact);
    return fact;
  }

  async function insertRevision(
    tx: SqlExecutor,
    revision: MemoryRevision,
    key: string | undefined,
  ) {
    await tx.run(
      `INSERT INTO memory_revisions (${revisionColumns}, change_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        revision.id,
        revision.accountId,
        revision.botId,
        revision.factId,
        revision.tier,
        revision.action,
        revision.author,
        revision.conversationId,
        revision.turnId,
        revision.before,
        revision.after,
        revision.status,
        revision.revertOf,
        revision.createdAt,
        revision.byAccountId,
        key ?? null,
      ],
    );
  }

  return {
    async changeMemory(change: MemoryChange) {
      return driver.transaction(async (tx) => {
        await lockOwner(tx, change.accountId, change.botId); // MEM2
        if (change.key !== undefined) {
          // MEM3, under the owner's lock: a concurrent repeat waits, then finds this revision.
          const rows = await tx.all<RevisionRow>(
            `SELECT ${revisionColumns} FROM memory_revisions WHERE change_key = ?`,
            [change.key],
          );
          if (rows[0] !== undefined) {
            const revision = toRevision(rows[0]);
            return { revision, fact: (await factById(tx, revision.factId))! };
          }
        }
        let before: string | null = null;
        let factId = change.factId;
        if (change.action === "add" && factId !== undefined) {
          // Restoring a removed fact under its own id (a revert of a removal, MEM4).
          const existing = await factById(tx, factId);
          if (
            existing === undefined ||
            existing.removedAt === null ||
            existing.accountId !== change.accountId ||
            existing.botId !== change.botId
          )
            throw new NotFoundError("removed memory fact", factId);
        } else if (change.action === "add") {
          factId = ids("mem");
        } else {
          const existing = factId === undefined ? undefined : await factById(tx, factId);
          if (
            existing === undefined ||
            existing.removedAt !== null ||
            existing.accountId !== change.accountId ||
            existing.botId !== change.botId ||
            existing.tier !== change.tier
          )
            throw new NotFoundError("memory fact", factId ?? "");
          before = existing.text;
        }
        const revision: MemoryRevision = {
          id: ids("rev"),
          accountId: change.accountId,
          botId: change.botId,
          factId: factId!,
          tier: change.tier,
          action: change.action,
          author: change.author,
          conversationId: change.conversationId ?? null,
          turnId: change.turnId ?? null,
          before,
          after: change.action === "remove" ? null : (change.text ?? ""),
          status: change.propose === true ? "proposed" : "applied",
          revertOf: change.revertOf ?? null,
          byAccountId: change.byAccountId ?? null,
          createdAt: now(),
        };
        let fact: MemoryFact;
        if (change.propose === true) {
          // MEM1: nothing changes yet; an added fact does not exist until accepted.
          fact = (change.action === "add" ? undefined : await factById(tx, revision.factId)) ?? {
            id: revision.factId,
            accountId: revision.accountId,
            botId: revision.botId,
            tier: revision.tier,
            text: revision.after ?? "",
            createdAt: revision.createdAt,
            updatedAt: revision.createdAt,
            expiresAt: change.expiresAt ?? null,
            removedAt: null,
          };
          // The limits must hold now too, or the owner would be asked to accept what cannot fit.
          if (change.action !== "remove")
            await checkLimits(
              tx,
              revision,
              revision.after ?? "",
              change.action === "replace" ? revision.factId : undefined,
              change.limits,
              revision.createdAt,
            );
        } else {
          fact = await apply(tx, revision, change.expiresAt ?? null, change.limits);
        }
        await insertRevision(tx, revision, change.key);
        return { revision, fact };
      });
    },

    async decideMemoryRevision(revisionId, decision, limits) {
      return driver.transaction(async (tx) => {
        const found = await revisionById(tx, revisionId);
        if (found === undefined) throw new NotFoundError("memory revision", revisionId);
        await lockOwner(tx, found.accountId, found.botId); // MEM2
        // Read again under the lock: a concurrent decision may have got there first.
        const revision = (await revisionById(tx, revisionId))!;
        if (revision.status !== "proposed")
          throw new RoostError(
            "conflict",
            `revision ${revisionId} is already ${revision.status}; only proposed revisions are accepted or rejected`,
          );
        const status = decision === "accept" ? "applied" : "rejected";
        const fact =
          decision === "accept"
            ? await apply(tx, revision, null, limits)
            : ((await factById(tx, revision.factId)) ?? {
                id: revision.factId,
                accountId: revision.accountId,
                botId: revision.botId,
                tier: revision.tier,
                text: revision.after ?? "",
                createdAt: revision.createdAt,
                updatedAt: revision.createdAt,
                expiresAt: null,
                removedAt: null,
              });
        await tx.run("UPDATE memory_revisions SET status = ? WHERE id = ?", [status, revisionId]);
        return { revision: { ...revision, status }, fact };
      });
    },

    async listMemoryFacts({
      accountId,
      botId,
      tiers,
      now: at = now(),
      newestFirst = false,
      limit = 100_000,
    }) {
      const tierList = tiers ?? ["user", "profile", "log", "note"];
      const order = newestFirst ? "DESC" : "ASC";
      const rows = await driver.all<FactRow>(
        `SELECT ${factColumns} FROM memory_facts
         WHERE account_id = ? AND ${ownerClause(botId)} AND tier IN (${tierList.map(() => "?").join(", ")})
           AND removed_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
         ORDER BY created_at ${order}, id ${order} LIMIT ?`,
        [accountId, ...ownerParams(botId), ...tierList, at, limit],
      );
      return rows.map(toFact);
    },

    getMemoryFact: (id) => factById(driver, id),

    async searchMemoryLog({ accountId, botId, text, limit }) {
      const words = searchWords(text);
      if (words.length === 0) return [];
      // MEM5: each word brings its newest `searchCandidatesPerWord` entries of this bot; those
      // candidates are ranked against the whole query.
      const columns = factColumns
        .split(", ")
        .map((column) => `f.${column}`)
        .join(", ");
      if (sqlite) {
        // Each word's newest entries bring their bm25 share for that word; a candidate's score is
        // the sum (bm25 of the whole query sums the same shares). CROSS JOIN keeps SQLite from
        // reading every fact of the bot to find the candidates' rows.
        const owner = logOwnerToken(botId);
        const perWord = words
          .map(
            () => `SELECT * FROM (SELECT fact_id, bm25(memory_log_words) AS rank FROM memory_log_words
                    WHERE memory_log_words MATCH ? ORDER BY rowid DESC LIMIT ?)`,
          )
          .join(" UNION ALL ");
        const rows = await driver.all<FactRow & { rank: number }>(
          `SELECT ${columns}, candidates.rank
           FROM (SELECT fact_id, SUM(rank) AS rank FROM (${perWord}) GROUP BY fact_id) candidates
           CROSS JOIN memory_facts f ON f.id = candidates.fact_id
           WHERE f.account_id = ? AND f.bot_id = ? AND f.removed_at IS NULL
           ORDER BY candidates.rank LIMIT ?`,
          [
            ...words.flatMap((word) => [`words:"${owner}${word}"`, searchCandidatesPerWord]),
            accountId,
            botId,
            limit,
          ],
        );
        // bm25 is negative, more negative = better.
        return rows.map((row): MemoryLogHit => ({ ...toFact(row), score: -Number(row.rank) }));
      }
      const perWord = words
        .map(
          () => `(SELECT id FROM memory_facts
                  WHERE account_id = ? AND bot_id = ? AND tier = 'log' AND removed_at IS NULL
                    AND search @@ to_tsquery('simple', ?)
                  ORDER BY created_at DESC LIMIT ?)`,
        )
        .join(" UNION ");
      const rows = await driver.all<FactRow & { rank: number }>(
        `SELECT ${columns}, ts_rank(f.search, to_tsquery('simple', ?)) AS rank
         FROM memory_facts f WHERE f.id IN (${perWord})
         ORDER BY rank DESC LIMIT ?`,
        [
          words.join(" | "),
          ...words.flatMap((word) => [accountId, botId, word, searchCandidatesPerWord]),
          limit,
        ],
      );
      return rows.map((row): MemoryLogHit => ({ ...toFact(row), score: Number(row.rank) }));
    },

    getMemoryRevision: (id) => revisionById(driver, id),

    async listMemoryRevisions({ accountId, botId, status, before, limit = 50 }) {
      const params: (string | number)[] = [accountId, ...ownerParams(botId)];
      let where = `account_id = ? AND ${ownerClause(botId)}`;
      if (status !== undefined) {
        where += " AND status = ?";
        params.push(status);
      }
      if (before !== undefined) {
        const anchor = await revisionById(driver, before);
        if (anchor === undefined) throw new NotFoundError("memory revision", before);
        where += " AND (created_at < ? OR (created_at = ? AND id < ?))";
        params.push(anchor.createdAt, anchor.createdAt, anchor.id);
      }
      const rows = await driver.all<RevisionRow>(
        `SELECT ${revisionColumns} FROM memory_revisions WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ?`,
        [...params, limit],
      );
      return rows.map(toRevision);
    },
  };
}
