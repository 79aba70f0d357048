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
 *   P3 while a computer is awake its worker is supervised: if it dies it is started again (with
 *      backoff), with the same token and state dir, so it reconnects with the same worker id.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import type {
  ComputerPaths,
  ComputerProvider,
  ComputerRuntimeStatus,
  WakeRequest,
} from "../provider.ts";

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

interface Supervised {
  request: WakeRequest;
  child: ChildProcess | undefined;
  restarts: number;
  startedAt: number;
  timer: NodeJS.Timeout | undefined;
}

export function createProcessProvider(options: ProcessProviderOptions): ComputerProvider {
  const running = new Map<string, Supervised>();
  const nodePath = options.nodePath ?? process.execPath;
  const workerEntry = options.workerEntry ?? workerEntryDefault;

  const paths = (computerId: string): ComputerPaths => {
    if (!/^[A-Za-z0-9_-]+$/.test(computerId))
      throw new Error(`invalid computer id ${JSON.stringify(computerId)}`);
    const root = join(options.root, computerId);
    return {
      root,
      home: join(root, "home"),
      workspace: join(root, "workspace"),
      workerState: join(root, "worker"),
    };
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

  async function spawnWorker(
    computerId: string,
    computerPaths: ComputerPaths,
    supervised: Supervised,
  ) {
    // The log is the worker's own file, not a pipe through this process: the worker must outlive
    // a crash of the server (its calls finish and land in the done-log) without dying of EPIPE.
    const log = openSync(join(computerPaths.root, "worker.log"), "a");
    const child = spawn(nodePath, [workerEntry], {
      cwd: computerPaths.workspace,
      detached: true, // its own process group, killed as one at sleep (P1)
      stdio: ["ignore", log, log],
      env: {
        PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
        LANG: process.env.LANG ?? "C.UTF-8",
        HOME: computerPaths.home,
        TMPDIR: join(computerPaths.root, "tmp"),
        COMPUTER_ID: computerId,
        ROOST_GATEWAY_URL: supervised.request.gatewayUrl,
        ROOST_WORKER_TOKEN: supervised.request.workerToken,
        ROOST_WORKER_STATE_DIR: computerPaths.workerState,
        ROOST_WORKSPACE: computerPaths.workspace,
        ...supervised.request.env,
      },
    });
    closeSync(log);
    supervised.child = child;
    supervised.startedAt = Date.now();
    child.once("exit", (code, signal) => {
      if (running.get(computerId) !== supervised || supervised.child !== child) return; // stopped on purpose
      // P3: restart, backing off while it keeps dying young.
      if (Date.now() - supervised.startedAt > 30_000) supervised.restarts = 0;
      const delayMs = Math.min(5000, 100 * 2 ** supervised.restarts++);
      options.log?.(
        `computer ${computerId}: worker exited (${signal ?? code}); restarting in ${delayMs} ms`,
      );
      supervised.timer = setTimeout(() => {
        if (running.get(computerId) !== supervised) return;
        spawnWorker(computerId, computerPaths, supervised).catch((error: unknown) =>
          options.log?.(`computer ${computerId}: could not restart the worker: ${String(error)}`),
        );
      }, delayMs);
    });
    await new Promise<void>((resolveSpawn, reject) => {
      child.once("spawn", resolveSpawn);
      child.once("error", reject);
    });
  }

  async function stop(computerId: string) {
    const supervised = running.get(computerId);
    running.delete(computerId);
    if (supervised?.timer !== undefined) clearTimeout(supervised.timer);
    const child = supervised?.child;
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
    isolation: "none",
    paths,
    create,
    async wake(computerId: string, request: WakeRequest) {
      await stop(computerId); // including a worker left by a server that crashed (P1)
      const computerPaths = await create(computerId);
      const supervised: Supervised = {
        request,
        child: undefined,
        restarts: 0,
        startedAt: 0,
        timer: undefined,
      };
      running.set(computerId, supervised);
      await spawnWorker(computerId, computerPaths, supervised);
    },
    sleep: stop,
    async destroy(computerId: string) {
      await stop(computerId);
      await rm(paths(computerId).root, { recursive: true, force: true });
    },
    async status(computerId: string): Promise<ComputerRuntimeStatus> {
      if (running.has(computerId)) return "running";
      // A worker this process did not start (the server crashed and came back) still counts: it
      // reconnects by itself and finishes what it was running (P1 finds it by its marker).
      if ((await processesOf(computerId)).length > 0) return "running";
      const exists = await readdir(paths(computerId).root).then(
        () => true,
        () => false,
      );
      return exists ? "stopped" : "missing";
    },
    async close() {
      // Workers adopted from a server that crashed are not in `running`; P1 finds them by id.
      const known = await readdir(options.root).catch(() => [] as string[]);
      const ids = new Set([
        ...running.keys(),
        ...known.filter((name) => /^[A-Za-z0-9_-]+$/.test(name)),
      ]);
      await Promise.all([...ids].map((computerId) => stop(computerId)));
    },
  };
}
