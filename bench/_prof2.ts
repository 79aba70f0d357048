import { spawnJob, readStreamText, readNumber, readJob } from "../src/worker/jobs.ts";
import { makeComputerDirs } from "../src/gateway/testing.ts";
import { promises as fs } from "node:fs";
import { spawn } from "node:child_process";
const dirs = makeComputerDirs();
const env = { PATH: "/usr/bin:/bin", HOME: dirs.home };
const t = { spawn: [] as number[], exit: [] as number[], finish: [] as number[], raw: [] as number[], rawsh: [] as number[] };
for (let i = 0; i < 60; i++) {
  const dir = dirs.stateDir + "/jobs/j" + i;
  const t0 = performance.now();
  const child = await spawnJob(dir, { jobId: "j", callId: "c", command: "true", cwd: dirs.workspace, startedAt: Date.now(), deadlineAt: null, background: false }, env, false);
  const t1 = performance.now();
  await new Promise((r) => child.exitCode !== null ? r(0) : child.once("exit", r));
  const t2 = performance.now();
  await readNumber(dir + "/exit"); await readJob(dir); await readStreamText(dir + "/stdout", 30000); await readStreamText(dir + "/stderr", 30000); await fs.rm(dir, { recursive: true });
  const t3 = performance.now();
  t.spawn.push(t1 - t0); t.exit.push(t2 - t1); t.finish.push(t3 - t2);
  const r0 = performance.now();
  await new Promise((r) => spawn("bash", ["-lc", "true"], { env, stdio: "ignore", detached: true }).once("exit", r));
  t.raw.push(performance.now() - r0);
  const r1 = performance.now();
  await new Promise((r) => spawn("/bin/sh", ["-c", 'bash -lc "$1"', "x", "true"], { env, stdio: "ignore", detached: true }).once("exit", r));
  t.rawsh.push(performance.now() - r1);
}
for (const [k, v] of Object.entries(t)) { v.sort((a, b) => a - b); console.log(k, v[30]?.toFixed(2)); }
dirs.remove();
