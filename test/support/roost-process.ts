/**
 * Roost as a real child process (`node src/cli/main.ts up`), for end-to-end and fault tests:
 * it can be SIGKILLed and started again on the same data dir and ports.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { findFreePort } from "../../src/engine/index.ts";
import { waitFor } from "./wait.ts";

export interface RoostProcess {
  readonly url: string;
  readonly dataDir: string;
  /** Port of the loop service endpoint Restate calls. */
  readonly servicePort: number;
  /** Every port this Roost listens on: API, Restate ingress, admin and node, service endpoint. */
  readonly ports: { api: number; ingress: number; admin: number; node: number; service: number };
  readonly token: () => string;
  readonly output: () => string;
  pid(): number | undefined;
  restatePid(): number | undefined;
  /** Start (again) on the same data dir and ports; resolves when /v1/health answers 200. */
  start(): Promise<void>;
  kill(signal: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

export async function createRoostProcess(options: {
  dataDir: string;
  env?: Record<string, string>;
  /** A command that runs the rest, e.g. setpriv to start Roost as another user. */
  prefix?: readonly string[];
  /** @default this test's Node */
  node?: string;
  /** The CLI command to run. @default "up" */
  command?: "up" | "computer-host";
}): Promise<RoostProcess> {
  const ports: number[] = [];
  for (let index = 0; index < 5; index++) ports.push(await findFreePort(ports));
  const [port, ingress, admin, node, service] = ports as [number, number, number, number, number];
  const env = {
    ...process.env,
    ROOST_DATA_DIR: options.dataDir,
    ROOST_PORT: String(port),
    ROOST_RESTATE_INGRESS_PORT: String(ingress),
    ROOST_RESTATE_ADMIN_PORT: String(admin),
    ROOST_RESTATE_NODE_PORT: String(node),
    ROOST_SERVICE_PORT: String(service),
    ...options.env,
  };
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let output = "";

  async function exited(target: ChildProcess) {
    if (target.exitCode !== null || target.signalCode !== null) return;
    await new Promise((resolve) => target.once("exit", resolve));
  }

  const handle: RoostProcess = {
    url,
    servicePort: service,
    ports: { api: port, ingress, admin, node, service },
    dataDir: options.dataDir,
    token: () => readFileSync(join(options.dataDir, "admin-token"), "utf8").trim(),
    output: () => output,
    pid: () => child?.pid,
    restatePid() {
      try {
        return Number(
          readFileSync(join(options.dataDir, "restate", "restate-server.pid"), "utf8").trim(),
        );
      } catch {
        return undefined;
      }
    },
    async start() {
      const [file, ...args] = [
        ...(options.prefix ?? []),
        options.node ?? process.execPath,
        "src/cli/main.ts",
        options.command ?? "up",
      ];
      const started = spawn(file, args, { env, stdio: ["ignore", "pipe", "pipe"] });
      child = started;
      started.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      started.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      await waitFor(
        async () => {
          if (started.exitCode !== null)
            throw new Error(`roost exited with ${started.exitCode}:\n${output}`);
          const response = await fetch(`${url}/v1/health`).catch(() => undefined);
          return response?.status === 200;
        },
        { timeoutMs: 45_000, what: `roost to become healthy at ${url}` },
      );
    },
    async kill(signal) {
      if (child === undefined) return;
      const target = child;
      target.kill(signal);
      await exited(target);
    },
    async stop() {
      if (child === undefined) return;
      const target = child;
      if (target.exitCode === null && target.signalCode === null) {
        target.kill("SIGTERM");
        const timer = setTimeout(() => target.kill("SIGKILL"), 15_000);
        await exited(target);
        clearTimeout(timer);
      }
    },
  };
  return handle;
}

/** kill -9 of the whole platform at once: the server process and its restate-server. */
export async function killPlatform(roost: RoostProcess): Promise<void> {
  const restatePid = roost.restatePid();
  await roost.kill("SIGKILL");
  if (restatePid !== undefined) {
    try {
      process.kill(restatePid, "SIGKILL");
    } catch {
      // already gone with its parent
    }
  }
}
