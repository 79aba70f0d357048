/**
 * The done-log: what the worker knows about each call id, on the computer's durable disk.
 *
 *   <stateDir>/calls/started/<key>.json   written (fsync'd) before a call with side effects starts
 *   <stateDir>/calls/done/<key>.json      written (fsync'd) when a call finishes, before its result is sent
 *
 * `<key>` is the SHA-256 of the call id, so any id is a safe file name. Both files are replaced
 * atomically (temporary file, fsync, rename, fsync of the directory), so a reader sees a whole
 * record or none. A `started` record without a `done` record after a restart means the previous
 * worker process died during the call; the call runner decides per tool what that means.
 * On a full disk a write frees the worker's disk reserve and is tried once more
 * (disk-reserve.ts); the reserve is put back after a call is recorded and the disk has room.
 */
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import type { ToolError } from "../protocol/index.ts";
import { refillDiskReserve, withDiskRoom } from "./disk-reserve.ts";
import { isErrno, writeFileAtomic } from "./fs-atomic.ts";

export type CallOutcome = { ok: true; output: unknown } | { ok: false; error: ToolError };

export interface StartedRecord {
  state: "started";
  callId: string;
  tool: string;
  startedAt: string;
  /** Tool-specific facts needed to recover the call after a restart. */
  detail?: unknown;
}

export interface DoneRecord {
  state: "done";
  callId: string;
  tool: string;
  finishedAt: string;
  outcome: CallOutcome;
}

export type CallRecord = StartedRecord | DoneRecord;

export interface DoneLogOptions {
  /** fsync records and their directories. Off only in throwaway test setups. @default true */
  fsync?: boolean;
  /** @default () => new Date() */
  now?: () => Date;
}

export interface DoneLog {
  /** The done record if there is one, else the started record, else undefined. */
  get(callId: string): Promise<CallRecord | undefined>;
  markStarted(callId: string, tool: string, detail?: unknown): Promise<void>;
  markDone(callId: string, tool: string, outcome: CallOutcome): Promise<void>;
  /** Calls a previous worker process started but did not finish. */
  listUnfinished(): Promise<StartedRecord[]>;
  /** Deletes done records older than `maxAgeMs`; returns how many. */
  prune(maxAgeMs: number): Promise<number>;
}

export function callKey(callId: string): string {
  return createHash("sha256").update(callId).digest("hex");
}

export async function openDoneLog(
  stateDir: string,
  options: DoneLogOptions = {},
): Promise<DoneLog> {
  const startedDir = path.join(stateDir, "calls", "started");
  const doneDir = path.join(stateDir, "calls", "done");
  await fs.mkdir(startedDir, { recursive: true });
  await fs.mkdir(doneDir, { recursive: true });
  const durable = options.fsync ?? true;
  const now = options.now ?? (() => new Date());

  const write = (dir: string, callId: string, record: CallRecord) =>
    withDiskRoom(stateDir, () =>
      writeFileAtomic(path.join(dir, `${callKey(callId)}.json`), JSON.stringify(record), durable),
    );
  await refillDiskReserve(stateDir);

  return {
    async get(callId) {
      const key = `${callKey(callId)}.json`;
      const done = await readRecord(path.join(doneDir, key));
      if (done !== undefined) return done;
      return readRecord(path.join(startedDir, key));
    },
    async markStarted(callId, tool, detail) {
      const record: StartedRecord = {
        state: "started",
        callId,
        tool,
        startedAt: now().toISOString(),
      };
      if (detail !== undefined) record.detail = detail;
      await write(startedDir, callId, record);
    },
    async markDone(callId, tool, outcome) {
      await write(doneDir, callId, {
        state: "done",
        callId,
        tool,
        finishedAt: now().toISOString(),
        outcome,
      });
      // The done record wins over the started one; removing it only keeps the startup scan short.
      await fs.rm(path.join(startedDir, `${callKey(callId)}.json`), { force: true });
      await refillDiskReserve(stateDir);
    },
    async listUnfinished() {
      const names = await fs.readdir(startedDir);
      const records: StartedRecord[] = [];
      for (const name of names) {
        if (!name.endsWith(".json")) continue;
        const record = await readRecord(path.join(startedDir, name));
        if (record?.state !== "started") continue;
        if ((await readRecord(path.join(doneDir, name))) !== undefined) {
          await fs.rm(path.join(startedDir, name), { force: true });
          continue;
        }
        records.push(record);
      }
      return records;
    },
    async prune(maxAgeMs) {
      const cutoff = now().getTime() - maxAgeMs;
      let removed = 0;
      for (const name of await fs.readdir(doneDir)) {
        const file = path.join(doneDir, name);
        const stat = await fs.stat(file).catch(() => undefined);
        if (stat !== undefined && stat.mtimeMs < cutoff) {
          await fs.rm(file, { force: true });
          removed += 1;
        }
      }
      return removed;
    },
  };
}

async function readRecord(file: string): Promise<CallRecord | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    throw error;
  }
  try {
    const value = JSON.parse(text) as CallRecord;
    return value.state === "started" || value.state === "done" ? value : undefined;
  } catch {
    return undefined; // only possible after a torn write without fsync; treat as absent
  }
}
