import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  lchownSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createFakeS3Server } from "../blobs/testing/fake-s3-server.ts";
import { createLocalBlobStore, createS3BlobStore, type BlobStore } from "../blobs/index.ts";
import {
  createSnapshotter,
  readMarker,
  type Snapshotter,
  type SnapshotterOptions,
} from "./index.ts";
import { describeTree } from "./testing/tree.ts";

const asRoot = process.getuid?.() === 0;

interface Harness {
  root: string;
  disk: string;
  blobs: BlobStore;
  snapshotter: Snapshotter;
  make: (options?: Partial<SnapshotterOptions>) => Snapshotter;
}

type BlobKind = "local" | "s3";

async function withHarness(
  run: (harness: Harness) => Promise<void>,
  options: Omit<Partial<SnapshotterOptions>, "blobs"> & { store?: BlobKind } = {},
) {
  const root = mkdtempSync(join(tmpdir(), "roost-snapshots-"));
  const server =
    options.store === "s3" ? await createFakeS3Server({ buckets: ["roost"] }) : undefined;
  const blobs = server
    ? createS3BlobStore({
        endpoint: server.endpoint,
        bucket: "roost",
        accessKeyId: "a",
        secretAccessKey: "b",
        prefix: "test/",
        retryDelayMs: 5,
      })
    : createLocalBlobStore(join(root, "blobs"));
  const disk = join(root, "computers", "cmp_1");
  mkdirSync(disk, { recursive: true });
  const { store: _kind, ...snapshotterOptions } = options;
  const make = (extra: Partial<SnapshotterOptions> = {}) =>
    createSnapshotter({ blobs, workDir: root, ...snapshotterOptions, ...extra });
  try {
    await run({ root, disk, blobs, snapshotter: make(), make });
  } finally {
    await blobs.close();
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** A small home with every kind of entry a snapshot must keep. */
function buildTree(disk: string) {
  mkdirSync(join(disk, "home", ".config", "app"), { recursive: true });
  mkdirSync(join(disk, "home", "empty-dir"), { recursive: true });
  mkdirSync(join(disk, "workspace", "project", "src"), { recursive: true });
  mkdirSync(join(disk, "worker"), { recursive: true });
  writeFileSync(join(disk, "home", ".bashrc"), "export PS1='$ '\n");
  writeFileSync(
    join(disk, "home", ".config", "app", "settings.json"),
    JSON.stringify({ theme: "dark" }),
  );
  writeFileSync(join(disk, "workspace", "project", "README.md"), "# project\n".repeat(100));
  writeFileSync(join(disk, "workspace", "project", "src", "data.bin"), randomBytes(200_000));
  writeFileSync(join(disk, "workspace", "script.sh"), "#!/bin/sh\necho hi\n");
  chmodSync(join(disk, "workspace", "script.sh"), 0o755);
  writeFileSync(join(disk, "home", "secret"), "s3cr3t");
  chmodSync(join(disk, "home", "secret"), 0o600);
  mkdirSync(join(disk, "home", "locked"));
  writeFileSync(join(disk, "home", "locked", "inside"), "x");
  chmodSync(join(disk, "home", "locked"), 0o500);
  symlinkSync("project/README.md", join(disk, "workspace", "readme-link"));
  symlinkSync("/nonexistent/target", join(disk, "home", "dangling"));
  linkSync(join(disk, "workspace", "script.sh"), join(disk, "workspace", "script-hardlink.sh"));
  writeFileSync(join(disk, "worker", "done-log.jsonl"), '{"callId":"c1"}\n');
  utimesSync(
    join(disk, "home", ".bashrc"),
    new Date("2020-02-03T04:05:06.789Z"),
    new Date("2020-02-03T04:05:06.789Z"),
  );
  if (asRoot) {
    chownSync(join(disk, "home", ".bashrc"), 1234, 5678);
    chownSync(join(disk, "home", ".config"), 1234, 5678);
    lchownSync(join(disk, "home", "dangling"), 4321, 8765);
  }
}

const leftovers = (parent: string) =>
  readdirSync(parent).filter((name) => name.includes(".restore-") || name.includes(".old-"));

describe("snapshots", () => {
  it("a full snapshot restores the tree exactly: contents, modes, owners, symlinks, hard links, empty folders, mtimes", () =>
    withHarness(async ({ root, disk, snapshotter }) => {
      buildTree(disk);
      const before = describeTree(disk);
      const result = await snapshotter.snapshot("cmp_1", disk);
      expect(result).toMatchObject({
        generation: 0,
        chain: 0,
        kind: "full",
        reason: "first snapshot",
      });
      expect(result.bytes).toBeGreaterThan(0);
      const target = join(root, "restored", "cmp_1");
      const restored = await snapshotter.restore("cmp_1", target);
      expect(restored).toMatchObject({ generation: 0, archives: 1, bytes: result.bytes });
      expect(describeTree(target)).toEqual(before);
      if (asRoot)
        expect(before.find((line) => line.startsWith("home/.bashrc "))).toContain(" 1234:5678 ");
      expect(before.find((line) => line.startsWith("home/.bashrc "))).toMatch(
        / 1580702706789\d{6} /,
      ); // sub-second mtime kept
      expect(describeTree(disk)).toEqual(before); // archiving changed nothing but the marker
    }));

  it("incrementals carry edits, deletions, renames, mode changes and new hard links; every kept generation restores as it was", () =>
    withHarness(async ({ root, disk, snapshotter }) => {
      buildTree(disk);
      const states: string[][] = [];
      await snapshotter.snapshot("cmp_1", disk);
      states.push(describeTree(disk));

      // generation 1: edit, delete a file and a folder, rename a file and a folder, chmod, retarget a link
      writeFileSync(join(disk, "home", ".bashrc"), "export PS1='> '\n");
      unlinkSync(join(disk, "home", "secret"));
      rmSync(join(disk, "workspace", "project", "src"), { recursive: true });
      renameSync(
        join(disk, "workspace", "project", "README.md"),
        join(disk, "workspace", "project", "README.txt"),
      );
      renameSync(join(disk, "home", ".config"), join(disk, "home", ".config-renamed"));
      chmodSync(join(disk, "workspace", "script.sh"), 0o700);
      unlinkSync(join(disk, "workspace", "readme-link"));
      symlinkSync("project/README.txt", join(disk, "workspace", "readme-link"));
      mkdirSync(join(disk, "home", "new-empty"));
      const g1 = await snapshotter.snapshot("cmp_1", disk);
      expect(g1).toMatchObject({ generation: 1, chain: 0, kind: "incremental" });
      states.push(describeTree(disk));

      // generation 2: a file replaced by an older one under the same name, a new hard link, a file turned folder
      writeFileSync(join(disk, "home", "old-file"), "old content");
      utimesSync(join(disk, "home", "old-file"), new Date("2001-01-01"), new Date("2001-01-01"));
      renameSync(join(disk, "home", "old-file"), join(disk, "home", ".bashrc"));
      linkSync(join(disk, "worker", "done-log.jsonl"), join(disk, "worker", "done-log.link"));
      unlinkSync(join(disk, "home", "dangling"));
      mkdirSync(join(disk, "home", "dangling"));
      writeFileSync(join(disk, "home", "dangling", "now-a-folder"), "f");
      const g2 = await snapshotter.snapshot("cmp_1", disk);
      expect(g2).toMatchObject({ generation: 2, chain: 0, kind: "incremental" });
      states.push(describeTree(disk));

      for (const generation of [0, 1, 2]) {
        const target = join(root, `restored-${generation}`);
        expect((await snapshotter.restore("cmp_1", target, { generation })).archives).toBe(
          generation + 1,
        );
        expect(describeTree(target), `generation ${generation}`).toEqual(states[generation]);
      }
      // Restoring over an existing copy replaces it entirely (extra files vanish).
      const target = join(root, "restored-1");
      writeFileSync(join(target, "stray"), "x");
      await snapshotter.restore("cmp_1", target);
      expect(describeTree(target)).toEqual(states[2]);
      expect(leftovers(root)).toEqual([]);
    }));

  it("an incremental after a one-file change stores little", () =>
    withHarness(async ({ disk, snapshotter }) => {
      buildTree(disk);
      for (let i = 0; i < 200; i++)
        writeFileSync(join(disk, "workspace", `file-${i}.bin`), randomBytes(10_000));
      const full = await snapshotter.snapshot("cmp_1", disk);
      writeFileSync(join(disk, "home", ".bashrc"), "changed\n");
      const incremental = await snapshotter.snapshot("cmp_1", disk);
      expect(incremental.kind).toBe("incremental");
      expect(full.bytes).toBeGreaterThan(2_000_000);
      expect(incremental.bytes).toBeLessThan(20_000);
    }));

  for (const kind of ["local", "s3"] as const) {
    it(`host lost: deleting the local copy, then restoring from the blob store (${kind})`, () =>
      withHarness(
        async ({ root, disk, make }) => {
          buildTree(disk);
          const first = make();
          await first.snapshot("cmp_1", disk);
          writeFileSync(join(disk, "workspace", "later.txt"), "work before sleep");
          await first.snapshot("cmp_1", disk);
          const expected = describeTree(disk);
          rmSync(disk, { recursive: true });

          // A fresh snapshotter (another host): it knows only the blob store.
          const other = make({ workDir: mkdtempSync(join(root, "other-host-")) });
          expect(await other.needsRestore("cmp_1", disk)).toBe(true);
          expect(await other.restore("cmp_1", disk)).toMatchObject({ generation: 1, archives: 2 });
          expect(describeTree(disk)).toEqual(expected);
          expect(await other.needsRestore("cmp_1", disk)).toBe(false);
          expect(await readMarker(disk)).toMatchObject({
            computerId: "cmp_1",
            generation: 1,
            source: "restore",
          });

          // The restored tree has new inodes and ctimes: the next snapshot starts a new chain.
          writeFileSync(join(disk, "workspace", "after-move.txt"), "x");
          expect(await other.snapshot("cmp_1", disk)).toMatchObject({
            generation: 2,
            chain: 2,
            kind: "full",
          });
          expect(await other.snapshot("cmp_1", disk)).toMatchObject({
            generation: 3,
            chain: 2,
            kind: "incremental",
          });
        },
        { store: kind },
      ));
  }

  it("retention keeps the last N generations restorable and deletes chains no longer needed", () =>
    withHarness(
      async ({ root, disk, blobs, snapshotter }) => {
        buildTree(disk);
        const states = new Map<number, string[]>();
        const kinds: string[] = [];
        for (let generation = 0; generation < 8; generation++) {
          writeFileSync(join(disk, "workspace", `step-${generation}.txt`), `step ${generation}`);
          if (generation > 0) unlinkSync(join(disk, "workspace", `step-${generation - 1}.txt`));
          const result = await snapshotter.snapshot("cmp_1", disk);
          kinds.push(`${result.generation}:${result.kind}@${result.chain}`);
          states.set(generation, describeTree(disk));
        }
        // keep=3: chains of at most 3 generations; a new full when the chain is full.
        expect(kinds).toEqual([
          "0:full@0",
          "1:incremental@0",
          "2:incremental@0",
          "3:full@3",
          "4:incremental@3",
          "5:incremental@3",
          "6:full@6",
          "7:incremental@6",
        ]);
        // The last 3 (5, 6, 7) need chains 3 and 6; chain 0 is gone.
        expect(
          (await snapshotter.generations("cmp_1")).map((generation) => generation.generation),
        ).toEqual([3, 4, 5, 6, 7]);
        const keys = (await blobs.list("snapshots/cmp_1/")).map((blob) =>
          blob.key.replace("snapshots/cmp_1/", ""),
        );
        expect(keys).toEqual([
          "g0000000003.snar",
          "g0000000003.tar.zst",
          "g0000000004.snar",
          "g0000000004.tar.zst",
          "g0000000005.snar",
          "g0000000005.tar.zst",
          "g0000000006.snar",
          "g0000000006.tar.zst",
          "g0000000007.snar",
          "g0000000007.tar.zst",
          "manifest.json",
        ]);
        for (const generation of [5, 6, 7]) {
          const target = join(root, `restored-${generation}`);
          await snapshotter.restore("cmp_1", target, { generation });
          expect(describeTree(target)).toEqual(states.get(generation));
        }
        await expect(
          snapshotter.restore("cmp_1", join(root, "r2"), { generation: 2 }),
        ).rejects.toMatchObject({
          code: "not_found",
          message: expect.stringContaining(
            "generation 2 is not kept (kept: 3, 4, 5, 6, 7)",
          ) as unknown,
        });
        // One more: chain 6 then holds the last 3 (6, 7, 8) and chain 3 goes.
        await snapshotter.snapshot("cmp_1", disk);
        expect(
          (await snapshotter.generations("cmp_1")).map((generation) => generation.generation),
        ).toEqual([6, 7, 8]);
        expect((await blobs.list("snapshots/cmp_1/")).length).toBe(7);
      },
      { keep: 3 },
    ));

  it("keep=1: every snapshot is full and replaces the previous one", () =>
    withHarness(
      async ({ disk, blobs, snapshotter }) => {
        buildTree(disk);
        await snapshotter.snapshot("cmp_1", disk);
        expect(await snapshotter.snapshot("cmp_1", disk)).toMatchObject({
          generation: 1,
          kind: "full",
        });
        expect((await blobs.list("snapshots/cmp_1/")).map((blob) => blob.key)).toEqual([
          "snapshots/cmp_1/g0000000001.snar",
          "snapshots/cmp_1/g0000000001.tar.zst",
          "snapshots/cmp_1/manifest.json",
        ]);
      },
      { keep: 1 },
    ));

  it("needsRestore: only when a snapshot exists and the local copy is missing, unmarked, of another lineage or older", () =>
    withHarness(async ({ root, disk, snapshotter }) => {
      buildTree(disk);
      expect(await snapshotter.needsRestore("cmp_1", disk)).toBe(false); // nothing to restore from
      expect(await snapshotter.latest("cmp_1")).toBeUndefined();
      await snapshotter.snapshot("cmp_1", disk);
      expect(await snapshotter.needsRestore("cmp_1", disk)).toBe(false);
      writeFileSync(join(disk, "home", "unsaved"), "work since the snapshot"); // newer than the snapshot: keep it
      expect(await snapshotter.needsRestore("cmp_1", disk)).toBe(false);

      // Another copy (another host) moves the computer on to generation 1: this copy is stale.
      const elsewhere = join(root, "elsewhere");
      await snapshotter.restore("cmp_1", elsewhere);
      writeFileSync(join(elsewhere, "home", "from-elsewhere"), "x");
      await snapshotter.snapshot("cmp_1", elsewhere);
      expect((await snapshotter.latest("cmp_1"))?.generation).toBe(1);
      expect(await snapshotter.needsRestore("cmp_1", disk)).toBe(true);
      expect(await snapshotter.needsRestore("cmp_1", elsewhere)).toBe(false);

      // A folder without a marker (a fresh, empty disk the provider just created) needs one too.
      const fresh = join(root, "fresh");
      mkdirSync(fresh);
      expect(await snapshotter.needsRestore("cmp_1", fresh)).toBe(true);
      expect(await snapshotter.needsRestore("cmp_1", join(root, "missing"))).toBe(true);

      // A marker from another lineage (the blob store was reset since) does not count.
      const marker = JSON.parse(
        readFileSync(join(elsewhere, ".roost-snapshot.json"), "utf8"),
      ) as Record<string, unknown>;
      writeFileSync(
        join(elsewhere, ".roost-snapshot.json"),
        JSON.stringify({ ...marker, lineage: "another" }),
      );
      expect(await snapshotter.needsRestore("cmp_1", elsewhere)).toBe(true);
      writeFileSync(join(elsewhere, ".roost-snapshot.json"), "{ not json");
      expect(await snapshotter.needsRestore("cmp_1", elsewhere)).toBe(true);

      await snapshotter.restore("cmp_1", disk);
      expect(await snapshotter.needsRestore("cmp_1", disk)).toBe(false);
      expect(existsSync(join(disk, "home", "unsaved"))).toBe(false); // the snapshot wins over a stale copy
      expect(existsSync(join(disk, "home", "from-elsewhere"))).toBe(true);
    }));

  for (const kind of ["local", "s3"] as const) {
    it(`corrupt blob: the restore fails with a clear error and the local copy stays intact (${kind})`, () =>
      withHarness(
        async ({ root, disk, blobs, snapshotter }) => {
          buildTree(disk);
          await snapshotter.snapshot("cmp_1", disk);
          writeFileSync(join(disk, "home", "g1"), randomBytes(50_000));
          const g1 = await snapshotter.snapshot("cmp_1", disk);
          const local = join(root, "local-copy");
          await snapshotter.restore("cmp_1", local, { generation: 0 });
          writeFileSync(join(local, "home", "precious"), "unsaved local work");
          const before = describeTree(local);

          const key = (await snapshotter.latest("cmp_1"))!.archiveKey;
          const chunks: Buffer[] = [];
          for await (const chunk of (await blobs.get(key))!)
            chunks.push(Buffer.from(chunk as Uint8Array));
          const archive = Buffer.concat(chunks);
          archive.fill(0x41, Math.floor(archive.length / 2), Math.floor(archive.length / 2) + 64);
          await blobs.put(key, archive);

          const failure = await snapshotter
            .restore("cmp_1", local)
            .catch((error: unknown) => error);
          expect(failure).toMatchObject({
            name: "SnapshotError",
            code: "internal",
            computerId: "cmp_1",
          });
          expect((failure as Error).message).toMatch(
            new RegExp(
              `^restore of computer cmp_1 to generation 1 failed: generation 1 \\(snapshots/cmp_1/g0000000001\\.tar\\.zst\\): .+; the local copy at ${local} was left as it was$`,
            ),
          );
          expect(describeTree(local)).toEqual(before);
          expect(leftovers(root)).toEqual([]);
          expect(g1.kind).toBe("incremental");

          // A whole, valid archive of the wrong content is caught by the SHA-256 check, after extraction.
          const g0Key = (await snapshotter.generations("cmp_1"))[0]!.archiveKey;
          const g0 = (await blobs.get(g0Key))!;
          await blobs.put(key, g0);
          await expect(snapshotter.restore("cmp_1", local)).rejects.toThrow(
            /SHA-256|bytes, the manifest says/,
          );
          expect(describeTree(local)).toEqual(before);

          // A missing archive: same guarantee.
          await blobs.delete(key);
          await expect(snapshotter.restore("cmp_1", local)).rejects.toThrow(
            /missing from the blob store.*left as it was/,
          );
          expect(describeTree(local)).toEqual(before);
          expect(leftovers(root)).toEqual([]);
        },
        { store: kind },
      ));
  }

  it("a restore interrupted by a crash leaves staging folders that the next restore clears", () =>
    withHarness(async ({ root, disk, snapshotter }) => {
      buildTree(disk);
      await snapshotter.snapshot("cmp_1", disk);
      const target = join(root, "t");
      mkdirSync(join(root, ".t.restore-abc123", "junk"), { recursive: true });
      mkdirSync(join(root, ".t.old-def456"), { recursive: true });
      mkdirSync(join(root, ".other.restore-x"), { recursive: true });
      await snapshotter.restore("cmp_1", target);
      expect(readdirSync(root).filter((name) => name.startsWith("."))).toEqual([
        ".other.restore-x",
      ]);
    }));

  it("the marker and excluded paths are never archived", () =>
    withHarness(
      async ({ root, disk, snapshotter }) => {
        buildTree(disk);
        mkdirSync(join(disk, "tmp"));
        writeFileSync(join(disk, "tmp", "scratch"), "x");
        mkdirSync(join(disk, "home", "tmp"));
        writeFileSync(join(disk, "home", "tmp", "kept"), "a nested tmp is not excluded");
        writeFileSync(
          join(disk, "home", ".roost-snapshot.json"),
          "a user's own file of that name is kept",
        );
        await snapshotter.snapshot("cmp_1", disk);
        const target = join(root, "restored");
        await snapshotter.restore("cmp_1", target);
        expect(existsSync(join(target, "tmp"))).toBe(false);
        expect(readFileSync(join(target, "home", "tmp", "kept"), "utf8")).toBe(
          "a nested tmp is not excluded",
        );
        expect(readFileSync(join(target, "home", ".roost-snapshot.json"), "utf8")).toBe(
          "a user's own file of that name is kept",
        );
        expect(describeTree(target)).toEqual(describeTree(disk, { skip: ["tmp"] }));
        expect(await readMarker(target)).toMatchObject({ source: "restore", generation: 0 });
      },
      { exclude: ["tmp"] },
    ));

  it("a lost tar state falls back to a full snapshot", () =>
    withHarness(async ({ root, disk, blobs, snapshotter }) => {
      buildTree(disk);
      const g0 = await snapshotter.snapshot("cmp_1", disk);
      await blobs.delete((await snapshotter.latest("cmp_1"))!.stateKey);
      writeFileSync(join(disk, "home", "x"), "x");
      const g1 = await snapshotter.snapshot("cmp_1", disk);
      expect(g1).toMatchObject({
        generation: 1,
        chain: 1,
        kind: "full",
        reason: "the tar state of generation 0 is missing or damaged",
      });
      expect(g0.kind).toBe("full");
      const target = join(root, "restored");
      await snapshotter.restore("cmp_1", target);
      expect(describeTree(target)).toEqual(describeTree(disk));
    }));

  it("clear errors: no snapshot to restore, a missing disk folder, bad ids and options", () =>
    withHarness(async ({ root, blobs, snapshotter }) => {
      await expect(snapshotter.restore("cmp_1", join(root, "x"))).rejects.toMatchObject({
        code: "not_found",
        message: "restore of computer cmp_1: there is no snapshot of it in the blob store (local)",
      });
      await expect(snapshotter.snapshot("cmp_1", join(root, "nope"))).rejects.toMatchObject({
        code: "invalid_request",
        message: expect.stringContaining("does not exist") as unknown,
      });
      expect(() => snapshotter.snapshot("../evil", root)).toThrow(/invalid computer id/);
      expect(() => createSnapshotter({ blobs, keep: 0 })).toThrow(
        /keep must be a whole number ≥ 1.*ROOST_SNAPSHOT_KEEP/,
      );
      expect(() => createSnapshotter({ blobs, exclude: ["../x"] })).toThrow(/exclude path/);
      expect(existsSync(join(root, "x"))).toBe(false);
    }));

  it("a damaged manifest stops snapshots with an error that says what to do", () =>
    withHarness(async ({ disk, blobs, snapshotter }) => {
      buildTree(disk);
      await blobs.put("snapshots/cmp_1/manifest.json", Buffer.from("{}"));
      await expect(snapshotter.snapshot("cmp_1", disk)).rejects.toThrow(
        /manifest snapshots\/cmp_1\/manifest.json is damaged.*delete it to start a new lineage/,
      );
    }));

  it("an aborted snapshot stores nothing and the next one is a clean first generation", () =>
    withHarness(async ({ disk, blobs, snapshotter }) => {
      buildTree(disk);
      await expect(
        snapshotter.snapshot("cmp_1", disk, { signal: AbortSignal.abort() }),
      ).rejects.toMatchObject({ name: "SnapshotError" });
      expect(await blobs.list("snapshots/")).toEqual([]);
      expect(await snapshotter.snapshot("cmp_1", disk)).toMatchObject({
        generation: 0,
        kind: "full",
      });
    }));

  it("a blob store failing mid-upload: the snapshot fails, tar is stopped, nothing is committed", () =>
    withHarness(async ({ disk, blobs, make }) => {
      buildTree(disk);
      for (let i = 0; i < 50; i++)
        writeFileSync(join(disk, "workspace", `big-${i}.bin`), randomBytes(100_000));
      let failing = true;
      const flaky: BlobStore = {
        ...blobs,
        async put(key, body) {
          if (failing && key.endsWith(".tar.zst")) {
            // Read a little, then give up, as a dropped connection would.
            for await (const _chunk of body as AsyncIterable<Uint8Array>) break;
            throw new Error("connection reset by peer");
          }
          return blobs.put(key, body);
        },
      };
      const snapshotter = make({ blobs: flaky });
      await expect(snapshotter.snapshot("cmp_1", disk)).rejects.toThrow(
        /snapshot of computer cmp_1 failed: connection reset by peer/,
      );
      expect(await blobs.list("snapshots/")).toEqual([]);
      expect(await readMarker(disk)).toBeUndefined();
      failing = false;
      expect(await snapshotter.snapshot("cmp_1", disk)).toMatchObject({
        generation: 0,
        kind: "full",
      });
    }));

  it("operations on one computer run one at a time", () =>
    withHarness(async ({ disk, snapshotter }) => {
      buildTree(disk);
      const results = await Promise.all([
        snapshotter.snapshot("cmp_1", disk),
        snapshotter.snapshot("cmp_1", disk),
        snapshotter.snapshot("cmp_1", disk),
      ]);
      expect(results.map((result) => `${result.generation}:${result.kind}`)).toEqual([
        "0:full",
        "1:incremental",
        "2:incremental",
      ]);
    }));

  it("remove deletes every blob of the computer and nothing else", () =>
    withHarness(async ({ root, disk, blobs, snapshotter }) => {
      buildTree(disk);
      await snapshotter.snapshot("cmp_1", disk);
      const other = join(root, "computers", "cmp_10");
      mkdirSync(other);
      writeFileSync(join(other, "f"), "x");
      await snapshotter.snapshot("cmp_10", other);
      await snapshotter.remove("cmp_1");
      expect(await snapshotter.latest("cmp_1")).toBeUndefined();
      expect(
        (await blobs.list("snapshots/")).every((blob) => blob.key.startsWith("snapshots/cmp_10/")),
      ).toBe(true);
      expect((await snapshotter.latest("cmp_10"))?.generation).toBe(0);
    }));
});
