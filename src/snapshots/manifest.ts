/**
 * What the blob store holds for one computer, and the pure rules that decide the next
 * generation's kind and which generations to keep (retention). Blob layout, under the
 * snapshotter's prefix (default `snapshots/`):
 *
 *   <prefix><computerId>/manifest.json        the list of generations (the commit point)
 *   <prefix><computerId>/g0000000007.tar.zst  generation 7's archive (GNU tar, zstd)
 *   <prefix><computerId>/g0000000007.snar     tar's --listed-incremental state after generation 7
 *
 * Invariants:
 *   M1 generations are numbered 0, 1, 2, … per lineage with no gaps; a chain is a full generation
 *      and the incrementals after it, and every generation records its chain (the number of the
 *      chain's full generation).
 *   M2 a chain never holds more than `keep` generations: when the latest chain has `keep`, the
 *      next snapshot is full (a new chain).
 *   M3 retention keeps exactly the chains that contain at least one of the last `keep`
 *      generations, so each of the last `keep` generations stays restorable; with M2 that is at
 *      most two chains (≤ 2·keep generations, two full archives).
 *   M4 the lineage id changes only when a manifest is created from nothing; a local copy whose
 *      marker names another lineage is not a continuation of this manifest.
 */
import { z } from "zod";

export const generationSchema = z.object({
  generation: z.number().int().nonnegative(),
  chain: z.number().int().nonnegative(),
  kind: z.enum(["full", "incremental"]),
  archiveKey: z.string(),
  archiveBytes: z.number().int().nonnegative(),
  archiveSha256: z.string().regex(/^[0-9a-f]{64}$/),
  stateKey: z.string(),
  stateBytes: z.number().int().nonnegative(),
  stateSha256: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.iso.datetime(),
  durationMs: z.number().nonnegative(),
});

/** One stored generation: an archive plus tar's incremental state after it. */
export type SnapshotGeneration = z.infer<typeof generationSchema>;

export const manifestSchema = z.object({
  version: z.literal(1),
  computerId: z.string(),
  lineage: z.string(),
  generations: z.array(generationSchema),
});

export type SnapshotManifest = z.infer<typeof manifestSchema>;

export const markerSchema = z.object({
  version: z.literal(1),
  computerId: z.string(),
  lineage: z.string(),
  generation: z.number().int().nonnegative(),
  chain: z.number().int().nonnegative(),
  /** "snapshot": the tree was archived as this generation and is its continuation. "restore": it was extracted from it. */
  source: z.enum(["snapshot", "restore"]),
  at: z.iso.datetime(),
});

/** The marker file kept in a disk folder (`.roost-snapshot.json`), never archived. */
export type SnapshotMarker = z.infer<typeof markerSchema>;

export function archiveKey(prefix: string, computerId: string, generation: number): string {
  return `${prefix}${computerId}/g${String(generation).padStart(10, "0")}.tar.zst`;
}

export function stateKey(prefix: string, computerId: string, generation: number): string {
  return `${prefix}${computerId}/g${String(generation).padStart(10, "0")}.snar`;
}

export function manifestKey(prefix: string, computerId: string): string {
  return `${prefix}${computerId}/manifest.json`;
}

export interface NextPlan {
  kind: "full" | "incremental";
  /** Why, for logs and tests. */
  reason: string;
}

/**
 * M2, and when an incremental is valid at all: only when the local copy is the very tree that
 * was archived as the latest generation (its marker says so), because tar's incremental state
 * describes that tree. A restored tree has new inodes and ctimes, so tar would archive all of it
 * anyway; it starts a new chain instead.
 */
export function planNext(
  manifest: SnapshotManifest | undefined,
  keep: number,
  marker: SnapshotMarker | undefined,
): NextPlan {
  const last = manifest?.generations.at(-1);
  if (!manifest || !last) return { kind: "full", reason: "first snapshot" };
  if (!marker) return { kind: "full", reason: "the local copy has no snapshot marker" };
  if (marker.lineage !== manifest.lineage || marker.computerId !== manifest.computerId) {
    return { kind: "full", reason: "the local copy belongs to another lineage" };
  }
  if (marker.generation !== last.generation) {
    return {
      kind: "full",
      reason: `the local copy is at generation ${marker.generation}, the latest is ${last.generation}`,
    };
  }
  if (marker.source !== "snapshot")
    return {
      kind: "full",
      reason: "the local copy was restored, not archived, at the latest generation",
    };
  const chainLength = manifest.generations.filter(
    (generation) => generation.chain === last.chain,
  ).length;
  if (chainLength >= keep)
    return { kind: "full", reason: `the chain has reached keep=${keep} generations` }; // M2
  return { kind: "incremental", reason: `continues chain ${last.chain}` };
}

/** M3: split generations into those to keep and those whose blobs can go. */
export function retain(
  generations: SnapshotGeneration[],
  keep: number,
): { kept: SnapshotGeneration[]; dropped: SnapshotGeneration[] } {
  const needed = new Set(generations.slice(-keep).map((generation) => generation.chain));
  return {
    kept: generations.filter((generation) => needed.has(generation.chain)),
    dropped: generations.filter((generation) => !needed.has(generation.chain)),
  };
}

/** The generations to extract, in order, to rebuild `generation`: its chain's full up to it. */
export function chainTo(
  generations: SnapshotGeneration[],
  generation: number,
): SnapshotGeneration[] | undefined {
  const target = generations.find((candidate) => candidate.generation === generation);
  if (!target) return undefined;
  const chain = generations
    .filter((candidate) => candidate.chain === target.chain && candidate.generation <= generation)
    .sort((a, b) => a.generation - b.generation);
  if (chain[0]?.kind !== "full" || chain[0].generation !== target.chain) return undefined;
  // M1: no gaps, or an incremental would be applied to the wrong base.
  if (chain.some((link, index) => link.generation !== target.chain + index)) return undefined;
  return chain;
}
