import { openDoneLog } from "../src/worker/done-log.ts";
import { shellTool } from "../src/worker/shell-tool.ts";
import { makeComputerDirs } from "../src/gateway/testing.ts";
const dirs = makeComputerDirs();
process.env.HOME = dirs.home;
const log = await openDoneLog(dirs.stateDir, { fsync: true });
const env = { PATH: "/usr/bin:/bin", HOME: dirs.home };
async function once(i: number, durable: boolean) {
  const ctx = { callId: "c" + i + durable, workspace: dirs.workspace, stateDir: dirs.stateDir, commandEnv: env, deadline: Date.now() + 10000,
    signal: new AbortController().signal, emit() {}, markStarted: async () => { if (durable) await log.markStarted("c" + i, "shell"); }, previous: undefined, durable, now: Date.now };
  const t0 = performance.now();
  await shellTool({ command: "true" }, ctx);
  const t1 = performance.now();
  if (durable) await log.markDone("c" + i, "shell", { ok: true, output: {} });
  return [t1 - t0, performance.now() - t1];
}
for (const durable of [true, false]) {
  const a: number[] = [], b: number[] = [];
  for (let i = 0; i < 100; i++) { const [x, y] = await once(i, durable); a.push(x!); b.push(y!); }
  a.sort((x, y) => x - y); b.sort((x, y) => x - y);
  console.log("durable", durable, "shell p50", a[50]?.toFixed(2), "markDone p50", b[50]?.toFixed(2));
}
dirs.remove();
