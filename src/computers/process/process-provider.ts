/**
 * The `process` provider: the worker runs as a plain child process of the server, with the
 * computer's home and workspace as ordinary folders on the host. It ISOLATES NOTHING — a bot can
 * read and write anything the server's user can — so it is for development and for hosts where
 * the `local` provider cannot run, and only when chosen explicitly (ROOST_COMPUTER_PROVIDER=process).
 *
 * Invariants:
 *   P1 every process of a computer carries COMPUTER_ID in its environment (the worker passes it on
 *      to commands, unlike its ROOST_* settings); sleep kills the
 *      worker's process group and then every process that still carries the id (background jobs
 *      that started their own session), so no process outlives sleep.
 *   P2 the durable disk (home/, workspace/, worker/) is never touched by sleep.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { ComputerPaths, ComputerProvider, ComputerRuntimeStatus, WakeRequest } from "../provider.ts";

export interface ProcessProviderOptions {
  /** Computers live in `<root>/<computerId>/`. */
  root: string;
  /** @default this Node binary */
  nodePath?: string;
  /** @default src/worker/main.ts of this checkout */
  workerEntry?: string;
  log?: (message: string) => void;
}

const workerEntryDefault = resolve(import.meta.dirname, "../../worker/main.ts");

export function createProcessProvider(options: ProcessProviderOptions): ComputerProvider {
  const running = new Map<string, ChildProcess>();
  const nodePath = options.nodePath ?? process.execPath;
  const workerEntry = options.workerEntry ?? workerEntryDefault;

  const paths = (computerId: string): ComputerPaths => {
    if (!/^[A-Za-z0-9_-]+$/.test(computerId)) throw new Error(`invalid computer id ${JSON.stringify(computerId)}`);
    const root = join(options.root, computerId);
    return { root, home: join(root, "home"), workspace: join(root, "workspace"), workerState: join(root, "worker") };
  };

  async function create(computerId: string) {
    const computerPaths = paths(computerId);
    for (const dir of [computerPaths.home, computerPaths.workspace, computerPaths.workerState]) {
      await mkdir(dir, { recursive: true });
    }
    await rm(join(computerPaths.root, "tmp"), { recursive: true, force: true });
    await mkdir(join(computerPaths.root, "tmp"), { recursive: true });
    return computerPaths;
  }

  /** P1: pids of processes whose environment names this computer. */
  async function processesOf(computerId: string): Promise<number[]> {
    const marker = `COMPUTER_ID=${computerId}\0`;
    const pids: number[] = [];
    for (const entry of await readdir("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const environ = await readFile(`/proc/${entry}/environ`, "latin1").catch(() => "");
      if (`${environ}\0`.includes(marker)) pids.push(Number(entry));
    }
    return pids.filter((pid) => pid !== process.pid);
  }

  async function stop(computerId: string) {
    const child = running.get(computerId);
    running.delete(computerId);
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    // P1: whatever escaped the process group.
    for (let round = 0; round < 20; round++) {
      const left = await processesOf(computerId);
      if (left.length === 0) break;
      for (const pid of left) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // raced with its exit
        }
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, 10));
    }
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      await new Promise((resolveExit) => child.once("exit", resolveExit));
    }
  }

  return {
    kind: "process",
    isolated: false,
    paths,
    create,
    async wake(computerId: string, request: WakeRequest) {
      if (running.has(computerId)) await stop(computerId);
      const computerPaths = await create(computerId);
      const log = createWriteStream(join(computerPaths.root, "worker.log"), { flags: "a" });
      const child = spawn(nodePath, [workerEntry], {
        cwd: computerPaths.workspace,
        detached: true, // its own process group, killed as one at sleep (P1)
        stdio: ["ignore", "pipe", "pipe"],
        env: {
          PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
          LANG: process.env.LANG ?? "C.UTF-8",
          HOME: computerPaths.home,
          TMPDIR: join(computerPaths.root, "tmp"),
          COMPUTER_ID: computerId,
          ROOST_GATEWAY_URL: request.gatewayUrl,
          ROOST_WORKER_TOKEN: request.workerToken,
          ROOST_WORKER_STATE_DIR: computerPaths.workerState,
          ROOST_WORKSPACE: computerPaths.workspace,
          ...request.env,
        },
      });
      child.stdout?.pipe(log);
      child.stderr?.pipe(log);
      child.once("exit", () => {
        log.end();
        if (running.get(computerId) === child) running.delete(computerId);
      });
      running.set(computerId, child);
      await new Promise<void>((resolveSpawn, reject) => {
        child.once("spawn", resolveSpawn);
        child.once("error", reject);
      });
    },
    sleep: stop,
    async destroy(computerId: string) {
      await stop(computerId);
      await rm(paths(computerId).root, { recursive: true, force: true });
    },
    async status(computerId: string): Promise<ComputerRuntimeStatus> {
      const child = running.get(computerId);
      if (child !== undefined && child.exitCode === null && child.signalCode === null) return "running";
      const exists = await readdir(paths(computerId).root).then(
        () => true,
        () => false,
      );
      return exists ? "stopped" : "missing";
    },
    async close() {
      await Promise.all([...running.keys()].map((computerId) => stop(computerId)));
    },
  };
}
