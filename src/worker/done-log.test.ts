import {
  appendFileSync,
  closeSync,
  mkdirSync,
  openSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { existsSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { callKey, journalFileName, openDoneLog, preallocateBytes } from "./done-log.ts";

let stateDir: string;
const journal = () => path.join(stateDir, "calls", journalFileName);
/** The journal's lines, without the zeros it is grown by (DL6). */
const lines = () => readFileSync(journal(), "utf8").replace(/\0+$/, "").split("\n").filter(Boolean);

beforeEach(() => {
  stateDir = mkdtempSync(path.join(os.tmpdir(), "roost-done-log-"));
});

afterEach(() => {
  rmSync(stateDir, { recursive: true, force: true });
});

describe("done-log journal", () => {
  it("answers a finished call from a new process's journal, the done record winning over started (DL3)", async () => {
    const first = await openDoneLog(stateDir);
    await first.markStarted("c1", "shell", { timeoutMs: 1000 });
    await first.markDone("c1", "shell", { ok: true, output: { stdout: "first" } });
    await first.markDone("c1", "shell", { ok: true, output: { stdout: "second" } });
    await first.markStarted("c2", "shell");
    await first.close();

    const reopened = await openDoneLog(stateDir);
    expect(await reopened.get("c1")).toMatchObject({
      state: "done",
      outcome: { ok: true, output: { stdout: "first" } },
    });
    expect(await reopened.get("c2")).toMatchObject({ state: "started", tool: "shell" });
    expect((await reopened.listUnfinished()).map((record) => record.callId)).toEqual(["c2"]);
    expect(await reopened.get("c3")).toBeUndefined();
    await reopened.close();
  });

  it("an idle journal's record is written in the caller's turn, before what the caller does next; records keep their order (DL4)", async () => {
    const log = await openDoneLog(stateDir);
    const first = log.markStarted("c1", "shell");
    // Nothing awaited yet: the shell tool makes the job's files now, while the flush runs.
    expect(lines().map((line) => (JSON.parse(line) as { callId: string }).callId)).toEqual(["c1"]);
    const second = log.markStarted("c2", "shell");
    const third = log.markDone("c1", "shell", { ok: true, output: "x" });
    await Promise.all([first, second, third]);
    expect(lines().map((line) => JSON.parse(line) as { callId: string; state: string })).toEqual([
      expect.objectContaining({ callId: "c1", state: "started" }),
      expect.objectContaining({ callId: "c2", state: "started" }),
      expect.objectContaining({ callId: "c1", state: "done" }),
    ]);
    await log.close();
  });

  it("markDone's written callback runs once the done record is in the file, before its flush resolves; a throw there keeps the record (DL1)", async () => {
    const log = await openDoneLog(stateDir);
    await log.markStarted("c1", "shell");
    let seen: string[] | undefined;
    let resolved = false;
    const done = log.markDone("c1", "shell", { ok: true, output: "x" }, () => {
      seen = lines().map((line) => (JSON.parse(line) as { state: string }).state);
      expect(resolved).toBe(false);
    });
    void done.then(() => (resolved = true));
    await done;
    expect(seen).toEqual(["started", "done"]);
    await expect(
      log.markDone("c2", "shell", { ok: true, output: "y" }, () => {
        throw new Error("the caller's own failure");
      }),
    ).rejects.toThrow("the caller's own failure");
    await log.close();
    const reopened = await openDoneLog(stateDir);
    expect(await reopened.get("c2")).toMatchObject({ state: "done", outcome: { output: "y" } });
    await reopened.close();
  });

  it("worker killed during an append: the torn last line is cut, and the next record is whole (DL2)", async () => {
    const first = await openDoneLog(stateDir);
    await first.markStarted("c1", "shell");
    await first.close();
    appendFileSync(journal(), '{"state":"done","callId":"c1","tool":"sh'); // the kill, mid-write

    const reopened = await openDoneLog(stateDir);
    expect(await reopened.get("c1")).toMatchObject({ state: "started" }); // not a result it never had
    await reopened.markDone("c1", "shell", { ok: true, output: 1 });
    await reopened.close();
    expect(lines().map((line) => (JSON.parse(line) as { state: string }).state)).toEqual([
      "started",
      "done",
    ]);
    expect(await (await openDoneLog(stateDir)).get("c1")).toMatchObject({ outcome: { output: 1 } });
  });

  it("records are written over zeros the file was grown by, so most change no file size (DL6)", async () => {
    const log = await openDoneLog(stateDir);
    await log.markStarted("c0", "shell");
    const grown = statSync(journal()).size;
    expect(grown).toBeGreaterThan(preallocateBytes); // the first record grew the file ahead
    for (let index = 1; index < 50; index += 1) {
      await log.markStarted(`c${index}`, "shell");
      await log.markDone(`c${index}`, "shell", { ok: true, output: index });
    }
    expect(statSync(journal()).size).toBe(grown); // 99 more records, no growth
    expect(lines()).toHaveLength(99);
    // A record larger than what is left grows the file again, with its own zeros after it.
    const big = "y".repeat(preallocateBytes);
    await log.markDone("c0", "shell", { ok: true, output: big });
    expect(statSync(journal()).size).toBeGreaterThan(grown + preallocateBytes);
    await log.close();

    const reopened = await openDoneLog(stateDir);
    expect(await reopened.get("c0")).toMatchObject({ outcome: { output: big } });
    expect(await reopened.get("c49")).toMatchObject({ outcome: { output: 49 } });
    expect(await reopened.listUnfinished()).toEqual([]);
    await reopened.markStarted("after", "shell"); // lands after the last record, not after the zeros
    await reopened.close();
    expect(JSON.parse(lines().at(-1)!)).toMatchObject({ callId: "after" });
  });

  it("worker killed while writing over the zeros: the torn record is cut and the zeros kept clean (DL2, DL6)", async () => {
    const first = await openDoneLog(stateDir);
    await first.markStarted("c1", "shell");
    await first.close();
    const end = readFileSync(journal()).indexOf(0x0a) + 1;
    const torn = '{"state":"done","callId":"c1","tool":"shell","finishedAt":"2026-';
    const descriptor = openSync(journal(), "r+");
    writeSync(descriptor, torn, end); // the kill, mid-write, inside the grown part
    closeSync(descriptor);

    const reopened = await openDoneLog(stateDir);
    expect(await reopened.get("c1")).toMatchObject({ state: "started" });
    await reopened.markStarted("c2", "shell"); // shorter than the torn record: nothing of it may stay
    await reopened.close();
    expect(readFileSync(journal(), "utf8")).not.toContain("finishedAt");
    expect(lines().map((line) => (JSON.parse(line) as { callId: string }).callId)).toEqual([
      "c1",
      "c2",
    ]);
    const again = await openDoneLog(stateDir);
    expect((await again.listUnfinished()).map((record) => record.callId)).toEqual(["c1", "c2"]);
    await again.close();
  });

  it("upgrade from the file-per-record format: its started and done records keep their meaning", async () => {
    const legacy = (folder: string, record: { callId: string; [field: string]: unknown }) => {
      mkdirSync(path.join(stateDir, "calls", folder), { recursive: true });
      writeFileSync(
        path.join(stateDir, "calls", folder, `${callKey(record.callId)}.json`),
        JSON.stringify(record),
      );
    };
    const at = new Date().toISOString();
    legacy("done", {
      state: "done",
      callId: "old-done",
      tool: "shell",
      finishedAt: at,
      outcome: { ok: true, output: "kept" },
    });
    legacy("started", { state: "started", callId: "old-done", tool: "shell", startedAt: at });
    legacy("started", { state: "started", callId: "old-running", tool: "shell", startedAt: at });

    const log = await openDoneLog(stateDir);
    expect(await log.get("old-done")).toMatchObject({ state: "done", outcome: { output: "kept" } });
    expect((await log.listUnfinished()).map((record) => record.callId)).toEqual(["old-running"]);
    expect(existsSync(path.join(stateDir, "calls", "started"))).toBe(false);
    expect(existsSync(path.join(stateDir, "calls", "done"))).toBe(false);
    await log.close();
  });

  it("prune forgets expired results and rewrites the journal only once its dead bytes outweigh the live ones (DL5)", async () => {
    let clock = Date.parse("2026-01-01T00:00:00Z");
    const log = await openDoneLog(stateDir, { fsync: false, now: () => new Date(clock) });
    const big = "x".repeat(64 * 1024);
    for (let index = 0; index < 20; index += 1)
      await log.markDone(`old-${index}`, "shell", { ok: true, output: big });
    await log.markStarted("running", "shell");
    clock += 10 * 60_000;
    await log.markDone("fresh", "shell", { ok: true, output: "fresh" });

    expect(await log.prune(60 * 60_000)).toBe(0);
    const before = statSync(journal()).size;
    expect(await log.prune(5 * 60_000)).toBe(20); // 1.3 MB dead, a few bytes live: rewritten
    expect(statSync(journal()).size).toBeLessThan(before / 100);
    expect(await log.get("old-3")).toBeUndefined();
    expect(await log.get("fresh")).toMatchObject({ outcome: { output: "fresh" } });
    expect((await log.listUnfinished()).map((record) => record.callId)).toEqual(["running"]);

    // Appends after the rewrite land in the new file, at offsets the index knows.
    await log.markDone("running", "shell", { ok: true, output: "after" });
    expect(await log.get("running")).toMatchObject({ outcome: { output: "after" } });
    await log.close();
    const reopened = await openDoneLog(stateDir);
    expect(await reopened.get("running")).toMatchObject({ outcome: { output: "after" } });
    expect(await reopened.get("old-0")).toBeUndefined();
    await reopened.close();
  });

  it("does not rewrite a small journal on every prune (a wake copies nothing)", async () => {
    const log = await openDoneLog(stateDir, { fsync: false });
    for (let index = 0; index < 10; index += 1) {
      await log.markStarted(`c${index}`, "shell");
      await log.markDone(`c${index}`, "shell", { ok: true, output: index });
    }
    const inode = statSync(journal()).ino;
    await log.prune(7 * 24 * 60 * 60_000);
    expect(statSync(journal()).ino).toBe(inode);
    expect(lines()).toHaveLength(20);
    await log.close();
  });
});
