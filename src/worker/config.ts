/**
 * The worker's one resolve step: flag > environment > default, validated once. Nothing else in
 * the worker reads `process.env` for configuration.
 */
import { parseArgs } from "node:util";
import path from "node:path";

export interface WorkerConfig {
  /**
   * WebSocket URL of the gateway: `ws://127.0.0.1:8080/v1/gateway`, `wss://…`, or a unix socket
   * as `ws+unix:///run/roost/gateway.sock:/v1/gateway` (how a local computer reaches it).
   */
  gatewayUrl: string;
  /** The worker token; re-read from `tokenFile` before every connection attempt when that is set. */
  token: string | undefined;
  tokenFile: string | undefined;
  /** Durable directory for the worker id, the done-log and job output. */
  stateDir: string;
  /** Where relative paths resolve and commands start. @default /workspace */
  workspace: string;
  /**
   * A shell file each command's shell sources just before the command (jobs.ts); the local
   * provider's moves it into the computer's `user` cgroup. @default none
   */
  jobPrelude?: string | undefined;
  /** Screens (one per bot) the browser may use at most (ROOST_SCREENS_MAX). @default 4 */
  screensMax?: number | undefined;
  /**
   * Start each `shell` call's wrapper ahead of the call (warm-shell.ts; ROOST_WARM_SHELL=off turns
   * it off). @default true
   */
  warmShell?: boolean | undefined;
}

export class WorkerConfigError extends Error {
  override readonly name = "WorkerConfigError";
}

const usage = `usage: node src/worker/main.ts --gateway-url URL (--token TOKEN | --token-file FILE) --state-dir DIR [--workspace DIR] [--job-prelude FILE]
  environment: ROOST_GATEWAY_URL, ROOST_WORKER_TOKEN, ROOST_WORKER_TOKEN_FILE, ROOST_WORKER_STATE_DIR, ROOST_WORKSPACE, ROOST_JOB_PRELUDE, ROOST_SCREENS_MAX, ROOST_WARM_SHELL`;

export function resolveWorkerConfig(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): WorkerConfig {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        "gateway-url": { type: "string" },
        token: { type: "string" },
        "token-file": { type: "string" },
        "state-dir": { type: "string" },
        workspace: { type: "string" },
        "job-prelude": { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new WorkerConfigError(`worker: ${(error as Error).message}\n${usage}`);
  }
  const pick = (flag: string | undefined, variable: string): string | undefined => {
    const value = flag ?? env[variable];
    return value === undefined || value === "" ? undefined : value;
  };

  const gatewayUrl = pick(values["gateway-url"], "ROOST_GATEWAY_URL");
  if (gatewayUrl === undefined) {
    throw new WorkerConfigError(
      "worker: gateway URL is required (pass --gateway-url or set ROOST_GATEWAY_URL)",
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(gatewayUrl);
  } catch {
    throw new WorkerConfigError(
      `worker: gateway URL ${JSON.stringify(gatewayUrl)} is not a URL (expected ws://host:port/v1/gateway)`,
    );
  }
  if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:" && parsed.protocol !== "ws+unix:") {
    throw new WorkerConfigError(
      `worker: gateway URL must start with ws://, wss:// or ws+unix:// (got ${parsed.protocol}//)`,
    );
  }

  const token = pick(values.token, "ROOST_WORKER_TOKEN");
  const tokenFile = pick(values["token-file"], "ROOST_WORKER_TOKEN_FILE");
  if (token === undefined && tokenFile === undefined) {
    throw new WorkerConfigError(
      "worker: token is required (pass --token or set ROOST_WORKER_TOKEN, or --token-file / ROOST_WORKER_TOKEN_FILE)",
    );
  }

  const stateDir = pick(values["state-dir"], "ROOST_WORKER_STATE_DIR");
  if (stateDir === undefined) {
    throw new WorkerConfigError(
      "worker: state directory is required (pass --state-dir or set ROOST_WORKER_STATE_DIR to a directory on the durable disk)",
    );
  }
  const workspace = pick(values.workspace, "ROOST_WORKSPACE") ?? "/workspace";
  const jobPrelude = pick(values["job-prelude"], "ROOST_JOB_PRELUDE");
  const screensText = pick(undefined, "ROOST_SCREENS_MAX");
  const screensMax = screensText === undefined ? undefined : Number(screensText);
  if (
    screensMax !== undefined &&
    (!Number.isInteger(screensMax) || screensMax < 1 || screensMax > 32)
  )
    throw new WorkerConfigError(
      `worker: ROOST_SCREENS_MAX must be a whole number from 1 to 32 (got ${JSON.stringify(screensText)})`,
    );

  const warmText = pick(undefined, "ROOST_WARM_SHELL");
  if (warmText !== undefined && warmText !== "on" && warmText !== "off")
    throw new WorkerConfigError(
      `worker: ROOST_WARM_SHELL must be on or off (got ${JSON.stringify(warmText)})`,
    );

  return {
    gatewayUrl: parsed.toString(),
    token,
    tokenFile: tokenFile === undefined ? undefined : path.resolve(tokenFile),
    stateDir: path.resolve(stateDir),
    workspace: path.resolve(workspace),
    jobPrelude: jobPrelude === undefined ? undefined : path.resolve(jobPrelude),
    ...(screensMax === undefined ? {} : { screensMax }),
    ...(warmText === undefined ? {} : { warmShell: warmText === "on" }),
  };
}
