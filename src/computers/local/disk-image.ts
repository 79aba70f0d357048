/**
 * A local computer's durable disk as an ext4 image of its own (docs/decisions/0013-computer-disk-quota.md):
 * the image's size is the computer's disk limit, so a full disk is the file system's own
 * ENOSPC ("No space left on device") inside the computer, and the host's file system never
 * fills up because of one computer.
 *
 * On the host, the computer's folder `<dataDir>/<computerId>/` (0700, root) holds:
 *   disk.img      a sparse file (it takes only the space its contents use) with an ext4 file system
 *   local.json    the computer's slot (slots.ts); on the host, so it is readable while asleep
 *   mount/        where the image is mounted while the disk is attached; empty otherwise
 * and inside the image, `disk/` is the durable disk the rest of Roost sees (ComputerPaths.root):
 * `home/`, `workspace/`, `worker/` and the snapshot marker. Snapshots archive and restore
 * `disk/`; being one level below the mount point, it can be swapped whole by a restore (a mount
 * point cannot be renamed), its staging folder is on the same file system (a rename cannot
 * cross file systems) and counts against the same limit, and ext4's lost+found stays out of it.
 *
 * Invariants:
 *   DISK1 the image is mounted (attached) only while the computer needs its files: from create()
 *         or wake() until sleep(), and for the span of withDisk(). A sleeping computer holds no
 *         mount and no loop device (mount's loop devices are freed by the kernel on unmount).
 *   DISK2 always mounted nodev,nosuid: a file the computer's uid made can never act as a device
 *         or a setuid program on the host.
 *   DISK3 the image is never changed by a program that reads it directly (resize2fs, e2fsck)
 *         while the kernel holds it: a loop device still backed by it (for example a mount
 *         copied into another process's mount namespace) makes the resize wait for the next attach.
 *   DISK4 moving an old plain-folder disk into an image (the layout before images, or the
 *         unprivileged mode's `disk/` folder, folder-disks.ts) loses nothing, even when it is killed
 *         midway: the image is filled under a temporary name and renamed to disk.img only when
 *         complete and flushed; the old folders are removed only after that rename. A temporary
 *         image found at attach is thrown away and the move starts again.
 *   DISK5 a shrink is done on a copy that replaces the image by rename, so an interrupted shrink
 *         leaves the image as it was; a shrink below what the disk holds is refused (logged), and
 *         the disk keeps its size.
 *   DISK6 a mount point is never mounted over anything: stray files found in an unmounted mount
 *         point (written while the computer slept) are moved aside to `stray-<time>/` and logged.
 */
import { chmod, lstat, mkdir, open, readFile, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { ConfigError, RoostError } from "../../errors/index.ts";
import type { ComputerPaths } from "../provider.ts";
import {
  delay,
  findExecutable,
  HostCommandError,
  isErrno,
  runChecked,
  runCommand,
} from "./system.ts";

/** The host tools a disk image needs, and their Debian packages. */
export const diskToolPackages = {
  "mkfs.ext4": "e2fsprogs",
  e2fsck: "e2fsprogs",
  resize2fs: "e2fsprogs",
  losetup: "mount",
  mount: "mount",
  umount: "mount",
  fstrim: "util-linux",
} as const;
export type DiskToolName = keyof typeof diskToolPackages;
export const diskToolNames = Object.keys(diskToolPackages) as DiskToolName[];
export type DiskTools = Record<DiskToolName, string>;

export const imageFileName = "disk.img";
export const mountDirName = "mount";
export const diskDirName = "disk";
/** What the host folder holds besides an old layout's files (so a migration leaves them). */
const ownNames = new Set([imageFileName, mountDirName, "local.json"]);
const isOwnName = (name: string) =>
  ownNames.has(name) ||
  name.startsWith(`${imageFileName}.`) ||
  name.startsWith("local.json.") ||
  name.startsWith("stray-");

/** ext4 block size of every image Roost makes. */
const blockBytes = 4096;
/** Smallest disk limit: ext4 needs room for its journal and metadata. */
export const minimumDiskBytes = 32 * 1024 * 1024;
/** Room added to an old disk's size when it is moved into an image bigger than the limit. */
const migrationHeadroomBytes = 64 * 1024 * 1024;

export interface DiskImageOptions {
  /** Folder of the computers' host folders. */
  dataDir: string;
  /** Size of each computer's image: its disk limit. */
  diskBytes: number;
  tools: DiskTools;
  log: (message: string) => void;
}

export interface DiskImages {
  readonly dataDir: string;
  /** `<dataDir>/<computerId>`: the computer's host folder. */
  hostDir(computerId: string): string;
  /** Where the disk's folders are while it is attached. */
  paths(computerId: string): ComputerPaths;
  /** Whether the computer has a disk here (an image, or an old plain-folder one). */
  exists(computerId: string): Promise<boolean>;
  /**
   * Mounts the disk (making the image first if there is none, moving an old plain-folder disk
   * into it, and resizing it to the configured limit) and makes its folders. Reuses a mount that
   * is already there. Callers serialise calls per computer.
   */
  attach(computerId: string): Promise<ComputerPaths>;
  /** Unmounts the disk, giving freed blocks back to the host first. No-op when not attached. */
  detach(computerId: string): Promise<void>;
  isAttached(computerId: string): Promise<boolean>;
  /** Detaches the disk and deletes the computer's host folder. */
  remove(computerId: string): Promise<void>;
  /** Detaches every disk under dataDir (at start: mounts left by a killed server; at close). */
  detachAll(): Promise<void>;
}

/** Finds the disk tools; throws ConfigError naming the missing ones and their packages. */
export async function resolveDiskTools(
  given: Partial<DiskTools>,
  searchPath: string | undefined,
): Promise<DiskTools> {
  const found: Partial<DiskTools> = {};
  const missing: string[] = [];
  for (const name of diskToolNames) {
    const located = given[name] ?? (await findExecutable(name, searchPath));
    if (located === undefined) missing.push(`${name} (Debian package ${diskToolPackages[name]})`);
    else found[name] = located;
  }
  if (missing.length > 0) {
    throw new ConfigError(
      `the local computer provider keeps each computer's disk in an ext4 image and needs ${missing.join(", ")}; install them, or set ROOST_COMPUTER_PROVIDER=process for an unisolated development setup`,
    );
  }
  return found as DiskTools;
}

export function computerPathsIn(hostDir: string): ComputerPaths {
  const root = path.join(hostDir, mountDirName, diskDirName);
  return {
    root,
    home: path.join(root, "home"),
    workspace: path.join(root, "workspace"),
    workerState: path.join(root, "worker"),
  };
}

const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;

/** One line of /proc/self/mountinfo: where, what, from which device. */
interface MountEntry {
  mountPoint: string;
  fsType: string;
  source: string;
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
export const unescapeMountPath = (value: string) =>
  value.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));

export async function readMounts(): Promise<MountEntry[]> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  const entries: MountEntry[] = [];
  for (const line of text.split("\n")) {
    const fields = line.split(" ");
    const separator = fields.indexOf("-");
    if (separator < 6) continue;
    entries.push({
      mountPoint: unescapeMountPath(fields[4]!),
      fsType: fields[separator + 1] ?? "",
      source: unescapeMountPath(fields[separator + 2] ?? ""),
    });
  }
  return entries;
}

/** The file a loop device reads, or undefined (not a loop device, or not attached). */
async function loopBackingFile(device: string): Promise<string | undefined> {
  const match = /^\/dev\/(loop\d+)$/.exec(device);
  if (match === null) return undefined;
  const text = await readFile(`/sys/block/${match[1]}/loop/backing_file`, "utf8").catch(
    () => undefined,
  );
  return text?.trim().replace(/ \(deleted\)$/, "");
}

/** What an ext4 superblock (1 KiB into the image) says about the file system's size. */
export async function readSuperblock(
  image: string,
): Promise<{ blockBytes: number; totalBytes: number; usedBytes: number }> {
  const handle = await open(image, "r");
  const block = Buffer.alloc(1024);
  try {
    await handle.read(block, 0, 1024, 1024);
  } finally {
    await handle.close();
  }
  if (block.readUInt16LE(56) !== 0xef53) throw new Error(`${image} holds no ext4 file system`);
  const is64bit = (block.readUInt32LE(0x60) & 0x80) !== 0;
  const high = (offset: number) => (is64bit ? block.readUInt32LE(offset) * 2 ** 32 : 0);
  const blockBytes = 1024 * 2 ** block.readUInt32LE(24);
  const blocks = block.readUInt32LE(4) + high(0x150);
  const free = block.readUInt32LE(12) + high(0x158);
  return { blockBytes, totalBytes: blocks * blockBytes, usedBytes: (blocks - free) * blockBytes };
}

export function createDiskImages(options: DiskImageOptions): DiskImages {
  const { dataDir, tools, log } = options;
  const targetBytes = Math.floor(options.diskBytes / blockBytes) * blockBytes;
  const hostDir = (computerId: string) => path.join(dataDir, computerId);
  const mountDir = (computerId: string) => path.join(hostDir(computerId), mountDirName);
  const imagePath = (computerId: string) => path.join(hostDir(computerId), imageFileName);

  async function mountAt(mountPoint: string): Promise<MountEntry | undefined> {
    return (await readMounts()).findLast((entry) => entry.mountPoint === mountPoint);
  }

  /** DISK3: whether any loop device still reads the image. */
  async function loopDevicesOf(image: string): Promise<string[]> {
    const output = await runChecked(tools.losetup, [
      "--list",
      "--associated",
      image,
      "--noheadings",
      "--output",
      "NAME",
    ]);
    return output
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "");
  }

  async function exists(file: string): Promise<boolean> {
    try {
      await lstat(file);
      return true;
    } catch (error) {
      if (isErrno(error, "ENOENT")) return false;
      throw error;
    }
  }

  async function syncDir(folder: string): Promise<void> {
    const handle = await open(folder, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** A sparse file of `bytes` with an empty ext4 file system; its root belongs to root, 0700. */
  async function makeImage(file: string, bytes: number): Promise<void> {
    await rm(file, { force: true });
    const handle = await open(file, "wx", 0o600);
    try {
      await handle.truncate(bytes);
    } finally {
      await handle.close();
    }
    // The file is new and sparse, so it reads as zeros: ext4 need not write its inode tables or
    // journal (assume_storage_prezeroed, from e2fsprogs 1.47; the lazy_* options before it), which
    // keeps a new 10 GiB image at about 4 MiB on the host and its creation at a few ms.
    const common = ["-q", "-F", "-t", "ext4", "-b", String(blockBytes), "-m", "0", "-L", "roost"];
    const made = await runCommand(tools["mkfs.ext4"], [
      ...common,
      "-E",
      "lazy_itable_init=1,lazy_journal_init=1,assume_storage_prezeroed=1,root_owner=0:0",
      file,
    ]);
    if (made.exitCode !== 0) {
      if (!/assume_storage_prezeroed|extended option/i.test(made.stderr))
        throw new HostCommandError(tools["mkfs.ext4"], [...common, file], made);
      await runChecked(tools["mkfs.ext4"], [
        ...common,
        "-E",
        "lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0",
        file,
      ]);
    }
  }

  /** DISK2 */
  async function mountImage(image: string, mountPoint: string): Promise<void> {
    await runChecked(tools.mount, [
      "-t",
      "ext4",
      // noinit_itable: the image is sparse, so its inode tables already read as zeros; without it
      // the kernel would write them out in the background and make the file dense.
      "-o",
      "loop,nodev,nosuid,noinit_itable,errors=remount-ro",
      image,
      mountPoint,
    ]);
  }

  async function unmount(mountPoint: string): Promise<void> {
    // Not lazily (-l): a disk still in use must stay attached, not linger half-gone.
    for (let attempt = 0; ; attempt++) {
      const result = await runCommand(tools.umount, [mountPoint]);
      if (result.exitCode === 0) return;
      if ((await mountAt(mountPoint)) === undefined) return;
      if (!/busy/i.test(result.stderr) || attempt >= 20)
        throw new HostCommandError(tools.umount, [mountPoint], result);
      await delay(100);
    }
  }

  /** e2fsck -f -p: 0 is clean, 1 means it fixed something; anything else needs a person. */
  async function check(image: string): Promise<void> {
    const result = await runCommand(tools.e2fsck, ["-f", "-p", image], { timeoutMs: 600_000 });
    if (result.exitCode !== 0 && result.exitCode !== 1)
      throw new HostCommandError(tools.e2fsck, ["-f", "-p", image], result);
  }

  /**
   * Brings an unmounted image's file system to the configured size (DISK3, DISK5): grown in
   * place (resize2fs extends the file; interrupted, the next attach sees the file system still
   * small and runs it again), shrunk on a copy that replaces the image.
   */
  async function resize(computerId: string, image: string): Promise<void> {
    const before = await readSuperblock(image);
    if (before.totalBytes === targetBytes) return;
    const busy = await loopDevicesOf(image);
    if (busy.length > 0) {
      log(
        `computer ${computerId}: its disk is still held by ${busy.join(", ")} (a mount in another mount namespace?); it is resized to ${mib(targetBytes)} on a later wake`,
      );
      return; // DISK3
    }
    await check(image);
    if (targetBytes > before.totalBytes) {
      await runChecked(tools.resize2fs, [image, `${targetBytes / 1024}K`], {
        timeoutMs: 600_000,
      });
      log(
        `computer ${computerId}: its disk grew from ${mib(before.totalBytes)} to ${mib(targetBytes)}`,
      );
      return;
    }
    const checked = await readSuperblock(image);
    const minimum = await runChecked(tools.resize2fs, ["-P", image]);
    const minimumBlocks = Number(/minimum size of the filesystem: (\d+)/.exec(minimum)?.[1]);
    const minimumBytes = minimumBlocks * checked.blockBytes;
    if (!Number.isFinite(minimumBytes) || minimumBytes > targetBytes) {
      log(
        `computer ${computerId}: its disk is not shrunk to ${mib(targetBytes)} (ROOST_COMPUTER_DISK_BYTES): it holds ${mib(checked.usedBytes)} and needs at least ${mib(minimumBytes)}, so it keeps its size of ${mib(checked.totalBytes)}; free space inside the computer and it shrinks on a later wake`,
      );
      return;
    }
    const copy = `${image}.resize`;
    await rm(copy, { force: true });
    try {
      await runChecked("cp", ["--sparse=always", image, copy], { timeoutMs: 3_600_000 });
      await runChecked(tools.resize2fs, [copy, `${targetBytes / 1024}K`], { timeoutMs: 600_000 });
      const handle = await open(copy, "r+");
      try {
        await handle.truncate(targetBytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(copy, image); // DISK5
      await syncDir(path.dirname(image));
    } catch (error) {
      await rm(copy, { force: true });
      throw error;
    }
    log(
      `computer ${computerId}: its disk shrank from ${mib(checked.totalBytes)} to ${mib(targetBytes)}`,
    );
  }

  /**
   * What moves into the image: each old entry, except that a folder disk's `disk/` (the
   * unprivileged mode's, folder-disks.ts) moves as its contents, since it already is what
   * `disk/` in the image holds.
   */
  async function migrationSources(folder: string, entries: string[]): Promise<string[]> {
    const sources: string[] = [];
    for (const name of entries) {
      const source = path.join(folder, name);
      if (name === diskDirName && (await lstat(source)).isDirectory()) {
        for (const child of await readdir(source)) sources.push(path.join(source, child));
      } else sources.push(source);
    }
    return sources;
  }

  /** Sizes and runs the move of an old plain-folder disk into a new image (DISK4). */
  async function migrate(computerId: string, entries: string[]): Promise<void> {
    const folder = hostDir(computerId);
    const started = Date.now();
    const sources = await migrationSources(folder, entries);
    const entryPaths = entries.map((name) => path.join(folder, name));
    const usage = await runChecked("du", ["-s", "-B1", "--total", "--", ...entryPaths], {
      timeoutMs: 600_000,
    });
    const usedBytes = Number(/^(\d+)\s+total$/m.exec(usage)?.[1] ?? 0);
    const needed = Math.ceil((usedBytes * 1.1 + migrationHeadroomBytes) / blockBytes) * blockBytes;
    const bytes = Math.max(targetBytes, needed);
    if (bytes > targetBytes) {
      log(
        `computer ${computerId}: its old disk holds ${mib(usedBytes)}, more than the limit of ${mib(targetBytes)} (ROOST_COMPUTER_DISK_BYTES): its image is made ${mib(bytes)} so that nothing is lost`,
      );
    }
    const temporary = `${imagePath(computerId)}.new`;
    const mountPoint = mountDir(computerId);
    await makeImage(temporary, bytes);
    await mkdir(mountPoint, { recursive: true, mode: 0o700 });
    await mountImage(temporary, mountPoint);
    try {
      const disk = path.join(mountPoint, diskDirName);
      await mkdir(disk, { mode: 0o700 });
      // -a keeps owners, modes, times, links (hard links too: one cp for every entry), xattrs.
      if (sources.length > 0) {
        await runChecked("cp", ["-a", "--sparse=always", "--", ...sources, `${disk}/`], {
          timeoutMs: 24 * 3_600_000,
        });
      }
      await runChecked("sync", ["--file-system", disk]);
    } catch (error) {
      await unmount(mountPoint).catch(() => undefined);
      await rm(temporary, { force: true });
      throw new RoostError(
        "internal",
        `computer ${computerId}: moving its disk into an image failed (its folders were left as they were): ${(error as Error).message}`,
        { cause: error },
      );
    }
    await rename(temporary, imagePath(computerId)); // DISK4: the commit point
    await syncDir(folder);
    await Promise.all(entryPaths.map((entry) => rm(entry, { recursive: true, force: true })));
    log(
      `computer ${computerId}: moved its disk (${mib(usedBytes)}) into a ${mib(bytes)} image in ${Date.now() - started} ms`,
    );
  }

  /** Entries of an old plain-folder disk in the host folder (home/, workspace/, worker/, …). */
  async function oldLayoutEntries(computerId: string): Promise<string[]> {
    const names = await readdir(hostDir(computerId)).catch((error: unknown) => {
      if (isErrno(error, "ENOENT")) return [] as string[];
      throw error;
    });
    return names.filter((name) => !isOwnName(name)).sort();
  }

  /** DISK6 */
  async function clearMountPoint(computerId: string, mountPoint: string): Promise<void> {
    await mkdir(mountPoint, { recursive: true, mode: 0o700 });
    const stray = await readdir(mountPoint);
    if (stray.length === 0) return;
    const aside = path.join(hostDir(computerId), `stray-${Date.now()}`);
    await rename(mountPoint, aside);
    await mkdir(mountPoint, { mode: 0o700 });
    log(
      `computer ${computerId}: files were written into its unmounted disk's mount point (${stray.join(", ")}); they are kept in ${aside}, outside the computer`,
    );
  }

  async function ensureFolders(paths: ComputerPaths, mountPoint: string): Promise<void> {
    await chmod(mountPoint, 0o700);
    await mkdir(paths.root, { recursive: true, mode: 0o700 });
    await chmod(paths.root, 0o700);
    await Promise.all(
      [paths.home, paths.workspace, paths.workerState].map((folder) =>
        mkdir(folder, { recursive: true, mode: 0o700 }),
      ),
    );
  }

  const images: DiskImages = {
    dataDir,
    hostDir,
    paths: (computerId) => computerPathsIn(hostDir(computerId)),

    async exists(computerId) {
      return exists(hostDir(computerId));
    },

    async isAttached(computerId) {
      return (await mountAt(mountDir(computerId))) !== undefined;
    },

    async attach(computerId) {
      const folder = hostDir(computerId);
      const image = imagePath(computerId);
      const mountPoint = mountDir(computerId);
      const paths = computerPathsIn(folder);
      await mkdir(folder, { recursive: true, mode: 0o700 });
      await chmod(folder, 0o700);
      const mounted = await mountAt(mountPoint);
      if (mounted !== undefined) {
        if ((await loopBackingFile(mounted.source)) === image) {
          await ensureFolders(paths, mountPoint);
          return paths;
        }
        // A move into an image that was interrupted (DISK4), or something else: start afresh.
        await unmount(mountPoint);
      }
      await rm(`${image}.new`, { force: true }); // DISK4
      await rm(`${image}.resize`, { force: true }); // DISK5
      const old = await oldLayoutEntries(computerId);
      if (await exists(image)) {
        // A move that was committed (the image renamed) but not finished: drop the old folders.
        await Promise.all(old.map((name) => rm(path.join(folder, name), { recursive: true })));
        await resize(computerId, image).catch((error: unknown) =>
          // A disk that cannot be resized (e2fsck found damage it could not repair) still wakes.
          log(
            `computer ${computerId}: its disk could not be resized to ${mib(targetBytes)} and keeps its size: ${(error as Error).message}`,
          ),
        );
        await clearMountPoint(computerId, mountPoint);
        await mountImage(image, mountPoint);
      } else if (old.length > 0) {
        await clearMountPoint(computerId, mountPoint);
        await migrate(computerId, old);
      } else {
        const temporary = `${image}.new`;
        await makeImage(temporary, targetBytes);
        await rename(temporary, image);
        await clearMountPoint(computerId, mountPoint);
        await mountImage(image, mountPoint);
      }
      await ensureFolders(paths, mountPoint);
      return paths;
    },

    async detach(computerId) {
      const mountPoint = mountDir(computerId);
      if ((await mountAt(mountPoint)) === undefined) return;
      // Blocks freed inside go back to the host (the loop device punches holes in the image).
      await runCommand(tools.fstrim, [mountPoint]).catch(() => undefined);
      await unmount(mountPoint);
    },

    async remove(computerId) {
      await images.detach(computerId);
      await rm(hostDir(computerId), { recursive: true, force: true });
    },

    async detachAll() {
      const prefix = `${dataDir}/`;
      const errors: string[] = [];
      for (const entry of await readMounts()) {
        const relative = entry.mountPoint.startsWith(prefix)
          ? entry.mountPoint.slice(prefix.length).split("/")
          : [];
        if (relative.length !== 2 || relative[1] !== mountDirName) continue;
        try {
          await images.detach(relative[0]!);
        } catch (error) {
          errors.push((error as Error).message);
        }
      }
      if (errors.length > 0)
        log(`local provider: some computers' disks could not be unmounted: ${errors.join("; ")}`);
    },
  };
  return images;
}
