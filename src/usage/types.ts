/**
 * The interfaces between usage and the routines module (issue 11): usage reads a routine's owner,
 * budget and triage model through `RoutineLookup`; routines shows its runs' cost through `RunUsage`.
 */
import type { Api } from "../protocol/index.ts";

/** What usage needs to know of a routine (routines implements it from its store). */
export interface RoutineSettings {
  /** Who set the routine up: its runs' usage is theirs. */
  ownerAccountId: string;
  budget: Api.Budget | null;
  /** A model spec for the run's first model call, or null for the bot's model. */
  triageModel: string | null;
}

export interface RoutineLookup {
  /** Null when there is no such routine (deleted since the run started). */
  routineSettings(routineId: string): Promise<RoutineSettings | null>;
}

/** No routines (until the routines module is wired): every lookup answers null. */
export const noRoutineLookup: RoutineLookup = { routineSettings: async () => null };

/** What a routine run used, for its runs list (usage implements it from its records). */
export interface RunUsage {
  usageOfRuns(runIds: string[]): Promise<Map<string, { tokens: number; cost: number | null }>>;
}
