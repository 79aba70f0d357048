/**
 * Routines as the store keeps them (docs/routines.md): one row per routine, its runs (the last
 * `keepRuns` per routine), and two account settings routines read (the timezone, and whether the
 * account's routines are paused after the owner's absence). The rules (triggers, intervals,
 * misfire) live in src/routines/; the store makes each change whole.
 *
 * Invariants (both implementations; checked by store.contract.ts):
 *   RST1 a bot has at most `maxPerBot` routines: the count is checked under the bot's row lock in
 *        the insert's transaction, so concurrent creates can never exceed it.
 *   RST2 every change of what schedules a routine (trigger, enabled, misfire, delete) bumps its
 *        `generation` in the same write; the scheduler acts only on calls of the current one.
 *   RST3 a run is stored once per id (ids are deterministic per schedule slot or request), with
 *        its conversation in the same transaction: repeating `beginRun` returns the first.
 *   RST4 only the newest `keepRuns` runs of a routine are kept; older ones go in the insert's
 *        transaction.
 *   RST5 webhook keys are stored only as SHA-256 hashes.
 *   RST6 another account's routine reads as absent.
 */
import type { Api } from "../protocol/index.ts";

export interface Routine {
  id: string;
  accountId: string;
  botId: string;
  name: string;
  instruction: string;
  trigger: Api.RoutineTrigger;
  target: Api.RoutineTarget;
  enabled: boolean;
  misfire: Api.MisfirePolicy;
  budget: Api.Budget | null;
  triageModel: string | null;
  /** RST2 */
  generation: number;
  /** Where an `everyMs` schedule counts from: when its schedule last changed. */
  anchorAt: number;
  /** RST5: hex SHA-256 of the webhook key; null without a webhook trigger. */
  webhookKeyHash: string | null;
  /** When the scheduler last armed the next run (for views and the re-arm sweep). */
  nextRunAt: number | null;
  /** The generation the scheduler last armed; behind `generation`: the sweep arms it again. */
  armedGeneration: number;
  createdAt: number;
  updatedAt: number;
}

export interface RoutineRun {
  id: string;
  routineId: string;
  accountId: string;
  status: Api.RoutineRunStatus;
  kind: Api.RoutineRunKind;
  scheduledAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  conversationId: string | null;
  error: string | null;
  createdAt: number;
}

export interface RoutineWrite {
  name: string;
  instruction: string;
  trigger: Api.RoutineTrigger;
  target: Api.RoutineTarget;
  enabled: boolean;
  misfire: Api.MisfirePolicy;
  budget: Api.Budget | null;
  triageModel: string | null;
  webhookKeyHash: string | null;
}

export interface RoutinePatch extends Partial<RoutineWrite> {
  /** RST2: set when the change touches the schedule; the store bumps the generation. */
  reschedule: boolean;
}

export interface RoutineAccountSettings {
  timezone: string | null;
  /** Set while the account's scheduled routines are paused after the owner's absence. */
  routinesPausedAt: number | null;
}

export interface RoutineStore {
  /** RST1; NotFoundError when the bot is gone; audits `routine.create`. */
  createRoutine(
    input: RoutineWrite & { accountId: string; botId: string; maxPerBot: number },
  ): Promise<Routine>;
  getRoutine(id: string): Promise<Routine | undefined>;
  listRoutines(botId: string): Promise<Routine[]>;
  /** RST2; NotFoundError when gone; audits `routine.update`. */
  updateRoutine(id: string, patch: RoutinePatch, actorAccountId: string | null): Promise<Routine>;
  /** Removes the routine and its runs; audits `routine.delete`. NotFoundError when gone. */
  deleteRoutine(id: string, actorAccountId: string | null): Promise<void>;
  /** What the scheduler armed (the view's next run). */
  markRoutineArmed(id: string, generation: number, nextRunAt: number | null): Promise<void>;
  /** Enabled schedule routines the scheduler has not armed at their current generation. */
  listUnarmedRoutines(limit: number): Promise<Routine[]>;

  /**
   * RST3, RST4: stores the run (status `running`, or `missed` without a conversation) and, for
   * a new conversation, creates it, in one transaction; a repeat returns the stored run.
   */
  beginRoutineRun(input: {
    id: string;
    routineId: string;
    accountId: string;
    kind: Api.RoutineRunKind;
    scheduledAt: number | null;
    status: "running" | "missed";
    conversation: { create: { botId: string; title: string } } | { id: string } | null;
    keepRuns: number;
  }): Promise<{ run: RoutineRun; created: boolean }>;
  /** Sets a running run's end (status, error); no-op for a run that already ended or is gone. */
  finishRoutineRun(input: {
    id: string;
    status: Exclude<Api.RoutineRunStatus, "running" | "missed">;
    error?: string | null;
  }): Promise<void>;
  /** Newest first. */
  listRoutineRuns(routineId: string, limit: number): Promise<RoutineRun[]>;
  getRoutineRun(id: string): Promise<RoutineRun | undefined>;

  getRoutineAccountSettings(accountId: string): Promise<RoutineAccountSettings>;
  setAccountTimezone(accountId: string, timezone: string | null): Promise<void>;
  /** Pauses (a time) or resumes (null); answers whether it changed. */
  setRoutinesPaused(accountId: string, pausedAt: number | null): Promise<boolean>;
  /** The owner's last activity: the latest use of any of the account's API tokens (or its creation). */
  lastAccountActivity(accountId: string): Promise<number | null>;
}
