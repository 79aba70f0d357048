/**
 * Tool round trip on an awake computer: from `gateway.call` to its result, over a real
 * WebSocket to a real worker process. Prints p50/p95/p99 over N calls of `shell true` (the
 * issue's figure; target p50 ≤ 5 ms), the same for `read` (no process spawned), the floor set by
 * spawning `bash -lc true` directly, one fsync'd done-log record write, and the worker's RSS.
 *
 *   node bench/tool-roundtrip.ts [--calls 500]
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { makeComputerDirs, spawnWorker, startTestGateway } from "../src/gateway/testing/index.ts";
import { writeFileAtomic } from "../src/worker/fs-atomic.ts";

const { values } = parseArgs({ options: { calls: { type: "string", default: "500" } } });
const calls = Number.parseInt(values.calls, 10);

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
  const mean = (sorted.reduce((sum, x) => sum + x, 0) / sorted.length).toFixed(2);
  return `p50 ${at(0.5)} ms  p95 ${at(0.95)} ms  p99 ${at(0.99)} ms  mean ${mean} ms  (n=${sorted.length})`;
}

function rssMiB(pid: number): string {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match === null ? "?" : `${(Number(match[1]) / 1024).toFixed(1)} MiB`;
}

const gw = await startTestGateway();
const dirs = makeComputerDirs("roost-bench-");
gw.tokens.set("bench-token", "cmp_bench");
const worker = spawnWorker({ gatewayUrl: gw.url, token: "bench-token", dirs });
try {
  await gw.gateway.waitForWorker("cmp_bench", 15_000);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idleRss = rssMiB(worker.child.pid!);

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

  const spawnFloor: number[] = [];
  for (let i = 0; i < 100; i += 1) {
    const started = performance.now();
    await new Promise((resolve) =>
      spawn("bash", ["-lc", "true"], {
        env: { PATH: "/usr/bin:/bin", HOME: dirs.home },
        stdio: "ignore",
      }).once("exit", resolve),
    );
    spawnFloor.push(performance.now() - started);
  }

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
    `fsync'd done-log record   ${summary(recordWrite)}   (shell writes two per call, read one)`,
  );
  console.log(
    `bash -lc true, spawned    ${summary(spawnFloor)}   (floor for shell: a login shell per call)`,
  );
  console.log(
    `idle worker RSS           ${idleRss}; after ${2 * (calls + 20)} calls ${rssMiB(worker.child.pid!)}`,
  );
} finally {
  await worker.stop();
  await gw.close();
  dirs.remove();
}
