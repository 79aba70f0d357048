/**
 * Disk images (disk-image.ts) with real loop devices and ext4 mounts, as root: making and
 * reusing an image, the move of an old plain-folder disk into one (and that move killed midway),
 * growing and shrinking on a later attach, and that sleeping computers hold nothing but disk.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  link,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  realpath,
  stat,
  statfs,
  symlink,
  truncate,
  utimes,
  writeFile,
} from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { waitFor } from "../../../test/support/wait.ts";
import {
  createDiskImages,
  readMounts,
  readSuperblock,
  resolveDiskTools,
  type DiskImages,
  type DiskTools,
} from "./disk-image.ts";
import { createFolderDisks } from "./folder-disks.ts";
import { runChecked } from "./system.ts";
import { makeTempDir, skipReason } from "./testing/index.ts";

const skip = await skipReason("disk-image.test.ts");
const mib = 1024 * 1024;

/** Every entry below `root`: type, mode, owner, size, times, content hash, link target, hard-link group. */
async function manifest(root: string): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  const inodes = new Map<number, string>();
  async function walk(folder: string): Promise<void> {
    for (const name of (await readdir(folder)).sort()) {
      const full = path.join(folder, name);
      const relative = path.relative(root, full);
      const info = await lstat(full);
      const common = `mode=${(info.mode & 0o7777).toString(8)} uid=${info.uid} gid=${info.gid} mtime=${Math.floor(info.mtimeMs)}`;
      if (info.isSymbolicLink()) {
        entries[relative] = `link -> ${await readlink(full)} uid=${info.uid}`;
      } else if (info.isDirectory()) {
        entries[relative] = `dir ${common}`;
        await walk(full);
      } else {
        const first = inodes.get(info.ino);
        if (first === undefined) inodes.set(info.ino, relative);
        const hash = createHash("sha256")
          .update(await readFile(full))
          .digest("hex");
        entries[relative] =
          `file ${common} size=${info.size} sha256=${hash} links=${info.nlink}${first === undefined ? "" : ` same-as=${first}`}`;
      }
    }
  }
  await walk(root);
  return entries;
}

/** An old (plain-folder) disk as Roost kept it before images: home, workspace, worker, marker. */
async function writeOldDisk(hostDir: string): Promise<void> {
  const uid = 200_777;
  await mkdir(path.join(hostDir, "home", ".config", "app"), { recursive: true, mode: 0o700 });
  await mkdir(path.join(hostDir, "workspace", "project", "empty"), { recursive: true });
  await mkdir(path.join(hostDir, "worker"), { recursive: true, mode: 0o700 });
  await writeFile(path.join(hostDir, "home", ".config", "app", "settings.json"), '{"a":1}\n', {
    mode: 0o600,
  });
  await writeFile(path.join(hostDir, "workspace", "project", "script.sh"), "#!/bin/sh\necho hi\n", {
    mode: 0o755,
  });
  await writeFile(path.join(hostDir, "workspace", "name with spaces\nand a newline"), "odd\n");
  await writeFile(path.join(hostDir, "workspace", "project", "original.txt"), "shared\n");
  await link(
    path.join(hostDir, "workspace", "project", "original.txt"),
    path.join(hostDir, "workspace", "hardlink.txt"),
  );
  await symlink("project/script.sh", path.join(hostDir, "workspace", "relative-link"));
  await symlink("/etc/shadow", path.join(hostDir, "workspace", "outside-link"));
  await symlink("gone", path.join(hostDir, "workspace", "dangling-link"));
  await writeFile(path.join(hostDir, "workspace", "sparse.bin"), "");
  await truncate(path.join(hostDir, "workspace", "sparse.bin"), 40 * mib);
  await writeFile(path.join(hostDir, "workspace", "random.bin"), createHash("sha512").digest());
  await writeFile(path.join(hostDir, "worker", "done-log.jsonl"), '{"callId":"c1"}\n');
  await writeFile(path.join(hostDir, ".roost-snapshot.json"), '{"version":1}\n', { mode: 0o600 });
  await writeFile(path.join(hostDir, "local.json"), '{"slot":7,"uid":200007,"gid":200007}\n');
  await utimes(path.join(hostDir, "workspace", "random.bin"), 1_600_000_000, 1_600_000_000);
  await runChecked("chown", ["-R", "-h", `${uid}:${uid}`, path.join(hostDir, "home")]);
  await runChecked("chown", ["-R", "-h", `${uid}:${uid}`, path.join(hostDir, "workspace")]);
}

describe.skipIf(skip !== undefined)("disk images", () => {
  let dataDir: { path: string; remove: () => Promise<void> };
  let realDataDir: string;
  let tools: DiskTools;
  let logs: string[];
  const opened: DiskImages[] = [];

  const images = (diskBytes: number) => {
    const created = createDiskImages({
      dataDir: realDataDir,
      diskBytes,
      tools,
      log: (message) => logs.push(message),
    });
    opened.push(created);
    return created;
  };
  const mountsBelow = async (folder: string) =>
    (await readMounts()).filter((entry) => entry.mountPoint.startsWith(`${folder}/`));
  const loopDevicesOf = async (image: string) =>
    (await runChecked(tools.losetup, ["--associated", image])).trim();

  beforeEach(async () => {
    dataDir = await makeTempDir("roost-disk-");
    realDataDir = await realpath(dataDir.path);
    tools = await resolveDiskTools({}, undefined);
    logs = [];
  });

  afterEach(async () => {
    for (const created of opened.splice(0)) await created.detachAll();
    await dataDir.remove();
  });

  test("a new computer's image takes a few MiB of the host for a 10 GiB limit; a second attach reuses the mount", async () => {
    const disks = images(10 * 1024 * mib);
    const started = performance.now();
    const paths = await disks.attach("new-one");
    const createMs = performance.now() - started;
    for (const folder of [paths.root, paths.home, paths.workspace, paths.workerState])
      expect((await stat(folder)).isDirectory()).toBe(true);
    const image = path.join(disks.hostDir("new-one"), "disk.img");
    const info = await stat(image);
    expect(info.size).toBe(10 * 1024 * mib);
    expect(info.blocks * 512).toBeLessThan(16 * mib);
    expect((await statfs(paths.root)).blocks * (await statfs(paths.root)).bsize).toBeGreaterThan(
      9.5 * 1024 * mib,
    );
    await disks.attach("new-one");
    expect(await mountsBelow(realDataDir)).toHaveLength(1);
    // Not a timing assertion: printed for the record (bench/wake-local.ts measures it properly).
    console.log(
      `disk-image.test: a new 10 GiB image made and mounted in ${createMs.toFixed(0)} ms`,
    );
  });

  test("DISK4 an old plain-folder disk moves into an image on first attach without losing a file", async () => {
    const disks = images(256 * mib);
    const hostDir = disks.hostDir("old-one");
    await writeOldDisk(hostDir);
    const { ["local.json"]: _slot, ...before } = await manifest(hostDir);
    const paths = await disks.attach("old-one");
    expect(await manifest(paths.root)).toEqual(before);
    expect((await readdir(hostDir)).sort()).toEqual(["disk.img", "local.json", "mount"]);
    expect(await readFile(path.join(hostDir, "local.json"), "utf8")).toContain('"slot":7');
    // The sparse file stayed sparse inside the image.
    expect((await stat(path.join(paths.workspace, "sparse.bin"))).blocks).toBe(0);
    expect(logs.join("\n")).toMatch(/moved its disk .* into a 256 MiB image/);
    await disks.detach("old-one");
    expect(await manifest((await disks.attach("old-one")).root)).toEqual(before);
  });

  test("DISK4 a disk made without root (folder-disks.ts) moves into an image as it is when the server runs as root", async () => {
    const id = "was-unprivileged";
    const folders = createFolderDisks({ dataDir: realDataDir });
    const made = await folders.attach(id);
    await writeOldDisk(made.root);
    await rename(path.join(made.root, "local.json"), path.join(folders.hostDir(id), "local.json"));
    const before = await manifest(made.root);
    const paths = await images(256 * mib).attach(id);
    expect(paths.root).not.toBe(made.root);
    expect(await manifest(paths.root)).toEqual(before);
    expect((await readdir(folders.hostDir(id))).sort()).toEqual([
      "disk.img",
      "local.json",
      "mount",
    ]);
  });

  test("DISK4 killed midway through the move: the half-filled image is thrown away and the move starts again", async () => {
    const disks = images(128 * mib);
    const hostDir = disks.hostDir("interrupted");
    await writeOldDisk(hostDir);
    const { ["local.json"]: _slot, ...before } = await manifest(hostDir);
    // What a server killed during the copy leaves: a temporary image, mounted, partly filled.
    const temporary = path.join(hostDir, "disk.img.new");
    await writeFile(temporary, "");
    await truncate(temporary, 128 * mib);
    await runChecked(tools["mkfs.ext4"], ["-q", "-F", temporary]);
    await mkdir(path.join(hostDir, "mount"), { mode: 0o700 });
    await runChecked(tools.mount, ["-o", "loop", temporary, path.join(hostDir, "mount")]);
    await mkdir(path.join(hostDir, "mount", "disk", "home"), { recursive: true });
    await writeFile(path.join(hostDir, "mount", "disk", "home", "half.txt"), "half");

    const paths = await disks.attach("interrupted");
    expect(await manifest(paths.root)).toEqual(before);
    expect((await readdir(hostDir)).sort()).toEqual(["disk.img", "local.json", "mount"]);
    expect(await mountsBelow(realDataDir)).toHaveLength(1);
  });

  test("DISK4 killed after the move's commit: the old folders still there are removed, the image's files kept", async () => {
    const disks = images(128 * mib);
    const hostDir = disks.hostDir("committed");
    await writeOldDisk(hostDir);
    const paths = await disks.attach("committed");
    const inImage = await manifest(paths.root);
    await disks.detach("committed");
    // As if the server died between the rename of the image and the removal of the old folders.
    await mkdir(path.join(hostDir, "workspace"));
    await writeFile(path.join(hostDir, "workspace", "left-over.txt"), "old copy");
    await disks.attach("committed");
    expect(await manifest(paths.root)).toEqual(inImage);
    expect((await readdir(hostDir)).sort()).toEqual(["disk.img", "local.json", "mount"]);
  });

  test("an old disk bigger than the limit gets an image that holds it, and the log says so", async () => {
    const disks = images(64 * mib);
    const hostDir = disks.hostDir("big-old");
    await mkdir(path.join(hostDir, "workspace"), { recursive: true });
    await writeFile(path.join(hostDir, "workspace", "data.bin"), Buffer.alloc(80 * mib, 7));
    const paths = await disks.attach("big-old");
    expect((await stat(path.join(paths.workspace, "data.bin"))).size).toBe(80 * mib);
    expect(logs.join("\n")).toMatch(
      /old disk holds 80 MiB, more than the limit of 64 MiB .*ROOST_COMPUTER_DISK_BYTES.* nothing is lost/,
    );
  });

  test("a raised limit takes effect on the next attach; the files stay", async () => {
    const small = images(64 * mib);
    const paths = await small.attach("grows");
    await writeFile(path.join(paths.workspace, "kept.txt"), "kept");
    await small.detach("grows");
    const image = path.join(small.hostDir("grows"), "disk.img");
    expect((await readSuperblock(image)).totalBytes).toBe(64 * mib);

    await images(256 * mib).attach("grows");
    expect((await readSuperblock(image)).totalBytes).toBe(256 * mib);
    const info = await statfs(paths.root);
    expect(info.blocks * info.bsize).toBeGreaterThan(240 * mib);
    expect(await readFile(path.join(paths.workspace, "kept.txt"), "utf8")).toBe("kept");
    expect(logs.join("\n")).toMatch(/its disk grew from 64 MiB to 256 MiB/);
  });

  test("DISK5 a limit below what the disk holds is refused with a log line; the disk keeps its size and files", async () => {
    const large = images(256 * mib);
    const paths = await large.attach("full");
    await writeFile(path.join(paths.workspace, "data.bin"), Buffer.alloc(100 * mib, 1));
    await large.detach("full");
    const image = path.join(large.hostDir("full"), "disk.img");

    await images(64 * mib).attach("full");
    expect((await readSuperblock(image)).totalBytes).toBe(256 * mib);
    expect((await stat(path.join(paths.workspace, "data.bin"))).size).toBe(100 * mib);
    expect(logs.join("\n")).toMatch(
      /its disk is not shrunk to 64 MiB \(ROOST_COMPUTER_DISK_BYTES\): it holds 1\d\d MiB .*keeps its size of 256 MiB/,
    );
    expect(await readdir(large.hostDir("full"))).not.toContain("disk.img.resize");
  });

  test("DISK5 a lower limit that the files fit in shrinks the disk on the next attach", async () => {
    const large = images(256 * mib);
    const paths = await large.attach("shrinks");
    await writeFile(path.join(paths.workspace, "small.txt"), "small");
    await large.detach("shrinks");
    const image = path.join(large.hostDir("shrinks"), "disk.img");

    await images(64 * mib).attach("shrinks");
    expect((await readSuperblock(image)).totalBytes).toBe(64 * mib);
    expect((await stat(image)).size).toBe(64 * mib);
    expect(await readFile(path.join(paths.workspace, "small.txt"), "utf8")).toBe("small");
    expect(logs.join("\n")).toMatch(/its disk shrank from 256 MiB to 64 MiB/);
  });

  test("DISK3 a disk still held in another mount namespace is not resized, and its mount is reused safely", async () => {
    const disks = images(64 * mib);
    const paths = await disks.attach("held");
    await writeFile(path.join(paths.workspace, "kept.txt"), "kept");
    // A process that copied the mount table while the disk was mounted (as a service started
    // with a private mount namespace would) keeps the file system alive after our unmount.
    const holder = spawn("unshare", ["--mount", "--propagation", "private", "sleep", "60"], {
      stdio: "ignore",
    });
    try {
      const image = path.join(disks.hostDir("held"), "disk.img");
      await waitFor(
        async () =>
          (await readFile(`/proc/${holder.pid}/mountinfo`, "utf8").catch(() => "")).includes(
            `${disks.hostDir("held")}/mount`,
          ),
        { what: "the holder's copy of the mount" },
      );
      await disks.detach("held");
      expect(await loopDevicesOf(image)).not.toBe("");

      await images(128 * mib).attach("held");
      expect((await readSuperblock(image)).totalBytes).toBe(64 * mib);
      expect(logs.join("\n")).toMatch(
        /still held by \/dev\/loop\d+.*resized to 128 MiB on a later wake/,
      );
      expect(await readFile(path.join(paths.workspace, "kept.txt"), "utf8")).toBe("kept");
    } finally {
      holder.kill("SIGKILL");
    }
  });

  test("DISK6 files written into a sleeping computer's mount point are kept aside, never hidden under the mount", async () => {
    const disks = images(64 * mib);
    const paths = await disks.attach("stray");
    await disks.detach("stray");
    await mkdir(paths.workspace, { recursive: true });
    await writeFile(path.join(paths.workspace, "written-while-asleep.txt"), "stray");
    await disks.attach("stray");
    const hostDir = disks.hostDir("stray");
    const aside = (await readdir(hostDir)).find((name) => name.startsWith("stray-"));
    expect(aside).toBeDefined();
    expect(
      await readFile(
        path.join(hostDir, aside!, "disk", "workspace", "written-while-asleep.txt"),
        "utf8",
      ),
    ).toBe("stray");
    expect(await readdir(paths.workspace)).toEqual([]);
    expect(logs.join("\n")).toMatch(/written into its unmounted disk's mount point/);
  });

  test("DISK1 100 sleeping computers hold no mount and no loop device, and take a few MiB each", async () => {
    const disks = images(1024 * mib);
    const ids = Array.from({ length: 100 }, (_, index) => `sleeper-${index}`);
    for (const id of ids) {
      const paths = await disks.attach(id);
      await writeFile(path.join(paths.workspace, "note.txt"), id);
      await disks.detach(id);
    }
    expect(await mountsBelow(realDataDir)).toEqual([]);
    // A loop device is freed once the last mount namespace holding its file system lets go: a
    // sandbox another test starts meanwhile copies the host's mounts for a moment (see "held").
    await waitFor(
      async () =>
        !(
          await runChecked(tools.losetup, ["--list", "--noheadings", "--output", "BACK-FILE"])
        ).includes(realDataDir),
      { timeoutMs: 30_000, what: "no loop device backed by the sleeping computers' images" },
    );
    let hostBytes = 0;
    for (const id of ids)
      hostBytes += (await stat(path.join(disks.hostDir(id), "disk.img"))).blocks * 512;
    expect(hostBytes / ids.length).toBeLessThan(8 * mib);
    const paths = await disks.attach("sleeper-42");
    expect(await readFile(path.join(paths.workspace, "note.txt"), "utf8")).toBe("sleeper-42");
  }, 300_000);

  test("remove unmounts the disk and deletes the computer's folder", async () => {
    const disks = images(64 * mib);
    await disks.attach("removed");
    await disks.remove("removed");
    expect(await mountsBelow(realDataDir)).toEqual([]);
    await expect(stat(disks.hostDir("removed"))).rejects.toThrow(/ENOENT/);
  });
});
