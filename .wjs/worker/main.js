/**
 * Entry point inside the computer: `node src/worker/main.ts` with configuration from flags or
 * ROOST_* environment variables (config.ts). Exits 2 on bad configuration, 0 on SIGTERM/SIGINT.
 */
import { resolveWorkerConfig, WorkerConfigError } from "./config.js";
import { startWorker } from "./worker.js";

let config;
try {
  config = resolveWorkerConfig(process.argv.slice(2), process.env);
} catch (error) {
  if (!(error instanceof WorkerConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
}

// Commands get the computer's environment, never the worker's token or configuration.
const commandEnv                         = {};
for (const [name, value] of Object.entries(process.env)) {
  if (value !== undefined && !name.startsWith("ROOST_")) commandEnv[name] = value;
}

const worker = await startWorker({ ...config, commandEnv });

let stopping = false;
const stop = (signal        ) => {
  if (stopping) return;
  stopping = true;
  process.stderr.write(
    `worker: ${signal} received; closing (running commands keep running and are picked up by the next worker)\n`,
  );
  worker.close().then(
    () => process.exit(0),
    (error         ) => {
      process.stderr.write(`worker: close failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));
