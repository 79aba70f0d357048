/**
 * The worker that runs inside a computer. Supervisors start it as a process
 * (`node <workerEntryPath>`); tests and benchmarks may also start it in-process.
 */
import { fileURLToPath } from "node:url";

export { startWorker } from "./worker.ts";
export type { Worker, WorkerOptions } from "./worker.ts";
export { resolveWorkerConfig, WorkerConfigError } from "./config.ts";
export type { WorkerConfig } from "./config.ts";
export { createBackoff } from "./backoff.ts";
export { makeDirectories } from "./fs-atomic.ts";
export { spareClaimVariable, spareReadyLine } from "./spare-claim.ts";
export type { SpareClaim } from "./spare-claim.ts";
export { proxyFor, describeProxy, ProxyConfigError } from "./proxy.ts";
export {
  defaultMetricsPort,
  renderMetrics,
  startStatusServer,
  type StatusServer,
  type WorkerStats,
} from "./status-server.ts";
export type { Backoff, BackoffOptions } from "./backoff.ts";

/** Absolute path of the worker's entry point, for `spawn(process.execPath, [workerEntryPath])`. */
export const workerEntryPath: string = fileURLToPath(new URL("./main.ts", import.meta.url));
