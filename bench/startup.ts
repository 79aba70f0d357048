/**
 * Start-up: `roost up` (what `npm start` runs) on a fresh data dir until /v1/health answers 200,
 * then a second start on the same data dir; and the resident memory of the Node process and of
 * restate-server after 10 s idle.
 *   node bench/startup.ts
 */
import { setTimeout as delay } from "node:timers/promises";
import { rssMiB, startBenchRoost } from "./support.ts";

const coldStarted = performance.now();
const { roost } = await startBenchRoost();
const cold = performance.now() - coldStarted;
try {
  await roost.stop();
  const warmStarted = performance.now();
  await roost.start();
  const warm = performance.now() - warmStarted;
  await delay(10_000); // idle on purpose: this measures memory at rest, not a condition
  console.log(
    `start to healthy: fresh data dir ${cold.toFixed(0)} ms, existing data dir ${warm.toFixed(0)} ms`,
  );
  console.log(
    `idle RSS: node ${rssMiB(roost.pid()!).toFixed(1)} MiB, restate-server ${rssMiB(roost.restatePid()!).toFixed(1)} MiB`,
  );
} finally {
  await roost.stop();
}
