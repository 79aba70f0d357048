/**
 * The worker that runs inside a computer. Supervisors start it as a process
 * (`node <workerEntryPath>`); tests and benchmarks may also start it in-process.
 */
import { fileURLToPath } from "node:url";

export { startWorker } from "./worker.js";
                                                         
export { resolveWorkerConfig, WorkerConfigError } from "./config.js";
                                                
export { createBackoff } from "./backoff.js";
                                                            

/** Absolute path of the worker's entry point, for `spawn(process.execPath, [workerEntryPath])`. */
export const workerEntryPath         = fileURLToPath(new URL("./main.ts", import.meta.url));
