/**
 * The usage part of the store (usage-types.ts, USE1–USE3), written once against `SqlDriver`.
 * Token sums are BIGINT (Postgres answers them as strings: every sum goes through Number);
 * costs are DOUBLE PRECISION on both.
 */
import type { Api } from "../protocol/index.ts";
import type { SqlDriver } from "./driver.ts";
import type {
  BudgetWait,
  UsageGroup,
  UsageGroupBy,
  UsageRecord,
  UsageStore,
  UsageTotals,
} from "./usage-types.ts";

interface TotalsRow {
  calls: number | string | null;
  input_tokens: number | string | null;
  output_tokens: number | string | null;
  cached_tokens: number | string | null;
  cost: number | string | null;
  priced: number | string | null;
  unpriced: number | string | null;
}
interface RecordRow {
  id: string;
  account_id: string;
  bot_id: string;
  conversation_id: string;
  turn_id: string;
  call_index: number | string;
  trigger_kind: string;
  routine_id: string | null;
  run_id: string | null;
  person_id: string;
  model_spec: string;
  model: string;
  input_tokens: number | string;
  output_tokens: number | string;
  cached_tokens: number | string | null;
  cost: number | string | null;
  created_at: number | string;
}
interface WaitRow {
  id: string;
  bot_id: string;
  routine_id: string | null;
  conversation_id: string;
  turn_id: string;
  created_at: number | string;
}

const totalsColumns = `COUNT(*) AS calls,
  SUM(input_tokens) AS input_tokens,
  SUM(output_tokens) AS output_tokens,
  SUM(COALESCE(cached_tokens, 0)) AS cached_tokens,
  SUM(cost) AS cost,
  SUM(CASE WHEN cost IS NULL THEN 0 ELSE 1 END) AS priced,
  SUM(CASE WHEN cost IS NULL THEN 1 ELSE 0 END) AS unpriced`;

const dayMs = 86_400_000;

/** The UTC day and month of a time, as rollup keys: `day:2026-12-01`, `month:2026-12`. */
function periodKeys(atMs: number): [string, string] {
  const iso = new Date(atMs).toISOString();
  return [`day:${iso.slice(0, 10)}`, `month:${iso.slice(0, 7)}`];
}

function toTotals(row: TotalsRow | undefined): UsageTotals {
  const number = (value: number | string | null | undefined) => Number(value ?? 0);
  return {
    calls: number(row?.calls),
    inputTokens: number(row?.input_tokens),
    outputTokens: number(row?.output_tokens),
    cachedTokens: number(row?.cached_tokens),
    // USE2: no priced call in the set means no known cost, not a cost of 0.
    cost: number(row?.priced) === 0 ? null : number(row?.cost),
    unpricedCalls: number(row?.unpriced),
  };
}

const toRecord = (row: RecordRow): UsageRecord => ({
  id: row.id,
  accountId: row.account_id,
  botId: row.bot_id,
  conversationId: row.conversation_id,
  turnId: row.turn_id,
  callIndex: Number(row.call_index),
  triggerKind: row.trigger_kind as Api.TriggerKind,
  routineId: row.routine_id,
  runId: row.run_id,
  personId: row.person_id,
  modelSpec: row.model_spec,
  model: row.model,
  inputTokens: Number(row.input_tokens),
  outputTokens: Number(row.output_tokens),
  cachedTokens: row.cached_tokens === null ? null : Number(row.cached_tokens),
  cost: row.cost === null ? null : Number(row.cost),
  createdAt: Number(row.created_at),
});

const toWait = (row: WaitRow): BudgetWait => ({
  id: row.id,
  botId: row.bot_id,
  routineId: row.routine_id,
  conversationId: row.conversation_id,
  turnId: row.turn_id,
  createdAt: Number(row.created_at),
});

function scopeOf(
  scope: { botId: string } | { routineId: string } | { conversationId: string },
): [string, string] {
  if ("botId" in scope) return ["bot_id", scope.botId];
  if ("routineId" in scope) return ["routine_id", scope.routineId];
  return ["conversation_id", scope.conversationId];
}

/** The grouping expression for each `groupBy` (a closed set: never text from a request). */
const groupColumn: Record<UsageGroupBy, string> = {
  bot: "bot_id",
  routine: "routine_id",
  trigger: "trigger_kind",
  day: `(created_at / ${dayMs})`,
};

export function createUsageQueries(driver: SqlDriver, now: () => number): UsageStore {
  return {
    async recordUsage(record) {
      await driver.transaction(async (tx) => {
        // USE1: the first write of an id wins; a replay's identical write is ignored.
        const inserted = await tx.run(
          `INSERT INTO usage_records (id, account_id, bot_id, conversation_id, turn_id, call_index,
           trigger_kind, routine_id, run_id, person_id, model_spec, model, input_tokens,
           output_tokens, cached_tokens, cost, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO NOTHING`,
          [
            record.id,
            record.accountId,
            record.botId,
            record.conversationId,
            record.turnId,
            record.callIndex,
            record.triggerKind,
            record.routineId,
            record.runId,
            record.personId,
            record.modelSpec,
            record.model,
            record.inputTokens,
            record.outputTokens,
            record.cachedTokens,
            record.cost,
            record.createdAt,
          ],
        );
        if (inserted.changes === 0) return;
        // USE4: the record's periods, for its bot and its routine.
        const scopes: [string, string][] = [["bot", record.botId]];
        if (record.routineId !== null) scopes.push(["routine", record.routineId]);
        for (const [scope, scopeId] of scopes)
          for (const period of periodKeys(record.createdAt))
            await tx.run(
              `INSERT INTO usage_rollups (scope, scope_id, period, calls, input_tokens, output_tokens,
                 cached_tokens, cost, priced, unpriced)
               VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (scope, scope_id, period) DO UPDATE SET
                 calls = usage_rollups.calls + 1,
                 input_tokens = usage_rollups.input_tokens + excluded.input_tokens,
                 output_tokens = usage_rollups.output_tokens + excluded.output_tokens,
                 cached_tokens = usage_rollups.cached_tokens + excluded.cached_tokens,
                 cost = usage_rollups.cost + excluded.cost,
                 priced = usage_rollups.priced + excluded.priced,
                 unpriced = usage_rollups.unpriced + excluded.unpriced`,
              [
                scope,
                scopeId,
                period,
                record.inputTokens,
                record.outputTokens,
                record.cachedTokens ?? 0,
                record.cost ?? 0,
                record.cost === null ? 0 : 1,
                record.cost === null ? 1 : 0,
              ],
            );
      });
    },

    async periodUsage(scope, period, atMs) {
      const [kind, id] = "botId" in scope ? ["bot", scope.botId] : ["routine", scope.routineId];
      const key = periodKeys(atMs)[period === "day" ? 0 : 1];
      const rows = await driver.all<TotalsRow>(
        `SELECT calls, input_tokens, output_tokens, cached_tokens, cost, priced, unpriced
         FROM usage_rollups WHERE scope = ? AND scope_id = ? AND period = ?`,
        [kind, id, key],
      );
      return toTotals(rows[0]);
    },

    async usageTotals(scope, fromMs, toMs) {
      const [column, value] = scopeOf(scope);
      const rows = await driver.all<TotalsRow>(
        `SELECT ${totalsColumns} FROM usage_records
         WHERE ${column} = ? AND created_at >= ? AND created_at < ?`,
        [value, fromMs, toMs],
      );
      return toTotals(rows[0]);
    },

    async usageGroups(accountId, groupBy, fromMs, toMs) {
      const column = groupColumn[groupBy];
      const rows = await driver.all<TotalsRow & { group_key: string | number | null }>(
        `SELECT ${column} AS group_key, ${totalsColumns} FROM usage_records
         WHERE account_id = ? AND created_at >= ? AND created_at < ?
           ${groupBy === "routine" ? "AND routine_id IS NOT NULL" : ""}
         GROUP BY ${column} ORDER BY ${column}`,
        [accountId, fromMs, toMs],
      );
      return rows.map((row): UsageGroup => ({
        key:
          groupBy === "day"
            ? new Date(Number(row.group_key) * dayMs).toISOString().slice(0, 10)
            : String(row.group_key),
        ...toTotals(row),
      }));
    },

    async listUsageRecords(conversationId) {
      const rows = await driver.all<RecordRow>(
        "SELECT * FROM usage_records WHERE conversation_id = ? ORDER BY created_at, call_index, id",
        [conversationId],
      );
      return rows.map(toRecord);
    },

    async usageOfRuns(runIds) {
      const result = new Map<string, UsageTotals>();
      if (runIds.length === 0) return result;
      const rows = await driver.all<TotalsRow & { run_id: string }>(
        `SELECT run_id, ${totalsColumns} FROM usage_records
         WHERE run_id IN (${runIds.map(() => "?").join(", ")}) GROUP BY run_id`,
        runIds,
      );
      for (const row of rows) result.set(row.run_id, toTotals(row));
      return result;
    },

    async getBotBudget(botId) {
      const rows = await driver.all<{ budget: string }>(
        "SELECT budget FROM bot_budgets WHERE bot_id = ?",
        [botId],
      );
      const row = rows[0];
      return row === undefined ? null : (JSON.parse(row.budget) as Api.Budget);
    },

    async setBotBudget(botId, budget) {
      if (budget === null) {
        await driver.run("DELETE FROM bot_budgets WHERE bot_id = ?", [botId]);
        return;
      }
      await driver.run(
        `INSERT INTO bot_budgets (bot_id, budget, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (bot_id) DO UPDATE SET budget = excluded.budget, updated_at = excluded.updated_at`,
        [botId, JSON.stringify(budget), now()],
      );
    },

    async addBudgetWait(wait) {
      await driver.run(
        `INSERT INTO budget_waits (id, bot_id, routine_id, conversation_id, turn_id, created_at)
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
        [wait.id, wait.botId, wait.routineId, wait.conversationId, wait.turnId, wait.createdAt],
      );
    },

    async listBudgetWaits(scope) {
      const [column, value] = scopeOf(scope);
      const rows = await driver.all<WaitRow>(
        `SELECT * FROM budget_waits WHERE ${column} = ? ORDER BY created_at, id`,
        [value],
      );
      return rows.map(toWait);
    },

    async listAllBudgetWaits(limit) {
      const rows = await driver.all<WaitRow>(
        "SELECT * FROM budget_waits ORDER BY created_at, id LIMIT ?",
        [limit],
      );
      return rows.map(toWait);
    },

    async deleteBudgetWait(id) {
      await driver.run("DELETE FROM budget_waits WHERE id = ?", [id]); // USE3
    },

    async turnCalledTool(conversationId, turnId, toolName) {
      const rows = await driver.all<{ payload: string }>(
        "SELECT payload FROM steps WHERE conversation_id = ? AND turn_id = ? AND kind = 'tool'",
        [conversationId, turnId],
      );
      return rows.some((row) => (JSON.parse(row.payload) as { name?: unknown }).name === toolName);
    },
  };
}
