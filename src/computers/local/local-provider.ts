/**
 * The `local` provider: each computer is a sandbox on this host (bubblewrap with its own network
 * namespace holding only loopback) running as its own host uid, with cgroup limits, two kinds of
 * unix sockets as its only way out (the gateway's and the egress proxy's), and a durable disk in
 * `<dataDir>/<computerId>/`. docs/computers.md describes the design; sandbox.ts, cgroups.ts and
 * slots.ts hold the parts and their invariants.
 *
 * That is `full` isolation, as root. A server that is not root gets `unprivileged` isolation
 * (docs/computers.md, "Without root"): the same sandbox inside a user namespace (sandbox.ts, X6),
 * every computer running as the server's own uid, with no cgroups and its disk as plain folders
 * (folder-disks.ts) instead of an image: no per-computer uid and no memory, CPU, pids or disk limits.
 *
 * Invariants:
 *   L1 operations on one computer run one at a time, in call order (a per-computer queue).
 *   L2 wake() resolves only once the sandbox is set up and its supervisor runs as the computer's
 *      uid; when it rejects, nothing of that wake is left on the host.
 *   L3 sleep() leaves no process, listening socket, cgroup or runtime file of the computer
 *      behind; only the durable disk stays. A sandbox that ends by itself is cleaned up the same
 *      way (and reported through onExit).
 *   L4 at start, resources of slots whose owning server is gone are removed (R1, R2).
 *   L5 a computer's files always belong to its slot's uid: they are handed over (recursively)
 *      whenever the uid changed or the folders are found owned by another uid. (Without root
 *      they belong to the server's uid, like everything the server writes.)
 *   L6 the disk image is attached from create() or wake() until sleep(), and for withDisk();
 *      a sleeping computer holds no mount (disk-image.ts, DISK1), and the sandbox's processes
 *      run under the seccomp filter (seccomp.ts).
 *   LNET1 a computer's host sockets exist only while it is awake, are served before its sandbox
 *      starts, and belong to its uid with mode 0600: only that computer (and root) can open
 *      them, and what arrives on them is that computer's (G8, E1). Without root they belong to
 *      the server's uid, in a runtime folder only it can enter, and only the computer's own
 *      sandbox mounts them.
 *   L7 without root, the runtime and registry folders are in a folder that belongs to the
 *      server's uid alone (mode 0700, not a link), checked at start: another user of the host
 *      cannot put sockets or scripts where computers' sandboxes are made from.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmod,
  chown,
  lstat,
  mkdir,
  readFile,
  readdir,
  readlink,
  realpath,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { ConfigError, InvalidRequestError, NotFoundError, RoostError } from "../../errors/index.ts";
import { commandEnvVariable, commandOnlyEnv, GATEWAY_PATH } from "../../protocol/index.ts";
import type {
  ComputerPaths,
  ComputerProvider,
  ComputerRuntimeStatus,
  LocalIsolation,
  WakeRequest,
} from "../provider.ts";
import {
  computerCgroupsFor,
  computerMemoryBytes,
  computerPids,
  createComputerCgroups,
  discoverCgroups,
  killAll,
  leafPids,
  listCgroupSlots,
  removeComputerCgroups,
  removeEmptyGroups,
  type CgroupDiscovery,
  type ComputerCgroup,
} from "./cgroups.ts";
import { chownDisk, computerIdPattern, diskOwnedBy } from "./disk.ts";
import { createDiskImages, resolveDiskTools, type DiskImages } from "./disk-image.ts";
import { createFolderDisks } from "./folder-disks.ts";
import { seccompFilterFor, type SeccompChoice } from "./seccomp.ts";
import {
  resolveLocalProviderOptions,
  type LocalProviderOptions,
  type ResolvedLocalProviderOptions,
  type SocketListener,
} from "./options.ts";
import {
  createRuntimeState,
  currentOwner,
  isOwnerAlive,
  type RuntimeState,
} from "./runtime-state.ts";
import {
  adoptScript,
  bwrapArguments,
  compileCacheWarmUp,
  forwarderPorts,
  identityFiles,
  insidePaths,
  insideUserName,
  launcherScript,
  readHostLayout,
  readyLine,
  shellSafeEnv,
  spareOnlyEnv,
  writeRuntimeFiles,
  writeToken,
  type HostLayout,
  type SandboxSpec,
} from "./sandbox.ts";
import {
  bindClaim,
  makeSpareFolder,
  moveIntoCgroups,
  processTree,
  removeSpareFolder,
  shareSparesDir,
  sweepSpares,
  writeClaim,
  type SpareFolder,
  type SpareTools,
} from "./spares.ts";
import { spareReadyLine } from "../../worker/index.ts";
import { createSlotRegistry, type SlotRegistry } from "./slots.ts";
import {
  delay,
  findExecutable,
  hostToolNames,
  hostToolPackages,
  isErrno,
  processStartTicks,
  runCommand,
  signalProcess,
  type HostTools,
} from "./system.ts";

/** Host paths of an awake computer's sockets (LNET1). */
export interface ComputerSockets {
  gateway: string;
  /** Absent when the provider has no egress (`sockets.egress`). */
  egressHttp?: string;
  egressSocks?: string;
}

/** What the provider knows about an awake computer (operations and tests). */
export interface LocalComputerInfo {
  computerId: string;
  slot: number;
  uid: number;
  gid: number;
  /** Its host sockets: the only things its sandbox can reach. */
  sockets: ComputerSockets;
  /** Host pid of the sandbox's pid 1. */
  sandboxPid: number;
  /** The computer's cgroup folder in each hierarchy (`worker/` and `user/` below each). */
  cgroups: ComputerCgroup[];
  /** Whether its sandbox was a spare the wake claimed (spares.ts), not one of its own. */
  fromSpare: boolean;
}

export interface ExecOptions {
  /** @default 30 s; the command (and what it started in its process group) is killed after it. */
  timeoutMs?: number;
  input?: string;
  env?: Record<string, string>;
  /** @default /workspace */
  cwd?: string;
}

export interface ExecResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface LocalProvider extends ComputerProvider {
  readonly kind: "local";
  readonly isolated: true;
  /** `full` as root; `unprivileged` otherwise (no per-computer uid, no cgroup or disk limits). */
  readonly isolation: LocalIsolation;
  /** Slot, uid, sockets and cgroups of an awake computer; undefined when it is not awake here. */
  info(computerId: string): LocalComputerInfo | undefined;
  /**
   * Test and operations support, not a tool path (tools go through the worker): runs argv inside
   * the awake computer as its user, in its namespaces and its `user` cgroup, with the sandbox's
   * environment (without the worker's ROOST_* variables).
   */
  exec(computerId: string, argv: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /** The disk of a sleeping computer, attached for `use` and detached after (L6). */
  withDisk<T>(computerId: string, use: (paths: ComputerPaths) => Promise<T>): Promise<T>;
  /**
   * Benchmarks and tests: resolves true once a spare waits for a wake (spares.ts), false when
   * the provider keeps none (`spares` is 0, no root, closed, or spares keep failing).
   */
  spareReady(): Promise<boolean>;
  /** Host pids of the computer's processes and the memory charged to its cgroups. */
  usage(
    computerId: string,
  ): Promise<{ pids: number[]; workerPids: number[]; memoryBytes: number | undefined } | undefined>;
}

interface Awake {
  computerId: string;
  paths: ComputerPaths;
  slot: number;
  uid: number;
  gid: number;
  sockets: ComputerSockets;
  listeners: SocketListener[];
  cgroups: ComputerCgroup[];
  userProcs: string[];
  runtimeDir: string;
  env: Record<string, string>;
  child: ChildProcess;
  exited: Promise<void>;
  sandboxPid: number;
  sandboxStart: string | undefined;
  stopping: boolean;
  /** The last few KiB of the sandbox's stdout and stderr (the supervisor's and worker's logs). */
  output: { text: string };
  /** The spare's folder when this sandbox was a spare (spares.ts): its binds go at sleep (SP2). */
  spareDir?: string | undefined;
}

type Started = Pick<Awake, "child" | "exited" | "sandboxPid" | "sandboxStart" | "output">;

/** A spare sandbox in the pool (spares.ts). */
interface Spare {
  name: string;
  folder: SpareFolder | undefined;
  /** Set once its worker waits for a claim. */
  sandbox: Started | undefined;
  /** Taken by a wake, or discarded: no longer the pool's. */
  taken: boolean;
  /** #startSpare, which never throws. */
  starting: Promise<void>;
}

/** Spares this process has started, in every provider (a spare's folder is named `<pid>-<n>`). */
let sparesStarted = 0;

/** The environment every sandbox starts with (a computer's adds to it: #sandboxEnv). */
function baseEnv(): Record<string, string> {
  return {
    HOME: insidePaths.home,
    USER: insideUserName,
    LOGNAME: insideUserName,
    SHELL: "/bin/bash",
    PATH: "/opt/node/bin:/usr/local/bin:/usr/bin:/bin",
    LANG: "C.UTF-8",
    // Read-only, filled for the worker at start (sandbox.ts): other Node programs only read it.
    NODE_COMPILE_CACHE: insidePaths.compileCache,
  };
}

/** Resolves once `text` is in the sandbox's output; rejects when it ends or after `timeoutMs`. */
function untilOutput(sandbox: Started, text: string, timeoutMs: number): Promise<void> {
  const stdout = sandbox.child.stdout!;
  return new Promise((resolve, reject) => {
    const finish = (error?: Error) => {
      clearTimeout(timer);
      stdout.off("data", check);
      if (error === undefined) resolve();
      else reject(error);
    };
    const check = () => {
      if (sandbox.output.text.includes(text)) finish();
    };
    const timer = setTimeout(
      () => finish(new Error(`the sandbox did not become ready within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    stdout.on("data", check);
    void sandbox.exited.then(() =>
      finish(
        new Error(`the sandbox exited: ${lastLines(sandbox.output.text, 8) || "(no output)"}`),
      ),
    );
    check();
  });
}

const outputTailBytes = 16 * 1024;

/** Without root (unprivileged isolation) there are no cgroups to use: every cgroup step is then a no-op. */
const noCgroups: CgroupDiscovery = {
  hierarchies: [],
  controllers: { memory: undefined, pids: undefined, cpu: undefined, freezer: undefined },
};

/**
 * Creates the provider after checking the host (tools, and as root the cgroup controllers) and
 * sweeping up what an earlier run left behind (L4).
 */
/** ROOST_ variables of a wake request that reach the worker (which keeps them from user processes). */
const workerSettings: readonly string[] = ["ROOST_SCREENS_MAX"];

export async function createLocalProvider(options: LocalProviderOptions): Promise<LocalProvider> {
  const config = resolveLocalProviderOptions(options);
  const full = config.isolation === "full";
  if (config.privateDir !== undefined) await ensurePrivateDir(config.privateDir); // L7
  const tools = await resolveTools(config);
  const cgroups = full ? await discoverCgroups() : noCgroups;
  const missingControllers = (["memory", "pids"] as const).filter(
    (name) => full && cgroups.controllers[name] === undefined,
  );
  if (missingControllers.length > 0) {
    throw new ConfigError(
      `the local computer provider needs the cgroup controllers ${missingControllers.join(" and ")} (v1 or v2), which this kernel does not offer; set ROOST_COMPUTER_PROVIDER=process for an unisolated development setup`,
    );
  }
  const [layout, owner] = await Promise.all([readHostLayout(), currentOwner()]);
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  await chmod(config.dataDir, 0o700);
  const disks = full
    ? createDiskImages({
        dataDir: await realpath(config.dataDir), // mountinfo names mount points by their real path
        diskBytes: config.limits.diskBytes,
        tools: await resolveDiskTools({}, config.searchPath),
        log: config.log,
      })
    : createFolderDisks({ dataDir: config.dataDir });
  const seccomp = seccompFilterFor();
  if (seccomp.kind === "none") config.log(seccomp.warning);
  const state = await createRuntimeState(config.runDir, owner);
  const slots = createSlotRegistry({
    dir: config.registryDir,
    slots: config.slots,
    uidBase: config.uidBase,
  });
  const compileCacheDir = path.join(config.runDir, "node-compile-cache");
  const warmUp = warmCompileCache(tools, layout, config, compileCacheDir);
  // As root, even with spares off: a server that had them may have left binds that hold disks.
  const spare = full ? await resolveSpareTools(config) : undefined;
  if (spare?.mkfifo === false) config.spares = 0;
  const spareTools = spare?.tools;
  const provider = new LocalComputerProvider(
    config,
    tools,
    cgroups,
    layout,
    state,
    slots,
    compileCacheDir,
    warmUp,
    disks,
    seccomp,
    spareTools,
  );
  await provider.sweep();
  if (spareTools !== undefined && config.spares > 0) {
    await state.withLock("spares", () => shareSparesDir(config.runDir, spareTools));
    provider.fillSpares();
  }
  return provider;
}

/**
 * mount and umount (the disk images need them: always there as root) and mkfifo (coreutils). Without
 * mkfifo the provider makes no spares (logged); it still sweeps those a server left.
 */
async function resolveSpareTools(
  config: ResolvedLocalProviderOptions,
): Promise<{ tools: SpareTools; mkfifo: boolean }> {
  const disk = await resolveDiskTools({}, config.searchPath);
  const mkfifo = await findExecutable("mkfifo", config.searchPath);
  if (mkfifo === undefined && config.spares > 0)
    config.log(
      "spare sandboxes are off: mkfifo (Debian package coreutils) was not found; every wake starts its own sandbox",
    );
  return {
    tools: { mount: disk.mount, umount: disk.umount, mkfifo: mkfifo ?? "mkfifo" },
    mkfifo: mkfifo !== undefined,
  };
}

/**
 * Fills the shared Node compile cache for the worker (sandbox.ts, compileCacheWarmUp) in the
 * background, unless it was filled for the same Node binary and worker sources already. Wakes do
 * not wait for it; a failure only costs speed.
 */
async function warmCompileCache(
  tools: HostTools,
  layout: HostLayout,
  config: ResolvedLocalProviderOptions,
  compileCacheDir: string,
): Promise<void> {
  await mkdir(compileCacheDir, { recursive: true, mode: 0o755 });
  const stampFile = path.join(compileCacheDir, "warmed");
  const sources: string[] = [];
  for (const folder of ["src/worker", "src/protocol"]) {
    const dir = path.join(config.roostRoot, folder);
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const info = await stat(path.join(dir, name)).catch(() => undefined);
      sources.push(`${folder}/${name}:${info?.mtimeMs ?? 0}`);
    }
  }
  const stamp = createHash("sha256")
    .update(
      [process.version, config.nodePath, config.roostRoot, ...config.workerArgv, ...sources].join(
        "\n",
      ),
    )
    .digest("hex");
  if ((await readFile(stampFile, "utf8").catch(() => "")) === stamp) return;
  const args = compileCacheWarmUp({
    isolation: config.isolation,
    layout,
    nodePath: config.nodePath,
    roostRoot: config.roostRoot,
    compileCacheDir,
    workerArgv: config.workerArgv,
  });
  // The worker exits 2 ("no configuration") after loading every module: that is the point.
  const result = await runCommand(tools.bwrap, args, { timeoutMs: 60_000 });
  if (result.exitCode !== 2) return;
  // Node writes its cache files 0600; computers (other uids) read them.
  for (const folder of await readdir(compileCacheDir)) {
    const dir = path.join(compileCacheDir, folder);
    if (!(await stat(dir)).isDirectory()) continue;
    await chmod(dir, 0o755);
    for (const name of await readdir(dir)) await chmod(path.join(dir, name), 0o644);
  }
  await writeFile(stampFile, stamp);
}

async function resolveTools(config: ResolvedLocalProviderOptions): Promise<HostTools> {
  const found: Partial<HostTools> = {};
  const missing: string[] = [];
  for (const name of hostToolNames) {
    const located = config.tools[name] ?? (await findExecutable(name, config.searchPath));
    if (located === undefined) missing.push(`${name} (Debian package ${hostToolPackages[name]})`);
    else found[name] = located;
  }
  if (missing.length > 0) {
    throw new ConfigError(
      `the local computer provider needs ${missing.join(", ")}; install them, or set ROOST_COMPUTER_PROVIDER=process for an unisolated development setup`,
    );
  }
  // Resolved through links: some run inside the sandbox, where a link's folder may not exist.
  for (const name of hostToolNames) found[name] = await realpath(found[name]!);
  return found as HostTools;
}

/** L7: `dir` exists, is a folder (not a link), belongs to this uid and is closed to everyone else. */
async function ensurePrivateDir(dir: string): Promise<void> {
  const uid = process.getuid?.();
  await mkdir(dir, { recursive: true, mode: 0o700 }).catch((error: unknown) => {
    if (!isErrno(error, "EEXIST")) throw error;
  });
  const info = await lstat(dir);
  const problem = info.isSymbolicLink()
    ? `a link to ${await readlink(dir)}`
    : !info.isDirectory()
      ? "not a folder"
      : info.uid !== uid
        ? `owned by uid ${info.uid}`
        : (info.mode & 0o077) !== 0
          ? `open to others (mode ${(info.mode & 0o777).toString(8)})`
          : undefined;
  if (problem !== undefined) {
    throw new ConfigError(
      `local provider: ${dir} holds the computers' sockets and must be a folder of uid ${uid} that no one else can open, but it is ${problem}; remove it (another user may have made it) and start again`,
    );
  }
}

class LocalComputerProvider implements LocalProvider {
  readonly kind = "local" as const;
  readonly isolated = true as const;
  readonly isolation: LocalIsolation;
  readonly #config: ResolvedLocalProviderOptions;
  readonly #tools: HostTools;
  readonly #cgroups: CgroupDiscovery;
  readonly #layout: HostLayout;
  readonly #state: RuntimeState;
  readonly #slots: SlotRegistry;
  readonly #awake = new Map<string, Awake>();
  readonly #queues = new Map<string, Promise<unknown>>();
  readonly #compileCacheDir: string;
  readonly #warmUp: Promise<void>;
  readonly #disks: DiskImages;
  readonly #seccomp: SeccompChoice;
  readonly #spareTools: SpareTools | undefined;
  readonly #spares: Spare[] = [];
  /** Spares that ended before their claim, one after another; at 3 the pool stops refilling. */
  #spareFailures = 0;
  #spareTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    config: ResolvedLocalProviderOptions,
    tools: HostTools,
    cgroups: CgroupDiscovery,
    layout: HostLayout,
    state: RuntimeState,
    slots: SlotRegistry,
    compileCacheDir: string,
    warmUp: Promise<void>,
    disks: DiskImages,
    seccomp: SeccompChoice,
    spareTools: SpareTools | undefined,
  ) {
    this.#config = config;
    this.#tools = tools;
    this.#cgroups = cgroups;
    this.#layout = layout;
    this.#state = state;
    this.#slots = slots;
    this.#compileCacheDir = compileCacheDir;
    this.#warmUp = warmUp.catch(() => undefined);
    this.#disks = disks;
    this.#seccomp = seccomp;
    this.#spareTools = spareTools;
    this.isolation = config.isolation;
  }

  /** Whose uid a computer runs as: its slot's as root (X1), the server's own without (X6). */
  #owner(slot: { uid: number; gid: number }): { uid: number; gid: number } {
    if (this.isolation === "full") return slot;
    return { uid: process.getuid?.() ?? slot.uid, gid: process.getgid?.() ?? slot.gid };
  }

  /** Where the disk's folders are while it is attached (L6): after create() and while awake. */
  paths(computerId: string): ComputerPaths {
    return this.#disks.paths(checkId(computerId));
  }

  create(computerId: string): Promise<ComputerPaths> {
    checkId(computerId);
    return this.#serial(computerId, async () => {
      this.#assertOpen();
      const paths = await this.#disks.attach(computerId);
      const slot = await this.#slots.ensure(this.#disks.hostDir(computerId), computerId);
      await this.#handOver(paths, this.#owner(slot), slot.changed);
      return paths;
    });
  }

  wake(computerId: string, request: WakeRequest): Promise<void> {
    const paths = this.paths(computerId);
    return this.#serial(computerId, async () => {
      try {
        await this.#wake(computerId, paths, request);
      } catch (error) {
        // L2, L6: a failed wake leaves the disk detached.
        if (!this.#awake.has(computerId))
          await this.#disks.detach(computerId).catch(() => undefined);
        throw error;
      }
    });
  }

  sleep(computerId: string): Promise<void> {
    checkId(computerId);
    return this.#serial(computerId, async () => {
      const awake = this.#awake.get(computerId);
      if (awake !== undefined) await this.#stop(awake);
      await this.#disks.detach(computerId); // L6
    });
  }

  /** L6: the disk attached for `use` (the snapshot after sleep), detached after unless awake. */
  withDisk<T>(computerId: string, use: (paths: ComputerPaths) => Promise<T>): Promise<T> {
    checkId(computerId);
    return this.#serial(computerId, async () => {
      this.#assertOpen();
      if (!(await this.#disks.exists(computerId))) throw new NotFoundError("computer", computerId);
      const paths = await this.#disks.attach(computerId);
      try {
        return await use(paths);
      } finally {
        if (!this.#awake.has(computerId)) await this.#disks.detach(computerId);
      }
    });
  }

  destroy(computerId: string): Promise<void> {
    checkId(computerId);
    return this.#serial(computerId, async () => {
      const awake = this.#awake.get(computerId);
      if (awake !== undefined) await this.#stop(awake);
      await this.#slots.release(this.#disks.hostDir(computerId));
      await this.#disks.remove(computerId);
    });
  }

  async status(computerId: string): Promise<ComputerRuntimeStatus> {
    checkId(computerId);
    const awake = this.#awake.get(computerId);
    if (awake !== undefined && !awake.stopping) return "running";
    return (await this.#disks.exists(computerId)) ? "stopped" : "missing";
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#spareTimer);
    await Promise.allSettled(this.#spares.splice(0).map((spare) => this.#discardSpare(spare)));
    const results = await Promise.allSettled(
      [...this.#awake.keys()].map((computerId) =>
        this.#serial(computerId, async () => {
          const awake = this.#awake.get(computerId);
          if (awake !== undefined) await this.#stop(awake);
        }),
      ),
    );
    await this.#disks.detachAll(); // L6
    await removeEmptyGroups(this.#cgroups, this.#config.cgroupName);
    await this.#warmUp;
    const failures = results.flatMap((result) =>
      result.status === "rejected" ? [result.reason as unknown] : [],
    );
    if (failures.length > 0) {
      throw new RoostError(
        "internal",
        `local provider: ${failures.length} computer(s) did not stop cleanly: ${failures.map(String).join("; ")}`,
      );
    }
  }

  info(computerId: string): LocalComputerInfo | undefined {
    const awake = this.#awake.get(computerId);
    if (awake === undefined) return undefined;
    return {
      computerId,
      slot: awake.slot,
      uid: awake.uid,
      gid: awake.gid,
      sockets: { ...awake.sockets },
      sandboxPid: awake.sandboxPid,
      cgroups: awake.cgroups.map((cgroup) => ({ ...cgroup, controllers: [...cgroup.controllers] })),
      fromSpare: awake.spareDir !== undefined,
    };
  }

  async spareReady(): Promise<boolean> {
    for (;;) {
      if (this.#config.spares === 0 || this.#closed || this.#spareFailures >= 3) return false;
      if (this.#spares.some((spare) => spare.sandbox !== undefined && !spare.taken)) return true;
      const starting = this.#spares.find((spare) => !spare.taken && spare.sandbox === undefined);
      // Starting, or its refill timer is due.
      await (starting?.starting ?? delay(20));
    }
  }

  async usage(computerId: string) {
    const awake = this.#awake.get(computerId);
    if (awake === undefined) return undefined;
    if (this.isolation === "unprivileged") {
      // No cgroups: the computer's processes are those of its pid namespace; no memory figure.
      const pids = await pidNamespaceMembers(awake.sandboxPid);
      const workerPids: number[] = [];
      for (const pid of pids) {
        const command = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
        if (command.startsWith(`${insidePaths.node}\0`)) workerPids.push(pid);
      }
      return { pids, workerPids, memoryBytes: undefined };
    }
    const [pids, workerPids, memoryBytes] = await Promise.all([
      computerPids(awake.cgroups),
      leafPids(awake.cgroups, "worker"),
      computerMemoryBytes(awake.cgroups),
    ]);
    return { pids, workerPids, memoryBytes };
  }

  exec(
    computerId: string,
    argv: readonly string[],
    options: ExecOptions = {},
  ): Promise<ExecResult> {
    checkId(computerId);
    const awake = this.#awake.get(computerId);
    if (awake === undefined || awake.stopping) {
      return Promise.reject(
        new RoostError("computer_asleep", `computer ${computerId} is not awake on this host`),
      );
    }
    if (argv.length === 0)
      return Promise.reject(new InvalidRequestError("exec: argv must not be empty"));
    const env = { ...awake.env, ...commandOnlyEnv(awake.env), ...options.env };
    for (const name of Object.keys(env)) if (name.startsWith("ROOST_")) delete env[name];
    const user = [
      "/usr/bin/env",
      "-i",
      `--chdir=${options.cwd ?? insidePaths.workspace}`,
      ...Object.entries(env).map(([name, value]) => `${name}=${value}`),
      ...argv,
    ];
    const seccompArgs = this.#seccomp.kind === "filter" ? ["--seccomp", "3"] : [];
    const command =
      this.isolation === "unprivileged"
        ? this.#unprivilegedExecCommand(awake, seccompArgs, user)
        : this.#fullExecCommand(awake, seccompArgs, user);
    return runLaunched(
      ["roost-exec", String(awake.userProcs.length), ...awake.userProcs, ...command],
      options,
      this.#seccomp.kind === "filter" ? this.#seccomp.program : undefined,
    );
  }

  /**
   * X6: into the sandbox's own user namespace first (the server's uid owns it), keeping the uid;
   * then a bubblewrap that keeps the computer's view, loads the seccomp filter (X5) and leaves no
   * capability, an empty bounding set and no_new_privs (so no setpriv: there is no uid to switch).
   */
  #unprivilegedExecCommand(awake: Awake, seccompArgs: string[], user: string[]): string[] {
    return [
      this.#tools.nsenter,
      `--target=${awake.sandboxPid}`,
      "--user",
      "--preserve-credentials",
      "--mount",
      "--uts",
      "--ipc",
      "--net",
      "--pid",
      "--root",
      "--",
      this.#tools.bwrap,
      "--dev-bind",
      "/",
      "/",
      ...seccompArgs,
      "--",
      ...user,
    ];
  }

  /** X1: as root, into the computer's namespaces, then setpriv to its uid without capabilities. */
  #fullExecCommand(awake: Awake, seccompArgs: string[], user: string[]): string[] {
    return [
      this.#tools.nsenter,
      `--target=${awake.sandboxPid}`,
      "--mount",
      "--uts",
      "--ipc",
      "--net",
      "--pid",
      "--root",
      "--",
      // X5: the same seccomp filter as the sandbox's own processes, loaded by a bubblewrap that
      // keeps the computer's view of the file system (it only adds a mount namespace of its own).
      ...(seccompArgs.length > 0
        ? [this.#tools.bwrap, "--dev-bind", "/", "/", ...seccompArgs, "--"]
        : []),
      this.#tools.setpriv,
      `--reuid=${awake.uid}`,
      `--regid=${awake.gid}`,
      "--clear-groups",
      "--inh-caps=-all",
      "--bounding-set=-all",
      "--no-new-privs",
      "--",
      ...user,
    ];
  }

  /**
   * L4: removes resources of slots whose owning server is gone (and any without an owner), and
   * unmounts the disks left mounted under the data dir. Runs once, at start, before any computer
   * of this provider is attached.
   */
  async sweep(): Promise<void> {
    // Resources first, records second: a live server writes its record before making resources (R1).
    const [cgroupSlots, runtimeSlots] = await Promise.all([
      listCgroupSlots(this.#cgroups, this.#config.cgroupName),
      this.#state.listRuntimeSlots(),
    ]);
    const records = new Map(
      (await this.#state.listRecords()).map((record) => [record.slot, record]),
    );
    const candidates = new Set([...cgroupSlots, ...runtimeSlots, ...records.keys()]);
    for (const slot of candidates) {
      await this.#state.withSlotLock(slot, async () => {
        const record = await this.#state.readRecord(slot);
        if (record !== undefined && (await isOwnerAlive(record.owner))) return;
        const cgroups =
          record?.cgroups ?? computerCgroupsFor(this.#cgroups, this.#config.cgroupName, slot);
        await this.#removeSlotResources(slot, cgroups);
        await this.#state.removeRecord(slot);
      });
    }
    // Spares of a server that is gone, with any claim binds they held (SP2), before the disks.
    if (this.#spareTools !== undefined) await sweepSpares(this.#config.runDir, this.#spareTools);
    // L6: disks a killed server left mounted (their sandboxes are gone with it: X2).
    await this.#disks.detachAll();
  }

  #assertOpen(): void {
    if (this.#closed)
      throw new RoostError("unavailable", "local provider: closed (the server is shutting down)");
  }

  /** L1 */
  #serial<T>(computerId: string, run: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(computerId) ?? Promise.resolve();
    const next = previous.then(run, run);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.#queues.set(computerId, settled);
    void settled.then(() => {
      if (this.#queues.get(computerId) === settled) this.#queues.delete(computerId);
    });
    return next;
  }

  /** L5 (without root the server writes everything as the uid computers run as: nothing to hand over) */
  async #handOver(
    paths: ComputerPaths,
    owner: { uid: number; gid: number },
    uidChanged: boolean,
  ): Promise<void> {
    if (this.isolation !== "full") return;
    if (uidChanged || !(await diskOwnedBy(paths, owner.uid))) await chownDisk(paths, owner, true);
  }

  async #wake(computerId: string, paths: ComputerPaths, request: WakeRequest): Promise<void> {
    this.#assertOpen();
    const running = this.#awake.get(computerId);
    if (running !== undefined) {
      // Already awake: the new token replaces the old one; the worker reads it on its next connect.
      await writeToken(running.runtimeDir, request.workerToken, running.uid, running.gid);
      return;
    }
    if (!(await this.#disks.exists(computerId))) throw new NotFoundError("computer", computerId);
    // L6. The disk attaches (a loop device and a mount, ~20 ms of a wake) while the slot, its
    // cgroups, the runtime files and the sockets are made; the hand-over and the sandbox wait for
    // it, and a wake that fails waits for it too (L1: nothing of it runs after it has ended).
    let attachError: unknown;
    const attached = this.#disks.attach(computerId).then(
      () => undefined,
      (error: unknown) => {
        attachError = error ?? new Error("the disk did not attach");
      },
    );
    const afterAttach = <T>(step: Promise<T>): Promise<T> =>
      step.catch(async (error: unknown) => {
        await attached;
        throw error;
      });
    const slot = await afterAttach(this.#slots.ensure(this.#disks.hostDir(computerId), computerId));
    const owner = this.#owner(slot);
    const diskReady = async () => {
      await attached;
      if (attachError !== undefined) throw attachError;
      await this.#handOver(paths, owner, slot.changed);
    };

    const egress = this.#config.sockets.egress !== undefined;
    const runtimeDir = this.#state.runtimeDir(slot.slot);
    const hostSocket = (name: string) => path.join(runtimeDir, "roost", path.basename(name));
    const sockets: ComputerSockets = {
      gateway: hostSocket(insidePaths.gatewaySocket),
      ...(egress
        ? {
            egressHttp: hostSocket(insidePaths.egressHttpSocket),
            egressSocks: hostSocket(insidePaths.egressSocksSocket),
          }
        : {}),
    };
    const env = this.#sandboxEnv(request, egress);
    const cgroups = computerCgroupsFor(this.#cgroups, this.#config.cgroupName, slot.slot);

    const awake = await afterAttach(
      this.#state.withSlotLock(slot.slot, async () => {
        const previous = await this.#state.readRecord(slot.slot);
        if (previous !== undefined) {
          if (await isOwnerAlive(previous.owner)) {
            throw new RoostError(
              "conflict",
              `computer ${computerId}: its slot ${slot.slot} is in use by computer ${previous.computerId} of server pid ${previous.owner.pid}`,
            );
          }
          await this.#removeSlotResources(slot.slot, previous.cgroups);
        }
        await this.#state.writeRecord({
          computerId,
          root: paths.root,
          slot: slot.slot,
          owner: await currentOwner(),
          cgroups,
          startedAt: Date.now(),
        }); // R1
        const listeners: SocketListener[] = [];
        try {
          const [procs] = await Promise.all([
            createComputerCgroups(cgroups, this.#cgroups, this.#config.limits, owner),
            rm(runtimeDir, { recursive: true, force: true }),
          ]);
          const spec = await this.#sandboxSpec({
            uid: owner.uid,
            gid: owner.gid,
            home: paths.home,
            workspace: paths.workspace,
            workerState: paths.workerState,
            runtimeDir,
            userProcs: procs.userProcs,
            env,
            socatPath: egress ? this.#tools.socat : undefined,
          });
          await writeRuntimeFiles(spec, request.workerToken);
          // LNET1: served before the sandbox starts, then handed to the computer's uid alone.
          listeners.push(await this.#config.sockets.gateway(computerId, sockets.gateway));
          if (sockets.egressHttp !== undefined && sockets.egressSocks !== undefined) {
            const egressPaths = { http: sockets.egressHttp, socks: sockets.egressSocks };
            const listener = await this.#config.sockets.egress?.(computerId, egressPaths);
            if (listener !== undefined) listeners.push(listener);
            if (listener?.trust !== undefined)
              Object.assign(
                env,
                await writeTrust(path.dirname(sockets.egressHttp), listener.trust),
              );
          }
          for (const file of [sockets.gateway, sockets.egressHttp, sockets.egressSocks]) {
            if (file === undefined) continue;
            await chown(file, owner.uid, owner.gid);
            await chmod(file, 0o600);
          }
          await diskReady();
          const spare = shellSafeEnv(env) ? this.#takeSpare() : undefined;
          const claimed =
            spare === undefined
              ? undefined
              : await this.#claim(spare, spec, procs.workerProcs).catch((error: unknown) => {
                  this.#config.log(
                    `computer ${computerId}: its spare sandbox could not be claimed (${(error as Error).message}); starting one of its own`,
                  );
                  return undefined;
                });
          const started =
            claimed ??
            (await this.#startSandbox(
              procs.workerProcs,
              bwrapArguments(spec, 3, this.#seccomp.kind === "filter" ? 5 : undefined),
            ));
          return {
            computerId,
            paths,
            slot: slot.slot,
            uid: owner.uid,
            gid: owner.gid,
            sockets,
            listeners,
            cgroups,
            userProcs: procs.userProcs,
            runtimeDir,
            env,
            ...started,
            spareDir: claimed === undefined ? undefined : spare?.folder?.dir,
            stopping: false,
          } satisfies Awake;
        } catch (error) {
          // L2: leave nothing behind.
          await closeAll(listeners);
          await this.#removeSlotResources(slot.slot, cgroups).catch(() => undefined);
          await this.#state.removeRecord(slot.slot);
          if (error === attachError) throw error; // the disk's own error, as before the overlap
          throw new RoostError(
            "computer_unavailable",
            `computer ${computerId} did not start: ${(error as Error).message}`,
            {
              cause: error,
              details: { computerId },
            },
          );
        }
      }),
    );
    this.#awake.set(computerId, awake);
    void awake.exited.then(() => {
      if (awake.stopping || this.#awake.get(computerId) !== awake) return;
      // L3: the sandbox ended on its own; clean up as sleep would.
      const detail = `sandbox exited: ${lastLines(awake.output.text, 5)}`;
      void this.#serial(computerId, async () => {
        if (this.#awake.get(computerId) === awake) await this.#stop(awake);
      })
        .catch(() => undefined)
        .then(() => this.#config.onExit(computerId, detail));
    });
  }

  #sandboxEnv(request: WakeRequest, egress: boolean): Record<string, string> {
    const env = baseEnv();
    for (const [name, value] of Object.entries(request.env ?? {}))
      if (!name.startsWith("ROOST_") || workerSettings.includes(name)) env[name] = value;
    if (egress) {
      // The forwarders are the only way out (X4); these win over any given in the request.
      const http = `http://127.0.0.1:${forwarderPorts.http}`;
      const socks = `socks5h://127.0.0.1:${forwarderPorts.socks}`;
      const noProxy = "localhost,127.0.0.1,::1";
      Object.assign(env, {
        HTTP_PROXY: http,
        HTTPS_PROXY: http,
        ALL_PROXY: socks,
        http_proxy: http,
        https_proxy: http,
        all_proxy: socks,
        NO_PROXY: noProxy,
        no_proxy: noProxy,
      });
      // Node's own fetch and http honour the variables above only when asked (Node ≥ 24.5), for
      // the computer's commands. Not for the worker: it dials its gateway socket, and with the
      // variable set Node loads its http stack and proxy agent at start, ~25 ms of every wake.
      env[commandEnvVariable] = JSON.stringify({ NODE_USE_ENV_PROXY: "1" });
    }
    Object.assign(env, {
      // The worker dials its computer's own gateway socket (LNET1), whatever URL the wake named.
      ROOST_GATEWAY_URL: `ws+unix://${insidePaths.gatewaySocket}:${GATEWAY_PATH}`,
      ROOST_WORKER_TOKEN_FILE: insidePaths.tokenFile,
      ROOST_WORKER_STATE_DIR: insidePaths.workerState,
      ROOST_WORKSPACE: insidePaths.workspace,
      ROOST_JOB_PRELUDE: insidePaths.jobPrelude,
    });
    return env;
  }

  /** Spawns launcher → bwrap, and waits for the supervisor's ready line (L2). */
  async #startSandbox(
    workerProcs: readonly string[],
    args: { options: readonly string[]; command: readonly string[] },
    ready: string = readyLine,
  ): Promise<Started> {
    const child = spawn(
      "/bin/sh",
      [
        "-c",
        launcherScript,
        "roost-launch",
        String(workerProcs.length),
        ...workerProcs,
        this.#tools.bwrap,
        "--args",
        "4",
        "--",
        ...args.command,
      ],
      {
        // fd 5: the seccomp filter (X5).
        stdio: ["ignore", "pipe", "pipe", "pipe", "pipe", "pipe"],
        env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
      },
    );
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    const seccompPipe = (child.stdio as unknown as Writable[])[5]!.on("error", () => undefined);
    seccompPipe.end(this.#seccomp.kind === "filter" ? this.#seccomp.program : undefined);
    const output = { text: "" };
    const append = (chunk: Buffer) => {
      output.text = (output.text + chunk.toString("utf8")).slice(-outputTailBytes);
    };
    (child.stdio[4] as Writable).on("error", () => undefined).end(`${args.options.join("\0")}\0`);
    let sandboxPid: number | undefined;
    const status = child.stdio[3] as Readable;
    let statusText = "";
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `the sandbox did not become ready within 20 s: ${lastLines(output.text, 5)}`,
              ),
            ),
          20_000,
        );
        const done = (error?: Error) => {
          clearTimeout(timer);
          if (error === undefined) resolve();
          else reject(error);
        };
        status.on("data", (chunk: Buffer) => {
          statusText += chunk.toString("utf8");
          const match = /"child-pid"\s*:\s*(\d+)/.exec(statusText);
          if (match !== null) sandboxPid = Number(match[1]);
        });
        child.stdout!.on("data", (chunk: Buffer) => {
          append(chunk);
          if (output.text.includes(ready)) done();
        });
        child.stderr!.on("data", append);
        child.once("error", (error) => done(error));
        void exited.then(() =>
          done(
            new Error(`the sandbox exited at start: ${lastLines(output.text, 8) || "(no output)"}`),
          ),
        );
      });
      if (sandboxPid === undefined) throw new Error("bubblewrap did not report the sandbox's pid");
    } catch (error) {
      child.kill("SIGKILL");
      if (sandboxPid !== undefined) signalProcess(sandboxPid, "SIGKILL");
      await exited;
      throw error;
    }
    output.text = output.text.replace(`${ready}\n`, "");
    return { child, exited, sandboxPid, sandboxStart: await processStartTicks(sandboxPid), output };
  }

  /** Starts spares until the pool holds `spares`, each in the background (SP1). */
  fillSpares(): void {
    if (this.#spareTools === undefined || this.#config.spares === 0) return;
    if (this.#closed || this.#spareFailures >= 3) return;
    while (this.#spares.length < this.#config.spares) {
      const spare: Spare = {
        name: `${process.pid}-${++sparesStarted}`,
        folder: undefined,
        sandbox: undefined,
        taken: false,
        starting: Promise.resolve(),
      };
      spare.starting = this.#startSpare(spare);
      this.#spares.push(spare);
    }
  }

  /** Makes a spare's folder and sandbox; never throws (a failure is logged and retried later). */
  async #startSpare(spare: Spare): Promise<void> {
    try {
      await this.#warmUp; // its worker loads its modules from the compile cache
      if (spare.taken) return;
      const hierarchies = computerCgroupsFor(this.#cgroups, this.#config.cgroupName, 0).length;
      spare.folder = await makeSpareFolder(
        this.#config.runDir,
        spare.name,
        hierarchies,
        this.#spareTools!,
      );
      const spec = await this.#sandboxSpec({
        uid: 0,
        gid: 0,
        home: spare.folder.stage.home,
        workspace: spare.folder.stage.workspace,
        workerState: spare.folder.stage.state,
        runtimeDir: spare.folder.dir,
        userProcs: spare.folder.stageProcs,
        env: { ...baseEnv(), ...spareOnlyEnv() },
        socatPath: undefined,
        spare: { runStaging: spare.folder.stage.run, controlDir: spare.folder.controlDir },
      });
      await writeRuntimeFiles(spec, "");
      if (spare.taken) return;
      spare.sandbox = await this.#startSandbox(
        [],
        bwrapArguments(spec, 3, this.#seccomp.kind === "filter" ? 5 : undefined),
        spareReadyLine,
      );
      this.#spareFailures = 0;
      const sandbox = spare.sandbox;
      void sandbox.exited.then(() => {
        if (spare.taken) return; // claimed: the computer's own L3 sees it end
        this.#config.log(
          `spare sandbox ${spare.name} ended before a wake claimed it: ${lastLines(sandbox.output.text, 5)}`,
        );
        this.#spareFailed(spare);
      });
    } catch (error) {
      this.#config.log(`spare sandbox ${spare.name} did not start: ${(error as Error).message}`);
      this.#spareFailed(spare);
    }
  }

  #spareFailed(spare: Spare): void {
    this.#spareFailures++;
    const index = this.#spares.indexOf(spare);
    if (index >= 0) this.#spares.splice(index, 1);
    if (!spare.taken)
      void this.#discardSpare(spare).catch((error: unknown) =>
        this.#config.log(`spare sandbox ${spare.name}: ${(error as Error).message}`),
      );
    this.#refillSpares();
  }

  /** A spare whose worker waits for its claim, out of the pool; its replacement starts later. */
  #takeSpare(): Spare | undefined {
    const index = this.#spares.findIndex((spare) => spare.sandbox !== undefined && !spare.taken);
    if (index < 0) return undefined;
    const [spare] = this.#spares.splice(index, 1);
    spare!.taken = true;
    this.#refillSpares();
    return spare;
  }

  #refillSpares(): void {
    if (this.#closed || this.#config.spares === 0) return;
    clearTimeout(this.#spareTimer);
    this.#spareTimer = setTimeout(
      () => this.fillSpares(),
      this.#config.spareDelayMs * (1 + this.#spareFailures),
    );
    this.#spareTimer.unref();
  }

  /** Kills a spare's sandbox and removes its folder with any claim binds (SP2). */
  async #discardSpare(spare: Spare): Promise<void> {
    spare.taken = true;
    await spare.starting;
    const sandbox = spare.sandbox;
    if (sandbox !== undefined) {
      if ((await processStartTicks(sandbox.sandboxPid)) === sandbox.sandboxStart)
        signalProcess(sandbox.sandboxPid, "SIGKILL");
      sandbox.child.kill("SIGKILL");
      await sandbox.exited;
    }
    if (spare.folder !== undefined) await removeSpareFolder(spare.folder.dir, this.#spareTools!);
  }

  /**
   * SP3: makes a waiting spare the computer's sandbox: the computer's folders, runtime folder and
   * `user` cgroup.procs files bound onto its stage, its passwd and group, its processes moved into
   * the computer's `worker` cgroups; then the claim to its worker (which becomes the computer's
   * uid) and SIGUSR1 to its supervisor (which runs the computer's supervise.sh, adopting the
   * worker). Resolves once the supervisor is ready (L2); on any failure the spare is discarded.
   */
  async #claim(spare: Spare, spec: SandboxSpec, workerProcs: readonly string[]): Promise<Started> {
    const sandbox = spare.sandbox!;
    const folder = spare.folder!;
    try {
      await writeFile(path.join(spec.runtimeDir, "roost", "adopt.sh"), adoptScript(spec), {
        mode: 0o600,
      });
      const identity = identityFiles(spec.uid, spec.gid);
      await Promise.all([
        bindClaim(
          folder,
          {
            home: spec.home,
            workspace: spec.workspace,
            workerState: spec.workerState,
            runtime: path.join(spec.runtimeDir, "roost"),
            userProcs: spec.userProcs,
          },
          this.#spareTools!,
        ),
        // In place: bubblewrap bound these files (their inodes) at /etc/passwd and /etc/group.
        writeFile(path.join(folder.etcDir, "passwd"), identity.passwd),
        writeFile(path.join(folder.etcDir, "group"), identity.group),
        processTree(sandbox.child.pid!).then((pids) => moveIntoCgroups(pids, workerProcs)),
      ]);
      await writeClaim(folder.claimFifo, { uid: spec.uid, gid: spec.gid, env: spec.env });
      const [supervisor] = (
        await readFile(`/proc/${sandbox.sandboxPid}/task/${sandbox.sandboxPid}/children`, "utf8")
      )
        .trim()
        .split(/\s+/);
      if (supervisor === undefined || supervisor === "")
        throw new Error("the spare's supervisor is gone");
      process.kill(Number(supervisor), "SIGUSR1");
      await untilOutput(sandbox, readyLine, 20_000);
      sandbox.output.text = sandbox.output.text.replace(`${readyLine}\n`, "");
      return sandbox;
    } catch (error) {
      await this.#discardSpare(spare).catch((discardError: unknown) =>
        this.#config.log(`spare sandbox ${spare.name}: ${(discardError as Error).message}`),
      );
      throw error;
    }
  }

  /** What every sandbox of this provider shares, with a computer's (or a spare's) own parts. */
  async #sandboxSpec(
    own: Pick<
      SandboxSpec,
      | "uid"
      | "gid"
      | "home"
      | "workspace"
      | "workerState"
      | "runtimeDir"
      | "userProcs"
      | "env"
      | "socatPath"
      | "spare"
    >,
  ): Promise<SandboxSpec> {
    return {
      isolation: this.isolation,
      tmpBytes: this.#config.limits.tmpBytes,
      roostRoot: this.#config.roostRoot,
      nodePath: this.#config.nodePath,
      compileCacheDir: this.#compileCacheDir,
      compileCacheFolders: await readdir(this.#compileCacheDir).catch(() => [] as string[]),
      compileCacheUid: this.isolation === "full" ? 0 : own.uid,
      setprivPath: this.#tools.setpriv,
      insideTools: [this.#tools.setpriv, this.#tools.socat, this.#tools.bwrap],
      layout: this.#layout,
      workerArgv: this.#config.workerArgv,
      ...own,
    };
  }

  /** L3 */
  async #stop(awake: Awake): Promise<void> {
    awake.stopping = true;
    // Killing pid 1 of the sandbox's pid namespace kills every process in it; the cgroup sweep
    // below catches anything that raced (C3).
    if (
      awake.sandboxStart !== undefined &&
      (await processStartTicks(awake.sandboxPid)) === awake.sandboxStart
    ) {
      signalProcess(awake.sandboxPid, "SIGKILL");
    }
    awake.child.kill("SIGKILL");
    try {
      await closeAll(awake.listeners);
      await this.#state.withSlotLock(awake.slot, async () => {
        await this.#removeSlotResources(awake.slot, awake.cgroups, awake.exited);
        await this.#state.removeRecord(awake.slot);
      });
      // SP2: a claimed spare's binds hold the disk; they go before it is detached.
      if (awake.spareDir !== undefined) {
        await awake.exited;
        await removeSpareFolder(awake.spareDir, this.#spareTools!);
      }
    } finally {
      this.#awake.delete(awake.computerId);
    }
  }

  async #removeSlotResources(
    slot: number,
    cgroups: readonly ComputerCgroup[],
    exited?: Promise<void>,
  ): Promise<void> {
    const errors: unknown[] = [];
    const attempt = async (step: () => Promise<void>) => {
      try {
        await step();
      } catch (error) {
        errors.push(error);
      }
    };
    await attempt(() => killAll(cgroups));
    if (exited !== undefined) await Promise.race([exited, delay(5000)]);
    await Promise.all([
      attempt(() => removeComputerCgroups(cgroups)),
      attempt(() => rm(this.#state.runtimeDir(slot), { recursive: true, force: true })),
    ]);
    if (errors.length > 0) {
      throw new Error(
        `cleaning up slot ${slot}: ${errors.map((error) => (error as Error).message ?? String(error)).join("; ")}`,
      );
    }
  }
}

function checkId(computerId: string): string {
  if (!computerIdPattern.test(computerId)) {
    throw new InvalidRequestError(
      `computer id ${JSON.stringify(computerId)} is not valid (1-128 letters, digits, "_", "-" or ".", not starting with ".")`,
    );
  }
  return computerId;
}

/** Closes listeners (a computer's sockets); one failing does not keep the others open. */
async function closeAll(listeners: readonly SocketListener[]): Promise<void> {
  await Promise.allSettled(listeners.map((listener) => listener.close()));
}

/** Host pids of the processes in the pid namespace whose first process is `pid` (itself included). */
async function pidNamespaceMembers(pid: number): Promise<number[]> {
  const namespace = await readlink(`/proc/${pid}/ns/pid`).catch(() => undefined);
  if (namespace === undefined) return [];
  const members: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    // pid_for_children differs only in a process that has just unshared; ns/pid is where it lives.
    if ((await readlink(`/proc/${name}/ns/pid`).catch(() => undefined)) === namespace)
      members.push(Number(name));
  }
  return members;
}

function lastLines(text: string, count: number): string {
  return text.trim().split("\n").slice(-count).join(" | ");
}

/** Runs the launcher with argv = [name, COUNT, FILE..., COMMAND...] and collects its output. */
function runLaunched(
  argv: readonly string[],
  options: ExecOptions,
  seccompProgram: Buffer | undefined,
): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", launcherScript, ...argv], {
      stdio: ["pipe", "pipe", "pipe", seccompProgram === undefined ? "ignore" : "pipe"],
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
      detached: true, // its own process group, so a timeout kills what it started too
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const limit = 8 * 1024 * 1024;
    let size = 0;
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) into.push(chunk);
    };
    child.stdout!.on("data", collect(stdout));
    child.stderr!.on("data", collect(stderr));
    child.stdin!.on("error", () => undefined).end(options.input ?? "");
    if (seccompProgram !== undefined)
      (child.stdio[3] as Writable).on("error", () => undefined).end(seccompProgram);
    const timer = setTimeout(() => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }, options.timeoutMs ?? 30_000);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({
        exitCode: code,
        signal,
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr: Buffer.concat(stderr).toString("utf8"),
      });
    });
  });
}

/**
 * The vault's CA for the computer (docs/vault.md), written into its read-only runtime folder
 * (`/run/roost` inside), and the variables that make OpenSSL, curl, git, Python and Node trust it.
 */
async function writeTrust(
  runtimeFolder: string,
  trust: { caPem: string; bundlePem: string },
): Promise<Record<string, string>> {
  await writeFile(path.join(runtimeFolder, "vault-ca.pem"), trust.caPem, { mode: 0o644 });
  await writeFile(path.join(runtimeFolder, "ca-bundle.pem"), trust.bundlePem, { mode: 0o644 });
  const bundle = `${insidePaths.runtime}/ca-bundle.pem`;
  return {
    SSL_CERT_FILE: bundle,
    REQUESTS_CA_BUNDLE: bundle,
    CURL_CA_BUNDLE: bundle,
    GIT_SSL_CAINFO: bundle,
    NODE_EXTRA_CA_CERTS: `${insidePaths.runtime}/vault-ca.pem`,
  };
}
