/**
 * A local computer's durable disk on the host: `home/`, `workspace/` and `worker/` inside the
 * computer's disk image (disk-image.ts), owned by the computer's uid so that the sandbox (which
 * runs as that uid) can write them and no other computer's uid can.
 */
import { chown, lchown, lstat, readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { ComputerPaths } from "../provider.ts";
import { isErrno } from "./system.ts";

/** Letters, digits, `_`, `-` and `.`, not starting with a dot: safe as a folder name. */
export const computerIdPattern = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/;

export async function isDirectory(folder: string): Promise<boolean> {
  try {
    return (await stat(folder)).isDirectory();
  } catch (error) {
    if (isErrno(error, "ENOENT") || isErrno(error, "ENOTDIR")) return false;
    throw error;
  }
}

/**
 * Gives the durable folders to the computer's uid. When `recursive` (a new uid, or files restored
 * from a snapshot taken elsewhere), every file below them too; otherwise only the three folders.
 */
export async function chownDisk(
  paths: ComputerPaths,
  owner: { uid: number; gid: number },
  recursive: boolean,
): Promise<void> {
  for (const folder of [paths.home, paths.workspace, paths.workerState]) {
    if (recursive) await chownTree(folder, owner.uid, owner.gid);
    else await chown(folder, owner.uid, owner.gid);
  }
}

/** Whether the durable folders already belong to the uid (a cheap check before a recursive chown). */
export async function diskOwnedBy(paths: ComputerPaths, uid: number): Promise<boolean> {
  for (const folder of [paths.home, paths.workspace, paths.workerState]) {
    if ((await lstat(folder)).uid !== uid) return false;
  }
  return true;
}

async function chownTree(folder: string, uid: number, gid: number): Promise<void> {
  const pending = [folder];
  while (pending.length > 0) {
    const current = pending.pop()!;
    await lchown(current, uid, gid);
    let entries;
    try {
      entries = await readdir(current, { withFileTypes: true });
    } catch (error) {
      if (isErrno(error, "ENOTDIR")) continue;
      throw error;
    }
    for (const entry of entries) {
      const child = path.join(current, entry.name);
      if (entry.isDirectory()) pending.push(child);
      else await lchown(child, uid, gid);
    }
  }
}
