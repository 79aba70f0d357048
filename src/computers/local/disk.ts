/**
 * A local computer's durable disk on the host: `<dataDir>/<computerId>/` with `home/`,
 * `workspace/` and `worker/`, owned by the computer's uid so that the sandbox (which runs as that
 * uid) can write them and no other computer's uid can.
 */
import { chown, lchown, lstat, mkdir, readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { ComputerPaths } from "../provider.ts";
import { isErrno } from "./system.ts";

/** Letters, digits, `_`, `-` and `.`, not starting with a dot: safe as a folder name. */
export const computerIdPattern = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/;

export function computerPaths(dataDir: string, computerId: string): ComputerPaths {
  const root = path.join(dataDir, computerId);
  return {
    root,
    home: path.join(root, "home"),
    workspace: path.join(root, "workspace"),
    workerState: path.join(root, "worker"),
  };
}

export async function isDirectory(folder: string): Promise<boolean> {
  try {
    return (await stat(folder)).isDirectory();
  } catch (error) {
    if (isErrno(error, "ENOENT") || isErrno(error, "ENOTDIR")) return false;
    throw error;
  }
}

/** Creates whatever part of the disk is missing (the root only root can enter). */
export async function ensureDiskFolders(paths: ComputerPaths): Promise<void> {
  await mkdir(paths.root, { recursive: true, mode: 0o700 });
  await Promise.all(
    [paths.home, paths.workspace, paths.workerState].map((folder) =>
      mkdir(folder, { recursive: true, mode: 0o700 }),
    ),
  );
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
