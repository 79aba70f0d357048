/**
 * `roost worker`: this machine becomes the caller's computer (docs/self-hosted-worker.md). The
 * same worker that runs inside hosted computers (src/worker) dials out to the server's gateway
 * with a self-hosted worker token (`POST /v1/computers/me/self-hosted`), and runs the bots'
 * commands and file operations here, in the workspace folder, as the user who started it.
 *
 * The resolve step (`resolveSelfHostedWorker`) is separate from running it, so that what the
 * command line means is tested without starting anything.
 */
import { chmod, realpath, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import {
  defaultMetricsPort,
  describeProxy,
  makeDirectories,
  ProxyConfigError,
  proxyFor,
  startStatusServer,
  startWorker,
  type StatusServer,
} from "../worker/index.ts";
import { stringOption, type Command, type ParsedArgs } from "./args.ts";
import { CliError, type CliIo } from "./io.ts";

/** What `roost worker` runs with, resolved once: flag > environment > default. */
export interface SelfHostedWorkerConfig {
  serverUrl: string;
  /** `ws(s)://<server>/v1/gateway`. */
  gatewayUrl: string;
  token: string | undefined;
  tokenFile: string | undefined;
  /** As given (made absolute); `runWorker` resolves links in it before use. */
  workspace: string;
  /** @default <workspace>/.roost-worker */
  stateDir: string;
  /** 0: no status endpoints. @default 7781 */
  metricsPort: number;
  /** HTTPS_PROXY / HTTP_PROXY for the gateway's scheme, unless NO_PROXY exempts it. */
  proxy: URL | undefined;
  /** Things worth saying before it starts (plain http to another host, a token in a loose file…). */
  warnings: string[];
}

const stateFolderName = ".roost-worker";

export function resolveSelfHostedWorker(
  args: ParsedArgs,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): SelfHostedWorkerConfig {
  const value = (flag: string, variable: string) =>
    nonEmpty(stringOption(args, flag)) ?? nonEmpty(env[variable]);
  const warnings: string[] = [];

  const server = value("server", "ROOST_URL");
  if (server === undefined)
    throw new CliError(
      "roost worker: say which server with --server URL (the `serverUrl` that POST /v1/computers/me/self-hosted answered), or set ROOST_URL",
      2,
    );
  let parsed: URL;
  try {
    parsed = new URL(server);
  } catch {
    throw new CliError(
      `roost worker: --server must be the server's URL, e.g. https://roost.example.com (got ${JSON.stringify(server)})`,
      2,
    );
  }
  const schemes: Record<string, string> = {
    "http:": "ws:",
    "https:": "wss:",
    "ws:": "ws:",
    "wss:": "wss:",
  };
  const scheme = schemes[parsed.protocol];
  if (scheme === undefined || parsed.search !== "" || parsed.hash !== "")
    throw new CliError(
      `roost worker: --server must be an http:// or https:// URL without a query, e.g. https://roost.example.com (got ${JSON.stringify(server)})`,
      2,
    );
  const base = parsed.pathname.replace(/\/+$/, "").replace(/\/v1\/gateway$/, "");
  const gateway = new URL(parsed.toString());
  gateway.protocol = scheme;
  gateway.pathname = `${base}/v1/gateway`;
  if (scheme === "ws:" && !isLoopback(parsed.hostname))
    warnings.push(
      `the server is reached over plain ${parsed.protocol}// on ${parsed.hostname}: the worker token and everything the bots run travel unencrypted; use https:// unless this network is private`,
    );

  // A token given by flag (either way) wins over both variables, like every other flag.
  const tokenFlag = nonEmpty(stringOption(args, "token"));
  const tokenFileFlag = nonEmpty(stringOption(args, "token-file"));
  const byFlag = tokenFlag !== undefined || tokenFileFlag !== undefined;
  const token = byFlag ? tokenFlag : nonEmpty(env.ROOST_WORKER_TOKEN);
  const tokenFile = byFlag ? tokenFileFlag : nonEmpty(env.ROOST_WORKER_TOKEN_FILE);
  if (token !== undefined && tokenFile !== undefined)
    throw new CliError(
      "roost worker: give the token once: --token (ROOST_WORKER_TOKEN) or --token-file (ROOST_WORKER_TOKEN_FILE), not both",
      2,
    );
  if (token === undefined && tokenFile === undefined)
    throw new CliError(
      "roost worker: the worker token is required: --token TOKEN, --token-file FILE, or ROOST_WORKER_TOKEN (POST /v1/computers/me/self-hosted gives one)",
      2,
    );

  const workspace = path.resolve(cwd, value("workspace", "ROOST_WORKSPACE") ?? ".");
  const stateDir = path.resolve(
    cwd,
    value("state-dir", "ROOST_WORKER_STATE_DIR") ?? path.join(workspace, stateFolderName),
  );

  const rawPort = value("metrics-port", "ROOST_WORKER_METRICS_PORT");
  const metricsPort = rawPort === undefined ? defaultMetricsPort : Number(rawPort);
  if (!Number.isInteger(metricsPort) || metricsPort < 0 || metricsPort > 65_535)
    throw new CliError(
      `roost worker: --metrics-port must be a port number (0 turns the status endpoints off), got ${JSON.stringify(rawPort)}`,
      2,
    );

  let proxy: URL | undefined;
  try {
    proxy = proxyFor(gateway, env);
  } catch (error) {
    if (error instanceof ProxyConfigError) throw new CliError(`roost worker: ${error.message}`, 2);
    throw error;
  }

  return {
    serverUrl: parsed.toString().replace(/\/+$/, ""),
    gatewayUrl: gateway.toString(),
    token,
    tokenFile: tokenFile === undefined ? undefined : path.resolve(cwd, tokenFile),
    workspace,
    stateDir,
    metricsPort,
    proxy,
    warnings,
  };
}

export const workerCommand: Command = {
  spec: {
    name: "worker",
    summary: "Make this machine your computer: run your bots' commands here, in one folder.",
    synopsis: "--server URL (--token TOKEN | --token-file FILE) [options]",
    description: [
      "Get a token with POST /v1/computers/me/self-hosted (its answer has the exact command).",
      "The worker dials out to the server (nothing connects in) and runs, as the user who starts",
      "it, whatever your bots ask for: any command, and reading and writing files, in --workspace.",
      "Run it as a dedicated user, in a folder with nothing else in it (docs/self-hosted-worker.md).",
      "Ctrl+C stops it; your bots then answer that the computer is not connected.",
    ].join("\n"),
    options: {
      server: {
        type: "string",
        value: "URL",
        description: "the Roost server (its `serverUrl`)",
        env: "ROOST_URL",
      },
      token: {
        type: "string",
        value: "TOKEN",
        description: "the self-hosted worker token",
        env: "ROOST_WORKER_TOKEN",
      },
      "token-file": {
        type: "string",
        value: "FILE",
        description:
          "read the token from FILE, again after every refusal (a rotated token needs no restart)",
        env: "ROOST_WORKER_TOKEN_FILE",
      },
      workspace: {
        type: "string",
        value: "DIR",
        description: "the folder the bots work in",
        env: "ROOST_WORKSPACE",
        default: "the current folder",
      },
      "state-dir": {
        type: "string",
        value: "DIR",
        description: "the worker's id, done-log and job output",
        env: "ROOST_WORKER_STATE_DIR",
        default: `<workspace>/${stateFolderName}`,
      },
      "metrics-port": {
        type: "string",
        value: "PORT",
        description: "/healthz, /readyz and /metrics on 127.0.0.1:PORT (0: off)",
        env: "ROOST_WORKER_METRICS_PORT",
        default: String(defaultMetricsPort),
      },
    },
    positionals: { min: 0, max: 0, names: "" },
    environment: [
      ["HTTPS_PROXY", "HTTP proxy for an https:// server (CONNECT), also https_proxy"],
      ["HTTP_PROXY", "HTTP proxy for an http:// server (CONNECT), also http_proxy"],
      ["NO_PROXY", "hosts, domains and CIDR ranges reached without the proxy, also no_proxy"],
    ],
    examples: [
      "npx roost worker --server https://roost.example.com --token rsw_…",
      "npx roost worker --server https://roost.example.com --token-file ~/.config/roost/worker-token --workspace ~/bot-work",
    ],
  },
  run: async (args, io) => runWorker(resolveSelfHostedWorker(args, io.env, process.cwd()), io),
};

async function runWorker(config: SelfHostedWorkerConfig, io: CliIo): Promise<number> {
  const say = (line: string) => io.stderr.write(`roost worker: ${line}\n`);
  const workspace = await realWorkspace(config.workspace);
  const defaultState = path.join(config.workspace, stateFolderName);
  const stateDir =
    config.stateDir === defaultState ? path.join(workspace, stateFolderName) : config.stateDir;
  await prepareStateDir(stateDir);
  for (const warning of config.warnings) say(`warning: ${warning}`);
  for (const warning of await placementWarnings(workspace, config.tokenFile))
    say(`warning: ${warning}`);

  // Commands get this machine's environment, never the worker's own token or settings.
  const commandEnv: Record<string, string> = {};
  for (const [name, value] of Object.entries(io.env)) {
    if (value !== undefined && !name.startsWith("ROOST_")) commandEnv[name] = value;
  }

  const worker = await startWorker({
    gatewayUrl: config.gatewayUrl,
    token: config.token,
    tokenFile: config.tokenFile,
    stateDir,
    workspace,
    commandEnv,
    ...(config.proxy === undefined ? {} : { proxy: config.proxy }),
    log: (line) => io.stderr.write(`${line}\n`),
  });
  let status: StatusServer | undefined;
  if (config.metricsPort !== 0) {
    try {
      status = await startStatusServer({ port: config.metricsPort, stats: () => worker.stats() });
    } catch (error) {
      await worker.close();
      throw new CliError(
        `roost worker: cannot serve the status endpoints on 127.0.0.1:${config.metricsPort} (${(error as Error).message}); pick another --metrics-port, or 0 to turn them off`,
      );
    }
  }
  say(
    `serving ${workspace} for ${config.serverUrl}${config.proxy === undefined ? "" : ` through the proxy ${describeProxy(config.proxy)}`} (state in ${stateDir}${status === undefined ? "" : `; ${status.url}/metrics`}). Ctrl+C stops it.`,
  );

  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      say(`${signal}: disconnecting (running commands keep running and are picked up next time)`);
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  await status?.close();
  await worker.close();
  return 0;
}

async function realWorkspace(workspace: string): Promise<string> {
  let info;
  try {
    info = await stat(workspace);
  } catch {
    throw new CliError(
      `roost worker: the workspace ${workspace} does not exist; create the folder first (or pass --workspace DIR)`,
      2,
    );
  }
  if (!info.isDirectory())
    throw new CliError(`roost worker: the workspace ${workspace} is not a folder`, 2);
  // The files API opens the workspace and walks down from it without following links: start
  // from the real folder, so that a workspace given through a link works.
  return realpath(workspace);
}

/** Private to this user, and kept out of git (the default lives inside the workspace). */
async function prepareStateDir(stateDir: string): Promise<void> {
  try {
    await makeDirectories(stateDir, 0o700);
    await chmod(stateDir, 0o700);
    await writeFile(
      path.join(stateDir, ".gitignore"),
      "# roost worker state (docs/self-hosted-worker.md)\n*\n",
    );
  } catch (error) {
    throw new CliError(
      `roost worker: cannot use ${stateDir} as the state folder (${(error as Error).message}); pass --state-dir with a folder on this machine's disk that you can write`,
      2,
    );
  }
}

async function placementWarnings(
  workspace: string,
  tokenFile: string | undefined,
): Promise<string[]> {
  const warnings: string[] = [];
  if (process.getuid?.() === 0)
    warnings.push(
      "running as root: your bots can do anything on this machine; run the worker as a dedicated user",
    );
  if (workspace === path.parse(workspace).root || workspace === homedir())
    warnings.push(
      `the workspace is ${workspace}: your bots work relative to it; a folder with nothing else in it is safer`,
    );
  if (tokenFile !== undefined) {
    const info = await stat(tokenFile).catch(() => undefined);
    if (info !== undefined && (info.mode & 0o077) !== 0)
      warnings.push(
        `${tokenFile} can be read by other users (mode ${(info.mode & 0o777).toString(8)}); chmod 600 it`,
      );
  }
  return warnings;
}

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, "$1");
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
