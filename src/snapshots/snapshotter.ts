/**
 * Snapshots of a computer's durable disk: archived on sleep, restored on wake when the local copy
 * is missing or stale (ARCHITECTURE.md §7). Format, retention and restore semantics:
 * docs/decisions/0003-snapshots.md. Blob layout and the retention rules: manifest.ts.
 *
 * Invariants:
 *   N1 the manifest is the commit point: a generation exists once the manifest naming it is
 *      stored, and its archive and tar state are stored before that. A crash at any earlier point
 *      leaves only unreferenced blobs, removed by the next snapshot's garbage collection.
 *   N2 a restore never touches the local copy until the new tree is complete: every generation
 *      is extracted into an empty staging folder beside the target, checked (length, SHA-256,
 *      tar's and zstd's own checks), flushed to disk, and only then renamed into place. A failed
 *      restore removes the staging folder and leaves the target as it was.
 *   N3 the disk folder's marker file (`.roost-snapshot.json`, never archived) records which
 *      lineage and generation the tree was last archived as or restored from; it decides both
 *      `needsRestore` and whether the next snapshot may be incremental (manifest.ts `planNext`).
 *   N4 one operation at a time per computer within a snapshotter; across hosts the control plane
 *      keeps a computer on one host at a time, its home (computers/home-host.ts, HOME1: only the
 *      home snapshots, so it is the only writer of the manifest).
 */
import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { open, mkdir, mkdtemp, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { pipeline } from "node:stream/promises";
import { createWriteStream } from "node:fs";
import type { BlobStore } from "../blobs/index.ts";
import { RoostError, type ErrorCode } from "../errors/index.ts";
import { createArchive, extractArchive, markerFileName, markerTempName } from "./archive.ts";
import {
  archiveKey,
  chainTo,
  manifestKey,
  manifestSchema,
  markerSchema,
  planNext,
  retain,
  stateKey,
  type SnapshotGeneration,
  type SnapshotManifest,
  type SnapshotMarker,
} from "./manifest.ts";

export interface SnapshotterOptions {
  blobs: BlobStore;
  /** How many of the latest generations stay restorable (see manifest.ts M2, M3). @default 5 */
  keep?: number;
  /** zstd level, 1–19; 1–3 keep a 100 MB home under a second. @default 1 */
  compressionLevel?: number;
  /** zstd worker threads; 0 means one per core. @default 0 */
  compressionThreads?: number;
  /** Prefix of every key this snapshotter writes. @default "snapshots/" */
  prefix?: string;
  /** Paths relative to the disk folder that are never archived, e.g. ["tmp"]. @default [] */
  exclude?: readonly string[];
  /** Where tar's incremental state is kept while a snapshot runs. @default os.tmpdir() */
  workDir?: string;
  /** Flush a restored tree to disk (syncfs) before swapping it in. @default true */
  syncOnRestore?: boolean;
  /** @default Date.now */
  now?: () => number;
  /** Lineage ids of new manifests. @default crypto.randomUUID */
  newLineage?: () => string;
  /** Non-fatal problems (garbage collection). @default dropped */
  log?: (message: string) => void;
}

export interface SnapshotResult {
  generation: number;
  chain: number;
  kind: "full" | "incremental";
  /** Why this kind (e.g. "the chain has reached keep=5 generations"). */
  reason: string;
  /** Compressed archive size. */
  bytes: number;
  durationMs: number;
}

export interface RestoreResult {
  generation: number;
  /** Archives read (a full plus the incrementals after it). */
  archives: number;
  /** Compressed bytes read. */
  bytes: number;
  durationMs: number;
}

export interface Snapshotter {
  /** Archive `diskDir` as the computer's next generation (N1). The computer's processes must be stopped. */
  snapshot(
    computerId: string,
    diskDir: string,
    options?: { signal?: AbortSignal },
  ): Promise<SnapshotResult>;
  /** Replace `targetDir` with the latest generation, or `options.generation` if still kept (N2). */
  restore(
    computerId: string,
    targetDir: string,
    options?: { generation?: number; signal?: AbortSignal },
  ): Promise<RestoreResult>;
  latest(computerId: string): Promise<SnapshotGeneration | undefined>;
  /** The kept generations, oldest first. */
  generations(computerId: string): Promise<SnapshotGeneration[]>;
  /** True when a snapshot exists and `diskDir` is missing, has no marker of this lineage, or is older than the latest generation (N3). */
  needsRestore(computerId: string, diskDir: string): Promise<boolean>;
  /** Delete every snapshot of the computer (when it is destroyed). */
  remove(computerId: string): Promise<void>;
}

/** A snapshot operation failed; `retryAfterMs` is set when repeating it may help. */
export class SnapshotError extends RoostError {
  override readonly name = "SnapshotError";
  readonly computerId: string;
  constructor(
    code: ErrorCode,
    computerId: string,
    message: string,
    options: { cause?: unknown; retryAfterMs?: number } = {},
  ) {
    super(code, message, { ...options, details: { computerId } });
    this.computerId = computerId;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Retryable when the cause is: a blob store that is unavailable, or a tree that changed while read. */
function retryAfterOf(error: unknown): number | undefined {
  if (error instanceof RoostError) return error.retryAfterMs;
  if ((error as { changedWhileReading?: boolean } | undefined)?.changedWhileReading) return 1_000;
  return undefined;
}

async function sha256File(path: string): Promise<{ sha256: string; bytes: number }> {
  const data = await readFile(path);
  return { sha256: createHash("sha256").update(data).digest("hex"), bytes: data.length };
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}

async function writeFileDurably(path: string, temp: string, data: string): Promise<void> {
  const handle = await open(temp, "w", 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
}

async function fsyncDir(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** syncfs(2) of the filesystem holding `path`, through coreutils' `sync -f`. */
function syncFilesystem(path: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn("sync", ["--file-system", path], { stdio: "ignore" });
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0
        ? resolvePromise()
        : reject(new Error(`sync --file-system ${path} exited with ${code}`)),
    );
  });
}

export async function readMarker(diskDir: string): Promise<SnapshotMarker | undefined> {
  const text = await readFile(join(diskDir, markerFileName), "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const parsed = markerSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined; // unreadable marker: treated as none (a full snapshot, a restore if one exists)
  }
}

/** Create a snapshotter over `blobs`. */
export function createSnapshotter(options: SnapshotterOptions): Snapshotter {
  const { blobs } = options;
  const keep = options.keep ?? 5;
  const level = options.compressionLevel ?? 1;
  const threads = options.compressionThreads ?? 0;
  const prefix = options.prefix ?? "snapshots/";
  const exclude = options.exclude ?? [];
  const workDir = options.workDir ?? tmpdir();
  const syncOnRestore = options.syncOnRestore ?? true;
  const now = options.now ?? Date.now;
  const newLineage = options.newLineage ?? randomUUID;
  const log = options.log ?? (() => undefined);
  if (!Number.isInteger(keep) || keep < 1)
    throw new RoostError(
      "config_invalid",
      `snapshots: keep must be a whole number ≥ 1, got ${keep} (ROOST_SNAPSHOT_KEEP)`,
    );
  if (!Number.isInteger(level) || level < 1 || level > 19)
    throw new RoostError(
      "config_invalid",
      `snapshots: compressionLevel must be 1–19, got ${level}`,
    );
  for (const path of exclude) {
    if (
      path === "" ||
      path.startsWith("/") ||
      path.split("/").some((segment) => segment === ".." || segment === "." || segment === "")
    ) {
      throw new RoostError(
        "config_invalid",
        `snapshots: exclude path ${JSON.stringify(path)} must be relative to the disk folder, without "." or ".." segments`,
      );
    }
  }

  // N4: one operation at a time per computer.
  const queues = new Map<string, Promise<unknown>>();
  function exclusive<T>(computerId: string, run: () => Promise<T>): Promise<T> {
    const current = (queues.get(computerId) ?? Promise.resolve()).catch(() => undefined).then(run);
    const tail = current.catch(() => undefined);
    queues.set(computerId, tail);
    void tail.then(() => {
      if (queues.get(computerId) === tail) queues.delete(computerId);
    });
    return current;
  }

  function checkComputerId(computerId: string): void {
    if (!/^[A-Za-z0-9_-]{1,200}$/.test(computerId)) {
      throw new SnapshotError(
        "invalid_request",
        computerId,
        `snapshots: invalid computer id ${JSON.stringify(computerId)} (letters, digits, "_" and "-")`,
      );
    }
  }

  async function readManifest(computerId: string): Promise<SnapshotManifest | undefined> {
    const key = manifestKey(prefix, computerId);
    const stream = await blobs.get(key);
    if (stream === undefined) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
    let problem: string;
    try {
      const parsed = manifestSchema.safeParse(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      if (parsed.success && parsed.data.computerId === computerId) return parsed.data;
      problem = parsed.success
        ? "it names another computer"
        : parsed.error.issues
            .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
            .join("; ");
    } catch (error) {
      problem = messageOf(error);
    }
    throw new SnapshotError(
      "internal",
      computerId,
      `snapshots: the manifest ${key} is damaged (${problem}); restore it from a backup of the blob store, or delete it to start a new lineage`,
    );
  }

  async function writeMarker(diskDir: string, marker: SnapshotMarker): Promise<void> {
    await writeFileDurably(
      join(diskDir, markerFileName),
      join(diskDir, markerTempName),
      `${JSON.stringify(marker, null, 2)}\n`,
    );
  }

  /** Fetch the tar state stored with `generation`; false when it is missing or does not match the manifest. */
  async function downloadState(generation: SnapshotGeneration, path: string): Promise<boolean> {
    const stream = await blobs.get(generation.stateKey);
    if (stream === undefined) return false;
    await pipeline(stream, createWriteStream(path, { mode: 0o600 }));
    const { sha256, bytes } = await sha256File(path);
    return sha256 === generation.stateSha256 && bytes === generation.stateBytes;
  }

  /** N1: delete every blob of the computer the manifest does not name. Best effort. */
  async function collectGarbage(manifest: SnapshotManifest): Promise<void> {
    const referenced = new Set([manifestKey(prefix, manifest.computerId)]);
    for (const generation of manifest.generations) {
      referenced.add(generation.archiveKey);
      referenced.add(generation.stateKey);
    }
    try {
      for (const blob of await blobs.list(`${prefix}${manifest.computerId}/`)) {
        if (!referenced.has(blob.key)) await blobs.delete(blob.key);
      }
    } catch (error) {
      log(
        `snapshots: removing old generations of ${manifest.computerId} failed (the next snapshot retries): ${messageOf(error)}`,
      );
    }
  }

  async function snapshotNow(
    computerId: string,
    diskDir: string,
    signal: AbortSignal | undefined,
  ): Promise<SnapshotResult> {
    const started = now();
    const dir = resolve(diskDir);
    if (!(await isDirectory(dir))) {
      throw new SnapshotError(
        "invalid_request",
        computerId,
        `snapshot of computer ${computerId}: the disk folder ${dir} does not exist or is not a folder`,
      );
    }
    const manifest = await readManifest(computerId);
    const marker = await readMarker(dir);
    let plan = planNext(manifest, keep, marker);
    const last = manifest?.generations.at(-1);
    const generation = last ? last.generation + 1 : 0; // M1
    const work = await mkdtemp(join(workDir, "roost-snapshot-"));
    try {
      const stateFile = join(work, "state.snar");
      if (plan.kind === "incremental" && last && !(await downloadState(last, stateFile))) {
        await rm(stateFile, { force: true });
        plan = {
          kind: "full",
          reason: `the tar state of generation ${last.generation} is missing or damaged`,
        };
      }
      const chain = plan.kind === "full" || !last ? generation : last.chain;
      const archive = createArchive({
        sourceDir: dir,
        stateFile,
        level,
        threads,
        exclude,
        ...(signal ? { signal } : {}),
      });
      const aKey = archiveKey(prefix, computerId, generation);
      try {
        await blobs.put(aKey, archive.stream); // A1: resolves only if tar succeeded
        await archive.finished;
      } catch (error) {
        archive.kill();
        await archive.finished.catch(() => undefined);
        throw error;
      }
      const digest = archive.digest();
      const state = await sha256File(stateFile);
      const sKey = stateKey(prefix, computerId, generation);
      await blobs.put(sKey, { path: stateFile });
      const entry: SnapshotGeneration = {
        generation,
        chain,
        kind: plan.kind,
        archiveKey: aKey,
        archiveBytes: digest.bytes,
        archiveSha256: digest.sha256,
        stateKey: sKey,
        stateBytes: state.bytes,
        stateSha256: state.sha256,
        createdAt: new Date(started).toISOString(),
        durationMs: now() - started,
      };
      const { kept } = retain([...(manifest?.generations ?? []), entry], keep); // M3
      const next: SnapshotManifest = {
        version: 1,
        computerId,
        lineage: manifest?.lineage ?? newLineage(),
        generations: kept,
      };
      await blobs.put(
        manifestKey(prefix, computerId),
        Buffer.from(`${JSON.stringify(next, null, 2)}\n`),
      ); // N1: commit
      await writeMarker(dir, {
        version: 1,
        computerId,
        lineage: next.lineage,
        generation,
        chain,
        source: "snapshot",
        at: new Date(now()).toISOString(),
      }); // N3
      await collectGarbage(next);
      return {
        generation,
        chain,
        kind: plan.kind,
        reason: plan.reason,
        bytes: digest.bytes,
        durationMs: now() - started,
      };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /** Remove staging and displaced folders that a crashed restore of `base` left in `parent`. */
  async function removeLeftovers(parent: string, base: string): Promise<void> {
    for (const name of await readdir(parent)) {
      if (name.startsWith(`.${base}.restore-`) || name.startsWith(`.${base}.old-`)) {
        await rm(join(parent, name), { recursive: true, force: true });
      }
    }
  }

  /** N2: put the complete `staging` tree where `target` is, replacing it if present. */
  async function swapIntoPlace(staging: string, target: string): Promise<void> {
    const parent = dirname(target);
    if (await stat(target).catch(() => undefined)) {
      const displaced = join(parent, `.${basename(target)}.old-${randomUUID()}`);
      await rename(target, displaced);
      try {
        await rename(staging, target);
      } catch (error) {
        await rename(displaced, target);
        throw error;
      }
      await fsyncDir(parent);
      await rm(displaced, { recursive: true, force: true }).catch((error: unknown) =>
        log(`snapshots: removing ${displaced} failed: ${messageOf(error)}`),
      );
    } else {
      await rename(staging, target);
      await fsyncDir(parent);
    }
  }

  async function restoreNow(
    computerId: string,
    targetDir: string,
    wanted: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<RestoreResult> {
    const started = now();
    const manifest = await readManifest(computerId);
    const latest = manifest?.generations.at(-1);
    if (!manifest || !latest) {
      throw new SnapshotError(
        "not_found",
        computerId,
        `restore of computer ${computerId}: there is no snapshot of it in the blob store (${blobs.kind})`,
      );
    }
    const generation = wanted ?? latest.generation;
    const links = chainTo(manifest.generations, generation);
    if (!links) {
      const kept = manifest.generations.map((entry) => entry.generation);
      throw new SnapshotError(
        "not_found",
        computerId,
        `restore of computer ${computerId}: generation ${generation} is not kept (kept: ${kept.join(", ")})`,
      );
    }
    const target = resolve(targetDir);
    const parent = dirname(target);
    await mkdir(parent, { recursive: true });
    await removeLeftovers(parent, basename(target));
    const staging = await mkdtemp(join(parent, `.${basename(target)}.restore-`));
    try {
      for (const link of links) {
        try {
          const source = await blobs.get(link.archiveKey);
          if (source === undefined) throw new Error("the archive is missing from the blob store");
          await extractArchive({
            source,
            targetDir: staging,
            expectedSha256: link.archiveSha256,
            expectedBytes: link.archiveBytes,
            ...(signal ? { signal } : {}),
          });
        } catch (error) {
          throw new Error(
            `generation ${link.generation} (${link.archiveKey}): ${messageOf(error)}`,
            { cause: error },
          );
        }
      }
      await writeMarker(staging, {
        version: 1,
        computerId,
        lineage: manifest.lineage,
        generation,
        chain: links[0]!.chain,
        source: "restore",
        at: new Date(now()).toISOString(),
      });
      if (syncOnRestore) await syncFilesystem(staging);
      await swapIntoPlace(staging, target);
    } catch (error) {
      await rm(staging, { recursive: true, force: true }).catch(() => undefined);
      const retryAfterMs = retryAfterOf((error as Error).cause) ?? retryAfterOf(error);
      throw new SnapshotError(
        retryAfterMs === undefined ? "internal" : "unavailable",
        computerId,
        `restore of computer ${computerId} to generation ${generation} failed: ${messageOf(error)}; the local copy at ${target} was left as it was`,
        { cause: error, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
      );
    }
    return {
      generation,
      archives: links.length,
      bytes: links.reduce((sum, link) => sum + link.archiveBytes, 0),
      durationMs: now() - started,
    };
  }

  return {
    snapshot(computerId, diskDir, snapshotOptions = {}) {
      checkComputerId(computerId);
      return exclusive(computerId, () =>
        snapshotNow(computerId, diskDir, snapshotOptions.signal).catch((error: unknown) => {
          if (error instanceof SnapshotError) throw error;
          const retryAfterMs = retryAfterOf(error);
          throw new SnapshotError(
            retryAfterMs === undefined ? "internal" : "unavailable",
            computerId,
            `snapshot of computer ${computerId} failed: ${messageOf(error)}`,
            {
              cause: error,
              ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
            },
          );
        }),
      );
    },
    restore(computerId, targetDir, restoreOptions = {}) {
      checkComputerId(computerId);
      return exclusive(computerId, () =>
        restoreNow(computerId, targetDir, restoreOptions.generation, restoreOptions.signal),
      );
    },
    async latest(computerId) {
      checkComputerId(computerId);
      return (await readManifest(computerId))?.generations.at(-1);
    },
    async generations(computerId) {
      checkComputerId(computerId);
      return (await readManifest(computerId))?.generations ?? [];
    },
    async needsRestore(computerId, diskDir) {
      checkComputerId(computerId);
      const manifest = await readManifest(computerId);
      const latest = manifest?.generations.at(-1);
      if (!manifest || !latest) return false; // nothing to restore from
      const dir = resolve(diskDir);
      if (!(await isDirectory(dir))) return true;
      const marker = await readMarker(dir);
      if (!marker || marker.lineage !== manifest.lineage || marker.computerId !== computerId)
        return true; // N3, M4
      return marker.generation < latest.generation;
    },
    remove(computerId) {
      checkComputerId(computerId);
      return exclusive(computerId, async () => {
        await blobs.delete(manifestKey(prefix, computerId)); // first, so nothing names a deleted archive
        for (const blob of await blobs.list(`${prefix}${computerId}/`))
          await blobs.delete(blob.key);
      });
    },
  };
}
