/**
 * The data dir holds every conversation (roost.db), the engine's journal (restate/), snapshots of
 * users' disks (blobs/), the computers' disks and the admin token: no other user of the host may
 * read any of it. Each part creates its files closed (the store 0600, the engine with umask 077,
 * blobs 0600, the admin token 0600); at every start this closes the data dir itself and takes
 * group and other permissions off what an older install made world-readable.
 */
import { chmod, lstat, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { RoostConfig } from "../config/index.ts";

const ignoreGone = (error: unknown) => {
  if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
};

/**
 * Takes group and other permissions off `folder` and everything below it (links untouched).
 * Files may come and go meanwhile (a restate-server left running by a killed Roost is stopped
 * only later, when the engine starts): one that is gone is skipped.
 */
async function restrictTree(folder: string): Promise<void> {
  const pending = [folder];
  while (pending.length > 0) {
    const current = pending.pop()!;
    const info = await lstat(current).catch(() => undefined);
    if (info === undefined || info.isSymbolicLink()) continue;
    if ((info.mode & 0o077) !== 0) await chmod(current, info.mode & 0o7700).catch(ignoreGone);
    if (!info.isDirectory()) continue;
    const names = await readdir(current).catch((error: unknown) => {
      ignoreGone(error);
      return [] as string[];
    });
    for (const name of names) pending.push(join(current, name));
  }
}

async function chmodIfPresent(file: string, mode: number): Promise<void> {
  await chmod(file, mode).catch(ignoreGone);
}

export async function secureDataDir(config: RoostConfig): Promise<void> {
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  await chmod(config.dataDir, 0o700);
  await chmodIfPresent(join(config.dataDir, "admin-token"), 0o600);
  // Not the computers' own trees (their disks keep their users' modes, behind 0700 folders).
  await chmodIfPresent(config.computers.root, 0o700);
  if (config.restate.mode === "embedded") await restrictTree(join(config.dataDir, "restate"));
  if (config.computers.blobs.kind === "local") await restrictTree(config.computers.blobs.dir);
}
