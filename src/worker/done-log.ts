/**
 * The done-log: what the worker knows about each call id, on the computer's durable disk.
 *
 *   <stateDir>/calls/journal.jsonl   one record per line: `started` before a call with side
 *                                    effects starts, `done` when a call finishes (before its
 *                                    result is sent); written after the last one and
 *                                    fdatasync'd, never edited; zeros after the last (DL6)
 *
 * Invariants:
 *   DL1 A record is durable before its write resolves: it is written with one write after the
 *       last record and the file is fdatasync'd (when `fsync` is on). One append and one flush per record, instead of
 *       a file per record (temporary file, fsync, rename, fsync of the directory): decision 0021.
 *       `markDone`'s `written` callback runs between the two: the record is in the file (the
 *       kernel keeps it if the worker process dies), its flush to the disk not yet done.
 *   DL2 A torn last line (the worker died during an append) is cut off when the journal is opened:
 *       its write never resolved, so nothing relied on it (a `started` record that did not
 *       resolve means the call's side effects never began).
 *   DL3 A `done` record wins over a `started` one for the same call id, wherever they are in the
 *       file; a call id has at most one of each that counts (the first `done`).
 *   DL4 One writer: the worker process that opened the journal (the supervisor runs one at a time).
 *       Reads are answered from an index built at open and kept by that writer; a `done` record's
 *       outcome stays on disk (it can be large) and is read back by offset, checked by its call id.
 *   DL5 The journal is rewritten (temporary file, fsync, rename, fsync of the directory) only when
 *       its dead bytes (superseded `started` lines, expired `done` lines) outweigh its live ones and
 *       exceed 1 MiB, so pruning costs amortised O(1) per record and a wake rarely copies anything.
 *   DL6 The file is grown ahead of its records, with zeros written and flushed
 *       (`preallocateBytes` at a time), and records are written over those zeros at the end of
 *       the last one. A record that fits the grown file changes no metadata (not even the file's
 *       size), so its fdatasync flushes its data alone instead of also committing the file
 *       system's journal: 0.1 instead of 0.4–0.6 ms p50 on a computer's ext4 image (decision
 *       0021). A record that does not fit is written with the zeros that grow the file after it,
 *       in one write; on a full disk, without them. The zeros after the last record are not a
 *       line (no newline), so DL2 reads them as the end; non-zero bytes there (a torn record)
 *       are cut.
 *
 * Records of the format before the journal (`calls/started/<sha256>.json`, `calls/done/...`) are
 * moved into the journal when it is opened, so an upgrade keeps every call's no-repeat guarantee.
 * On a full disk an append frees the worker's disk reserve and is tried once more
 * (disk-reserve.ts); the reserve is put back after a call is recorded and the disk has room.
 */
import { constants as fsConstants, promises as fs, writeSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import type { ToolError } from "../protocol/index.ts";
import { diskReserveInPlace, refillDiskReserve, withDiskRoom } from "./disk-reserve.ts";
import { isErrno, writeFileAtomic } from "./fs-atomic.ts";
import { sha256 } from "./light-crypto.ts";

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
  /** fsync records. Off only in throwaway test setups. @default true */
  fsync?: boolean;
  /** @default () => new Date() */
  now?: () => Date;
}

export interface DoneLog {
  /** The done record if there is one, else the started record, else undefined. */
  get(callId: string): Promise<CallRecord | undefined>;
  markStarted(callId: string, tool: string, detail?: unknown): Promise<void>;
  /**
   * Resolves once the record is durable (DL1). `written` runs as soon as it is in the file, before
   * its flush: the call runner sends the result then, so the flush is not on the call's path (W2).
   */
  markDone(callId: string, tool: string, outcome: CallOutcome, written?: () => void): Promise<void>;
  /** Calls a previous worker process started but did not finish. */
  listUnfinished(): Promise<StartedRecord[]>;
  /** Drops done records older than `maxAgeMs` (DL5: the file shrinks when that pays); returns how many. */
  prune(maxAgeMs: number): Promise<number>;
  close(): Promise<void>;
}

export const journalFileName = "journal.jsonl";
/** DL5: below this many dead bytes the journal is never rewritten. */
const minDeadBytesToCompact = 1024 * 1024;
/** DL6: how far the file is grown ahead of its records (~200 records of a `shell` call). */
export const preallocateBytes = 64 * 1024;
/** Read and write, created when missing; not O_APPEND, which would ignore DL6's positions. */
const openFlags = fsConstants.O_RDWR | fsConstants.O_CREAT;

export function callKey(callId: string): string {
  return sha256(callId).toString("hex");
}

interface Located {
  offset: number;
  length: number;
}

interface Entry {
  started?: StartedRecord & Located;
  done?: Located & { finishedAtMs: number; expired: boolean };
}

export async function openDoneLog(
  stateDir: string,
  options: DoneLogOptions = {},
): Promise<DoneLog> {
  const callsDir = path.join(stateDir, "calls");
  const file = path.join(callsDir, journalFileName);
  await fs.mkdir(callsDir, { recursive: true });
  const durable = options.fsync ?? true;
  const now = options.now ?? (() => new Date());

  const index = new Map<string, Entry>();
  let handle: FileHandle = await fs.open(file, openFlags);
  /** End of the last whole record: where the next one is written. */
  let size = 0;
  /** DL6: the file's length; the bytes from `size` to here are zeros. */
  let allocated = 0;
  let liveBytes = 0;
  let deadBytes = 0;
  /**
   * DL4: appends, rewrites and close run one at a time. With none running a task starts at once,
   * in the caller's turn of the event loop: a record's write and the start of its flush then come
   * before whatever the caller does next on this thread (the shell tool makes the job's files
   * while the `started` record is flushed).
   */
  let queue: Promise<unknown> = Promise.resolve();
  let running = 0;
  const serial = <T>(task: () => Promise<T>): Promise<T> => {
    running += 1;
    // Its synchronous part runs now; a throw there rejects (async), never throws to the caller.
    const start = async (): Promise<T> => task();
    const run = running === 1 ? start() : queue.then(start, start);
    queue = run.catch(() => undefined).finally(() => (running -= 1));
    return run;
  };

  function account(record: CallRecord, at: Located): void {
    const entry = index.get(record.callId) ?? {};
    if (record.state === "started") {
      if (entry.started !== undefined || entry.done !== undefined) {
        deadBytes += at.length; // DL3: a repeat, or after the done record
        return;
      }
      entry.started = { ...record, ...at };
      liveBytes += at.length;
    } else {
      if (entry.done !== undefined) {
        deadBytes += at.length; // DL3: the first done record counts
        return;
      }
      entry.done = { ...at, finishedAtMs: Date.parse(record.finishedAt), expired: false };
      liveBytes += at.length;
      if (entry.started !== undefined) {
        liveBytes -= entry.started.length;
        deadBytes += entry.started.length;
      }
    }
    index.set(record.callId, entry);
  }

  /** Indexes the whole journal; DL2: cuts a torn last line. */
  async function load(): Promise<void> {
    const data = await fs.readFile(file);
    index.clear();
    liveBytes = 0;
    deadBytes = 0;
    let offset = 0;
    for (;;) {
      const end = data.indexOf(0x0a, offset);
      if (end === -1) break;
      const record = parseRecord(data.subarray(offset, end).toString("utf8"));
      if (record === undefined) deadBytes += end + 1 - offset;
      else account(record, { offset, length: end + 1 - offset });
      offset = end + 1;
    }
    size = offset;
    allocated = data.length;
    // DL2, DL6: what follows the last whole line is either zeros or a torn record, which is cut.
    if (data.subarray(offset).some((byte) => byte !== 0)) {
      await handle.truncate(offset);
      allocated = offset;
    }
  }

  async function append(record: CallRecord, writtenCallback?: () => void): Promise<void> {
    const bytes = Buffer.from(`${JSON.stringify(record)}\n`, "utf8");
    await serial(async () => {
      const offset = size;
      let attempt = 0;
      let told = false;
      let callbackError: unknown;
      await withDiskRoom(stateDir, async () => {
        // DL6: a record that does not fit grows the file, with the zeros after it; on a retry
        // after ENOSPC (the reserve freed) without them.
        const grow = offset + bytes.length > allocated;
        const padding = grow && attempt++ === 0 ? preallocateBytes : 0;
        const data = padding === 0 ? bytes : Buffer.concat([bytes, Buffer.alloc(padding)]);
        try {
          // The write on this thread (into the page cache: microseconds, where a hop through
          // libuv's pool took ~0.3–0.6 ms of a call on the reference machine); the flush, which
          // waits for the disk, in the pool.
          let written = 0;
          while (written < data.length)
            written += writeSync(handle.fd, data, written, data.length - written, offset + written);
          if (!told) {
            told = true;
            // The caller's throw must not undo the record: it is reported once the record is kept.
            try {
              writtenCallback?.();
            } catch (error) {
              callbackError = error;
            }
          }
          if (durable) await handle.datasync(); // DL1
          if (grow) allocated = offset + data.length;
        } catch (error) {
          // A short write on a full disk must not leave half a line for the next record to
          // follow: cut the file back to its last whole record (the zeros after it go too).
          await handle.truncate(offset).catch(() => undefined);
          allocated = Math.min(allocated, offset);
          throw error;
        }
      });
      size = offset + bytes.length;
      account(record, { offset, length: bytes.length });
      if (callbackError !== undefined) throw callbackError;
    });
  }

  async function readAt(at: Located): Promise<Buffer> {
    const buffer = Buffer.alloc(at.length);
    const { bytesRead } = await handle.read(buffer, 0, at.length, at.offset);
    return buffer.subarray(0, bytesRead);
  }

  async function readDone(callId: string, at: Located): Promise<DoneRecord | undefined> {
    const record = parseRecord((await readAt(at)).toString("utf8"));
    // DL4: the offset is ours; a record of another call there would be a bug, not a result.
    if (record?.state !== "done" || record.callId !== callId)
      throw new Error(`done-log: the record at byte ${at.offset} of ${file} is not ${callId}'s`);
    return record;
  }

  /** Copies the live records to a new journal and swaps it in (DL5). */
  async function compact(): Promise<void> {
    const live: Located[] = [];
    for (const entry of index.values()) {
      if (entry.done !== undefined) {
        if (!entry.done.expired) live.push(entry.done);
      } else if (entry.started !== undefined) live.push(entry.started);
    }
    live.sort((a, b) => a.offset - b.offset);
    const chunks: Buffer[] = [];
    for (const at of live) chunks.push(await readAt(at));
    await writeFileAtomic(file, Buffer.concat(chunks), durable);
    await handle.close();
    handle = await fs.open(file, openFlags);
    await load();
  }

  await load();
  await importLegacy(callsDir, (record) => append(record));
  await refillDiskReserve(stateDir);

  return {
    async get(callId) {
      const entry = index.get(callId);
      const done = entry?.done;
      // Behind any rewrite (DL5), which swaps the file the offset points into.
      if (done !== undefined && !done.expired) return serial(() => readDone(callId, done));
      if (entry?.started === undefined) return undefined;
      const { offset: _offset, length: _length, ...record } = entry.started;
      return record;
    },
    async markStarted(callId, tool, detail) {
      const record: StartedRecord = {
        state: "started",
        callId,
        tool,
        startedAt: now().toISOString(),
      };
      if (detail !== undefined) record.detail = detail;
      await append(record);
    },
    async markDone(callId, tool, outcome, written) {
      const record: DoneRecord = {
        state: "done",
        callId,
        tool,
        finishedAt: now().toISOString(),
        outcome,
      };
      await append(record, written);
      if (!diskReserveInPlace(stateDir)) await refillDiskReserve(stateDir);
    },
    async listUnfinished() {
      const records: StartedRecord[] = [];
      for (const entry of index.values()) {
        if (entry.started === undefined || entry.done !== undefined) continue;
        const { offset: _offset, length: _length, ...record } = entry.started;
        records.push(record);
      }
      return records;
    },
    prune(maxAgeMs) {
      return serial(async () => {
        const cutoff = now().getTime() - maxAgeMs;
        let removed = 0;
        for (const entry of index.values()) {
          const done = entry.done;
          if (done === undefined || done.expired || !(done.finishedAtMs < cutoff)) continue;
          done.expired = true;
          liveBytes -= done.length;
          deadBytes += done.length;
          removed += 1;
        }
        if (deadBytes >= minDeadBytesToCompact && deadBytes > liveBytes) await compact(); // DL5
        return removed;
      });
    },
    close() {
      return serial(() => handle.close());
    },
  };
}

function parseRecord(text: string): CallRecord | undefined {
  try {
    const value = JSON.parse(text) as CallRecord;
    return value.state === "started" || value.state === "done" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Moves records of the file-per-record format into the journal, then removes their folders. */
async function importLegacy(
  callsDir: string,
  append: (record: CallRecord) => Promise<void>,
): Promise<void> {
  for (const folder of ["done", "started"] as const) {
    const dir = path.join(callsDir, folder);
    let names: string[];
    try {
      names = await fs.readdir(dir);
    } catch (error) {
      if (isErrno(error, "ENOENT")) continue;
      throw error;
    }
    for (const name of names.filter((entry) => entry.endsWith(".json")).sort()) {
      const text = await fs.readFile(path.join(dir, name), "utf8").catch(() => "");
      const record = parseRecord(text);
      if (record !== undefined) await append(record); // DL3 keeps a done record imported first
    }
    await fs.rm(dir, { recursive: true, force: true });
  }
}
