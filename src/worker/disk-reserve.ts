/**
 * Room kept back on the computer's disk for the worker's own records. A computer's disk has a
 * limit (the local provider's disk image), and a user's command can fill it. The worker writes a
 * `started` record and a job folder before it runs any command, so on a full disk it could not
 * even run the `rm` that frees space. It therefore keeps a file of zeros, `disk-reserve`, in its
 * state folder: when one of its own writes fails with ENOSPC, it deletes that file and tries
 * once more; before it starts a command on a disk with less than 1 MiB free, it deletes it too
 * (a done-log record is appended to a journal, which often still fits the slack of its last
 * block on a full disk: the command's own output would not); and it puts the file back once the
 * disk has room again.
 *
 * What this does not do: keep a command that is still writing from eating the freed room (it
 * will, and then fails again with ENOSPC, as it should). It only gives the worker a way back.
 */
import { promises as fs, statSync } from "node:fs";
import path from "node:path";
import { isErrno } from "./fs-atomic.ts";

export const reserveFileName = "disk-reserve";
/** Big enough for thousands of records and job folders. */
export const reserveBytes = 8 * 1024 * 1024;

/** Below this much free space a command starts only after the reserve is given back. */
export const lowSpaceBytes = 1024 * 1024;

/** Gives the reserve back when the disk has less than `lowSpaceBytes` free; never fails. */
export async function freeReserveIfLow(stateDir: string): Promise<void> {
  try {
    const space = await fs.statfs(stateDir);
    if (space.bavail * space.bsize >= lowSpaceBytes) return;
    await fs.unlink(path.join(stateDir, reserveFileName));
  } catch {
    // No reserve left to give (ENOENT), or no statfs: the command runs with what there is.
  }
}

/**
 * Runs `write`; when it fails with ENOSPC, frees the reserve (if there is one) and runs it again.
 * Without a reserve to free it still runs it once more: the shell tool makes a job's files while
 * its `started` record is written, so the other one may just have freed it.
 */
export async function withDiskRoom<T>(stateDir: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!isErrno(error, "ENOSPC")) throw error;
    try {
      await fs.unlink(path.join(stateDir, reserveFileName));
    } catch (unlinkError) {
      if (!isErrno(unlinkError, "ENOENT")) throw unlinkError;
    }
    return await write();
  }
}

/**
 * Whether the reserve is in place, looked at on this thread (one stat, on every call's path
 * before its result is sent: a hop through libuv's pool would cost more than the stat).
 */
export function diskReserveInPlace(stateDir: string): boolean {
  try {
    return statSync(path.join(stateDir, reserveFileName)).size === reserveBytes;
  } catch {
    return false;
  }
}

/**
 * Puts the reserve (back) in place when it is missing and the disk has room for it several times
 * over; never fails (a full disk is simply left alone). Real zeros, not a sparse file: only
 * blocks that are allocated are blocks that can be given back.
 */
export async function refillDiskReserve(stateDir: string): Promise<void> {
  const file = path.join(stateDir, reserveFileName);
  try {
    if ((await fs.stat(file)).size === reserveBytes) return;
  } catch (error) {
    if (!isErrno(error, "ENOENT")) return;
  }
  try {
    const space = await fs.statfs(stateDir);
    if (space.bavail * space.bsize < 4 * reserveBytes) return;
    const temporary = `${file}.tmp`;
    await fs.writeFile(temporary, Buffer.alloc(reserveBytes));
    await fs.rename(temporary, file);
  } catch {
    await fs.rm(`${file}.tmp`, { force: true }).catch(() => undefined);
  }
}
