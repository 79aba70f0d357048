/**
 * The embedded durable engine: one restate-server child process per Roost process, supervised.
 * Its files live under `<dataDir>/restate/`: `restate.toml` (written at every start),
 * `restate-server.pid`, `restate-server.log`, and the node data in `roost/`.
 *
 * Invariants:
 *   E1 at most one restate-server runs per data dir: before every spawn, a server left behind
 *      with our config file is terminated (orphans.ts, O1–O3).
 *   E2 while a child runs, the pidfile names it; a clean close() removes the pidfile.
 *   E3 a child exit we did not ask for is followed by a restart, with exponential backoff capped
 *      at `maxRestartDelayMs`, until close(); restarts never give up (the rest of Roost cannot
 *      work without the engine, and a persistent failure is visible in events and the log).
 *   E4 close() leaves no process behind: SIGTERM, SIGKILL after `stopGraceMs`, and it waits for
 *      the exit. It is idempotent and safe at any point, including during a restart.
 *   E5 the child runs in its own process group, so a terminal's Ctrl-C reaches only Roost, which
 *      decides when to close; a small `sh` watchdog holding a pipe from us terminates the child
 *      when Roost dies without closing (Node has no prctl(PR_SET_PDEATHSIG)). E1 covers the rest.
 *   E6 the child's environment has no `RESTATE_*` / `RUST_LOG` variables, which would override
 *      the config file (restate-config.ts, C4).
 *   E7 startEmbeddedRestate() resolves only once admin and ingress answer healthy, and when it
 *      rejects it has left no child behind.
 *   E8 nothing under `<dataDir>/restate/` is open to other users of the host: the folder is made
 *      0700 at every start (an older install's too) and the child runs with umask 077, so its
 *      log, RocksDB and snapshot files are created 0600 and 0700 (files an older install left
 *      open are tightened by the platform at start: platform/data-dir.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { chmod, mkdir, open, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { join } from "node:path";
import { EngineUnavailableError } from "./errors.ts";
import { sleep, waitUntilHealthy } from "./health.ts";
import { terminateOrphans, waitForProcessExit, writePidFile } from "./orphans.ts";
import { renderRestateConfig, restateConfigDefaults } from "./restate-config.ts";
import type { RestateEngine } from "./types.ts";

/** Options of {@link startEmbeddedRestate}. */
export interface EmbeddedRestateOptions {
  /** Roost's data dir; restate keeps everything under `<dataDir>/restate/`. */
  dataDir: string;
  /** Ingress (invocations) port on 127.0.0.1. */
  ingressPort: number;
  /** Admin API port on 127.0.0.1. */
  adminPort: number;
  /** restate's node-to-node (fabric) port on 127.0.0.1. @default a free port picked at start */
  nodePort?: number;
  /** Where the server's stdout and stderr go (appended). @default `<dataDir>/restate/restate-server.log` */
  logFile?: string;
  /** Aborting it closes the engine (or cancels a start in progress). */
  signal?: AbortSignal;
  /** The restate-server executable. @default the binary of the installed `@restatedev/restate-server` package */
  binaryPath?: string;
  /** Lifecycle events: spawns, readiness, unexpected exits, restarts. Must not throw. */
  onEvent?: (event: EngineEvent) => void;
  /** How long a start may take to become healthy. @default 30 s */
  startTimeoutMs?: number;
  /** SIGTERM → SIGKILL grace on close (and for orphans). @default 10 s */
  stopGraceMs?: number;
  /** Upper bound of the delay between restarts. @default 5 s */
  maxRestartDelayMs?: number;
  /** Start the watchdog that stops the server if this process dies (E5). @default true */
  watchdog?: boolean;
  /** Handler inactivity timeout. @default 5 min */
  inactivityTimeoutMs?: number;
  /** Abort timeout after inactivity. @default 30 min */
  abortTimeoutMs?: number;
  /** Cap of the invocation retry backoff. @default 2 s */
  retryMaxIntervalMs?: number;
  /** Partitions at first provisioning of a data dir. @default 8 */
  partitions?: number;
  /** RocksDB memory budget. @default 512 MiB */
  rocksdbTotalMemoryBytes?: number;
  /**
   * The ed25519 key (PKCS#8 PEM file) the engine signs its requests to service endpoints with
   * (request-identity.ts). @default none: requests are not signed
   */
  requestIdentityPemFile?: string;
}

/** A running embedded engine. */
export interface EmbeddedRestate extends RestateEngine {
  /** Pid of the current restate-server child; undefined while it is being restarted or after close. */
  readonly pid: number | undefined;
  /** The config, pid and log files, for operators and error messages. */
  readonly files: { config: string; pidFile: string; log: string };
}

/** What the supervisor reports through `onEvent`. */
export type EngineEvent =
  | { type: "orphan-terminated"; pid: number; signal: "SIGTERM" | "SIGKILL" }
  | { type: "spawned"; pid: number; attempt: number }
  | { type: "ready"; pid: number; attempt: number; startupMs: number }
  | {
      type: "exited";
      pid: number;
      code: number | null;
      signal: NodeJS.Signals | null;
      expected: boolean;
    }
  | { type: "restart-scheduled"; attempt: number; delayMs: number }
  | { type: "start-failed"; attempt: number; reason: string }
  | { type: "closed" };

/** Supervisor lifecycle. */
export type SupervisorState = "starting" | "running" | "backing-off" | "closing" | "closed";

/** Inputs to {@link nextSupervisorState}. */
export type SupervisorInput =
  "healthy" | "start-failed" | "child-exited" | "backoff-elapsed" | "close" | "stopped";

/** Every lifecycle transition of the supervisor; an input that does not apply leaves the state as it is. */
export function nextSupervisorState(
  state: SupervisorState,
  input: SupervisorInput,
): SupervisorState {
  if (input === "close") return state === "closed" ? "closed" : "closing";
  switch (state) {
    case "starting":
      if (input === "healthy") return "running";
      if (input === "start-failed" || input === "child-exited") return "backing-off";
      return state;
    case "running":
      return input === "child-exited" ? "backing-off" : state; // E3
    case "backing-off":
      return input === "backoff-elapsed" ? "starting" : state;
    case "closing":
      return input === "stopped" ? "closed" : state;
    case "closed":
      return state;
    default: {
      const unreachable: never = state;
      return unreachable;
    }
  }
}

/** Defaults of the supervisor itself (server settings: restateConfigDefaults). */
export const embeddedRestateDefaults = {
  /** @default 30 s */
  startTimeoutMs: 30_000,
  /** @default 10 s */
  stopGraceMs: 10_000,
  /** @default 100 ms */
  minRestartDelayMs: 100,
  /** @default 5 s */
  maxRestartDelayMs: 5_000,
  /** A child that stayed up this long resets the restart backoff. @default 60 s */
  stableAfterMs: 60_000,
  /** The log is rotated to `.1` at a start when it is larger. @default 10 MiB */
  maxLogBytes: 10 * 1024 * 1024,
} as const;

/** Starts restate-server under supervision and resolves once it is healthy (E7). */
export async function startEmbeddedRestate(
  options: EmbeddedRestateOptions,
): Promise<EmbeddedRestate> {
  options.signal?.throwIfAborted();
  const settings = await resolveSettings(options);
  await mkdir(settings.baseDir, { recursive: true, mode: 0o700 });
  await chmod(settings.baseDir, 0o700); // E8: also a folder an older install made 0755
  await writeFile(settings.configPath, renderRestateConfig(settings), {
    encoding: "utf8",
    mode: 0o600,
  });
  const supervisor = new RestateSupervisor(settings);
  await supervisor.start();
  return supervisor.handle();
}

/** Resolves the executable shipped by `@restatedev/restate-server` for this platform. */
export function resolveRestateBinary(): string {
  const name = `@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`;
  try {
    return createRequire(import.meta.url).resolve(name);
  } catch (error) {
    throw new EngineUnavailableError(
      `engine: restate-server binary not found for ${process.platform}-${process.arch} ` +
        `(install @restatedev/restate-server, pass binaryPath, or point Roost at an external Restate)`,
      { cause: error },
    );
  }
}

interface Settings {
  dataDir: string;
  baseDir: string;
  configPath: string;
  pidFile: string;
  logFile: string;
  binaryPath: string;
  ingressPort: number;
  adminPort: number;
  nodePort: number;
  ingressUrl: string;
  adminUrl: string;
  signal: AbortSignal | undefined;
  onEvent: ((event: EngineEvent) => void) | undefined;
  startTimeoutMs: number;
  stopGraceMs: number;
  maxRestartDelayMs: number;
  watchdog: boolean;
  inactivityTimeoutMs: number;
  abortTimeoutMs: number;
  retryInitialIntervalMs: number;
  retryMaxIntervalMs: number;
  partitions: number;
  rocksdbTotalMemoryBytes: number;
  requestIdentityPemFile: string | undefined;
}

async function resolveSettings(options: EmbeddedRestateOptions): Promise<Settings> {
  const baseDir = join(options.dataDir, "restate");
  const ingressPort = checkPort(options.ingressPort, "ingressPort");
  const adminPort = checkPort(options.adminPort, "adminPort");
  const nodePort =
    options.nodePort === undefined
      ? await findFreePort([ingressPort, adminPort])
      : checkPort(options.nodePort, "nodePort");
  if (new Set([ingressPort, adminPort, nodePort]).size !== 3) {
    throw new RangeError(
      `engine: ingressPort, adminPort and nodePort must differ (got ${ingressPort}, ${adminPort}, ${nodePort})`,
    );
  }
  return {
    dataDir: options.dataDir,
    baseDir,
    configPath: join(baseDir, "restate.toml"),
    pidFile: join(baseDir, "restate-server.pid"),
    logFile: options.logFile ?? join(baseDir, "restate-server.log"),
    binaryPath: options.binaryPath ?? resolveRestateBinary(),
    ingressPort,
    adminPort,
    nodePort,
    ingressUrl: `http://127.0.0.1:${ingressPort}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    signal: options.signal,
    onEvent: options.onEvent,
    startTimeoutMs: options.startTimeoutMs ?? embeddedRestateDefaults.startTimeoutMs,
    stopGraceMs: options.stopGraceMs ?? embeddedRestateDefaults.stopGraceMs,
    maxRestartDelayMs: options.maxRestartDelayMs ?? embeddedRestateDefaults.maxRestartDelayMs,
    watchdog: options.watchdog ?? true,
    inactivityTimeoutMs: options.inactivityTimeoutMs ?? restateConfigDefaults.inactivityTimeoutMs,
    abortTimeoutMs: options.abortTimeoutMs ?? restateConfigDefaults.abortTimeoutMs,
    retryInitialIntervalMs: restateConfigDefaults.retryInitialIntervalMs,
    retryMaxIntervalMs: options.retryMaxIntervalMs ?? restateConfigDefaults.retryMaxIntervalMs,
    partitions: options.partitions ?? restateConfigDefaults.partitions,
    rocksdbTotalMemoryBytes:
      options.rocksdbTotalMemoryBytes ?? restateConfigDefaults.rocksdbTotalMemoryBytes,
    requestIdentityPemFile: options.requestIdentityPemFile,
  };
}

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Child {
  process: ChildProcess;
  pid: number;
  /** Set once the process has exited. */
  exit: ExitInfo | undefined;
  exited: Promise<ExitInfo>;
  watchdog: ChildProcess | undefined;
  /** Log file size before this child started: its own output starts here. */
  logOffset: number;
  readyAt: number | undefined;
}

class RestateSupervisor {
  readonly #settings: Settings;
  #state: SupervisorState = "starting";
  #child: Child | undefined;
  #attempt = 0;
  #consecutiveFailures = 0;
  #backoffTimer: NodeJS.Timeout | undefined;
  #pendingStart: Promise<unknown> | undefined;
  #closePromise: Promise<void> | undefined;
  /** Aborted by close(): stops a health wait or spawn in progress. */
  readonly #closing = new AbortController();
  readonly #onAbort = (): void => void this.close();

  constructor(settings: Settings) {
    this.#settings = settings;
  }

  async start(): Promise<void> {
    const signal = this.#settings.signal;
    signal?.addEventListener("abort", this.#onAbort, { once: true });
    const attempt = this.#attempt;
    const started = this.#startChild(attempt);
    this.#pendingStart = started;
    try {
      await started;
    } catch (error) {
      await this.close(); // E7
      if (signal?.aborted === true) throw signal.reason;
      throw error;
    } finally {
      this.#pendingStart = undefined;
    }
    this.#transition("healthy");
  }

  handle(): EmbeddedRestate {
    const settings = this.#settings;
    const currentPid = (): number | undefined => this.pid;
    return {
      ingressUrl: settings.ingressUrl,
      adminUrl: settings.adminUrl,
      files: { config: settings.configPath, pidFile: settings.pidFile, log: settings.logFile },
      get pid(): number | undefined {
        return currentPid();
      },
      close: () => this.close(),
      [Symbol.asyncDispose]: () => this.close(),
    };
  }

  close(): Promise<void> {
    this.#closePromise ??= this.#close();
    return this.#closePromise;
  }

  async #close(): Promise<void> {
    this.#transition("close");
    this.#settings.signal?.removeEventListener("abort", this.#onAbort);
    this.#closing.abort();
    clearTimeout(this.#backoffTimer);
    // A start in progress notices the abort quickly; its child is then in #child.
    await this.#pendingStart?.catch(() => undefined);
    const child = this.#child;
    if (child !== undefined) await this.#stopChild(child); // E4
    this.#child = undefined;
    await rm(this.#settings.pidFile, { force: true }); // E2
    this.#transition("stopped");
    this.#emit({ type: "closed" });
  }

  get pid(): number | undefined {
    const child = this.#child;
    return child !== undefined && child.exit === undefined ? child.pid : undefined;
  }

  #transition(input: SupervisorInput): void {
    this.#state = nextSupervisorState(this.#state, input);
  }

  /** Spawns a child and waits until it is healthy; on failure the child is stopped and this throws. */
  async #startChild(attempt: number): Promise<void> {
    const settings = this.#settings;
    const startedAt = performance.now();
    for (const orphan of await terminateOrphans(
      settings.pidFile,
      settings.configPath,
      settings.stopGraceMs,
    )) {
      this.#emit({ type: "orphan-terminated", pid: orphan.pid, signal: orphan.signal }); // E1
    }
    this.#closing.signal.throwIfAborted();
    const child = await this.#spawn();
    this.#emit({ type: "spawned", pid: child.pid, attempt });
    const result = await waitUntilHealthy(settings, {
      timeoutMs: settings.startTimeoutMs,
      signal: this.#closing.signal,
      stopIf: () =>
        child.exit === undefined
          ? undefined
          : `restate-server exited (${describeExit(child.exit)}) before it was healthy`,
    });
    // A probe answered by a server that has died since would leave no child and no restart.
    if (result.ready && child.exit === undefined) {
      child.readyAt = Date.now();
      this.#emit({
        type: "ready",
        pid: child.pid,
        attempt,
        startupMs: Math.round(performance.now() - startedAt),
      });
      return;
    }
    await this.#stopChild(child);
    const logTail = await readLogTail(settings.logFile, child.logOffset);
    const reason = result.ready
      ? "restate-server exited right after its health check passed"
      : result.reason;
    throw new EngineUnavailableError(
      `engine: restate-server did not start: ${reason}. ` +
        `Check that ports ${settings.ingressPort}, ${settings.adminPort} and ${settings.nodePort} on 127.0.0.1 are free ` +
        `and that ${settings.baseDir} is writable; full log: ${settings.logFile}` +
        (logTail === "" ? "" : `\n--- last lines of the log ---\n${logTail}`),
      { logTail },
    );
  }

  async #spawn(): Promise<Child> {
    const settings = this.#settings;
    const logOffset = await rotateLogIfLarge(settings.logFile);
    const logFd = openSync(settings.logFile, "a", 0o600);
    let server: ChildProcess;
    try {
      // E8: umask 077 for everything the server creates; `exec` keeps the pid (and the command
      // line O1 checks) the server's own.
      const command = ["--config-file", settings.configPath, "--no-logo"];
      server = spawn(
        "/bin/sh",
        ["-c", 'umask 077 && exec "$0" "$@"', settings.binaryPath, ...command],
        {
          stdio: ["ignore", logFd, logFd],
          detached: true, // E5
          env: childEnvironment(), // E6
        },
      );
    } finally {
      closeSync(logFd);
    }
    const exited = new Promise<ExitInfo>((resolve) => {
      server.once("exit", (code, signal) => resolve({ code, signal }));
    });
    const spawnError = await new Promise<Error | undefined>((resolve) => {
      server.once("spawn", () => resolve(undefined));
      server.once("error", resolve);
    });
    if (spawnError !== undefined || server.pid === undefined) {
      throw new EngineUnavailableError(
        `engine: could not run ${settings.binaryPath}: ${spawnError?.message ?? "no pid"} ` +
          `(reinstall @restatedev/restate-server or pass binaryPath)`,
        { cause: spawnError },
      );
    }
    const child: Child = {
      process: server,
      pid: server.pid,
      exit: undefined,
      exited,
      watchdog: settings.watchdog ? startWatchdog(server.pid) : undefined,
      logOffset,
      readyAt: undefined,
    };
    this.#child = child;
    void exited.then((info) => {
      child.exit = info;
      this.#onChildExit(child, info);
    });
    await writePidFile(settings.pidFile, child.pid); // E2
    return child;
  }

  #onChildExit(child: Child, info: ExitInfo): void {
    void stopWatchdog(child);
    const expected =
      this.#state === "closing" ||
      this.#state === "closed" ||
      child !== this.#child ||
      child.readyAt === undefined;
    this.#emit({ type: "exited", pid: child.pid, code: info.code, signal: info.signal, expected });
    // A child that never got healthy is handled by the start that spawned it.
    if (expected) return;
    if (Date.now() - (child.readyAt ?? 0) >= embeddedRestateDefaults.stableAfterMs)
      this.#consecutiveFailures = 0;
    this.#transition("child-exited");
    this.#scheduleRestart();
  }

  #scheduleRestart(): void {
    if (this.#state !== "backing-off") return;
    const delayMs = Math.min(
      embeddedRestateDefaults.minRestartDelayMs * 2 ** this.#consecutiveFailures,
      this.#settings.maxRestartDelayMs,
    );
    this.#consecutiveFailures++;
    const attempt = ++this.#attempt;
    this.#emit({ type: "restart-scheduled", attempt, delayMs });
    this.#backoffTimer = setTimeout(() => void this.#restart(attempt), delayMs);
  }

  async #restart(attempt: number): Promise<void> {
    this.#transition("backoff-elapsed");
    if (this.#state !== "starting") return;
    const started = this.#startChild(attempt);
    this.#pendingStart = started;
    try {
      await started;
      this.#transition("healthy");
    } catch (error) {
      if (this.#closing.signal.aborted) return;
      this.#emit({
        type: "start-failed",
        attempt,
        reason: error instanceof Error ? error.message : String(error),
      });
      this.#transition("start-failed");
      this.#scheduleRestart(); // E3
    } finally {
      if (this.#pendingStart === started) this.#pendingStart = undefined;
    }
  }

  async #stopChild(child: Child): Promise<void> {
    if (child.exit === undefined) {
      child.process.kill("SIGTERM");
      const graceOver = new AbortController();
      const timedOut = await Promise.race([
        child.exited.then(() => false),
        sleep(this.#settings.stopGraceMs, graceOver.signal).then(() => true),
      ]);
      graceOver.abort(); // no timer may outlive close()
      if (timedOut && child.exit === undefined) child.process.kill("SIGKILL");
      await child.exited;
    }
    await stopWatchdog(child);
    // The exit event can precede the kernel's release of the pid's resources only for zombies; make sure.
    await waitForProcessExit(child.pid, 1_000);
  }

  #emit(event: EngineEvent): void {
    try {
      this.#settings.onEvent?.(event);
    } catch {
      // An observer's bug must not break supervision.
    }
  }
}

function checkPort(port: number, name: string): number {
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new RangeError(`engine: ${name} must be a TCP port between 1 and 65535, got ${port}`);
  }
  return port;
}

/** A port that was free on 127.0.0.1 a moment ago (and is none of `avoid`). */
/**
 * A port that is free on 127.0.0.1 now, for tests and benches that start servers on fixed ports.
 * It is picked at random below the kernel's ephemeral range (32768–60999 on Linux), so an
 * outgoing connection of another process cannot take it between this check and the server's
 * own listen, which a port the kernel handed out for `listen(0)` is exposed to.
 */
export async function findFreePort(avoid: readonly number[] = []): Promise<number> {
  for (;;) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    if (avoid.includes(candidate)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(false));
      server.listen(candidate, "127.0.0.1", () => server.close(() => resolve(true)));
    });
    if (free) return candidate;
  }
}

/** The parent's environment minus what would override the config file (E6). */
function childEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !name.startsWith("RESTATE_") && name !== "RUST_LOG",
    ),
  );
}

/**
 * E5: `read` returns at EOF, which happens only when every holder of the pipe's write end is gone,
 * i.e. when this process died. Then: SIGTERM, wait up to 10 s, SIGKILL.
 */
const watchdogScript = [
  "read -r _ignored",
  // The pid may have been reused since: signal it only while it still is a restate-server.
  'ours() { grep -q restate-server "/proc/$1/cmdline" 2>/dev/null; }',
  'ours "$1" || exit 0',
  'kill -TERM "$1" 2>/dev/null || exit 0',
  "i=0",
  'while ours "$1"; do',
  '  i=$((i + 1)); if [ "$i" -gt 100 ]; then ours "$1" && kill -KILL "$1" 2>/dev/null; exit 0; fi',
  "  sleep 0.1",
  "done",
].join("\n");

function startWatchdog(pid: number): ChildProcess | undefined {
  try {
    const watchdog = spawn(
      "/bin/sh",
      ["-c", watchdogScript, "roost-restate-watchdog", String(pid)],
      {
        stdio: ["pipe", "ignore", "ignore"],
        detached: true,
      },
    );
    // Nothing is ever written; an EPIPE after the watchdog is gone is of no interest.
    watchdog.stdin?.on("error", () => undefined);
    watchdog.on("error", () => undefined);
    return watchdog;
  } catch {
    return undefined; // no /bin/sh: E1 still cleans up at the next start
  }
}

/** Stops the watchdog and resolves once it has exited, so close() leaves no process behind. */
async function stopWatchdog(child: Child): Promise<void> {
  const watchdog = child.watchdog;
  if (watchdog === undefined || watchdog.exitCode !== null || watchdog.signalCode !== null) return;
  const exited = new Promise((resolve) => watchdog.once("exit", resolve));
  // SIGKILL, not closing the pipe: closing it would make the watchdog signal the (maybe reused) pid.
  watchdog.kill("SIGKILL");
  watchdog.stdin?.destroy();
  await exited;
}

/** Returns the log size at which this run's output starts, rotating a large log to `.1` first. */
async function rotateLogIfLarge(logFile: string): Promise<number> {
  const size = await stat(logFile).then(
    (info) => info.size,
    () => 0,
  );
  if (size <= embeddedRestateDefaults.maxLogBytes) return size;
  await rename(logFile, `${logFile}.1`);
  return 0;
}

/** The last lines written since `offset` (at most ~40 lines / 8 KiB). */
async function readLogTail(logFile: string, offset: number): Promise<string> {
  try {
    const file = await open(logFile, "r");
    try {
      const { size } = await file.stat();
      const start = Math.max(offset, size - 8 * 1024);
      const buffer = Buffer.alloc(Math.max(0, size - start));
      await file.read(buffer, 0, buffer.length, start);
      return buffer.toString("utf8").trimEnd().split("\n").slice(-40).join("\n");
    } finally {
      await file.close();
    }
  } catch {
    return "";
  }
}

function describeExit(exit: ExitInfo): string {
  return exit.signal === null ? `code ${exit.code ?? "unknown"}` : `signal ${exit.signal}`;
}
