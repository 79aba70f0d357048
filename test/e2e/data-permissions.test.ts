/**
 * Attack: another user of the host reads Roost's data (every conversation in roost.db, the
 * engine's journal, snapshots of users' disks, the admin token). After `roost up`, and after an
 * upgrade of an install whose files were 0644 and folders 0755, every path in the data dir is
 * closed to them: checked by mode, and, as root, by trying as uid 65534.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

/**
 * Every path below `root` with its permission bits (links skipped), without descending into
 * mounted disks. The engine's files come and go while it runs: one that vanished is skipped.
 */
function walk(root: string): Array<{ path: string; mode: number; directory: boolean }> {
  const found: Array<{ path: string; mode: number; directory: boolean }> = [];
  const pending = [root];
  const device = lstatSync(root).dev;
  while (pending.length > 0) {
    const current = pending.pop()!;
    let info;
    try {
      info = lstatSync(current);
    } catch {
      continue;
    }
    if (info.isSymbolicLink()) continue;
    found.push({ path: current, mode: info.mode & 0o777, directory: info.isDirectory() });
    if (!info.isDirectory() || info.dev !== device) continue;
    let names: string[];
    try {
      names = readdirSync(current);
    } catch {
      continue;
    }
    for (const name of names) pending.push(join(current, name));
  }
  return found;
}

const mode = (path: string) => lstatSync(path).mode & 0o777;

describe(`data dir permissions (${testComputerProvider} provider)`, () => {
  let dataDir: string;
  let roost: RoostProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-perms-"));
    roost = await createRoostProcess({
      dataDir,
      env: { ROOST_COMPUTER_PROVIDER: testComputerProvider },
    });
    await roost.start();
    // A computer that woke and slept: its disk, and a snapshot of it in the blob store.
    const api = apiClient(roost.url, roost.token);
    await api.call("POST", "/v1/computers/me/wake");
    await api.sleepComputer();
    await waitFor(
      async () => (await api.call<{ state: string }>("GET", "/v1/computers/me")).state === "asleep",
      { timeoutMs: 60_000, what: "the computer to sleep" },
    );
  }, 120_000);

  afterAll(async () => {
    await roost?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  function expectClosed(): void {
    expect(mode(dataDir)).toBe(0o700);
    for (const name of ["roost.db", "roost.db-wal", "roost.db-shm", "admin-token"])
      expect({ name, mode: mode(join(dataDir, name)).toString(8) }).toEqual({ name, mode: "600" });
    for (const name of ["restate", "blobs", "computers"])
      expect({ name, mode: mode(join(dataDir, name)).toString(8) }).toEqual({ name, mode: "700" });
    // Nothing of the engine's data, nor any blob, is open to group or others.
    const open = [...walk(join(dataDir, "restate")), ...walk(join(dataDir, "blobs"))]
      .filter((entry) => (entry.mode & 0o077) !== 0)
      .map((entry) => `${relative(dataDir, entry.path)} ${entry.mode.toString(8)}`);
    expect(open).toEqual([]);
    expect(walk(join(dataDir, "blobs")).length).toBeGreaterThan(2); // the snapshot is there
    if (process.getuid?.() === 0) {
      // The attack itself: uid 65534 lists and reads what it can below the data dir.
      const attempt = spawnSync(
        "setpriv",
        [
          "--reuid=65534",
          "--regid=65534",
          "--clear-groups",
          "sh",
          "-c",
          'find "$1" -print 2>/dev/null; cat "$1/roost.db" "$1/admin-token" >/dev/null 2>&1 && echo READ',
          "sh",
          dataDir,
        ],
        { encoding: "utf8" },
      );
      expect(attempt.stdout.trim()).toBe(dataDir);
    }
  }

  it("after `roost up`: the data dir, roost.db (and -wal, -shm), restate/, blobs/ and the admin token are closed", () => {
    expectClosed();
  });

  it("an upgraded install whose files were 0644 and folders 0755 is closed at the next start", async () => {
    await roost.stop();
    for (const entry of [
      ...walk(join(dataDir, "restate")),
      ...walk(join(dataDir, "blobs")),
      { path: dataDir, directory: true },
      { path: join(dataDir, "computers"), directory: true },
    ])
      chmodSync(entry.path, entry.directory ? 0o755 : 0o644);
    for (const name of ["roost.db", "roost.db-wal", "roost.db-shm", "admin-token"]) {
      try {
        chmodSync(join(dataDir, name), 0o644);
      } catch {
        // -wal and -shm are gone after a clean stop; the start makes them again.
      }
    }
    await roost.start();
    expectClosed();
  }, 120_000);
});
