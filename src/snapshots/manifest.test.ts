import { describe, expect, it } from "vitest";
import {
  chainTo,
  planNext,
  retain,
  type SnapshotGeneration,
  type SnapshotManifest,
  type SnapshotMarker,
} from "./manifest.ts";

function generation(number: number, chain: number): SnapshotGeneration {
  return {
    generation: number,
    chain,
    kind: number === chain ? "full" : "incremental",
    archiveKey: `a${number}`,
    archiveBytes: 1,
    archiveSha256: "0".repeat(64),
    stateKey: `s${number}`,
    stateBytes: 1,
    stateSha256: "0".repeat(64),
    createdAt: new Date(0).toISOString(),
    durationMs: 1,
  };
}

/** Generations as the snapshotter makes them with `keep`, one snapshot after another. */
function history(count: number, keep: number): SnapshotGeneration[] {
  const all: SnapshotGeneration[] = [];
  for (let number = 0; number < count; number++) {
    const last = all.at(-1);
    const chainLength = last ? all.filter((entry) => entry.chain === last.chain).length : 0;
    all.push(generation(number, !last || chainLength >= keep ? number : last.chain));
  }
  return all;
}

const manifest = (generations: SnapshotGeneration[]): SnapshotManifest => ({
  version: 1,
  computerId: "c",
  lineage: "L",
  generations,
});
const marker = (overrides: Partial<SnapshotMarker> = {}): SnapshotMarker => ({
  version: 1,
  computerId: "c",
  lineage: "L",
  generation: 2,
  chain: 0,
  source: "snapshot",
  at: new Date(0).toISOString(),
  ...overrides,
});

describe("planNext", () => {
  const three = manifest(history(3, 5));
  it("incremental only when the local copy is the tree archived as the latest generation (M2)", () => {
    expect(planNext(undefined, 5, undefined).kind).toBe("full");
    expect(planNext(three, 5, marker()).kind).toBe("incremental");
    expect(planNext(three, 5, undefined).reason).toBe("the local copy has no snapshot marker");
    expect(planNext(three, 5, marker({ generation: 1 })).kind).toBe("full");
    expect(planNext(three, 5, marker({ source: "restore" })).kind).toBe("full");
    expect(planNext(three, 5, marker({ lineage: "other" })).kind).toBe("full");
    expect(planNext(three, 3, marker())).toEqual({
      kind: "full",
      reason: "the chain has reached keep=3 generations",
    });
  });
});

describe("retain (M3)", () => {
  it("keeps the chains holding the last `keep` generations, at most two", () => {
    for (const keep of [1, 2, 3, 5]) {
      for (let count = 1; count < 20; count++) {
        const all = history(count, keep);
        const { kept, dropped } = retain(all, keep);
        const chains = new Set(kept.map((entry) => entry.chain));
        expect(chains.size).toBeLessThanOrEqual(2);
        expect(kept.length).toBeLessThanOrEqual(2 * keep);
        expect(kept.length + dropped.length).toBe(all.length);
        // Every one of the last `keep` generations is still restorable from what is kept.
        for (const last of all.slice(-keep)) expect(chainTo(kept, last.generation)).toBeDefined();
      }
    }
    expect(retain(history(8, 3), 3).kept.map((entry) => entry.generation)).toEqual([3, 4, 5, 6, 7]);
    expect(retain(history(9, 3), 3).kept.map((entry) => entry.generation)).toEqual([6, 7, 8]);
  });
});

describe("chainTo", () => {
  it("is the full and the incrementals up to the generation, and nothing when a link is missing (M1)", () => {
    const all = history(7, 4);
    expect(chainTo(all, 6)?.map((entry) => entry.generation)).toEqual([4, 5, 6]);
    expect(chainTo(all, 4)?.map((entry) => entry.generation)).toEqual([4]);
    expect(chainTo(all, 9)).toBeUndefined();
    expect(
      chainTo(
        all.filter((entry) => entry.generation !== 5),
        6,
      ),
    ).toBeUndefined();
    expect(
      chainTo(
        all.filter((entry) => entry.generation !== 4),
        6,
      ),
    ).toBeUndefined();
  });
});
