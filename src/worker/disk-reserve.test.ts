import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { reserveFileName, withDiskRoom } from "./disk-reserve.ts";

let stateDir: string;
beforeEach(() => {
  stateDir = mkdtempSync(path.join(os.tmpdir(), "roost-disk-reserve-"));
});
afterEach(() => {
  rmSync(stateDir, { recursive: true, force: true });
});

const enospc = () =>
  Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });

describe("withDiskRoom", () => {
  it("a write that meets a full disk frees the reserve and is tried once more", async () => {
    writeFileSync(path.join(stateDir, reserveFileName), Buffer.alloc(1024));
    let attempts = 0;
    const result = await withDiskRoom(stateDir, async () => {
      attempts += 1;
      if (attempts === 1) throw enospc();
      return "written";
    });
    expect(result).toBe("written");
    expect(attempts).toBe(2);
    expect(existsSync(path.join(stateDir, reserveFileName))).toBe(false);
  });

  it("two writers on a full disk: the one that finds the reserve already freed still tries once more", async () => {
    let attempts = 0;
    const result = await withDiskRoom(stateDir, async () => {
      attempts += 1;
      if (attempts === 1) throw enospc(); // the other writer freed the reserve meanwhile
      return "written";
    });
    expect(result).toBe("written");
    expect(attempts).toBe(2);
  });

  it("a disk still full after the retry gives ENOSPC, and other errors are not retried", async () => {
    let attempts = 0;
    await expect(
      withDiskRoom(stateDir, async () => {
        attempts += 1;
        throw enospc();
      }),
    ).rejects.toMatchObject({ code: "ENOSPC" });
    expect(attempts).toBe(2);
    attempts = 0;
    await expect(
      withDiskRoom(stateDir, async () => {
        attempts += 1;
        throw Object.assign(new Error("EACCES"), { code: "EACCES" });
      }),
    ).rejects.toMatchObject({ code: "EACCES" });
    expect(attempts).toBe(1);
  });
});
