/**
 * Usage and spend caps as the store keeps them (issue 11 §4, docs/usage.md): one record per model
 * call that answered, bots' budgets, and the turns parked at a reached budget. The rules (prices,
 * periods, which limit applies) live in src/usage/; the store sums and keeps.
 *
 * Invariants (both implementations; checked by store.contract.ts):
 *   USE1 a usage record is written once per id (the model call's turn and index): recording the
 *        same id again changes nothing, so a replayed step never counts a call twice.
 *   USE2 sums and groups read only the given account's records (or the given bot's, routine's or
 *        runs'); a record's `cost` is null when its model had no price, and a sum says how many
 *        such calls it left out instead of inventing a price.
 *   USE4 the day and month sums of a bot and of a routine (periodUsage) are written in the same
 *        transaction as the record they add, and only when the record is new (USE1), so they
 *        always equal the sums of the records.
 *   USE3 a budget wait is removed by its id only; listing waits of a bot or a routine never
 *        removes them (the resumer removes each one after it let it go).
 */
import type { Api } from "../protocol/index.ts";

export interface UsageRecord {
  /** `<turnId>:<call index>`: one per model call (USE1). */
  id: string;
  /** Who pays: the person talking, or the routine's owner. */
  accountId: string;
  botId: string;
  conversationId: string;
  turnId: string;
  callIndex: number;
  triggerKind: Api.TriggerKind;
  routineId: string | null;
  runId: string | null;
  /** The person the turn works for (who typed, or who set up the routine). */
  personId: string;
  /** The model spec the call used (after a triage choice), resolved: never null. */
  modelSpec: string;
  /** The model the provider reported. */
  model: string;
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the provider's cache, when it said. */
  cachedTokens: number | null;
  /** In the price table's currency; null when the model has no price (USE2). */
  cost: number | null;
  createdAt: number;
}

/** Totals over a set of records (USE2). */
export interface UsageTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** Sum of the priced calls' costs; null when no call in the set had a price. */
  cost: number | null;
  /** Calls whose model had no price (left out of `cost`). */
  unpricedCalls: number;
}

export type UsageGroupBy = "bot" | "routine" | "trigger" | "day";

export interface UsageGroup extends UsageTotals {
  /** The bot id, routine id, trigger kind, or day (YYYY-MM-DD, UTC). */
  key: string;
}

export interface BudgetWait {
  /** The durable promise's id (a Restate awakeable). */
  id: string;
  botId: string;
  routineId: string | null;
  conversationId: string;
  turnId: string;
  createdAt: number;
}

export interface UsageStore {
  /** USE1: inserts the record unless one with its id exists. */
  recordUsage(record: UsageRecord): Promise<void>;
  /** Totals of one bot's or one routine's records with `fromMs <= createdAt < toMs`. */
  usageTotals(
    scope: { botId: string } | { routineId: string },
    fromMs: number,
    toMs: number,
  ): Promise<UsageTotals>;
  /** USE4: one bot's or routine's totals of the UTC day or month holding `atMs` (two row reads). */
  periodUsage(
    scope: { botId: string } | { routineId: string },
    period: "day" | "month",
    atMs: number,
  ): Promise<UsageTotals>;
  /** USE2: the account's records in the range, grouped; groups ordered by key. */
  usageGroups(
    accountId: string,
    groupBy: UsageGroupBy,
    fromMs: number,
    toMs: number,
  ): Promise<UsageGroup[]>;
  /** One conversation's records, oldest first (for inspection; reports use the sums). */
  listUsageRecords(conversationId: string): Promise<UsageRecord[]>;
  /** Totals per routine run (records carrying one of these run ids). */
  usageOfRuns(runIds: readonly string[]): Promise<Map<string, UsageTotals>>;
  getBotBudget(botId: string): Promise<Api.Budget | null>;
  /** `null` removes the bot's budget. */
  setBotBudget(botId: string, budget: Api.Budget | null): Promise<void>;
  addBudgetWait(wait: BudgetWait): Promise<void>;
  listBudgetWaits(
    scope: { botId: string } | { routineId: string } | { conversationId: string },
  ): Promise<BudgetWait[]>;
  /** Every budget wait, oldest first, at most `limit` (the sweep). */
  listAllBudgetWaits(limit: number): Promise<BudgetWait[]>;
  /** USE3 */
  deleteBudgetWait(id: string): Promise<void>;
  /** Whether a tool step named `toolName` was saved in this turn (the triage's escalation). */
  turnCalledTool(conversationId: string, turnId: string, toolName: string): Promise<boolean>;
}
