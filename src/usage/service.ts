/**
 * Usage and spend caps (issue 11 §4, docs/usage.md, decision 0020): a usage record per model
 * call, budgets checked before every model call, turns parked durably at a reached budget, and
 * the triage model of routine runs. Plugs into the loop's model-call hooks (LOOP11).
 *
 * Invariants:
 *   USG1 every model call that answered is recorded once, from a journaled step keyed by its turn
 *        and index (USE1): a replay, a retry or a kill -9 never counts it twice.
 *   USG2 a call's usage is billed to the person the turn works for, and a routine's (or its
 *        webhook's) to whoever set the routine up; the talking person is recorded either way.
 *   USG3 before every model call the bot's budget, and a routine run's routine budget, are
 *        checked in a journaled step; at a reached limit the turn parks on a durable promise (a
 *        Restate awakeable, with a durable timer to the end of the limit's period): no process
 *        keeps a timer, nothing computes, and a restart of everything keeps it parked.
 *   USG4 no lost wake-up: the waiter is recorded before the budget is checked again in the same
 *        step, and a budget change is stored before the waiters are read, so a raise either sees
 *        the waiter or the re-check sees the raise.
 *   USG5 a parked turn goes on where it stopped: the same turn, the same journal; tool calls it
 *        already made are not made again (they are journaled before the park).
 *   USG6 each park saves one `budget_reached` step and sends one notification, both with ids
 *        derived from the turn, the call and the park's number, so replays add nothing.
 *   USG8 a parked turn whose budgets allow it again, or whose conversation was deleted, is let go
 *        within a sweep, even when the release at the budget change failed (engine down) or the
 *        change came from elsewhere.
 *   USG9 the owner's stop reaches a parked turn: its promise is resolved with "stop" and the turn
 *        ends as interrupted (LOOP11), without the model call it was waiting to make.
 *   USG7 a routine run with a triage model uses it for its model calls until the triage calls
 *        `escalate`; from the next call on, the bot's model answers (decision 0020).
 */
import type { DurableContext } from "../engine/index.ts";
import type { EventHub } from "../events/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import type { ModelCallDone, ModelCallInfo } from "../loop/index.ts";
import type { Notifier } from "../notifications/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Store, UsageGroupBy, UsageTotals } from "../store/index.ts";
import type { TurnTrigger } from "../tools/index.ts";
import { hasLimits, periodsAt, reachedLimit, tokensOf, type ReachedLimit } from "./budget.ts";
import type { PriceTable } from "./prices.ts";
import type { RoutineLookup, RoutineSettings, RunUsage } from "./types.ts";

/** What a parked turn is woken with: check again, or end the turn (the owner stopped it). */
export type ParkAnswer = true | "stop";

/** Parked turns one sweep looks at (the oldest first). */
const sweepBatch = 500;

/** The tool a triage model calls to hand a run to the bot's model (USG7). */
export const escalateToolName = "escalate";

export interface UsageDependencies {
  store: Store;
  events: EventHub;
  notifier: Notifier;
  routines: RoutineLookup;
  prices: PriceTable;
  /** The spec a bot without a model uses (priced as that spec). */
  defaultSpec: () => string;
  /**
   * Resolves a parked turn's durable promise (the kicker's awakeable resolution): `true` to check
   * the budget again, `"stop"` when the owner stopped the turn (USG9).
   */
  release(waiterId: string, answer?: ParkAnswer): Promise<void>;
  /** Epoch ms of records and budget views (durable code reads the journaled clock). @default Date.now */
  clock?: () => number;
  logger?: Logger;
}

export interface UsageService extends RunUsage {
  /** LOOP11 hook: the budget check and park (USG3–USG6) and the triage choice (USG7). */
  beforeModelCall(
    durable: DurableContext,
    call: ModelCallInfo,
  ): Promise<{ model?: string | null; stop?: true } | undefined>;
  /** LOOP11 hook: the usage record (USG1, USG2). */
  afterModelCall(durable: DurableContext, call: ModelCallDone): Promise<void>;
  botBudget(botId: string): Promise<Api.BotBudgetView>;
  /** Stores the bot's budget ({} = none) and lets its parked turns check again (USG4). */
  setBotBudget(botId: string, budget: Api.Budget): Promise<Api.BotBudgetView>;
  /** Lets a routine's parked runs check again (the routines module calls it after a budget change). */
  routineBudgetChanged(routineId: string): Promise<void>;
  /**
   * USG8: lets every parked turn whose budgets now allow it go on (a release that failed, a
   * budget changed elsewhere); the platform runs it with its sweep. Answers how many it released.
   */
  sweepParked(): Promise<number>;
  /** USG9: the owner stopped the conversation's turn: a parked one ends (interrupted). */
  stopParked(conversationId: string): Promise<void>;
  report(
    accountId: string,
    groupBy: UsageGroupBy,
    fromMs: number,
    toMs: number,
  ): Promise<Api.UsageReport>;
  /** Whether the turn is a routine run with a triage model (the escalate tool is offered). */
  triageOf(trigger: TurnTrigger | undefined): Promise<string | null>;
}

const routineIdOf = (source: Api.MessageSource): string | null =>
  source.kind === "routine" || source.kind === "webhook" ? source.routineId : null;
const runIdOf = (source: Api.MessageSource): string | null =>
  source.kind === "routine" || source.kind === "webhook" ? source.runId : null;

export function amountOf(totals: UsageTotals): Api.UsageAmount {
  return {
    tokens: tokensOf(totals),
    inputTokens: totals.inputTokens,
    outputTokens: totals.outputTokens,
    cost: totals.cost,
    calls: totals.calls,
    unpricedCalls: totals.unpricedCalls,
  };
}

type Verdict =
  | { reached: null; model?: string }
  | { reached: ReachedLimit; scope: "bot" | "routine"; scopeId: string };

const limitWords: Record<Api.BudgetLimit, string> = {
  tokensPerDay: "daily token limit",
  tokensPerMonth: "monthly token limit",
  costPerDay: "daily cost limit",
  costPerMonth: "monthly cost limit",
};

export function createUsageService(deps: UsageDependencies): UsageService {
  const { store, prices } = deps;
  const logger = deps.logger ?? silentLogger;
  const clock = deps.clock ?? Date.now;

  async function usageOf(scope: { botId: string } | { routineId: string }, now: number) {
    const periods = periodsAt(now);
    // USE4: two row reads, however many calls the period had.
    const [day, month] = await Promise.all([
      store.periodUsage(scope, "day", now),
      store.periodUsage(scope, "month", now),
    ]);
    return { periods, day, month };
  }

  /** The first reached limit of the bot's budget, then of the routine's; null when both allow. */
  async function budgetVerdict(
    botId: string,
    routineId: string | null,
    now: number,
  ): Promise<{ verdict: Verdict; routine: RoutineSettings | null }> {
    const botBudget = await store.getBotBudget(botId);
    if (hasLimits(botBudget)) {
      const { periods, ...usage } = await usageOf({ botId }, now);
      const reached = reachedLimit(botBudget, usage, periods);
      if (reached !== null)
        return { verdict: { reached, scope: "bot", scopeId: botId }, routine: null };
    }
    const routine = routineId === null ? null : await deps.routines.routineSettings(routineId);
    if (routineId !== null && routine !== null && hasLimits(routine.budget)) {
      const { periods, ...usage } = await usageOf({ routineId }, now);
      const reached = reachedLimit(routine.budget, usage, periods);
      if (reached !== null)
        return { verdict: { reached, scope: "routine", scopeId: routineId }, routine };
    }
    return { verdict: { reached: null }, routine };
  }

  /** USG3, USG7: the journaled decision before one model call. */
  async function check(call: ModelCallInfo, now: number): Promise<Verdict> {
    const { verdict, routine } = await budgetVerdict(
      call.botId,
      routineIdOf(call.trigger.source),
      now,
    );
    if (verdict.reached !== null || routine === null || routine.triageModel === null)
      return verdict;
    // USG7: the triage model answers until it escalates.
    const escalated =
      call.index > 0 &&
      (await store.turnCalledTool(call.conversationId, call.turnId, escalateToolName));
    return escalated ? verdict : { reached: null, model: routine.triageModel };
  }

  function reachedMessage(verdict: Extract<Verdict, { scope: string }>): string {
    const { limit, allowed, used, resetsAtMs } = verdict.reached;
    const isCost = limit.startsWith("cost");
    const amount = (value: number) =>
      isCost
        ? `${value.toFixed(4)} ${prices.currency}`
        : `${Math.round(value).toLocaleString("en")} tokens`;
    const owner = verdict.scope === "bot" ? "This bot" : `Routine ${verdict.scopeId}`;
    const raise =
      verdict.scope === "bot"
        ? `raise ${limit} with PUT /v1/bots/${verdict.scopeId}/budget (or the bot's Usage panel)`
        : `raise the routine's budget.${limit} with PATCH /v1/routines/${verdict.scopeId}`;
    return `${owner} reached its ${limitWords[limit]} (${amount(allowed)}; ${amount(used)} used). The turn is paused: ${raise} and it goes on where it stopped, or it goes on by itself at ${new Date(resetsAtMs).toISOString()}.`;
  }

  async function releaseWaits(scope: { botId: string } | { routineId: string }) {
    // USG4: called after the new budget is stored, so a waiter recorded after this read re-checks
    // against the new budget.
    for (const wait of await store.listBudgetWaits(scope)) {
      try {
        await deps.release(wait.id);
        await store.deleteBudgetWait(wait.id);
      } catch (error) {
        // The turn still goes on at its period's end; the next budget change tries again.
        logger.warn("could not let a parked turn go on", {
          waiter: wait.id,
          conversationId: wait.conversationId,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  async function botBudget(botId: string): Promise<Api.BotBudgetView> {
    const [budget, usage, waits] = await Promise.all([
      store.getBotBudget(botId),
      usageOf({ botId }, clock()),
      store.listBudgetWaits({ botId }),
    ]);
    return {
      botId,
      budget: budget ?? {},
      today: amountOf(usage.day),
      thisMonth: amountOf(usage.month),
      parkedTurns: waits.length,
      currency: prices.currency,
    };
  }

  return {
    async beforeModelCall(durable, call) {
      for (let park = 0; ; park++) {
        const now = await durable.now();
        const verdict = await durable.step("budget:check", () => check(call, now));
        if (verdict.reached === null)
          return verdict.model === undefined ? undefined : { model: verdict.model };

        const waiter = durable.awaitExternal<ParkAnswer>();
        const parked = await durable.step("budget:park", async () => {
          // LOOP8: a conversation deleted meanwhile parks nothing; its turn ends quietly.
          if ((await store.getConversation(call.conversationId)) === undefined) return "gone";
          await store.addBudgetWait({
            id: waiter.id,
            botId: call.botId,
            routineId: routineIdOf(call.trigger.source),
            conversationId: call.conversationId,
            turnId: call.turnId,
            createdAt: clock(),
          });
          const again = await check(call, clock()); // USG4
          if (again.reached === null) {
            await store.deleteBudgetWait(waiter.id);
            return null;
          }
          const message = reachedMessage(again);
          const id = `${call.turnId}:${call.index}:budget:${park}`; // USG6
          const saved = await store.appendStep({
            conversationId: call.conversationId,
            id,
            turnId: call.turnId,
            kind: "budget_reached",
            payload: {
              scope: again.scope,
              scopeId: again.scopeId,
              limit: again.reached.limit,
              allowed: again.reached.allowed,
              used: again.reached.used,
              resumesAt: new Date(again.reached.resetsAtMs).toISOString(),
              message,
            } satisfies Api.BudgetReachedPayload,
          });
          deps.events.publish({
            type: "changed",
            conversationId: call.conversationId,
            seq: saved.seq,
          });
          const bot = await store.getBot(call.botId);
          await deps.notifier.notify({
            id: `budget:${id}`,
            accountId: call.accountId,
            kind: "budget_reached",
            title: `${bot?.name ?? "A bot"} paused: ${limitWords[again.reached.limit]} reached`,
            body: message,
            botId: call.botId,
            conversationId: call.conversationId,
            subjectId: again.scopeId,
          });
          return { resetsAtMs: again.reached.resetsAtMs };
        });
        if (parked === null) continue;
        if (parked === "gone") return { stop: true };
        const waitedAt = await durable.now();
        // USG3: a durable promise and a durable timer; whichever comes first, check again.
        const answer = await waiter.wait(Math.max(1000, parked.resetsAtMs - waitedAt));
        await durable.step("budget:unpark", () => store.deleteBudgetWait(waiter.id));
        if (answer !== "timeout" && answer.value === "stop") return { stop: true }; // USG9
      }
    },

    async afterModelCall(durable, call) {
      await durable.step("usage:record", async () => {
        const source = call.trigger.source;
        const routineId = routineIdOf(source);
        // USG2: a routine's usage goes to whoever set it up.
        const routine = routineId === null ? null : await deps.routines.routineSettings(routineId);
        const accountId =
          routine?.ownerAccountId ??
          (source.kind === "chat" ? call.trigger.authorAccountId : call.accountId);
        const modelSpec = call.spec ?? call.botModel ?? deps.defaultSpec();
        await store.recordUsage({
          id: `${call.turnId}:${call.index}`, // USG1
          accountId,
          botId: call.botId,
          conversationId: call.conversationId,
          turnId: call.turnId,
          callIndex: call.index,
          triggerKind: source.kind,
          routineId,
          runId: runIdOf(source),
          personId: call.trigger.authorAccountId,
          modelSpec,
          model: call.model,
          inputTokens: call.usage.inputTokens,
          outputTokens: call.usage.outputTokens,
          cachedTokens: call.usage.cachedInputTokens ?? null,
          cost: prices.costOf(modelSpec, {
            ...call.usage,
            cachedTokens: call.usage.cachedInputTokens ?? null,
          }),
          createdAt: clock(),
        });
      });
    },

    async usageOfRuns(runIds) {
      const totals = await store.usageOfRuns(runIds);
      return new Map(
        [...totals].map(([runId, total]) => [
          runId,
          // A run's cost is known only when every call of it had a price (PRICE1).
          { tokens: tokensOf(total), cost: total.unpricedCalls > 0 ? null : total.cost },
        ]),
      );
    },

    botBudget,

    async setBotBudget(botId, budget) {
      await store.setBotBudget(botId, hasLimits(budget) ? budget : null);
      await releaseWaits({ botId });
      return botBudget(botId);
    },

    routineBudgetChanged: (routineId) => releaseWaits({ routineId }),

    async stopParked(conversationId) {
      for (const wait of await store.listBudgetWaits({ conversationId })) {
        await deps.release(wait.id, "stop"); // USG9
        await store.deleteBudgetWait(wait.id);
      }
    },

    async sweepParked() {
      let released = 0;
      for (const wait of await store.listAllBudgetWaits(sweepBatch)) {
        // A conversation deleted while parked: let its turn go on to find it gone (LOOP8).
        const gone = (await store.getConversation(wait.conversationId)) === undefined;
        const { verdict } = await budgetVerdict(wait.botId, wait.routineId, clock());
        if (verdict.reached !== null && !gone) continue;
        try {
          await deps.release(wait.id); // USG8
          await store.deleteBudgetWait(wait.id);
          released++;
        } catch (error) {
          logger.warn("could not let a parked turn go on", {
            waiter: wait.id,
            conversationId: wait.conversationId,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }
      return released;
    },

    async report(accountId, groupBy, fromMs, toMs) {
      const groups = await store.usageGroups(accountId, groupBy, fromMs, toMs);
      return {
        groupBy,
        from: new Date(fromMs).toISOString(),
        to: new Date(toMs).toISOString(),
        currency: prices.currency,
        groups: groups.map((group) => ({
          key: group.key,
          ...amountOf(group),
          cachedTokens: group.cachedTokens,
        })),
      };
    },

    async triageOf(trigger) {
      const routineId = trigger === undefined ? null : routineIdOf(trigger.source);
      if (routineId === null) return null;
      return (await deps.routines.routineSettings(routineId))?.triageModel ?? null;
    },
  };
}
