/**
 * Spare sandboxes (docs/computers.md, "Spare sandboxes"; decision 0021, eighth pass): a sandbox
 * started before any computer needs it, its worker's modules already loaded, which a wake claims
 * instead of starting a sandbox of its own. Node's start and the worker's modules are most of a
 * cold wake (~150 of ~230 ms here); a claim costs a few mounts, a cgroup move and one FIFO write.
 *
 * A spare's folder, `<runDir>/spares/<name>/`:
 *   owner.json         the server that made it (a later start removes spares of dead servers)
 *   etc/               its passwd and group (rewritten in place with the computer's at the claim)
 *                      and the other generated /etc files
 *   control/           its /run/roost-spare, read-only: spare.sh (its supervisor) and `claim`, the
 *                      FIFO its worker reads, root's alone (mode 0600)
 *   stage/home, stage/workspace, stage/state, stage/run, stage/cg/<n>.procs
 *                      what the sandbox binds at /home/user, /workspace, /var/lib/roost/worker,
 *                      /run/roost and /run/roost-cgroup/<n>.procs: empty until the claim binds the
 *                      computer's folders, runtime folder and `user` cgroup.procs files onto them
 *   pre/…              the same names: where the claim first binds them with their flags, since
 *                      a remount's flags do not propagate (SP2)
 *
 * `<runDir>/spares` is a shared mount (made at start): a mount the host makes below it appears in
 * the spare's sandbox, whose binds of the stage folders are slaves of it.
 *
 * Invariants:
 *   SP1 a spare is only made with `full` isolation (root), and before its claim nothing of any
 *       computer is in it: no disk, no socket, no token, no cgroup of a computer.
 *   SP2 the claim binds are made nosuid and nodev (and the runtime folder read-only), as
 *       bubblewrap's own binds are: each is bound with its flags under pre/ first, then bound from
 *       there onto the stage, so that the copy that propagates into the sandbox has them (a bind's
 *       flags are set by a second, remount step, which does not propagate). Every one is undone
 *       before the computer's disk is detached,
 *       and a spare's folder is removed only when nothing is mounted below it (never a recursive
 *       removal across a mount: that would reach the computer's files).
 *   SP3 the host writes the claim only after the binds, /etc and the cgroup move are done, so the
 *       worker's first step as the computer's uid already sees the computer; a spare whose claim
 *       fails at any step is killed and the wake starts a sandbox of its own (a cold wake).
 *   SP4 the claim FIFO is opened without blocking: a spare whose worker is not waiting (gone)
 *       fails its claim within 0.1 s instead of holding the wake.
 */
import { constants } from "node:fs";
import { mkdir, open, readdir, readFile, rm, rmdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { SpareClaim } from "../../worker/index.ts";
import { readMounts, unescapeMountPath } from "./disk-image.ts";
import { currentOwner, isOwnerAlive, type ProcessOwner } from "./runtime-state.ts";
import { delay, isErrno, runChecked } from "./system.ts";

/** The host tools spares use (util-linux's mount and umount, coreutils' mkfifo). */
export interface SpareTools {
  mount: string;
  umount: string;
  mkfifo: string;
}

export const stageFolders = ["home", "workspace", "state", "run"] as const;

export interface SpareFolder {
  dir: string;
  etcDir: string;
  controlDir: string;
  claimFifo: string;
  stage: Record<(typeof stageFolders)[number], string>;
  /** Stand-ins for the computer's `user` cgroup.procs files, one per hierarchy. */
  stageProcs: string[];
  /** The same under pre/ (SP2). */
  pre: Record<(typeof stageFolders)[number], string>;
  preProcs: string[];
}

export function sparesDir(runDir: string): string {
  return path.join(runDir, "spares");
}

/**
 * Makes `<runDir>/spares` a shared mount in a peer group of its own, unless it is one already
 * (another server on this host made it: its spares rely on it staying so). Call under a lock.
 */
export async function shareSparesDir(runDir: string, tools: SpareTools): Promise<void> {
  const dir = sparesDir(runDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const propagation = await mountPropagation(dir);
  if (propagation?.includes("shared:") === true) return;
  if (propagation === undefined) {
    await runChecked(tools.mount, ["--bind", dir, dir]);
    // A peer group of its own: what is mounted below it propagates to spares, nowhere else.
    await runChecked(tools.mount, ["--make-private", dir]);
  }
  await runChecked(tools.mount, ["--make-shared", dir]);
}

/** The optional fields of the topmost mount at `dir` (`shared:N`, `master:N`…), or undefined. */
async function mountPropagation(dir: string): Promise<string | undefined> {
  let found: string | undefined;
  for (const line of (await readFile("/proc/self/mountinfo", "utf8")).split("\n")) {
    const fields = line.split(" ");
    const separator = fields.indexOf("-");
    if (separator < 6 || unescapeMountPath(fields[4]!) !== dir) continue;
    found = fields.slice(6, separator).join(" "); // later lines are mounted on top
  }
  return found;
}

/** Makes a spare's folder (SP1: nothing of a computer in it). */
export async function makeSpareFolder(
  runDir: string,
  name: string,
  procsCount: number,
  tools: SpareTools,
): Promise<SpareFolder> {
  const dir = path.join(sparesDir(runDir), name);
  const folder = spareFolder(dir, procsCount);
  await mkdir(dir, { mode: 0o700 });
  await writeFile(path.join(dir, "owner.json"), JSON.stringify(await currentOwner()));
  await Promise.all([
    mkdir(folder.etcDir, { mode: 0o755 }),
    mkdir(folder.controlDir, { mode: 0o755 }),
    mkdir(path.join(dir, "stage", "cg"), { recursive: true, mode: 0o755 }),
    mkdir(path.join(dir, "pre", "cg"), { recursive: true, mode: 0o700 }),
  ]);
  await Promise.all([
    ...[...Object.values(folder.stage), ...Object.values(folder.pre)].map((stage) =>
      mkdir(stage, { mode: 0o755 }),
    ),
    ...[...folder.stageProcs, ...folder.preProcs].map((file) =>
      writeFile(file, "", { mode: 0o600 }),
    ),
    runChecked(tools.mkfifo, ["-m", "0600", folder.claimFifo]),
  ]);
  return folder;
}

function spareFolder(dir: string, procsCount: number): SpareFolder {
  const under = (top: string) => ({
    folders: Object.fromEntries(
      stageFolders.map((name) => [name, path.join(dir, top, name)]),
    ) as Record<(typeof stageFolders)[number], string>,
    procs: Array.from({ length: procsCount }, (_, index) =>
      path.join(dir, top, "cg", `${index}.procs`),
    ),
  });
  const stage = under("stage");
  const pre = under("pre");
  return {
    dir,
    etcDir: path.join(dir, "etc"),
    controlDir: path.join(dir, "control"),
    claimFifo: path.join(dir, "control", "claim"),
    stage: stage.folders,
    stageProcs: stage.procs,
    pre: pre.folders,
    preProcs: pre.procs,
  };
}

/** fstab escapes space, tab, newline and backslash as \ooo. */
const fstabPath = (value: string) =>
  value.replace(
    /[\s\\]/g,
    (character) => `\\${character.charCodeAt(0).toString(8).padStart(3, "0")}`,
  );

export interface ClaimBinds {
  home: string;
  workspace: string;
  workerState: string;
  /** The computer's runtime folder (`<runtimeDir>/roost`). */
  runtime: string;
  /** The computer's `user` cgroup.procs files, in the order of the spare's stand-ins. */
  userProcs: readonly string[];
}

/** SP2: binds the computer's folders onto the spare's stage, in one `mount --all`. */
export async function bindClaim(
  folder: SpareFolder,
  binds: ClaimBinds,
  tools: SpareTools,
): Promise<void> {
  if (binds.userProcs.length !== folder.stageProcs.length)
    throw new Error(
      `the spare has ${folder.stageProcs.length} cgroup stand-ins, the computer ${binds.userProcs.length}`,
    );
  const wanted: Array<[string, string, string, string]> = [
    [binds.home, folder.pre.home, folder.stage.home, "nosuid,nodev"],
    [binds.workspace, folder.pre.workspace, folder.stage.workspace, "nosuid,nodev"],
    [binds.workerState, folder.pre.state, folder.stage.state, "nosuid,nodev"],
    [binds.runtime, folder.pre.run, folder.stage.run, "ro,nosuid,nodev"],
    ...binds.userProcs.map((file, index): [string, string, string, string] => [
      file,
      folder.preProcs[index]!,
      folder.stageProcs[index]!,
      "nosuid,nodev,noexec",
    ]),
  ];
  // In order: each with its flags under pre/, then from there onto the stage (SP2).
  const lines: Array<[string, string, string]> = [
    ...wanted.map(([source, pre, , flags]): [string, string, string] => [
      source,
      pre,
      `bind,${flags}`,
    ]),
    ...wanted.map(([, pre, stage]): [string, string, string] => [pre, stage, "bind"]),
  ];
  const fstab = path.join(folder.dir, "claim.fstab");
  await writeFile(
    fstab,
    lines
      .map(
        ([source, target, options]) =>
          `${fstabPath(source)} ${fstabPath(target)} none ${options} 0 0`,
      )
      .join("\n") + "\n",
    { mode: 0o600 },
  );
  await runChecked(tools.mount, ["--all", "--fstab", fstab]);
}

/** Mount points at or below `dir` (deepest first). */
async function mountsBelow(dir: string): Promise<string[]> {
  return (await readMounts())
    .map((mount) => mount.mountPoint)
    .filter((mountPoint) => mountPoint === dir || mountPoint.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

/**
 * SP2: undoes the claim's binds and removes the spare's folder. Its sandbox must be gone. Throws,
 * leaving the folder, when something stays mounted below it.
 */
export async function removeSpareFolder(dir: string, tools: SpareTools): Promise<void> {
  let mounted = await mountsBelow(dir);
  // A bind can be listed twice when it was propagated back; umount each until none is left.
  for (let round = 0; mounted.length > 0 && round < 4; round++) {
    await runChecked(tools.umount, mounted).catch(() => undefined);
    mounted = await mountsBelow(dir);
  }
  if (mounted.length > 0)
    throw new Error(`spare ${dir}: still mounted below it: ${mounted.join(", ")}`);
  await rm(dir, { recursive: true, force: true });
}

/** L4 for spares: removes the folders of spares whose server is gone. */
export async function sweepSpares(runDir: string, tools: SpareTools): Promise<void> {
  const dir = sparesDir(runDir);
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const owner = await readFile(path.join(dir, name, "owner.json"), "utf8")
      .then((text) => JSON.parse(text) as ProcessOwner)
      .catch(() => undefined);
    if (owner !== undefined && (await isOwnerAlive(owner))) continue;
    await removeSpareFolder(path.join(dir, name), tools);
  }
  // An empty folder left by an interrupted start.
  await rmdir(dir).catch(() => undefined);
}

/** Host pids of `pid` and everything below it (each process's `children`, all threads). */
export async function processTree(pid: number): Promise<number[]> {
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    found.push(next);
    const tasks = await readdir(`/proc/${next}/task`).catch(() => [] as string[]);
    for (const task of tasks) {
      const text = await readFile(`/proc/${next}/task/${task}/children`, "utf8").catch(() => "");
      for (const child of text.trim().split(/\s+/)) if (child !== "") queue.push(Number(child));
    }
  }
  return found;
}

/**
 * Moves the spare's processes into the computer's `worker` cgroups. What they use from then on is
 * the computer's; the memory the worker took before its claim stays charged where the spare ran
 * (the server's cgroup): kernels no longer move charges (cgroup v1's move_charge_at_immigrate
 * answers EINVAL on Linux 6.18; v2 never had it).
 */
export async function moveIntoCgroups(pids: readonly number[], workerProcs: readonly string[]) {
  for (const procs of workerProcs) for (const pid of pids) await writeFile(procs, String(pid));
}

/** SP4: writes the claim to a worker that is waiting for it, or throws. */
export async function writeClaim(fifo: string, claim: SpareClaim): Promise<void> {
  const text = Buffer.from(JSON.stringify(claim));
  // Less than a pipe's buffer: one write, whole, without blocking (SC1).
  if (text.length > 60 * 1024) throw new Error("the claim is too large for one write");
  let handle;
  // The worker says it is ready just before it opens the FIFO: give it a moment to get there.
  for (let attempt = 0; handle === undefined; attempt++) {
    try {
      handle = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (error) {
      if (!isErrno(error, "ENXIO")) throw error;
      if (attempt >= 20)
        throw new Error("the spare's worker is not waiting for a claim", { cause: error });
      await delay(5);
    }
  }
  try {
    const { bytesWritten } = await handle.write(text);
    if (bytesWritten !== text.length) throw new Error("the claim was written in part");
  } finally {
    await handle.close();
  }
}
