import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeDirectories } from "./fs-atomic.ts";

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), "roost-fs-atomic-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("makeDirectories", () => {
  it("makes every missing folder, with the mode given, and accepts one that exists", async () => {
    const deep = path.join(root, "a", "b", "c");
    await makeDirectories(deep, 0o700);
    expect(statSync(deep).isDirectory()).toBe(true);
    expect(statSync(path.join(root, "a")).mode & 0o777).toBe(0o700);
    await makeDirectories(deep);
    await makeDirectories(`${deep}/`);
    // Several at once on the same path: each one ends with the folder there.
    await Promise.all([1, 2, 3].map(() => makeDirectories(path.join(root, "x", "y"))));
    expect(statSync(path.join(root, "x", "y")).isDirectory()).toBe(true);
  });

  it("refuses a file where a folder should be", async () => {
    writeFileSync(path.join(root, "file"), "");
    await expect(makeDirectories(path.join(root, "file"))).rejects.toMatchObject({
      code: "EEXIST",
    });
    await expect(makeDirectories(path.join(root, "file", "below"))).rejects.toMatchObject({
      code: "ENOTDIR",
    });
  });

  it("fails under /proc instead of looping as Node's recursive mkdir does", async () => {
    await expect(makeDirectories("/proc/self/roost-none/below")).rejects.toMatchObject({
      code: "ENOENT",
    });
    await expect(makeDirectories("/proc/roost-none")).rejects.toMatchObject({ code: "ENOENT" });
  }, 5000);
});
