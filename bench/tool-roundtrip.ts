/**
 * Tool round trip on an awake computer: from `gateway.call` to its result, over a real
 * WebSocket to a real worker process started as the platform starts it (its built JavaScript,
 * with workerNodeOptions). Prints p50/p95/p99 over N calls of `shell true` (the figure;
 * target p50 ≤ 5 ms), the same for `read` (no process spawned), the floors set by spawning the
 * job's process directly (today's one non-login bash, and the `sh` + `bash -lc` pair of before
 * decision 0021), one done-log record (a journal append and fdatasync, and the file-per-record
 * write of before), and the worker's RSS and PSS.
 *
 *   node bench/tool-roundtrip.ts [--calls 500] [--gap-ms 20] [--warm-shell on|off] [--node-options ''] [--sources]
 *
 * `--node-options ''` and `--sources` (run the TypeScript sources) start the worker as before.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { makeComputerDirs, spawnWorker, startTestGateway } from "../src/gateway/testing/index.ts";
import { prepareWorkerBuild, workerNodeOptions } from "../src/computers/worker-build.ts";
import { openDoneLog } from "../src/worker/done-log.ts";
import { writeFileAtomic } from "../src/worker/fs-atomic.ts";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "500" },
    // The pause between calls of the second `shell true` run: an agent's calls are separated by
    // its model's turns, and a worker that is not busy starts the next job's wrapper ahead.
    "gap-ms": { type: "string", default: "20" },
    // off: every call starts its own wrapper (the worker's ROOST_WARM_SHELL; before warm-shell.ts)
    "warm-shell": { type: "string", default: "on" },
    "node-options": { type: "string" },
    sources: { type: "boolean", default: false },
  },
});
const calls = Number.parseInt(values.calls, 10);
const gapMs = Number.parseInt(values["gap-ms"], 10);
const nodeOptions =
  values["node-options"] === undefined
    ? workerNodeOptions
    : values["node-options"].split(" ").filter((option) => option !== "");
const build = values.sources ? undefined : await prepareWorkerBuild();

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
  const mean = (sorted.reduce((sum, x) => sum + x, 0) / sorted.length).toFixed(2);
  return `p50 ${at(0.5)} ms  p95 ${at(0.95)} ms  p99 ${at(0.99)} ms  mean ${mean} ms  (n=${sorted.length})`;
}

function memory(pid: number): string {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(rollup);
    return match === null ? "?" : `${(Number(match[1]) / 1024).toFixed(1)} MiB`;
  };
  return `RSS ${field("Rss")} PSS ${field("Pss")}`;
}

const gw = await startTestGateway();
const dirs = makeComputerDirs("roost-bench-");
gw.tokens.set("bench-token", "cmp_bench");
// A second worker with the warm shell off, for the interleaved comparison: both answer calls in
// turn, so the machine's noise falls on both alike.
const coldDirs = makeComputerDirs("roost-bench-cold-");
gw.tokens.set("bench-cold-token", "cmp_cold");
const coldWorker = spawnWorker({
  gatewayUrl: gw.url,
  token: "bench-cold-token",
  dirs: coldDirs,
  nodeOptions,
  env: { ROOST_WARM_SHELL: "off" },
  ...(build === undefined ? {} : { entry: build.entry }),
});
const worker = spawnWorker({
  gatewayUrl: gw.url,
  token: "bench-token",
  dirs,
  nodeOptions,
  env: { ROOST_WARM_SHELL: values["warm-shell"] },
  ...(build === undefined ? {} : { entry: build.entry }),
});
try {
  await gw.gateway.waitForWorker("cmp_bench", 15_000);
  await gw.gateway.waitForWorker("cmp_cold", 15_000);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idle = memory(worker.child.pid!);

  const run = async (label: string, tool: string, input: unknown, gap = 0) => {
    for (let i = 0; i < 20; i += 1)
      await gw.gateway.call("cmp_bench", {
        callId: `${label}-warm-${i}`,
        tool,
        input,
        timeoutMs: 30_000,
      });
    const samples: number[] = [];
    for (let i = 0; i < calls; i += 1) {
      const started = performance.now();
      const result = await gw.gateway.call("cmp_bench", {
        callId: `${label}-${i}`,
        tool,
        input,
        timeoutMs: 30_000,
      });
      samples.push(performance.now() - started);
      if (!result.ok) throw new Error(`${label} failed: ${result.error.message}`);
      if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
    }
    return samples;
  };

  /** `shell true` on each worker in turn, `gap` ms after each call. */
  const interleaved = async (gap: number) => {
    const samples = { cmp_bench: [] as number[], cmp_cold: [] as number[] };
    for (let i = 0; i < calls; i += 1) {
      for (const computer of ["cmp_bench", "cmp_cold"] as const) {
        const started = performance.now();
        const result = await gw.gateway.call(computer, {
          callId: `ab-${gap}-${computer}-${i}`,
          tool: "shell",
          input: { command: "true" },
          timeoutMs: 30_000,
        });
        samples[computer].push(performance.now() - started);
        if (!result.ok) throw new Error(`shell failed: ${result.error.message}`);
        if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
      }
    }
    return samples;
  };
  const abSpaced = await interleaved(gapMs);
  const abBackToBack = await interleaved(0);

  const shell = await run("shell", "shell", { command: "true" });
  const spaced = await run("spaced", "shell", { command: "true" }, gapMs);
  writeFileSync(path.join(dirs.workspace, "small.txt"), "hello\n");
  const read = await run("read", "read", { path: "small.txt" });

  const spawned = async (command: string, args: string[]) => {
    const samples: number[] = [];
    for (let i = 0; i < 100; i += 1) {
      const started = performance.now();
      await new Promise((resolve) =>
        spawn(command, args, {
          env: { PATH: "/usr/bin:/bin", HOME: dirs.home },
          stdio: "ignore",
          detached: true,
        }).once("exit", resolve),
      );
      samples.push(performance.now() - started);
    }
    return samples;
  };
  const jobFloor = await spawned("bash", [
    "--norc",
    "--noprofile",
    "-c",
    '( eval "set --; $1" ); exit $?',
    "bash",
    "true",
  ]);
  const beforeFloor = await spawned("/bin/sh", ["-c", 'bash -lc "$1"; exit $?', "sh", "true"]);

  const journal = await openDoneLog(path.join(dirs.root, "journal-bench"));
  const recordAppend: number[] = [];
  for (let i = 0; i < 100; i += 1) {
    const started = performance.now();
    await journal.markStarted(`bench-${i}`, "shell");
    recordAppend.push(performance.now() - started);
  }
  await journal.close();
  const recordWrite: number[] = [];
  for (let i = 0; i < 100; i += 1) {
    const started = performance.now();
    await writeFileAtomic(
      path.join(dirs.root, `record-${i}.json`),
      JSON.stringify({ state: "done", i }),
      true,
    );
    recordWrite.push(performance.now() - started);
  }

  console.log(`warm shell: ${values["warm-shell"]}`);
  console.log(`shell "true" round trip   ${summary(shell)}   (back to back)`);
  console.log(`  ${gapMs} ms apart          ${summary(spaced)}   (as an agent's calls come)`);
  console.log(`read (6 bytes) round trip ${summary(read)}`);
  console.log(
    `interleaved, calls taking turns between a worker with the warm shell ${values["warm-shell"]} and one with it off:`,
  );
  console.log(`  ${gapMs} ms apart, warm ${values["warm-shell"]}  ${summary(abSpaced.cmp_bench)}`);
  console.log(`  ${gapMs} ms apart, warm off ${summary(abSpaced.cmp_cold)}`);
  console.log(`  back to back, warm ${values["warm-shell"]} ${summary(abBackToBack.cmp_bench)}`);
  console.log(`  back to back, warm off ${summary(abBackToBack.cmp_cold)}`);
  console.log(
    `done-log record, journal ${summary(recordAppend)}   (append + fdatasync; shell writes two per call, read one)`,
  );
  console.log(
    `  before: file per record ${summary(recordWrite)}   (temporary file, fsync, rename, fsync of the folder)`,
  );
  console.log(
    `job process, spawned     ${summary(jobFloor)}   (one non-login bash: the floor for shell)`,
  );
  console.log(`  before: sh + bash -lc  ${summary(beforeFloor)}   (the wrapper and a login shell)`);
  console.log(
    `worker (${build === undefined ? "sources" : "built"}, node ${nodeOptions.join(" ") || "without options"}): idle ${idle}; after ${3 * (calls + 20)} calls ${memory(worker.child.pid!)}`,
  );
} finally {
  await worker.stop();
  await coldWorker.stop();
  await gw.close();
  dirs.remove();
  coldDirs.remove();
}
