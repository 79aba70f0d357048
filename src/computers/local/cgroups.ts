/**
 * cgroup limits for local computers on cgroup v1, v2, or a mix of both (each controller is used
 * where the kernel attached it: this project's CI kernel has memory, pids and cpu only under v1).
 *
 * Layout, in every hierarchy that carries one of our controllers, below its parent folder:
 *   <group>/c<slot>/          the computer: the CPU quota, shared by both children
 *   <group>/c<slot>/worker/   the supervisor and the worker (their own memory and pids limits)
 *   <group>/c<slot>/user/     the user's processes (the computer's memory and pids limits)
 *
 * Invariants:
 *   C1 user processes can move themselves only into their own computer's `user` cgroup: its
 *      cgroup.procs is the only one chowned to the computer's uid (plus, on v2, the computer's
 *      own, which the kernel requires for the move and which refuses members).
 *   C2 an OOM or a fork bomb in `user` cannot take memory or pids from `worker`: the limits sit on
 *      siblings, so the kernel's OOM killer and pids.max act inside `user` only.
 *   C3 killAll() leaves no member alive: v2 `cgroup.kill`; v1 freeze, SIGKILL every member, thaw,
 *      repeated until every cgroup is empty (bounded).
 */
import { chown, mkdir, readFile, readdir, rmdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { delay, isErrno, signalProcess } from "./system.ts";

export const cgroupControllers = ["memory", "pids", "cpu", "freezer"] as const;
export type CgroupController = (typeof cgroupControllers)[number];

export interface CgroupHierarchy {
  version: 1 | 2;
  mountPoint: string;
  /** Our controllers this hierarchy carries (v2: those available at its root). */
  controllers: CgroupController[];
  /** The folder of this process's own cgroup in this hierarchy. */
  ownDir: string;
}

export interface CgroupDiscovery {
  /** Hierarchies that carry at least one of our controllers, v2 first. */
  hierarchies: CgroupHierarchy[];
  /** Which cgroup version provides each controller; undefined when the kernel offers none. */
  controllers: Record<CgroupController, 1 | 2 | undefined>;
}

interface CgroupMount {
  version: 1 | 2;
  mountPoint: string;
  /** The cgroup path mounted at the mount point (not "/" inside some containers). */
  root: string;
  /** v1: the controllers named in the mount options. */
  options: string[];
}

/** Parses /proc/self/mountinfo for cgroup mounts. */
export function parseCgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split("\n")) {
    const separator = line.indexOf(" - ");
    if (separator < 0) continue;
    const before = line.slice(0, separator).split(" ");
    const after = line.slice(separator + 3).split(" ");
    const fsType = after[0];
    if (fsType !== "cgroup" && fsType !== "cgroup2") continue;
    const root = unescapeMountField(before[3] ?? "/");
    const mountPoint = unescapeMountField(before[4] ?? "");
    const options = (after[2] ?? "").split(",");
    mounts.push({ version: fsType === "cgroup2" ? 2 : 1, mountPoint, root, options });
  }
  return mounts;
}

function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_match, octal: string) =>
    String.fromCharCode(parseInt(octal, 8)),
  );
}

/** Parses /proc/self/cgroup: v1 controller lists and "" (the v2 hierarchy) to cgroup paths. */
export function parseProcCgroup(text: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (match === null) continue;
    const [, controllers = "", cgroupPath = "/"] = match;
    if (controllers === "") paths.set("", cgroupPath);
    for (const name of controllers.split(",")) if (name !== "") paths.set(name, cgroupPath);
  }
  return paths;
}

/** The folder of a process's cgroup within a mount, given the mount's own cgroup root. */
function dirWithin(mount: CgroupMount, cgroupPath: string): string {
  const relative =
    mount.root !== "/" && (cgroupPath === mount.root || cgroupPath.startsWith(`${mount.root}/`))
      ? cgroupPath.slice(mount.root.length)
      : mount.root === "/"
        ? cgroupPath
        : "/";
  return path.join(mount.mountPoint, relative);
}

export interface DiscoverOptions {
  /** @default /proc */
  procRoot?: string;
}

/** Finds which hierarchies carry memory, pids, cpu and freezer, and where this process sits in them. */
export async function discoverCgroups(options: DiscoverOptions = {}): Promise<CgroupDiscovery> {
  const procRoot = options.procRoot ?? "/proc";
  const [mountinfo, ownCgroups] = await Promise.all([
    readFile(path.join(procRoot, "self/mountinfo"), "utf8").catch(() => ""),
    readFile(path.join(procRoot, "self/cgroup"), "utf8").catch(() => ""),
  ]);
  const mounts = parseCgroupMounts(mountinfo);
  const ownPaths = parseProcCgroup(ownCgroups);
  const controllers: Record<CgroupController, 1 | 2 | undefined> = {
    memory: undefined,
    pids: undefined,
    cpu: undefined,
    freezer: undefined,
  };
  const hierarchies: CgroupHierarchy[] = [];

  const unified = mounts.find((mount) => mount.version === 2);
  if (unified !== undefined) {
    const available = (
      await readFile(path.join(unified.mountPoint, "cgroup.controllers"), "utf8").catch(() => "")
    )
      .trim()
      .split(/\s+/);
    const carried = cgroupControllers.filter(
      (name) => name !== "freezer" && available.includes(name),
    );
    // v2 has no freezer controller: cgroup.freeze and cgroup.kill are built in.
    if (carried.length > 0) {
      for (const name of carried) controllers[name] = 2;
      hierarchies.push({
        version: 2,
        mountPoint: unified.mountPoint,
        controllers: carried,
        ownDir: dirWithin(unified, ownPaths.get("") ?? "/"),
      });
    }
  }
  const seen = new Set<string>();
  for (const mount of mounts) {
    if (mount.version !== 1 || seen.has(mount.mountPoint)) continue;
    const carried = cgroupControllers.filter(
      (name) => controllers[name] === undefined && mount.options.includes(name),
    );
    if (carried.length === 0) continue;
    seen.add(mount.mountPoint);
    for (const name of carried) controllers[name] = 1;
    const ownPath = ownPaths.get(carried[0]!) ?? "/";
    hierarchies.push({
      version: 1,
      mountPoint: mount.mountPoint,
      controllers: carried,
      ownDir: dirWithin(mount, ownPath),
    });
  }
  return { hierarchies, controllers };
}

/** Per-computer limits. */
export interface CgroupLimits {
  /** Memory of the user's processes. */
  memoryBytes: number;
  /** Processes and threads of the user's processes. */
  pids: number;
  /** CPUs for the whole computer (worker and user processes together). */
  cpus: number;
  /** Memory of the supervisor and the worker. */
  workerMemoryBytes: number;
  /** Processes and threads of the supervisor, the worker and its per-command wrappers. */
  workerPids: number;
}

/** One computer's cgroup folder in one hierarchy. */
export interface ComputerCgroup {
  version: 1 | 2;
  controllers: CgroupController[];
  /** `<parent>/<group>/c<slot>` */
  dir: string;
}

/** Where a hierarchy keeps Roost's computers: v1 nests under our own cgroup; v2 uses a top-level folder (see docs/computers.md). */
export function groupDir(hierarchy: CgroupHierarchy, groupName: string): string {
  return hierarchy.version === 1
    ? path.join(hierarchy.ownDir, groupName)
    : path.join(hierarchy.mountPoint, groupName);
}

export function computerCgroupsFor(
  discovery: CgroupDiscovery,
  groupName: string,
  slot: number,
): ComputerCgroup[] {
  return discovery.hierarchies.map((hierarchy) => ({
    version: hierarchy.version,
    controllers: hierarchy.controllers,
    dir: path.join(groupDir(hierarchy, groupName), `c${slot}`),
  }));
}

export const workerLeaf = "worker";
export const userLeaf = "user";

async function writeControl(dir: string, file: string, value: string): Promise<void> {
  await writeFile(path.join(dir, file), value);
}

async function enableSubtreeControllers(
  dir: string,
  controllers: CgroupController[],
): Promise<void> {
  const current = (await readFile(path.join(dir, "cgroup.subtree_control"), "utf8"))
    .trim()
    .split(/\s+/);
  const missing = controllers.filter((name) => !current.includes(name));
  if (missing.length > 0) {
    await writeControl(dir, "cgroup.subtree_control", missing.map((name) => `+${name}`).join(" "));
  }
}

/**
 * Creates the computer's cgroups and sets the limits; the folders may exist already (idempotent).
 * Returns the cgroup.procs files a process writes its pid to, to join `worker` or `user`.
 */
export async function createComputerCgroups(
  cgroups: readonly ComputerCgroup[],
  discovery: CgroupDiscovery,
  limits: CgroupLimits,
  owner: { uid: number; gid: number },
): Promise<{ workerProcs: string[]; userProcs: string[] }> {
  const cpuPeriodUs = 100_000;
  const cpuQuotaUs = Math.max(1000, Math.round(limits.cpus * cpuPeriodUs));
  await Promise.all(
    cgroups.map(async (cgroup) => {
      const worker = path.join(cgroup.dir, workerLeaf);
      const user = path.join(cgroup.dir, userLeaf);
      const has = (name: CgroupController) => cgroup.controllers.includes(name);
      if (cgroup.version === 2) {
        // Controllers reach a child only if every ancestor enables them for its children.
        const hierarchy = discovery.hierarchies.find((entry) => entry.version === 2)!;
        const group = path.dirname(cgroup.dir);
        const enabled = cgroup.controllers;
        // The group sits directly below the mount point (groupDir), whose subtree_control we extend.
        await retryIfGroupVanished(async () => {
          await mkdir(cgroup.dir, { recursive: true });
          for (const dir of [hierarchy.mountPoint, group, cgroup.dir])
            await enableSubtreeControllers(dir, enabled);
          await Promise.all([mkdir(worker, { recursive: true }), mkdir(user, { recursive: true })]);
        });
        const writes: Promise<void>[] = [];
        if (has("memory")) {
          writes.push(writeControl(user, "memory.max", String(limits.memoryBytes)));
          writes.push(writeControl(worker, "memory.max", String(limits.workerMemoryBytes)));
          writes.push(writeControl(user, "memory.swap.max", "0").catch(ignoreMissing));
          writes.push(writeControl(worker, "memory.swap.max", "0").catch(ignoreMissing));
        }
        if (has("pids")) {
          writes.push(writeControl(user, "pids.max", String(limits.pids)));
          writes.push(writeControl(worker, "pids.max", String(limits.workerPids)));
        }
        if (has("cpu")) {
          writes.push(writeControl(cgroup.dir, "cpu.max", `${cpuQuotaUs} ${cpuPeriodUs}`));
          writes.push(writeControl(worker, "cpu.weight", "200"));
          writes.push(writeControl(user, "cpu.weight", "100"));
        }
        await Promise.all(writes);
        // C1: moving worker → user needs write access to the common ancestor's cgroup.procs too.
        await chown(path.join(cgroup.dir, "cgroup.procs"), owner.uid, owner.gid);
      } else {
        await retryIfGroupVanished(() =>
          Promise.all([mkdir(worker, { recursive: true }), mkdir(user, { recursive: true })]),
        );
        const writes: Promise<void>[] = [];
        if (has("memory")) {
          writes.push(setV1Memory(user, limits.memoryBytes));
          writes.push(setV1Memory(worker, limits.workerMemoryBytes));
        }
        if (has("pids")) {
          writes.push(writeControl(user, "pids.max", String(limits.pids)));
          writes.push(writeControl(worker, "pids.max", String(limits.workerPids)));
        }
        if (has("cpu")) {
          writes.push(
            writeControl(cgroup.dir, "cpu.cfs_period_us", String(cpuPeriodUs)).then(() =>
              writeControl(cgroup.dir, "cpu.cfs_quota_us", String(cpuQuotaUs)),
            ),
          );
          writes.push(writeControl(worker, "cpu.shares", "2048"));
          writes.push(writeControl(user, "cpu.shares", "1024"));
        }
        await Promise.all(writes);
      }
      await chown(path.join(user, "cgroup.procs"), owner.uid, owner.gid); // C1
    }),
  );
  return {
    workerProcs: cgroups.map((cgroup) => path.join(cgroup.dir, workerLeaf, "cgroup.procs")),
    userProcs: cgroups.map((cgroup) => path.join(cgroup.dir, userLeaf, "cgroup.procs")),
  };
}

/**
 * Another server may remove the empty group folder while we create below it (removeEmptyGroups):
 * mkdir then fails with ENOENT, or ENOTDIR while the kernel is still tearing the folder down.
 */
async function retryIfGroupVanished(make: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await make();
      return;
    } catch (error) {
      if (!(isErrno(error, "ENOENT") || isErrno(error, "ENOTDIR")) || attempt >= 10) throw error;
      await delay(5 * attempt);
    }
  }
}

async function setV1Memory(dir: string, bytes: number): Promise<void> {
  await writeControl(dir, "memory.limit_in_bytes", String(bytes));
  // With swap accounting, memory + swap gets the same limit, so the limit is not dodged by swapping.
  await writeControl(dir, "memory.memsw.limit_in_bytes", String(bytes)).catch(ignoreMissing);
}

function ignoreMissing(error: unknown): void {
  if (isErrno(error, "ENOENT") || isErrno(error, "EACCES") || isErrno(error, "EINVAL")) return;
  throw error;
}

/** The cgroup folders of a computer, deepest first (leaves, then the computer's). */
function foldersDeepestFirst(cgroup: ComputerCgroup): string[] {
  return [path.join(cgroup.dir, workerLeaf), path.join(cgroup.dir, userLeaf), cgroup.dir];
}

async function readPids(dir: string): Promise<number[]> {
  try {
    const text = await readFile(path.join(dir, "cgroup.procs"), "utf8");
    return text
      .split("\n")
      .filter((line) => line !== "")
      .map(Number);
  } catch (error) {
    if (isErrno(error, "ENOENT")) return [];
    throw error;
  }
}

/** Every process in the computer's cgroups (host pids), across hierarchies, deduplicated. */
export async function computerPids(cgroups: readonly ComputerCgroup[]): Promise<number[]> {
  const all = new Set<number>();
  for (const cgroup of cgroups) {
    for (const dir of foldersDeepestFirst(cgroup))
      for (const pid of await readPids(dir)) all.add(pid);
  }
  return [...all];
}

/** The pids in one leaf (`worker` or `user`) of the first hierarchy that has it. */
export async function leafPids(
  cgroups: readonly ComputerCgroup[],
  leaf: "worker" | "user",
): Promise<number[]> {
  for (const cgroup of cgroups) {
    const pids = await readPids(path.join(cgroup.dir, leaf));
    if (pids.length > 0) return pids;
  }
  return [];
}

/** Memory charged to the computer (both leaves), in bytes; undefined without a memory controller. */
export async function computerMemoryBytes(
  cgroups: readonly ComputerCgroup[],
): Promise<number | undefined> {
  const memory = cgroups.find((cgroup) => cgroup.controllers.includes("memory"));
  if (memory === undefined) return undefined;
  const file = memory.version === 2 ? "memory.current" : "memory.usage_in_bytes";
  let total = 0;
  for (const leaf of [workerLeaf, userLeaf]) {
    const text = await readFile(path.join(memory.dir, leaf, file), "utf8").catch(() => "0");
    total += Number(text.trim());
  }
  return total;
}

/** C3: kills every process in the computer's cgroups and waits until they are empty. */
export async function killAll(cgroups: readonly ComputerCgroup[], timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const v2 = cgroups.find((cgroup) => cgroup.version === 2);
  const freezer = cgroups.find(
    (cgroup) => cgroup.version === 1 && cgroup.controllers.includes("freezer"),
  );
  if (v2 !== undefined) {
    await writeControl(v2.dir, "cgroup.kill", "1").catch(ignoreMissing);
  }
  for (;;) {
    let pids = await computerPids(cgroups);
    if (pids.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(
        `cgroups of ${cgroups[0]?.dir ?? "?"} still hold pids ${pids.join(" ")} after ${timeoutMs} ms`,
      );
    }
    // Frozen processes cannot fork between our read and our kill; SIGKILL is delivered on thaw.
    const frozen = freezer !== undefined && (await freeze(freezer.dir, deadline));
    if (frozen) pids = await computerPids(cgroups);
    for (const pid of pids) signalProcess(pid, "SIGKILL");
    if (frozen) await writeControl(freezer.dir, "freezer.state", "THAWED").catch(ignoreMissing);
    await delay(10);
  }
}

async function freeze(dir: string, deadline: number): Promise<boolean> {
  try {
    await writeControl(dir, "freezer.state", "FROZEN");
  } catch (error) {
    if (isErrno(error, "ENOENT")) return false;
    throw error;
  }
  while (Date.now() < deadline) {
    const state = (await readFile(path.join(dir, "freezer.state"), "utf8").catch(() => "")).trim();
    if (state === "FROZEN" || state === "") return state === "FROZEN";
    await delay(2);
  }
  return false;
}

/** Removes the computer's cgroup folders (they must be empty of processes). Idempotent. */
export async function removeComputerCgroups(
  cgroups: readonly ComputerCgroup[],
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const cgroup of cgroups) {
    for (const dir of foldersDeepestFirst(cgroup)) {
      for (;;) {
        try {
          await rmdir(dir);
          break;
        } catch (error) {
          if (isErrno(error, "ENOENT")) break;
          // EBUSY: a dying member has not been reaped yet.
          if (!isErrno(error, "EBUSY") || Date.now() > deadline) throw error;
          await delay(10);
        }
      }
    }
  }
}

/**
 * Removes Roost's group folders where no computer is left in them (any server's); a folder that
 * still has computers stays. A server creating a computer at the same moment re-creates it.
 */
export async function removeEmptyGroups(
  discovery: CgroupDiscovery,
  groupName: string,
): Promise<void> {
  for (const hierarchy of discovery.hierarchies) {
    await rmdir(groupDir(hierarchy, groupName)).catch(() => undefined);
  }
}

/** Slots that have a cgroup folder under our group in any hierarchy (for the start-up sweep). */
export async function listCgroupSlots(
  discovery: CgroupDiscovery,
  groupName: string,
): Promise<Set<number>> {
  const slots = new Set<number>();
  for (const hierarchy of discovery.hierarchies) {
    let entries: string[];
    try {
      entries = await readdir(groupDir(hierarchy, groupName));
    } catch (error) {
      if (isErrno(error, "ENOENT")) continue;
      throw error;
    }
    for (const entry of entries) {
      const match = /^c(\d+)$/.exec(entry);
      if (match !== null) slots.add(Number(match[1]));
    }
  }
  return slots;
}
