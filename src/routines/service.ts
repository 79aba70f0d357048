/**
 * What the API does with routines: validated writes to the store, then the scheduler told
 * (through Restate's ingress). The HTTP shapes are in src/api/routine-routes.ts.
 *
 * Invariants:
 *   RTN1 saving never runs a routine: a create or an edit arms the next slot, nothing sooner.
 *   RTN2 a write is stored before the scheduler hears of it; when telling it fails, the sweep
 *        (`armPending`) arms the routine later, so a stored schedule is never lost.
 *   RTN3 a webhook key is made from 32 random bytes, shown once, stored hashed (RST5), and
 *        compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import * as clients from "@restatedev/restate-sdk-clients";
import { InvalidRequestError, NotFoundError, RoostError } from "../errors/index.ts";
import { newId } from "../ids.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Routine, RoutineRun, RoutineWrite, Store } from "../store/index.ts";
import type { RunRequest } from "./runs.ts";
import {
  isScheduleTrigger,
  isValidTimezone,
  nextSlot,
  ownTimezone,
  validateSchedule,
} from "./schedule.ts";
import { routineObjectName, type ArmRequest } from "./scheduler.ts";
import type { RoutineSettings, RunUsage } from "./types.ts";

/** How the API reaches the scheduler object. */
export interface SchedulerClient {
  /** Idempotent per (routine, generation). */
  arm(routineId: string, generation: number): Promise<void>;
  /** Starts a run and waits until its message is delivered. */
  run(routineId: string, request: RunRequest): Promise<Api.StartedRun | null>;
  /** Hands a run to the scheduler durably (idempotent per run id) without waiting for it. */
  send(routineId: string, request: RunRequest): Promise<void>;
}

const callTimeoutMs = 15_000;

export function createSchedulerClient(ingress: () => clients.Ingress): SchedulerClient {
  const unavailable = (error: unknown) =>
    new RoostError(
      "unavailable",
      `the durable engine did not take the routine (${error instanceof Error ? error.message : String(error)}); retry`,
      { retryAfterMs: 1000, cause: error },
    );
  /** One-way sends, idempotent by key: the engine took them once this resolves. */
  async function send(routineId: string, handler: "arm" | "run", parameter: unknown, key: string) {
    try {
      await ingress().send({
        service: routineObjectName,
        handler,
        key: routineId,
        parameter,
        opts: clients.SendOpts.from({
          idempotencyKey: key,
          input: clients.serde.json,
          timeout: 5000,
        }),
      });
    } catch (error) {
      throw unavailable(error);
    }
  }
  return {
    arm: (routineId, generation) =>
      send(routineId, "arm", { generation } satisfies ArmRequest, `arm:${routineId}:${generation}`),
    async run(routineId, request) {
      try {
        return await ingress().call<RunRequest, Api.StartedRun | null>({
          service: routineObjectName,
          handler: "run",
          key: routineId,
          parameter: request,
          opts: clients.Opts.from({
            idempotencyKey: `run:${request.runId}`,
            input: clients.serde.json,
            output: clients.serde.json as clients.Serde<Api.StartedRun | null>,
            timeout: callTimeoutMs,
          }),
        });
      } catch (error) {
        throw unavailable(error);
      }
    },
    send: (routineId, request) => send(routineId, "run", request, `run:${request.runId}`),
  };
}

export const hashWebhookKey = (key: string) => createHash("sha256").update(key).digest("hex");

/** RTN3 */
export function newWebhookKey(): string {
  return `rwk_${randomBytes(32).toString("base64url")}`;
}

/** RTN3: constant-time comparison of a presented key with the stored hash. */
export function webhookKeyMatches(presented: string, storedHash: string | null): boolean {
  if (storedHash === null) return false;
  const given = Buffer.from(hashWebhookKey(presented), "hex");
  const stored = Buffer.from(storedHash, "hex");
  return given.length === stored.length && timingSafeEqual(given, stored);
}

/** What a create or patch asks for, validated by the route's schema (the key is the service's). */
export type RoutineInput = Omit<RoutineWrite, "webhookKeyHash">;

export interface RoutineServiceDependencies {
  store: Store;
  scheduler: SchedulerClient;
  settings: RoutineSettings;
  runUsage: RunUsage;
  logger?: Logger;
}

export interface RoutineService {
  create(
    accountId: string,
    botId: string,
    input: RoutineInput,
  ): Promise<{ routine: Routine; key: string | null }>;
  list(accountId: string, botId: string): Promise<Routine[]>;
  get(accountId: string, id: string): Promise<Routine>;
  update(
    accountId: string,
    id: string,
    patch: Partial<RoutineInput>,
  ): Promise<{ routine: Routine; key: string | null }>;
  remove(accountId: string, id: string): Promise<void>;
  runNow(accountId: string, id: string): Promise<Api.StartedRun>;
  runs(accountId: string, id: string): Promise<Api.RoutineRun[]>;
  /** A webhook call's run, handed to the scheduler durably (RAPI3); the caller checked the key. */
  startWebhookRun(routineId: string, request: RunRequest): Promise<void>;
  rotateKey(accountId: string, id: string): Promise<{ routine: Routine; key: string }>;
  /** Resumes the account's routines after an absence pause; answers whether they were paused. */
  resume(accountId: string): Promise<boolean>;
  /** The routine's effective timezone and next run, for its view. */
  describe(routine: Routine): Promise<{ timezone: string | null; paused: boolean }>;
  settings(accountId: string): Promise<Api.AccountSettings>;
  setTimezone(accountId: string, timezone: string | null): Promise<Api.AccountSettings>;
  /** RTN2: arms stored routines the scheduler has not armed (the sweep); answers how many. */
  armPending(): Promise<number>;
}

const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());

export function runView(
  run: RoutineRun,
  usage?: { tokens: number; cost: number | null },
): Api.RoutineRun {
  return {
    id: run.id,
    status: run.status,
    kind: run.kind,
    scheduledAt: iso(run.scheduledAt),
    startedAt: iso(run.startedAt),
    finishedAt: iso(run.finishedAt),
    conversationId: run.conversationId,
    error: run.error,
    tokens: usage?.tokens ?? null,
    cost: usage?.cost ?? null,
  };
}

export function createRoutineService(deps: RoutineServiceDependencies): RoutineService {
  const { store, settings } = deps;
  const logger = (deps.logger ?? silentLogger).child({ component: "routines" });

  const own = async (accountId: string, id: string) => {
    const routine = await store.getRoutine(id);
    if (routine === undefined || routine.accountId !== accountId)
      throw new NotFoundError("routine", id); // RST6
    return routine;
  };
  const accountTimezone = async (accountId: string) =>
    (await store.getRoutineAccountSettings(accountId)).timezone ?? settings.defaultTimezone;

  async function check(accountId: string, botId: string, input: RoutineInput) {
    if (isScheduleTrigger(input.trigger)) {
      const timezone = ownTimezone(input.trigger) ?? (await accountTimezone(accountId));
      validateSchedule(input.trigger, timezone, settings.minIntervalMs); // SCH1
    }
    if (input.target.kind === "conversation") {
      const conversation = await store.getConversation(input.target.conversationId);
      if (
        conversation === undefined ||
        conversation.accountId !== accountId ||
        conversation.botId !== botId
      )
        throw new InvalidRequestError(
          `target.conversationId ${JSON.stringify(input.target.conversationId)} is not a conversation of this bot; use one of its conversations, or {"kind":"new_conversation"}`,
          {
            issues: [{ path: "target.conversationId", message: "not a conversation of this bot" }],
          },
        );
    }
  }

  async function tell(routine: Routine) {
    if (!routine.enabled || !isScheduleTrigger(routine.trigger)) return;
    // RTN2: a failure here is the sweep's to repair.
    await deps.scheduler.arm(routine.id, routine.generation).catch((error: unknown) =>
      logger.warn("could not arm a routine (the sweep will retry)", {
        routineId: routine.id,
        error: error instanceof Error ? error.message : String(error),
      }),
    );
  }

  const writeOf = (input: RoutineInput, keyHash: string | null): RoutineWrite => ({
    ...input,
    webhookKeyHash: keyHash,
  });

  return {
    async create(accountId, botId, input) {
      const bot = await store.getBot(botId);
      if (bot === undefined || bot.accountId !== accountId) throw new NotFoundError("bot", botId);
      await check(accountId, botId, input);
      const key = input.trigger.type === "webhook" ? newWebhookKey() : null;
      const routine = await store.createRoutine({
        ...writeOf(input, key === null ? null : hashWebhookKey(key)),
        accountId,
        botId,
        maxPerBot: settings.maxPerBot,
      });
      await tell(routine); // RTN1: arms the next slot, runs nothing now
      return { routine, key };
    },
    async list(accountId, botId) {
      const bot = await store.getBot(botId);
      if (bot === undefined || bot.accountId !== accountId) throw new NotFoundError("bot", botId);
      return store.listRoutines(botId);
    },
    get: own,
    async update(accountId, id, patch) {
      const existing = await own(accountId, id);
      const merged: RoutineInput = {
        name: patch.name ?? existing.name,
        instruction: patch.instruction ?? existing.instruction,
        trigger: patch.trigger ?? existing.trigger,
        target: patch.target ?? existing.target,
        enabled: patch.enabled ?? existing.enabled,
        misfire: patch.misfire ?? existing.misfire,
        budget: patch.budget === undefined ? existing.budget : patch.budget,
        triageModel: patch.triageModel === undefined ? existing.triageModel : patch.triageModel,
      };
      await check(accountId, existing.botId, merged);
      const becomesWebhook = merged.trigger.type === "webhook" && existing.webhookKeyHash === null;
      const key = becomesWebhook ? newWebhookKey() : null;
      const keyHash =
        merged.trigger.type !== "webhook"
          ? null
          : key === null
            ? existing.webhookKeyHash
            : hashWebhookKey(key);
      const reschedule =
        patch.trigger !== undefined || patch.enabled !== undefined || patch.misfire !== undefined;
      const routine = await store.updateRoutine(
        id,
        { ...writeOf(merged, keyHash), reschedule },
        accountId,
      );
      if (reschedule) await tell(routine);
      return { routine, key };
    },
    async remove(accountId, id) {
      await own(accountId, id);
      // SCHED1: the armed call finds the routine gone and does nothing.
      await store.deleteRoutine(id, accountId);
    },
    async runNow(accountId, id) {
      const routine = await own(accountId, id);
      const started = await deps.scheduler.run(routine.id, {
        runId: newId("rrun"),
        kind: "manual",
        scheduledAt: null,
      });
      if (started === null) throw new NotFoundError("routine", id);
      return started;
    },
    async runs(accountId, id) {
      const routine = await own(accountId, id);
      const runs = await store.listRoutineRuns(routine.id, settings.keepRuns);
      const usage = await deps.runUsage
        .usageOfRuns(runs.map((run) => run.id))
        .catch((error: unknown) => {
          logger.warn("could not read the runs' usage", { routineId: id, error });
          return new Map<string, { tokens: number; cost: number | null }>();
        });
      return runs.map((run) => runView(run, usage.get(run.id)));
    },
    startWebhookRun: (routineId, request) => deps.scheduler.send(routineId, request),
    async rotateKey(accountId, id) {
      const routine = await own(accountId, id);
      if (routine.trigger.type !== "webhook")
        throw new RoostError(
          "conflict",
          'this routine has no webhook trigger; set its trigger to {"type":"webhook"} first',
        );
      const key = newWebhookKey();
      const updated = await store.updateRoutine(
        id,
        { webhookKeyHash: hashWebhookKey(key), reschedule: false },
        accountId,
      );
      return { routine: updated, key };
    },
    async resume(accountId) {
      const resumed = await store.setRoutinesPaused(accountId, null);
      if (resumed)
        await store.audit({ accountId, action: "routines.resume", target: accountId, detail: {} });
      return resumed;
    },
    async describe(routine) {
      const account = await store.getRoutineAccountSettings(routine.accountId);
      return {
        timezone: isScheduleTrigger(routine.trigger)
          ? (ownTimezone(routine.trigger) ?? account.timezone ?? settings.defaultTimezone)
          : null,
        paused: account.routinesPausedAt !== null,
      };
    },
    async settings(accountId) {
      return { timezone: (await store.getRoutineAccountSettings(accountId)).timezone };
    },
    async setTimezone(accountId, timezone) {
      if (timezone !== null && !isValidTimezone(timezone))
        throw new InvalidRequestError(
          `timezone must be an IANA timezone name such as Europe/Berlin or UTC, got ${JSON.stringify(timezone)}`,
          { issues: [{ path: "timezone", message: "unknown timezone" }] },
        );
      await store.setAccountTimezone(accountId, timezone);
      await store.audit({
        accountId,
        action: "account.settings",
        target: accountId,
        detail: { timezone },
      });
      return { timezone };
    },
    async armPending() {
      const pending = await store.listUnarmedRoutines(500);
      for (const routine of pending) await deps.scheduler.arm(routine.id, routine.generation);
      return pending.length;
    },
  };
}

/** The next slot of a routine from now, for views before the scheduler armed it. */
export function previewNextRun(
  routine: Routine,
  timezone: string | null,
  now: number,
): number | null {
  if (!routine.enabled || !isScheduleTrigger(routine.trigger) || timezone === null) return null;
  return routine.nextRunAt ?? nextSlot(routine.trigger, timezone, routine.anchorAt, now);
}
