/**
 * What the routines module needs from others and offers them (issue 11 interfaces).
 */
import type { Api } from "../protocol/index.ts";

/** Tokens and cost of routine runs, by run id (the usage module implements it). */
export interface RunUsage {
  usageOfRuns(runIds: string[]): Promise<Map<string, { tokens: number; cost: number | null }>>;
}

/** Until usage records are wired: no figures (the runs list shows null). */
export const noRunUsage: RunUsage = { usageOfRuns: async () => new Map() };

/**
 * A routine's settings the budget module reads (it defines the same interface in src/usage/;
 * this one is structurally identical, so the lead wires `createRoutineLookup` into it).
 */
export interface RoutineLookup {
  routineSettings(routineId: string): Promise<{
    ownerAccountId: string;
    budget: Api.Budget | null;
    triageModel: string | null;
  } | null>;
}

/** The routine settings of the platform (config `routines`). */
export interface RoutineSettings {
  /** Runs of one routine are at least this far apart. @default 300000 (5 min) */
  minIntervalMs: number;
  /** A scheduled call that arrives later than this after its slot is a misfire. @default 60000 */
  misfireGraceMs: number;
  /** `catch_up` runs at most this many missed slots; the rest are recorded missed. @default 5 */
  maxCatchUp: number;
  /** Without the owner's activity for this long, scheduled routines pause. @default 14 days */
  absenceMs: number;
  /** Routines per bot. @default 50 */
  maxPerBot: number;
  /** Runs kept per routine. @default 20 */
  keepRuns: number;
  /** Largest webhook body. @default 65536 */
  webhookMaxBodyBytes: number;
  /** Webhook calls per minute per routine (a burst of as many allowed). @default 60 */
  webhookPerMinute: number;
  /** Timezone of routines whose account has none. @default the server's (ROOST_TIMEZONE) */
  defaultTimezone: string;
}

export const defaultRoutineSettings: RoutineSettings = {
  minIntervalMs: 300_000,
  misfireGraceMs: 60_000,
  maxCatchUp: 5,
  absenceMs: 14 * 24 * 3600_000,
  maxPerBot: 50,
  keepRuns: 20,
  webhookMaxBodyBytes: 65_536,
  webhookPerMinute: 60,
  defaultTimezone: "UTC",
};
