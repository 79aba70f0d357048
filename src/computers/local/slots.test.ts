/** Slot registry (S1–S3), on a temp registry folder (no root needed). */
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { createSlotRegistry, type SlotRegistry } from "./slots.ts";
import { makeTempDir } from "./testing/index.ts";

describe("slot registry", () => {
  let temp: { path: string; remove: () => Promise<void> };
  let now = 1_000_000;
  let registry: SlotRegistry;
  const computer = async (name: string) => {
    const root = path.join(temp.path, "computers", name);
    await mkdir(root, { recursive: true });
    return root;
  };

  beforeEach(async () => {
    temp = await makeTempDir("roost-slots-");
    registry = createSlotRegistry({
      dir: path.join(temp.path, "registry"),
      slots: 3,
      uidBase: 300_000,
      graceMs: 1000,
      now: () => now,
    });
  });
  afterEach(async () => {
    await temp.remove();
  });

  test("S1 S3 each computer gets its own slot and keeps it", async () => {
    const a = await computer("a");
    const b = await computer("b");
    const first = await registry.ensure(a, "a");
    expect(first).toEqual({ slot: 0, uid: 300_000, gid: 300_000, changed: true });
    expect(await registry.ensure(b, "b")).toMatchObject({ slot: 1, uid: 300_001 });
    expect(await registry.ensure(a, "a")).toEqual({ ...first, changed: false });
    expect(JSON.parse(await readFile(path.join(a, "local.json"), "utf8"))).toEqual({
      slot: 0,
      uid: 300_000,
      gid: 300_000,
    });
  });

  test("a full registry says so", async () => {
    for (const name of ["a", "b", "c"]) await registry.ensure(await computer(name), name);
    await expect(registry.ensure(await computer("d"), "d")).rejects.toThrow(
      /no free computer slot: all 3/,
    );
  });

  test("S2 a claim is taken over only when its computer is gone and the grace period has passed", async () => {
    const roots = [];
    for (const name of ["a", "b", "c"]) {
      roots.push(await computer(name));
      await registry.ensure(roots.at(-1)!, name);
    }
    await rm(roots[1]!, { recursive: true }); // b's folder deleted without destroy()
    const d = await computer("d");
    await expect(registry.ensure(d, "d")).rejects.toThrow(/no free computer slot/); // still within grace
    now += 2000;
    expect(await registry.ensure(d, "d")).toMatchObject({ slot: 1 });
    // The others are untouched.
    expect(await registry.ensure(roots[0]!, "a")).toMatchObject({ slot: 0, changed: false });
  });

  test("S3 a computer whose slot was taken (moved hosts) gets a new one and is told to re-own its files", async () => {
    const a = await computer("a");
    // a's folder arrives from another host, recording slot 0, which b holds here.
    const b = await computer("b");
    await registry.ensure(b, "b");
    await writeFile(
      path.join(a, "local.json"),
      JSON.stringify({ slot: 0, uid: 300_000, gid: 300_000 }),
    );
    expect(await registry.ensure(a, "a")).toEqual({
      slot: 1,
      uid: 300_001,
      gid: 300_001,
      changed: true,
    });
  });

  test("release frees the slot for the next computer", async () => {
    const a = await computer("a");
    await registry.ensure(a, "a");
    await registry.release(a);
    expect(await registry.ensure(await computer("b"), "b")).toMatchObject({ slot: 0 });
  });
});
