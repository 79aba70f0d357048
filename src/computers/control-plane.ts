/**
 * The control plane: a Restate virtual object per computer (key: computer id). It alone decides
 * when a computer wakes and sleeps, and it owns the idle timer (idle detection belongs here, not
 * inside the sandbox: field notes from peers who tried otherwise).
 *
 * Invariants:
 *   C1 every state change goes through nextComputerState (lifecycle.ts).
 *   C2 a computer held by a turn is never put to sleep by the idle timer; holds are leases, so a
 *      turn that died without releasing cannot keep a computer awake forever.
 *   C3 each wake rotates the worker token: the previous one stops working at once (S5 hashes).
 *   C4 the idle timer is a chain of delayed self-calls tagged with the wake's generation; a
 *      check from an earlier awake period does nothing.
 *   C5 the worker token never enters the journal: it is generated, stored hashed and handed to
 *      the provider inside one step.
 *   C6 "awake" is checked against the provider before it is relied on: a computer whose sandbox
 *      is gone (the server crashed and took it along, the host lost it) is put to sleep properly
 *      (its disk snapshotted) instead of keeping tool calls waiting for a worker that never comes.
 *   C7 a self-hosted computer (the user's own machine running `roost worker`) is never started,
 *      stopped, woken or put to sleep, and holds no idle timer: nothing here touches the provider
 *      for it. Its state is whether its worker is connected (`connected` / `disconnected`).
 *   C8 switching kinds runs in the computer's own exclusive handlers, so it never interleaves
 *      with a wake or a sleep: the hosted computer is put to sleep (disk snapshotted, worker
 *      disconnected, token cleared) before the kind changes, and whatever worker is connected is
 *      disconnected after the self-hosted token changed, so a replaced token serves nothing.
 *      The store's kind (what the gateway and the API read) changes inside the same handler.
 *   C9 a computer has one home host (home-host.ts, decision 0040), recorded here and in the store.
 *      A wake runs on the node whose handler wakes it; when that is not the home, it first
 *      restores the newest snapshot (at least the generation the last sleep saved) and claims the
 *      home with a compare-and-set (HOME2). Stopping and status checks go to the home, wherever
 *      it is, through its host service (HOME3): a node never stops or snapshots its own stale
 *      copy in the home's place. A home that does not answer within `homeTimeoutMs` has lost the
 *      computer: it is recorded asleep (not failed) and the next wake moves it.
 *   C10 with `remoteHosts` (an API node beside computer hosts, decision 0041) this node never
 *      runs a computer: a wake goes to the home's host service when the home is one of the
 *      hosts, otherwise (first wake, or the home did not answer last time) to a host picked by
 *      the computer's id among the others; that host restores, claims the home and starts it
 *      (HOME4). Stops and status checks already go to the home (C9).
 */
import * as restate from "@restatedev/restate-sdk";
import { generateWorkerToken, hashToken } from "../auth/index.ts";
import type { EventHub } from "../events/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import { durableObjectRetryPolicy } from "../engine/index.ts";
import type { Store } from "../store/index.ts";
import {
  nextComputerState,
  type ComputerInput,
  type ComputerKind,
  type ComputerState,
  type SelfHostedState,
} from "./lifecycle.ts";
import { hostServiceName, type ComputerHost, type HostStopResult } from "./home-host.ts";
import type { ComputerPaths, ComputerProvider, ComputerRuntimeStatus } from "./provider.ts";

export const computerObjectName = "computer";

/** What the control plane needs from the rest of the platform. */
export interface ControlPlaneDependencies {
  provider: ComputerProvider;
  store: Store;
  events: EventHub;
  gateway: {
    waitForWorker(computerId: string, timeoutMs: number): Promise<unknown>;
    disconnect(computerId: string, reason?: string): Promise<void>;
    /** Whether the computer's worker is connected (a self-hosted computer's state, C7). */
    isConnected(computerId: string): boolean;
    /** The same, asking the node holding it when that is another node (decision 0039). */
    connectedAnywhere?(computerId: string): Promise<boolean>;
  };
  /** ws:// URL the worker dials. */
  gatewayUrl: string;
  /** This node as a computer host: stops and snapshots the computers whose home it is (C9). */
  host: ComputerHost;
  /** How long the home host may take to answer a stop or a status check (C9). @default 30000 */
  homeTimeoutMs: number;
  /** C10: the computer hosts' node ids; set, this node runs no computer itself. */
  remoteHosts?: readonly string[];
  /**
   * Restores the disk from the blob store before a wake when the local copy is missing or stale.
   * `atLeastGeneration`: the generation the last sleep saved; fewer in the blob store is an error
   * (the nodes do not share one), never a silent start from an older disk.
   */
  snapshots?: {
    restoreIfNeeded(
      computerId: string,
      paths: ComputerPaths,
      options: { atLeastGeneration: number | null },
    ): Promise<void>;
  };
  /** Environment for the computer's processes (proxy settings), per computer. */
  computerEnv?: (computerId: string) => Promise<Record<string, string>> | Record<string, string>;
  /** @default 300000 (5 min) */
  idleSleepMs: number;
  /** @default 60000 */
  wakeTimeoutMs: number;
  /** @default 86400000 (24 h) */
  workerTokenTtlMs: number;
  /** Longest a turn's hold keeps a computer awake without renewal. @default 1800000 (30 min) */
  holdLeaseMs: number;
  /** @default silent */
  logger?: Logger;
}

interface ComputerRecord {
  accountId: string;
  state: ComputerState;
  lastActiveAt: number;
  /** holder → lease expiry (epoch ms) */
  holders: Record<string, number>;
  generation: number;
  failure: string | null;
  /** Absent in records written before self-hosted computers: hosted. `state` stays the hosted computer's. */
  kind?: ComputerKind;
  /** C9: the node that runs it and holds its disk; absent before its first wake with homes. */
  home?: string;
  /** C9: the snapshot generation its last sleep saved. */
  savedGeneration?: number;
  /** C10: a host that did not answer the last wake, stop or status call; skipped when picking. */
  unanswered?: string;
}

export interface ComputerStatus {
  id: string;
  kind: ComputerKind;
  /** A hosted computer's lifecycle state, or a self-hosted one's connection (C7). */
  state: ComputerState | SelfHostedState;
  lastActiveAt: number | null;
  holders: number;
  failure: string | null;
  /** C9: the node that runs it and holds its disk; null before its first wake. */
  home: string | null;
}

/** `useSelfHosted`: the caller's machine becomes the computer; its token's hash only (C5). */
export interface UseSelfHostedRequest {
  accountId: string;
  tokenHash: string;
}

export interface EnsureAwakeRequest {
  accountId: string;
  /** Keep the computer awake for this holder (a turn id) until released or the lease ends. */
  holder?: string;
  /** Whether this call may wake a sleeping computer (only waking tools may). */
  allowWake: boolean;
}

const recordKey = "computer";

function activeHolders(record: ComputerRecord, now: number): string[] {
  return Object.entries(record.holders)
    .filter(([, expiresAt]) => expiresAt > now)
    .map(([holder]) => holder);
}

export function createComputerObject(deps: ControlPlaneDependencies) {
  const logger = (deps.logger ?? silentLogger).child({ component: "control-plane" });
  async function load(ctx: restate.ObjectContext, accountId?: string): Promise<ComputerRecord> {
    const record = await ctx.get<ComputerRecord>(recordKey);
    if (record !== null) return record;
    return {
      accountId: accountId ?? "",
      state: "asleep",
      lastActiveAt: 0,
      holders: {},
      generation: 0,
      failure: null,
    };
  }

  function transition(ctx: restate.ObjectContext, record: ComputerRecord, input: ComputerInput) {
    try {
      record.state = nextComputerState(record.state, input); // C1
    } catch (error) {
      // A bug, not a transient failure: retrying would only repeat it.
      throw new restate.TerminalError(error instanceof Error ? error.message : String(error));
    }
    ctx.set(recordKey, record);
    if (record.accountId !== "") {
      deps.events.publishAccount({
        type: "computer",
        accountId: record.accountId,
        computerId: ctx.key,
        state: record.state,
      });
    }
  }

  /**
   * Exclusive handlers never overlap, so a record found "waking" or "sleeping" was left by an
   * invocation that was aborted midway: count it as failed, then carry on.
   */
  function recoverInterrupted(ctx: restate.ObjectContext, record: ComputerRecord) {
    if (record.state === "waking") {
      record.failure = "an earlier wake was interrupted";
      transition(ctx, record, "wake-failed");
    } else if (record.state === "sleeping") {
      record.failure = "an earlier sleep was interrupted";
      transition(ctx, record, "sleep-failed");
    }
  }

  async function wake(ctx: restate.ObjectContext, record: ComputerRecord): Promise<void> {
    recoverInterrupted(ctx, record);
    transition(ctx, record, "wake");
    if (deps.remoteHosts !== undefined) return wakeOnHost(ctx, record, deps.remoteHosts);
    const here = deps.host.nodeId;
    const previousHome = record.home ?? null;
    const atLeastGeneration = record.savedGeneration ?? null;
    try {
      await ctx.run(
        "restore",
        async () => {
          const paths = await deps.provider.create(ctx.key);
          await deps.snapshots?.restoreIfNeeded(ctx.key, paths, { atLeastGeneration }); // HOME2
        },
        { maxRetryAttempts: 3 },
      );
      if (previousHome !== here) {
        const claimed = await ctx.run("claim-home", async () => {
          const won = await deps.store.claimComputerHome(ctx.key, previousHome, here); // HOME2
          // A sleep on the old home may have saved a newer generation while this one restored.
          if (won)
            await deps.snapshots?.restoreIfNeeded(ctx.key, deps.provider.paths(ctx.key), {
              atLeastGeneration,
            });
          return won;
        });
        if (!claimed) {
          const current = await ctx.run(
            "read-home",
            async () => (await deps.store.getComputer(ctx.key))?.homeHost ?? null,
          );
          throw new Error(
            `another host (${current ?? "none"}) became the computer's home while ${here} was taking it over from ${previousHome ?? "none"}`,
          );
        }
        record.home = here;
        ctx.set(recordKey, record);
      }
      await ctx.run(
        "start",
        async () => {
          const token = generateWorkerToken(); // C3, C5
          await deps.store.setWorkerToken(
            ctx.key,
            hashToken(token),
            Date.now() + deps.workerTokenTtlMs,
          );
          await deps.provider.wake(ctx.key, {
            gatewayUrl: deps.gatewayUrl,
            workerToken: token,
            env: (await deps.computerEnv?.(ctx.key)) ?? {},
          });
        },
        { maxRetryAttempts: 3 },
      );
      await ctx.run(
        "await-worker",
        async () => {
          await deps.gateway.waitForWorker(ctx.key, deps.wakeTimeoutMs);
        },
        { maxRetryAttempts: 1 },
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      logger.error("waking the computer failed", { computerId: ctx.key, error: message });
      await ctx.run("stop-failed", async () => {
        await deps.provider.sleep(ctx.key);
        // Only the home's token is this wake's; a lost claim leaves the winner's alone.
        if (record.home === here) await deps.store.clearWorkerToken(ctx.key);
      });
      record.failure = `waking the computer failed: ${message}`;
      transition(ctx, record, "wake-failed");
      throw new restate.TerminalError(
        `${record.failure} (try again; if it keeps failing, see the server log)`,
      );
    }
    record.failure = null;
    record.generation += 1;
    record.lastActiveAt = await ctx.date.now();
    transition(ctx, record, "woke");
    scheduleIdleCheck(ctx, record.generation, deps.idleSleepMs);
  }

  /** C10: the wake runs on a computer host, through its host service (HOME4). */
  async function wakeOnHost(
    ctx: restate.ObjectContext,
    record: ComputerRecord,
    hosts: readonly string[],
  ): Promise<void> {
    // The store's home is the compare-and-set's truth (HOME2): a wake that timed out here may
    // still have claimed it on its host afterwards.
    const storedHome = await ctx.run(
      "read-home",
      async () => (await deps.store.getComputer(ctx.key))?.homeHost ?? null,
    );
    const known = storedHome ?? record.home;
    const target = pickHost(
      ctx.key,
      {
        ...(known === undefined ? {} : { home: known }),
        ...(record.unanswered === undefined ? {} : { unanswered: record.unanswered }),
      },
      hosts,
    );
    try {
      await ctx
        .genericCall({
          service: hostServiceName(target),
          method: "wake",
          parameter: {
            computerId: ctx.key,
            previousHome: known ?? null,
            atLeastGeneration: record.savedGeneration ?? null,
          },
          inputSerde: restate.serde.json,
          outputSerde: restate.serde.json,
        })
        .orTimeout(deps.wakeTimeoutMs + deps.homeTimeoutMs);
    } catch (error) {
      const timedOut = error instanceof restate.TimeoutError;
      const message = timedOut
        ? `computer host ${target} did not answer within ${deps.wakeTimeoutMs + deps.homeTimeoutMs} ms; the next wake picks another host`
        : error instanceof Error
          ? error.message
          : String(error);
      logger.error("waking the computer failed", {
        computerId: ctx.key,
        host: target,
        error: message,
      });
      if (timedOut) {
        record.unanswered = target;
        // Delivered when the host answers again: a wake it finishes late is stopped there.
        ctx.genericSend({
          service: hostServiceName(target),
          method: "stop",
          parameter: { computerId: ctx.key },
          inputSerde: restate.serde.json,
        });
      }
      record.failure = `waking the computer failed: ${message}`;
      transition(ctx, record, "wake-failed");
      throw new restate.TerminalError(
        `${record.failure} (try again; if it keeps failing, see the computer host's log)`,
      );
    }
    record.home = target;
    delete record.unanswered;
    record.failure = null;
    record.generation += 1;
    record.lastActiveAt = await ctx.date.now();
    transition(ctx, record, "woke");
    scheduleIdleCheck(ctx, record.generation, deps.idleSleepMs);
  }

  function scheduleIdleCheck(ctx: restate.ObjectContext, generation: number, delayMs: number) {
    ctx.genericSend({
      service: computerObjectName,
      method: "idleCheck",
      key: ctx.key,
      parameter: { generation },
      inputSerde: restate.serde.json,
      delay: Math.max(1000, delayMs),
    });
  }

  async function sleep(ctx: restate.ObjectContext, record: ComputerRecord): Promise<void> {
    transition(ctx, record, "sleep");
    try {
      const stopped = await onHome(ctx, record, "stop", () =>
        ctx.run("stop", () => deps.host.stop(ctx.key), { maxRetryAttempts: 3 }),
      );
      if (stopped === undefined) {
        record.failure = lostMessage(record);
      } else if (stopped.savedGeneration !== null) {
        record.savedGeneration = stopped.savedGeneration;
      }
    } catch (error) {
      record.failure = `putting the computer to sleep failed: ${error instanceof Error ? error.message : String(error)}`;
      logger.error("putting the computer to sleep failed", {
        computerId: ctx.key,
        error: record.failure,
      });
      transition(ctx, record, "sleep-failed");
      return;
    }
    record.holders = {};
    transition(ctx, record, "slept");
  }

  const lostMessage = (record: ComputerRecord) =>
    `its home host ${record.home ?? "(unknown)"} did not answer within ${deps.homeTimeoutMs} ms: ` +
    `the computer is asleep from its last snapshot (generation ${record.savedGeneration ?? "none"}); ` +
    `changes made after it stay on that host: kept if the computer is next woken there, discarded once another host has woken it`;

  /**
   * C9: runs `local` when this node is the computer's home, or the same operation on the home's
   * host service. Undefined when the home did not answer within `homeTimeoutMs`.
   */
  async function onHome<T extends HostStopResult | ComputerRuntimeStatus>(
    ctx: restate.ObjectContext,
    record: ComputerRecord,
    method: "stop" | "status",
    local: () => Promise<T>,
  ): Promise<T | undefined> {
    // C10: a computer never woken has nothing running anywhere: nothing to stop or to ask.
    if (record.home === undefined && deps.remoteHosts !== undefined)
      return (
        method === "stop"
          ? {
              host: deps.host.nodeId,
              savedGeneration: null,
              skipped: "the computer was never woken",
            }
          : "stopped"
      ) as T;
    const home = record.home ?? deps.host.nodeId;
    if (home === deps.host.nodeId) return local();
    try {
      return await ctx
        .genericCall({
          service: hostServiceName(home), // HOME3
          method,
          parameter: { computerId: ctx.key },
          inputSerde: restate.serde.json,
          outputSerde: restate.serde.json as restate.Serde<T>,
        })
        .orTimeout(deps.homeTimeoutMs);
    } catch (error) {
      if (!(error instanceof restate.TimeoutError)) throw error;
      logger.warn("the computer's home host did not answer", { computerId: ctx.key, home, method });
      record.unanswered = home; // C10: the next wake goes elsewhere
      return undefined;
    }
  }

  /** C6, C9: asks the home whether the sandbox still runs. */
  async function reconcile(ctx: restate.ObjectContext, record: ComputerRecord): Promise<void> {
    const runtime = await onHome(ctx, record, "status", () =>
      ctx.run("check-running", () => deps.provider.status(ctx.key)),
    );
    if (runtime === "running") return;
    if (runtime === undefined) {
      // C9: the home is gone with the computer on it; a sleep there would wait for it too.
      transition(ctx, record, "sleep");
      record.failure = lostMessage(record);
      record.holders = {};
      transition(ctx, record, "slept");
      return;
    }
    record.failure = `the computer had stopped (${runtime}) while it was marked awake`;
    await sleep(ctx, record);
  }

  const kindOf = (record: ComputerRecord): ComputerKind => record.kind ?? "hosted";

  /** `connected`: only read for a self-hosted computer, whose state it is (C7). */
  const status = (
    key: string,
    record: ComputerRecord,
    now: number,
    connected = false,
  ): ComputerStatus =>
    kindOf(record) === "self-hosted"
      ? {
          id: key,
          kind: "self-hosted",
          state: connected ? "connected" : "disconnected",
          lastActiveAt: record.lastActiveAt === 0 ? null : record.lastActiveAt,
          holders: 0,
          failure: null,
          home: null,
        }
      : {
          id: key,
          kind: "hosted",
          state: record.state,
          lastActiveAt: record.lastActiveAt === 0 ? null : record.lastActiveAt,
          holders: activeHolders(record, now).length,
          failure: record.failure,
          home: record.home ?? null,
        };

  /** C7: a self-hosted computer's state, journaled so that a replay sees what the first run saw. */
  const selfHostedStatus = async (ctx: restate.ObjectContext, record: ComputerRecord) => {
    const connected = await ctx.run(
      "connected",
      async () =>
        (await deps.gateway.connectedAnywhere?.(ctx.key)) ?? deps.gateway.isConnected(ctx.key),
    );
    return status(ctx.key, record, await ctx.date.now(), connected);
  };

  /** Live clients see the turns holding the computer change (issue 16 §2: no stale "In use"). */
  function publishHolders(ctx: restate.ObjectContext, record: ComputerRecord, now: number): void {
    if (record.accountId === "") return;
    deps.events.publishAccount({
      type: "computer",
      accountId: record.accountId,
      computerId: ctx.key,
      state: record.state,
      heldByTurns: activeHolders(record, now).length,
    });
  }

  function publishKind(ctx: restate.ObjectContext, record: ComputerRecord, state: string): void {
    ctx.set(recordKey, record);
    if (record.accountId === "") return;
    deps.events.publishAccount({
      type: "computer",
      accountId: record.accountId,
      computerId: ctx.key,
      state,
    });
  }

  return restate.object({
    name: computerObjectName,
    handlers: {
      /** Wakes the computer if allowed and needed; registers a hold. */
      ensureAwake: async (
        ctx: restate.ObjectContext,
        request: EnsureAwakeRequest,
      ): Promise<ComputerStatus> => {
        const record = await load(ctx, request.accountId);
        if (record.accountId === "") record.accountId = request.accountId;
        if (kindOf(record) === "self-hosted") {
          // C7: never woken, never held; the tool asks the machine's worker directly.
          record.lastActiveAt = await ctx.date.now();
          ctx.set(recordKey, record);
          return selfHostedStatus(ctx, record);
        }
        if (record.state === "awake") await reconcile(ctx, record); // C6
        if (record.state !== "awake") {
          if (!request.allowWake) return status(ctx.key, record, await ctx.date.now());
          await wake(ctx, record);
        }
        const now = await ctx.date.now();
        const newHolder = request.holder !== undefined && !(request.holder in record.holders);
        if (request.holder !== undefined) record.holders[request.holder] = now + deps.holdLeaseMs; // C2
        record.lastActiveAt = now;
        ctx.set(recordKey, record);
        if (newHolder) publishHolders(ctx, record, now);
        return status(ctx.key, record, now);
      },

      /** A turn is done with the computer. */
      release: async (ctx: restate.ObjectContext, request: { holder: string }): Promise<void> => {
        const record = await load(ctx);
        if (!(request.holder in record.holders)) return;
        delete record.holders[request.holder];
        record.lastActiveAt = await ctx.date.now();
        ctx.set(recordKey, record);
        publishHolders(ctx, record, record.lastActiveAt);
      },

      /** Activity that should push the idle timer back (a tool call finished). */
      touch: async (ctx: restate.ObjectContext): Promise<void> => {
        const record = await load(ctx);
        if (record.state !== "awake") return;
        record.lastActiveAt = await ctx.date.now();
        ctx.set(recordKey, record);
      },

      wake: async (
        ctx: restate.ObjectContext,
        request: { accountId: string },
      ): Promise<ComputerStatus> => {
        const record = await load(ctx, request.accountId);
        if (record.accountId === "") record.accountId = request.accountId;
        if (kindOf(record) === "self-hosted") return selfHostedStatus(ctx, record); // C7
        if (record.state === "awake") await reconcile(ctx, record); // C6, C9
        if (record.state !== "awake") await wake(ctx, record);
        record.lastActiveAt = await ctx.date.now();
        ctx.set(recordKey, record);
        return status(ctx.key, record, record.lastActiveAt);
      },

      /** Puts the computer to sleep unless a turn holds it (or `force`). */
      sleep: async (
        ctx: restate.ObjectContext,
        request: { force?: boolean } | null,
      ): Promise<ComputerStatus> => {
        const record = await load(ctx);
        if (kindOf(record) === "self-hosted") return selfHostedStatus(ctx, record); // C7
        const now = await ctx.date.now();
        if (
          record.state === "awake" &&
          (request?.force === true || activeHolders(record, now).length === 0)
        ) {
          await sleep(ctx, record);
        }
        return status(ctx.key, record, now);
      },

      /** C4: the idle timer. */
      idleCheck: async (
        ctx: restate.ObjectContext,
        request: { generation: number },
      ): Promise<void> => {
        const record = await load(ctx);
        if (kindOf(record) === "self-hosted") return; // C7: no idle timer
        if (record.state !== "awake" || record.generation !== request.generation) return;
        const now = await ctx.date.now();
        const idleFor = now - record.lastActiveAt;
        if (activeHolders(record, now).length > 0 || idleFor < deps.idleSleepMs) {
          // C2: held, or active recently: look again when it could next be idle.
          scheduleIdleCheck(
            ctx,
            record.generation,
            activeHolders(record, now).length > 0 ? deps.idleSleepMs : deps.idleSleepMs - idleFor,
          );
          return;
        }
        await sleep(ctx, record);
      },

      /**
       * C8: the account's own machine becomes its computer. The hosted computer goes to sleep
       * first (its disk stays, for `useHosted`); calling it again replaces the token.
       */
      useSelfHosted: async (
        ctx: restate.ObjectContext,
        request: UseSelfHostedRequest,
      ): Promise<ComputerStatus & { rotated: boolean }> => {
        const record = await load(ctx, request.accountId);
        if (record.accountId === "") record.accountId = request.accountId;
        if (kindOf(record) === "hosted") {
          recoverInterrupted(ctx, record);
          if (record.state === "awake") await sleep(ctx, record);
          if (record.state !== "asleep") {
            // A failed wake or sleep: make sure nothing of the hosted computer runs or connects.
            await ctx.run("stop-hosted", async () => {
              await deps.gateway.disconnect(
                ctx.key,
                "the account switched to a self-hosted computer",
              );
              await deps.provider.sleep(ctx.key);
              await deps.store.clearWorkerToken(ctx.key);
            });
          }
        }
        const { rotated } = await ctx.run("register", () =>
          deps.store.useSelfHosted(ctx.key, request.tokenHash),
        );
        await ctx.run("disconnect", () =>
          deps.gateway.disconnect(ctx.key, "the computer's self-hosted worker token was replaced"),
        ); // C8: a worker with the old token is cut off now
        record.kind = "self-hosted";
        record.holders = {};
        record.lastActiveAt = await ctx.date.now();
        publishKind(ctx, record, "disconnected");
        return { ...status(ctx.key, record, record.lastActiveAt), rotated };
      },

      /** C8: back to the hosted computer (asleep, with its disk as it was); revokes the machine's token. */
      useHosted: async (
        ctx: restate.ObjectContext,
        request: { accountId: string },
      ): Promise<ComputerStatus & { changed: boolean }> => {
        const record = await load(ctx, request.accountId);
        if (record.accountId === "") record.accountId = request.accountId;
        const { changed } = await ctx.run("unregister", () => deps.store.useHosted(ctx.key));
        if (changed || kindOf(record) === "self-hosted") {
          await ctx.run("disconnect", () =>
            deps.gateway.disconnect(
              ctx.key,
              "the self-hosted computer was removed; the account is back on its hosted computer",
            ),
          );
        }
        record.kind = "hosted";
        record.holders = {};
        publishKind(ctx, record, record.state);
        return { ...status(ctx.key, record, await ctx.date.now()), changed };
      },

      status: restate.handlers.object.shared(
        async (ctx: restate.ObjectSharedContext): Promise<ComputerStatus> => {
          const record = await ctx.get<ComputerRecord>(recordKey);
          const now = await ctx.date.now();
          if (record === null)
            return {
              id: ctx.key,
              kind: "hosted",
              state: "asleep",
              lastActiveAt: null,
              holders: 0,
              failure: null,
              home: null,
            };
          // A read with no effects: the connection is looked at, not journaled (C7).
          return status(ctx.key, record, now, deps.gateway.isConnected(ctx.key));
        },
      ),
    },
    options: {
      retryPolicy: durableObjectRetryPolicy,
      inactivityTimeout: 5 * 60_000,
      abortTimeout: 30 * 60_000,
    },
  });
}

export type ComputerObject = ReturnType<typeof createComputerObject>;

/**
 * C10: the host a wake goes to: the home while it is one of the hosts and answered last time,
 * else one picked by the computer's id (stable, spread evenly) among the rest.
 */
export function pickHost(
  computerId: string,
  record: { home?: string; unanswered?: string },
  hosts: readonly string[],
): string {
  if (hosts.length === 0)
    throw new Error("no computer hosts are configured (ROOST_COMPUTER_HOSTS)");
  if (record.home !== undefined && hosts.includes(record.home) && record.unanswered !== record.home)
    return record.home;
  const candidates = hosts.filter((host) => host !== record.unanswered);
  const pool = candidates.length > 0 ? candidates : hosts;
  let hash = 2166136261;
  for (let index = 0; index < computerId.length; index++) {
    hash ^= computerId.charCodeAt(index);
    hash = Math.imul(hash, 16777619) >>> 0;
  }
  return pool[hash % pool.length]!;
}
