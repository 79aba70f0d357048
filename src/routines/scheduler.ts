/**
 * The scheduler (docs/routines.md, decision 0018): a Restate virtual object per routine, keyed by
 * the routine's id. `arm` computes the next slot and sends the object a delayed `fire` for it;
 * `fire` runs the slot (or records it missed) and arms the next one. `run` starts a run now (the
 * run endpoint, a webhook call). No process keeps a timer: the delays are Restate's timers.
 *
 * Invariants:
 *   SCHED1 every call carries the routine's generation (RST2); a call of an older generation, or
 *          for a routine that is gone, disabled or no longer scheduled, does nothing. Editing,
 *          disabling or deleting a routine therefore cancels what was armed.
 *   SCHED2 a slot fires once: the object's state records the last slot handled, so a second
 *          `fire` for it (two arms, two nodes) does nothing; run ids are the slot's (RUN1), so a
 *          replay after a kill -9 stores and delivers nothing twice.
 *   SCHED3 a `fire` later than the misfire grace is a misfire: every slot it missed is recorded
 *          (`missed`, or run late for `catch_up` up to its bound), the owner is notified once per
 *          misfire (id per first missed slot), and `once` starts one catch-up run. Never silence.
 *   SCHED4 while the account's routines are paused (the owner's absence) a slot starts nothing;
 *          the schedule keeps its place, so resuming needs no re-arm.
 *   SCHED5 absence: a slot due after `absenceMs` without the owner's activity pauses the account's
 *          routines and notifies the owner (`routines_paused`) instead of running.
 */
import * as restate from "@restatedev/restate-sdk";
import {
  createRestateDurable,
  durableObjectRetryPolicy,
  type DurableContext,
} from "../engine/index.ts";
import type { Notifier } from "../notifications/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Routine } from "../store/index.ts";
import { startRun, type RunDependencies, type RunRequest } from "./runs.ts";
import { isScheduleTrigger, nextSlot, ownTimezone, slotsBetween } from "./schedule.ts";
import type { RoutineSettings } from "./types.ts";

export const routineObjectName = "routine";

export interface ArmRequest {
  generation: number;
}
export interface FireRequest {
  generation: number;
  slotAt: number;
}

/** What the object remembers between calls (Restate state). */
export interface SchedulerState {
  generation: number;
  /** SCHED2: the newest slot handled (run, missed or skipped). */
  lastSlot: number | null;
  /** The slot the pending `fire` is for. */
  armedSlot: number | null;
}

export interface StateCell {
  get(): Promise<SchedulerState | null>;
  set(state: SchedulerState): void;
}

export interface SchedulerDependencies extends RunDependencies {
  notifier: Notifier;
  settings: RoutineSettings;
}

export const slotRunId = (routineId: string, slotAt: number) => `rrun_${routineId}_${slotAt}`;

type Loaded = {
  routine: Routine;
  timezone: string;
  pausedAt: number | null;
  lastActivity: number | null;
} | null;

async function load(
  durable: DurableContext,
  deps: SchedulerDependencies,
  routineId: string,
  generation: number,
): Promise<Loaded> {
  return durable.step("load-routine", async () => {
    const routine = await deps.store.getRoutine(routineId);
    // SCHED1
    if (
      routine === undefined ||
      !routine.enabled ||
      routine.generation !== generation ||
      !isScheduleTrigger(routine.trigger)
    )
      return null;
    const account = await deps.store.getRoutineAccountSettings(routine.accountId);
    return {
      routine,
      timezone: ownTimezone(routine.trigger) ?? account.timezone ?? deps.settings.defaultTimezone,
      pausedAt: account.routinesPausedAt,
      lastActivity: await deps.store.lastAccountActivity(routine.accountId),
    };
  });
}

function armNext(
  durable: DurableContext,
  routine: Routine,
  timezone: string,
  now: number,
): number | null {
  if (!isScheduleTrigger(routine.trigger)) return null;
  const next = nextSlot(routine.trigger, timezone, routine.anchorAt, now);
  if (next === null) return null;
  durable.send(
    { object: routineObjectName, key: routine.id, handler: "fire" },
    { generation: routine.generation, slotAt: next } satisfies FireRequest,
    {
      delayMs: Math.max(0, next - now),
      idempotencyKey: `fire:${routine.id}:${routine.generation}:${next}`,
    },
  );
  return next;
}

export async function armRoutine(
  durable: DurableContext,
  state: StateCell,
  deps: SchedulerDependencies,
  routineId: string,
  request: ArmRequest,
): Promise<"armed" | "stale" | "already"> {
  const loaded = await load(durable, deps, routineId, request.generation);
  if (loaded === null) return "stale";
  const current = await state.get();
  // Two arms of one generation (a sweep on each node) arm once.
  if (current?.generation === request.generation && current.armedSlot !== null) return "already";
  const now = await durable.now();
  const next = armNext(durable, loaded.routine, loaded.timezone, now);
  state.set({ generation: request.generation, lastSlot: null, armedSlot: next });
  await durable.step("mark-armed", () =>
    deps.store.markRoutineArmed(routineId, request.generation, next),
  );
  return "armed";
}

export async function fireRoutine(
  durable: DurableContext,
  state: StateCell,
  deps: SchedulerDependencies,
  routineId: string,
  request: FireRequest,
): Promise<string> {
  const loaded = await load(durable, deps, routineId, request.generation);
  if (loaded === null) return "stale"; // SCHED1
  const current = await state.get();
  if (
    current !== null &&
    current.generation === request.generation &&
    current.lastSlot !== null &&
    current.lastSlot >= request.slotAt
  )
    return "duplicate"; // SCHED2
  const { routine, timezone } = loaded;
  const trigger = routine.trigger as Extract<Api.RoutineTrigger, { type: "schedule" }>;
  const now = await durable.now();
  const { settings } = deps;
  let outcome: string;

  if (loaded.pausedAt !== null) {
    outcome = "paused"; // SCHED4
  } else if (
    loaded.lastActivity !== null &&
    now - loaded.lastActivity > settings.absenceMs &&
    request.slotAt - loaded.lastActivity > settings.absenceMs
  ) {
    // SCHED5
    await durable.step("pause-for-absence", async () => {
      await deps.store.setRoutinesPaused(routine.accountId, now);
      await deps.notifier.notify({
        id: `routines_paused:${routine.accountId}:${loaded.lastActivity}`,
        accountId: routine.accountId,
        kind: "routines_paused",
        title: "Your routines are paused: should they keep running?",
        body: `No activity from you for ${Math.round(settings.absenceMs / 86_400_000)} days, so your scheduled routines stopped. Resume them in the web app (a bot's Routines section) or with POST /v1/routines/resume.`,
        botId: routine.botId,
        subjectId: routine.id,
      });
    });
    outcome = "paused-for-absence";
  } else if (now - request.slotAt <= settings.misfireGraceMs) {
    await startRun(durable, deps, routineId, {
      runId: slotRunId(routineId, request.slotAt),
      kind: "schedule",
      scheduledAt: request.slotAt,
    });
    outcome = "ran";
  } else {
    outcome = await misfire(durable, deps, routine, trigger, timezone, request.slotAt, now);
  }

  // The slots up to now are handled; arm the first one after it.
  const next = armNext(durable, routine, timezone, now);
  state.set({
    generation: request.generation,
    lastSlot: Math.max(request.slotAt, now),
    armedSlot: next,
  });
  await durable.step("mark-armed", () =>
    deps.store.markRoutineArmed(routineId, request.generation, next),
  );
  return outcome;
}

/** SCHED3 */
async function misfire(
  durable: DurableContext,
  deps: SchedulerDependencies,
  routine: Routine,
  trigger: Extract<Api.RoutineTrigger, { type: "schedule" }>,
  timezone: string,
  slotAt: number,
  now: number,
): Promise<string> {
  const { settings } = deps;
  const later = slotsBetween(trigger, timezone, routine.anchorAt, slotAt, now, settings.keepRuns);
  const total = later.total + 1;
  const slots = later.total >= settings.keepRuns ? later.slots : [slotAt, ...later.slots];
  const runLate = routine.misfire === "catch_up" ? slots.slice(0, settings.maxCatchUp) : [];
  const missed = slots.filter((slot) => !runLate.includes(slot));
  const unlisted = total - slots.length;

  await durable.step("record-missed", async () => {
    for (const slot of missed)
      await deps.store.beginRoutineRun({
        id: slotRunId(routine.id, slot),
        routineId: routine.id,
        accountId: routine.accountId,
        kind: "schedule",
        scheduledAt: slot,
        status: "missed",
        conversation: null,
        keepRuns: settings.keepRuns,
      });
    const late = routine.misfire === "catch_up" ? `${runLate.length} run late, ` : "";
    const then =
      routine.misfire === "once"
        ? " One catch-up run starts now."
        : routine.misfire === "skip"
          ? " They were skipped (misfire policy skip)."
          : "";
    await deps.notifier.notify({
      id: `missed:${routine.id}:${slotAt}`,
      accountId: routine.accountId,
      kind: "missed_run",
      title: `Routine "${routine.name}" missed ${total} scheduled run${total === 1 ? "" : "s"}`,
      body: `The server was not running when ${total === 1 ? "it was" : "they were"} due (${late}${missed.length + unlisted} missed, the first at ${new Date(slotAt).toISOString()}).${then}`,
      botId: routine.botId,
      subjectId: routine.id,
    });
  });
  for (const slot of runLate)
    await startRun(durable, deps, routine.id, {
      runId: slotRunId(routine.id, slot),
      kind: "catch_up",
      scheduledAt: slot,
    });
  if (routine.misfire === "once") {
    const last = slots.at(-1)!;
    await startRun(durable, deps, routine.id, {
      runId: `${slotRunId(routine.id, last)}_catchup`,
      kind: "catch_up",
      scheduledAt: last,
    });
  }
  return `misfire:${routine.misfire}:${total}`;
}

/** The durable object; `run` starts a run now (the run endpoint, webhooks). */
export function createRoutineObject(deps: SchedulerDependencies) {
  const cell = (ctx: restate.ObjectContext): StateCell => ({
    get: () => ctx.get<SchedulerState>("scheduler"),
    set: (state) => ctx.set("scheduler", state),
  });
  return restate.object({
    name: routineObjectName,
    handlers: {
      arm: async (ctx: restate.ObjectContext, request: ArmRequest) =>
        armRoutine(createRestateDurable(ctx), cell(ctx), deps, ctx.key, request),
      fire: async (ctx: restate.ObjectContext, request: FireRequest) =>
        fireRoutine(createRestateDurable(ctx), cell(ctx), deps, ctx.key, request),
      run: async (ctx: restate.ObjectContext, request: RunRequest) =>
        startRun(createRestateDurable(ctx), deps, ctx.key, request),
    },
    options: {
      retryPolicy: durableObjectRetryPolicy,
      inactivityTimeout: 5 * 60_000,
      abortTimeout: 15 * 60_000,
    },
  });
}
