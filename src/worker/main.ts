/**
 * Entry point inside the computer: `node src/worker/main.ts` with configuration from flags or
 * ROOST_* environment variables (config.ts). Exits 2 on bad configuration, 0 on SIGTERM/SIGINT.
 */
import { CommandEnvError, commandOnlyEnv } from "../protocol/index.ts";
import { resolveWorkerConfig, WorkerConfigError } from "./config.ts";
import { awaitSpareClaim, spareClaimVariable, SpareClaimError } from "./spare-claim.ts";
import { startWorker } from "./worker.ts";

let config;
let commandOnly;
try {
  // A spare (spare-claim.ts): every module above is loaded; wait to become a computer's worker.
  const claimFifo = process.env[spareClaimVariable];
  if (claimFifo !== undefined) awaitSpareClaim(claimFifo);
  config = resolveWorkerConfig(process.argv.slice(2), process.env);
  commandOnly = commandOnlyEnv(process.env);
} catch (error) {
  if (
    !(error instanceof WorkerConfigError) &&
    !(error instanceof CommandEnvError) &&
    !(error instanceof SpareClaimError)
  )
    throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
}

// Commands get the computer's environment, never the worker's token or configuration, and the
// variables meant for them only (ROOST_COMMAND_ENV, protocol/command-env.ts).
const commandEnv: Record<string, string> = {};
for (const [name, value] of Object.entries(process.env)) {
  if (value !== undefined && !name.startsWith("ROOST_")) commandEnv[name] = value;
}
Object.assign(commandEnv, commandOnly);

// No top-level await: the worker's bundle is a CommonJS script, which Node starts faster than an
// ES module (decision 0021, sixth pass).
startWorker({ ...config, commandEnv }).then(
  (worker) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(
        `worker: ${signal} received; closing (running commands keep running and are picked up by the next worker)\n`,
      );
      worker.close().then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`worker: close failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
    };
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
  },
  (error: unknown) => {
    process.stderr.write(
      `worker: could not start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
