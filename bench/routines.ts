/**
 * Routines at scale (issue 11 §5), on a Roost child process (embedded Restate, SQLite, the demo
 * model):
 *   1. N routines (default 1,000) due in the same minute (cron "0 * * * * *": second 0 of every
 *      minute): how long from that second until the last run started, and until the last was
 *      answered.
 *   2. The scheduler's memory at M routines (default 10,000) armed: RSS of the server process and
 *      of restate-server before and after (the scheduler keeps nothing per routine in process
 *      memory; each routine is a Restate object with one pending timer).
 *   node bench/routines.ts [due=1000] [armed=10000]
 */
import type { Api } from "../src/protocol/index.ts";
import { rssMiB, startBenchRoost } from "./support.ts";

const due = Number(process.argv[2] ?? 1000);
const armed = Number(process.argv[3] ?? 10_000);
const perBot = 50;

const { roost, api } = await startBenchRoost({
  ROOST_MODEL: "demo",
  ROOST_MEMORY_PASS: "off",
  ROOST_FOLLOW_UP_WINDOW_MS: "100",
  ROOST_RATE_LIMIT_PER_MINUTE: "0",
  // Cron at second 0 of every minute is 60 s apart: allowed once the minimum is 60 s.
  ROOST_ROUTINE_MIN_INTERVAL_MS: "60000",
  ROOST_COMPUTER_PROVIDER: "process",
});

async function inParallel<T>(count: number, lanes: number, work: (index: number) => Promise<T>) {
  const results: T[] = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < count) {
        const index = next++;
        results[index] = await work(index);
      }
    }),
  );
  return results;
}

async function createRoutines(count: number, trigger: Api.RoutineTrigger, tag: string) {
  const bots = await inParallel(Math.ceil(count / perBot), 8, (index) =>
    api.createBot(`${tag}-${index}`, "demo"),
  );
  const started = performance.now();
  const routines = await inParallel(count, 32, (index) =>
    api.call<Api.Routine>("POST", `/v1/bots/${bots[Math.floor(index / perBot)]!.id}/routines`, {
      name: `${tag} ${index}`,
      instruction: "Check in.",
      trigger,
    }),
  );
  return { routines, createMs: performance.now() - started };
}

try {
  // 1. N routines due in the same minute.
  const { routines, createMs } = await createRoutines(
    due,
    { type: "schedule", cron: "0 * * * * *" },
    "due",
  );
  const slot = Math.ceil(Date.now() / 60_000) * 60_000;
  console.log(
    `created ${due} routines in ${(createMs / 1000).toFixed(1)} s; all due at ${new Date(slot).toISOString()} (in ${((slot - Date.now()) / 1000).toFixed(0)} s)`,
  );
  let lastStart = 0;
  let lastAnswer = 0;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    if (Date.now() < slot) continue;
    const firstRuns = await inParallel(routines.length, 16, async (index) => {
      const { runs } = await api.call<Api.RoutineRunList>(
        "GET",
        `/v1/routines/${routines[index]!.id}/runs`,
      );
      return runs.find((run) => run.scheduledAt === new Date(slot).toISOString());
    });
    const startedRuns = firstRuns.filter((run) => run?.startedAt != null);
    const answered = firstRuns.filter((run) => run?.finishedAt != null);
    console.log(
      `  ${((Date.now() - slot) / 1000).toFixed(1)} s after the slot: ${startedRuns.length} started, ${answered.length} answered`,
    );
    if (answered.length === routines.length || Date.now() - slot > 300_000) {
      lastStart = Math.max(...startedRuns.map((run) => Date.parse(run!.startedAt!)));
      lastAnswer = Math.max(...answered.map((run) => Date.parse(run!.finishedAt!)));
      const missed = firstRuns.filter((run) => run?.status === "missed").length;
      console.log(
        `${due} routines due at one time: last started ${((lastStart - slot) / 1000).toFixed(2)} s after the slot, last answered ${((lastAnswer - slot) / 1000).toFixed(2)} s after (missed: ${missed})`,
      );
      break;
    }
  }
  // Stop them so they do not fire every minute during part 2.
  await inParallel(routines.length, 32, (index) =>
    api.call("PATCH", `/v1/routines/${routines[index]!.id}`, { enabled: false }),
  );

  // 2. Memory at M armed routines (daily: none fires during the measurement).
  const before = { server: rssMiB(roost.pid()!), restate: rssMiB(roost.restatePid()!) };
  const { createMs: armMs } = await createRoutines(
    armed,
    { type: "schedule", preset: "daily", at: "03:00" },
    "armed",
  );
  await new Promise((resolve) => setTimeout(resolve, 5000));
  const after = { server: rssMiB(roost.pid()!), restate: rssMiB(roost.restatePid()!) };
  console.log(
    `${armed} more routines armed in ${(armMs / 1000).toFixed(1)} s (${(armed / (armMs / 1000)).toFixed(0)}/s through the API)`,
  );
  console.log(
    `memory: server RSS ${before.server.toFixed(0)} → ${after.server.toFixed(0)} MiB, restate-server RSS ${before.restate.toFixed(0)} → ${after.restate.toFixed(0)} MiB (${(((after.restate - before.restate) * 1024) / armed).toFixed(1)} KiB per armed routine in Restate)`,
  );
} finally {
  await roost.stop();
}
