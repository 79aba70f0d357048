/**
 * The scheduler's decisions (scheduler.ts SCHED1–SCHED5) on a real SQLite store, with the
 * memory durable context: on-time slots run, late ones follow the misfire policy, stale
 * generations do nothing, a slot fires once, and a long absence pauses instead of running.
 * (The same code on Restate, across kill -9 and two nodes: test/faults/routines.test.ts.)
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import type { NotificationInput } from "../notifications/index.ts";
import type { Api } from "../protocol/index.ts";
import { openStore, type Routine, type Store } from "../store/index.ts";
import {
  armRoutine,
  fireRoutine,
  slotRunId,
  type SchedulerDependencies,
  type SchedulerState,
  type StateCell,
} from "./scheduler.ts";
import { defaultRoutineSettings } from "./types.ts";

let dir: string;
let store: Store;
let notifications: NotificationInput[];
let deps: SchedulerDependencies;
let accountId: string;
let botId: string;

const minute = 60_000;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-scheduler-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  notifications = [];
  deps = {
    store,
    deliver: (message) => store.appendMessage(message),
    keepRuns: 20,
    notifier: { notify: async (notification) => void notifications.push(notification) },
    settings: { ...defaultRoutineSettings, misfireGraceMs: minute, maxCatchUp: 3 },
  };
  const account = await store.createAccount({ name: "ada", isAdmin: false });
  accountId = account.id;
  botId = (await store.createBot({ accountId, name: "b", instructions: "", model: null })).id;
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

function memoryCell(initial: SchedulerState | null = null): StateCell & {
  value: SchedulerState | null;
} {
  const cell = {
    value: initial,
    get: async () => cell.value,
    set: (state: SchedulerState) => void (cell.value = state),
  };
  return cell;
}

async function routine(misfire: Api.MisfirePolicy, everyMs = 10 * minute): Promise<Routine> {
  return store.createRoutine({
    accountId,
    botId,
    maxPerBot: 50,
    name: "news",
    instruction: "read the news",
    trigger: { type: "schedule", everyMs },
    target: { kind: "new_conversation" },
    enabled: true,
    misfire,
    budget: null,
    triageModel: null,
    webhookKeyHash: null,
  });
}

const runsOf = async (id: string) =>
  (await store.listRoutineRuns(id, 100)).sort(
    (a, b) => (a.scheduledAt ?? 0) - (b.scheduledAt ?? 0),
  );

describe("scheduler", () => {
  it("arm sends one delayed fire for the next slot and records it; a second arm of the generation does nothing", async () => {
    const r = await routine("once");
    const cell = memoryCell();
    const durable = createMemoryDurable({ clock: () => r.anchorAt + minute });
    expect(await armRoutine(durable, cell, deps, r.id, { generation: 1 })).toBe("armed");
    const sends = durable.journal.filter((entry) => entry.type === "send");
    expect(sends).toHaveLength(1);
    expect(sends[0]).toMatchObject({
      input: { generation: 1, slotAt: r.anchorAt + 10 * minute },
      options: { delayMs: 9 * minute },
    });
    expect((await store.getRoutine(r.id))?.nextRunAt).toBe(r.anchorAt + 10 * minute);
    const again = createMemoryDurable({ clock: () => r.anchorAt + minute });
    expect(await armRoutine(again, cell, deps, r.id, { generation: 1 })).toBe("already");
    expect(again.journal.filter((entry) => entry.type === "send")).toHaveLength(0);
  });

  it("an on-time slot runs once: a second fire of the same slot is a duplicate (SCHED2)", async () => {
    const r = await routine("once");
    const cell = memoryCell();
    const slotAt = r.anchorAt + 10 * minute;
    const durable = createMemoryDurable({ clock: () => slotAt + 100 });
    expect(await fireRoutine(durable, cell, deps, r.id, { generation: 1, slotAt })).toBe("ran");
    const second = createMemoryDurable({ clock: () => slotAt + 200 });
    expect(await fireRoutine(second, cell, deps, r.id, { generation: 1, slotAt })).toBe(
      "duplicate",
    );
    const runs = await runsOf(r.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      id: slotRunId(r.id, slotAt),
      status: "running",
      kind: "schedule",
    });
    const messages = await store.listMessages(runs[0]!.conversationId!);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.source).toEqual({ kind: "routine", routineId: r.id, runId: runs[0]!.id });
    // The next slot is armed.
    expect(durable.journal.filter((entry) => entry.type === "send")).toHaveLength(1);
  });

  it("a replay of a fire after a crash stores and delivers nothing twice (RUN1)", async () => {
    const r = await routine("once");
    const slotAt = r.anchorAt + 10 * minute;
    const first = createMemoryDurable({ clock: () => slotAt + 100 });
    await fireRoutine(first, memoryCell(), deps, r.id, { generation: 1, slotAt });
    // The engine lost the journal's tail (a kill -9 before it was acknowledged): run it again live.
    const journal = first.journal.slice(0, 3);
    const replay = createMemoryDurable({ journal, clock: () => slotAt + 500 });
    await fireRoutine(replay, memoryCell(), deps, r.id, { generation: 1, slotAt });
    const runs = await runsOf(r.id);
    expect(runs).toHaveLength(1);
    expect(await store.listMessages(runs[0]!.conversationId!)).toHaveLength(1);
    expect(await store.listConversations(accountId)).toHaveLength(1);
  });

  it("a fire of an older generation, or for a disabled or deleted routine, does nothing (SCHED1)", async () => {
    const r = await routine("once");
    const slotAt = r.anchorAt + 10 * minute;
    await store.updateRoutine(r.id, { name: "renamed", reschedule: true }, accountId);
    const stale = createMemoryDurable({ clock: () => slotAt });
    expect(await fireRoutine(stale, memoryCell(), deps, r.id, { generation: 1, slotAt })).toBe(
      "stale",
    );
    await store.updateRoutine(r.id, { enabled: false, reschedule: true }, accountId);
    expect(
      await fireRoutine(createMemoryDurable({ clock: () => slotAt }), memoryCell(), deps, r.id, {
        generation: 3,
        slotAt,
      }),
    ).toBe("stale");
    await store.deleteRoutine(r.id, accountId);
    expect(
      await fireRoutine(createMemoryDurable({ clock: () => slotAt }), memoryCell(), deps, r.id, {
        generation: 3,
        slotAt,
      }),
    ).toBe("stale");
    expect(stale.journal.filter((entry) => entry.type === "send")).toHaveLength(0);
    expect(await store.listConversations(accountId)).toEqual([]);
  });

  it("misfire once: every missed slot is recorded missed, one catch-up run starts, one notification (SCHED3)", async () => {
    const r = await routine("once");
    const slotAt = r.anchorAt + 10 * minute;
    // The platform was down for 35 minutes: slots at +10, +20, +30, +40 were due.
    const now = r.anchorAt + 45 * minute;
    const outcome = await fireRoutine(
      createMemoryDurable({ clock: () => now }),
      memoryCell(),
      deps,
      r.id,
      { generation: 1, slotAt },
    );
    expect(outcome).toBe("misfire:once:4");
    const runs = await runsOf(r.id);
    expect(runs.filter((run) => run.status === "missed").map((run) => run.scheduledAt)).toEqual(
      [10, 20, 30, 40].map((offset) => r.anchorAt + offset * minute),
    );
    const catchUp = runs.filter((run) => run.kind === "catch_up");
    expect(catchUp).toHaveLength(1);
    expect(catchUp[0]!.status).toBe("running");
    expect(notifications).toHaveLength(1);
    expect(notifications[0]).toMatchObject({
      id: `missed:${r.id}:${slotAt}`,
      kind: "missed_run",
      accountId,
    });
  });

  it("misfire skip: missed records and a notification, and no run", async () => {
    const r = await routine("skip");
    const slotAt = r.anchorAt + 10 * minute;
    await fireRoutine(
      createMemoryDurable({ clock: () => r.anchorAt + 25 * minute }),
      memoryCell(),
      deps,
      r.id,
      { generation: 1, slotAt },
    );
    const runs = await runsOf(r.id);
    expect(runs.map((run) => run.status)).toEqual(["missed", "missed"]);
    expect(await store.listConversations(accountId)).toEqual([]);
    expect(notifications).toHaveLength(1);
  });

  it("misfire catch_up: each missed slot runs up to the bound; the rest are recorded missed", async () => {
    const r = await routine("catch_up");
    const slotAt = r.anchorAt + 10 * minute;
    await fireRoutine(
      createMemoryDurable({ clock: () => r.anchorAt + 55 * minute }),
      memoryCell(),
      deps,
      r.id,
      { generation: 1, slotAt },
    );
    const runs = await runsOf(r.id);
    expect(runs.map((run) => [run.kind, run.status])).toEqual([
      ["catch_up", "running"],
      ["catch_up", "running"],
      ["catch_up", "running"],
      ["schedule", "missed"],
      ["schedule", "missed"],
    ]);
    expect(notifications).toHaveLength(1);
    expect(notifications[0]!.body).toContain("3 run late");
  });

  it("a missed-run notification has the same id when the fire is replayed, so the owner is told once", async () => {
    const r = await routine("skip");
    const slotAt = r.anchorAt + 10 * minute;
    for (let attempt = 0; attempt < 2; attempt++)
      await fireRoutine(
        createMemoryDurable({ clock: () => r.anchorAt + 30 * minute }),
        memoryCell(),
        deps,
        r.id,
        { generation: 1, slotAt },
      );
    expect(new Set(notifications.map((notification) => notification.id)).size).toBe(1);
    // Slots +10, +20 and +30 were due; each is recorded once.
    expect(await runsOf(r.id)).toHaveLength(3);
  });

  it("after the owner's long absence a slot pauses the account's routines and notifies instead of running (SCHED5, SCHED4)", async () => {
    const r = await routine("once");
    const absent = defaultRoutineSettings.absenceMs;
    const slotAt = r.anchorAt + absent + 10 * minute;
    const cell = memoryCell();
    expect(
      await fireRoutine(createMemoryDurable({ clock: () => slotAt + 100 }), cell, deps, r.id, {
        generation: 1,
        slotAt,
      }),
    ).toBe("paused-for-absence");
    expect(notifications).toEqual([
      expect.objectContaining({ kind: "routines_paused", accountId }),
    ]);
    expect((await store.getRoutineAccountSettings(accountId)).routinesPausedAt).not.toBeNull();
    // Paused: the next slot starts nothing, but stays armed.
    const next = slotAt + 10 * minute;
    const durable = createMemoryDurable({ clock: () => next + 100 });
    expect(await fireRoutine(durable, cell, deps, r.id, { generation: 1, slotAt: next })).toBe(
      "paused",
    );
    expect(durable.journal.filter((entry) => entry.type === "send")).toHaveLength(1);
    expect(await runsOf(r.id)).toEqual([]);
    // Resumed (and the owner active again): the following slot runs.
    await store.setRoutinesPaused(accountId, null);
    const token = await store.createApiToken({ accountId, name: "t", tokenHash: "h" });
    await store.touchApiToken(token.id, next + 5 * minute);
    const after = next + 10 * minute;
    expect(
      await fireRoutine(createMemoryDurable({ clock: () => after + 100 }), cell, deps, r.id, {
        generation: 1,
        slotAt: after,
      }),
    ).toBe("ran");
  });
});
