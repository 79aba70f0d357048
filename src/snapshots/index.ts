/**
 * Snapshots of computers' durable disks to a BlobStore: incremental GNU tar + zstd generations,
 * restored atomically. Design: docs/decisions/0003-snapshots.md.
 */
export { detectSnapshotTools, markerFileName } from "./archive.ts";
export { type SnapshotGeneration, type SnapshotManifest, type SnapshotMarker } from "./manifest.ts";
export {
  createSnapshotter,
  readMarker,
  SnapshotError,
  type RestoreResult,
  type SnapshotResult,
  type Snapshotter,
  type SnapshotterOptions,
} from "./snapshotter.ts";
