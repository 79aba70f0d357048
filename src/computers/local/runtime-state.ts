/**
 * What the local provider keeps on the host's tmpfs (`runDir`, default /run/roost/local) while
 * computers are awake, shared by every Roost server on the host:
 *
 *   awake/<slot>.json   which server owns the slot's live resources, and its cgroup folders
 *   locks/<slot>        held while a slot's resources are made or removed
 *   c<slot>/            the generated files mounted into that computer's sandbox
 *
 * Invariants:
 *   R1 an awake record is written before any resource of its slot is made and removed after the
 *      last one is gone, so a slot's resources without a live owner's record are leftovers.
 *   R2 a slot's resources are made or removed only under its lock; a lock whose holder died is
 *      taken over (checked by pid and process start time, so a recycled pid does not count).
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, readdir, rename, rm, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ComputerCgroup } from "./cgroups.ts";
import { delay, isErrno, isSameProcessAlive, processStartTicks } from "./system.ts";

export interface ProcessOwner {
  pid: number;
  /** Start time in clock ticks (see processStartTicks). */
  start: string;
}

export interface AwakeRecord {
  computerId: string;
  root: string;
  slot: number;
  owner: ProcessOwner;
  cgroups: ComputerCgroup[];
  startedAt: number;
}

export async function currentOwner(): Promise<ProcessOwner> {
  const start = await processStartTicks(process.pid);
  if (start === undefined)
    throw new Error("cannot read this process's start time from /proc/self/stat");
  return { pid: process.pid, start };
}

export async function isOwnerAlive(owner: ProcessOwner): Promise<boolean> {
  return isSameProcessAlive(owner.pid, owner.start);
}

export interface RuntimeState {
  readonly dir: string;
  runtimeDir(slot: number): string;
  readRecord(slot: number): Promise<AwakeRecord | undefined>;
  writeRecord(record: AwakeRecord): Promise<void>;
  removeRecord(slot: number): Promise<void>;
  listRecords(): Promise<AwakeRecord[]>;
  /** Slots that have a generated runtime folder. */
  listRuntimeSlots(): Promise<number[]>;
  /** R2 */
  withSlotLock<T>(slot: number, run: () => Promise<T>): Promise<T>;
  /** The same lock by name, for what servers share besides slots (the spares folder's mount). */
  withLock<T>(name: string, run: () => Promise<T>): Promise<T>;
}

export async function createRuntimeState(dir: string, owner: ProcessOwner): Promise<RuntimeState> {
  const awakeDir = path.join(dir, "awake");
  const locksDir = path.join(dir, "locks");
  await Promise.all([
    mkdir(awakeDir, { recursive: true, mode: 0o755 }),
    mkdir(locksDir, { recursive: true, mode: 0o755 }),
  ]);
  const recordPath = (slot: number) => path.join(awakeDir, `${slot}.json`);

  async function readRecord(slot: number): Promise<AwakeRecord | undefined> {
    try {
      return JSON.parse(await readFile(recordPath(slot), "utf8")) as AwakeRecord;
    } catch (error) {
      if (isErrno(error, "ENOENT") || error instanceof SyntaxError) return undefined;
      throw error;
    }
  }

  async function tryLock(file: string): Promise<boolean> {
    try {
      await writeFile(file, JSON.stringify(owner), { flag: "wx" });
      return true;
    } catch (error) {
      if (isErrno(error, "EEXIST")) return false;
      throw error;
    }
  }

  /** Takes over a lock whose holder is gone; false if it is held (or was just re-taken). */
  async function breakIfStale(file: string): Promise<void> {
    let info;
    let holder: ProcessOwner | undefined;
    try {
      info = await stat(file);
      holder = JSON.parse(await readFile(file, "utf8")) as ProcessOwner;
    } catch (error) {
      if (isErrno(error, "ENOENT")) return;
      // Written but not yet filled in: give its writer a moment.
      if (!(error instanceof SyntaxError) || Date.now() - (info?.mtimeMs ?? Date.now()) < 5000)
        return;
    }
    if (holder !== undefined && (await isOwnerAlive(holder))) return;
    const aside = `${file}.stale-${randomBytes(4).toString("hex")}`;
    try {
      await rename(file, aside);
    } catch (error) {
      if (isErrno(error, "ENOENT")) return;
      throw error;
    }
    if ((await stat(aside)).ino !== info?.ino) {
      // A live holder took it between our check and our rename: put it back.
      await rename(aside, file).catch(() => undefined);
      return;
    }
    await unlink(aside).catch(() => undefined);
  }

  return {
    dir,
    runtimeDir: (slot) => path.join(dir, `c${slot}`),
    readRecord,

    async writeRecord(record) {
      const file = recordPath(record.slot);
      const temporary = `${file}.${randomBytes(4).toString("hex")}.tmp`;
      await writeFile(temporary, JSON.stringify(record));
      await rename(temporary, file);
    },

    async removeRecord(slot) {
      await rm(recordPath(slot), { force: true });
    },

    async listRecords() {
      const names = await readdir(awakeDir);
      const records: AwakeRecord[] = [];
      for (const name of names) {
        const match = /^(\d+)\.json$/.exec(name);
        if (match === null) continue;
        const record = await readRecord(Number(match[1]));
        if (record !== undefined) records.push(record);
      }
      return records;
    },

    async listRuntimeSlots() {
      const names = await readdir(dir).catch(() => [] as string[]);
      return names.flatMap((name) => {
        const match = /^c(\d+)$/.exec(name);
        return match === null ? [] : [Number(match[1])];
      });
    },

    withSlotLock: (slot, run) => withLock(String(slot), run, `slot ${slot}`),
    withLock: (name, run) => withLock(name, run),
  };

  async function withLock<T>(name: string, run: () => Promise<T>, what = name): Promise<T> {
    const file = path.join(locksDir, name);
    const deadline = Date.now() + 30_000;
    while (!(await tryLock(file))) {
      if (Date.now() > deadline) {
        throw new Error(`${what} stayed locked for 30 s (${file}); is another Roost server stuck?`);
      }
      await breakIfStale(file);
      await delay(15);
    }
    try {
      return await run();
    } finally {
      await rm(file, { force: true });
    }
  }
}
