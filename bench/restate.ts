/**
 * Prints the embedded engine's figures: cold start (fresh data dir) and warm start to healthy,
 * restart after SIGKILL to healthy, idle RSS of restate-server and of the watchdog.
 * Run: `node bench/restate.ts [runs]` (Linux: reads /proc).
 */
import {
  startEmbeddedRestate,
  type EmbeddedRestate,
  type EngineEvent,
} from "../src/engine/index.ts";
import {
  findProcesses,
  freePorts,
  makeTempDir,
  residentKib,
  waitFor,
} from "../src/engine/testing/index.ts";

const runs = Number(process.argv[2] ?? "3");
const cold: number[] = [];
const warm: number[] = [];
const restart: number[] = [];
const rss: number[] = [];
let watchdogKib: number | undefined;

for (let run = 0; run < runs; run++) {
  const dir = await makeTempDir();
  const ports = await freePorts();
  const events: EngineEvent[] = [];
  let engine: EmbeddedRestate | undefined;
  try {
    let startedAt = performance.now();
    engine = await startEmbeddedRestate({
      dataDir: dir.path,
      ...ports,
      onEvent: (event) => events.push(event),
    });
    cold.push(performance.now() - startedAt);

    const pid = engine.pid!;
    const killedAt = performance.now();
    process.kill(pid, "SIGKILL");
    await waitFor("restart", () =>
      events.find((event) => event.type === "ready" && event.pid !== pid),
    );
    restart.push(performance.now() - killedAt);

    // Idle: let start-up work (compactions, leadership) settle.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    rss.push((await residentKib(engine.pid!)) ?? Number.NaN);
    const [watchdog] = await findProcesses("roost-restate-watchdog", String(engine.pid));
    if (watchdog !== undefined) watchdogKib = await residentKib(watchdog);
    await engine.close();
    engine = undefined;

    startedAt = performance.now();
    engine = await startEmbeddedRestate({ dataDir: dir.path, ...ports });
    warm.push(performance.now() - startedAt);
  } finally {
    await engine?.close();
    await dir.remove();
  }
}

const summary = (values: number[]): string => {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  return `median ${Math.round(median)}, min ${Math.round(sorted[0] ?? Number.NaN)}, max ${Math.round(sorted.at(-1) ?? Number.NaN)}`;
};
console.log(`runs: ${runs}`);
console.log(`cold start to healthy (fresh data dir), ms: ${summary(cold)}`);
console.log(`warm start to healthy (existing data dir), ms: ${summary(warm)}`);
console.log(`restart after SIGKILL to healthy, ms: ${summary(restart)}`);
console.log(`restate-server idle RSS, MiB: ${summary(rss.map((kib) => kib / 1024))}`);
console.log(
  `watchdog (sh) RSS, MiB: ${watchdogKib === undefined ? "n/a" : (watchdogKib / 1024).toFixed(1)}`,
);
