/**
 * Tool round trip on an awake computer: from `gateway.call` to its result, over a real
 * WebSocket to a real worker process started as the platform starts it (its built JavaScript,
 * with workerNodeOptions). Prints p50/p95/p99 over N calls of `shell true` (the figure;
 * target p50 ≤ 5 ms), the same for `read` (no process spawned), the floors set by spawning the
 * job's process directly (today's one non-login bash, and the `sh` + `bash -lc` pair of before
 * decision 0021), one done-log record (a journal append and fdatasync, and the file-per-record
 * write of before), and the worker's RSS and PSS.
 *
 *   node bench/tool-roundtrip.ts [--calls 500] [--node-options ''] [--sources]
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
    "node-options": { type: "string" },
    sources: { type: "boolean", default: false },
  },
});
const calls = Number.parseInt(values.calls, 10);
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
const worker = spawnWorker({
  gatewayUrl: gw.url,
  token: "bench-token",
  dirs,
  nodeOptions,
  ...(build === undefined ? {} : { entry: build.entry }),
});
try {
  await gw.gateway.waitForWorker("cmp_bench", 15_000);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idle = memory(worker.child.pid!);

  const run = async (label: string, tool: string, input: unknown) => {
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
    }
    return samples;
  };

  const shell = await run("shell", "shell", { command: "true" });
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

  console.log(`shell "true" round trip   ${summary(shell)}`);
  console.log(`read (6 bytes) round trip ${summary(read)}`);
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
    `worker (${build === undefined ? "sources" : "built"}, node ${nodeOptions.join(" ") || "without options"}): idle ${idle}; after ${2 * (calls + 20)} calls ${memory(worker.child.pid!)}`,
  );
} finally {
  await worker.stop();
  await gw.close();
  dirs.remove();
}
