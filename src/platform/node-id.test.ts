import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resolveNodeId } from "./node-id.ts";

describe("resolveNodeId", () => {
  const dirs: string[] = [];
  const dir = () => {
    const created = mkdtempSync(join(tmpdir(), "roost-node-id-"));
    dirs.push(created);
    return created;
  };
  afterEach(() => {
    for (const created of dirs.splice(0)) rmSync(created, { recursive: true, force: true });
  });

  it("makes an id once and keeps it across restarts; concurrent starts agree", async () => {
    const dataDir = dir();
    const [first, second] = await Promise.all([
      resolveNodeId(undefined, dataDir),
      resolveNodeId(undefined, dataDir),
    ]);
    expect(first).toMatch(/^node_[0-9a-f]{12}$/);
    expect(second).toBe(first);
    expect(await resolveNodeId(undefined, dataDir)).toBe(first);
    expect(await resolveNodeId(undefined, dir())).not.toBe(first);
  });

  it("a configured id wins and is not written; a damaged file is not used", async () => {
    const dataDir = dir();
    expect(await resolveNodeId("host-1", dataDir)).toBe("host-1");
    writeFileSync(join(dataDir, "node-id"), "../../etc\n");
    await expect(resolveNodeId(undefined, dataDir)).rejects.toThrow(
      /does not hold a node id.*ROOST_NODE_ID/,
    );
    expect(readFileSync(join(dataDir, "node-id"), "utf8")).toBe("../../etc\n");
  });
});
