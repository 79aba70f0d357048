/**
 * Snapshot speed for a 100 MB home (≈5,000 files of mixed sizes, about half compressible text and
 * half random bytes): a full snapshot, an incremental after a one-file change, and a restore
 * (full + incrementals) from the blob store, with the local folder store and the fake S3 server.
 * Targets (issue 4): full ≤ 1 s, incremental ≤ 150 ms.
 *   node bench/snapshot.ts [--level 1] [--threads 0] [--runs 3]
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createFakeS3Server } from "../src/blobs/testing/fake-s3-server.ts";
import { createLocalBlobStore, createS3BlobStore, type BlobStore } from "../src/blobs/index.ts";
import { createSnapshotter } from "../src/snapshots/index.ts";

const { values } = parseArgs({
  options: {
    level: { type: "string", default: "1" },
    threads: { type: "string", default: "0" },
    runs: { type: "string", default: "3" },
  },
});
const level = Number(values.level);
const threads = Number(values.threads);
const runs = Number(values.runs);

const MB = 1_000_000;
/** Flush what earlier steps wrote, so each timed step pays only for its own writes. */
const settle = () => execFileSync("sync");
const median = (samples: number[]) =>
  [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const size = (bytes: number) =>
  bytes >= MB ? `${(bytes / MB).toFixed(1)} MB` : `${(bytes / 1000).toFixed(1)} KB`;

/** Deterministic pseudo-random numbers, so every run builds the same home. */
let seed = 42;
function random(): number {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
}

const words =
  "the of and to in is it that for on with as was at by an be this from or have not are but had they which you one were all we she when there can their been has more if will would who about out so up what into them some could than then other only its now like time over also".split(
    " ",
  );
// 8 MB of word soup: text files are slices of it (longer than zstd -1's match window, so files do not compress against each other much more than real text would).
const corpus = Buffer.from(
  Array.from({ length: 1_600_000 }, () => words[Math.floor(random() * words.length)]).join(" "),
);

function buildHome(root: string): { files: number; bytes: number; textFiles: string[] } {
  let files = 0;
  let bytes = 0;
  const textFiles: string[] = [];
  const folders = [
    "home/.cache/pip",
    "home/.config/chromium/Default",
    "home/.local/share",
    "home/Documents",
    "home/Downloads",
    "workspace/app/src",
    "workspace/app/node_modules/lib",
    "workspace/data",
    "workspace/notes",
    "worker",
  ];
  for (const folder of folders)
    for (let sub = 0; sub < 20; sub++)
      mkdirSync(join(root, folder, `d${sub}`), { recursive: true });
  const write = (fileSize: number) => {
    const folder = folders[Math.floor(random() * folders.length)]!;
    const path = join(
      root,
      folder,
      `d${Math.floor(random() * 20)}`,
      `f${files}.${random() < 0.5 ? "txt" : "bin"}`,
    );
    if (path.endsWith(".txt")) {
      const start = Math.floor(random() * (corpus.length - fileSize));
      writeFileSync(path, corpus.subarray(start, start + fileSize));
      textFiles.push(path);
    } else {
      writeFileSync(path, randomBytes(fileSize));
    }
    files++;
    bytes += fileSize;
  };
  for (let i = 0; i < 4000; i++) write(500 + Math.floor(random() * 7000)); // small: ≈ 16 MB
  for (let i = 0; i < 950; i++) write(10_000 + Math.floor(random() * 60_000)); // medium: ≈ 38 MB
  while (bytes < 100 * MB)
    write(Math.min(100 * MB - bytes, 400_000 + Math.floor(random() * 1_600_000))); // large
  return { files, bytes, textFiles };
}

async function measure(
  label: string,
  blobs: BlobStore,
  root: string,
  home: { files: number; bytes: number; textFiles: string[] },
  disk: string,
) {
  console.log(`\n${label}`);
  const snapshotter = createSnapshotter({
    blobs,
    compressionLevel: level,
    compressionThreads: threads,
    workDir: root,
    keep: 1000,
  });
  const full: number[] = [];
  let fullBytes = 0;
  for (let run = 0; run < runs; run++) {
    settle();
    const started = performance.now();
    const result = await snapshotter.snapshot(`cmp_full${run}`, disk);
    full.push(performance.now() - started);
    fullBytes = result.bytes;
  }
  console.log(
    `full snapshot: ${size(home.bytes)} (${home.files.toLocaleString("en")} files) in ${seconds(median(full))} → ${size(fullBytes)}   [runs: ${full.map(seconds).join(", ")}]`,
  );

  const incremental: number[] = [];
  let incrementalBytes = 0;
  await snapshotter.snapshot("cmp_main", disk);
  for (let run = 0; run < runs + 2; run++) {
    appendFileSync(home.textFiles[run]!, ` edited in run ${run}`);
    settle();
    const started = performance.now();
    const result = await snapshotter.snapshot("cmp_main", disk);
    incremental.push(performance.now() - started);
    if (result.kind !== "incremental")
      throw new Error(`expected an incremental, got ${result.kind}: ${result.reason}`);
    incrementalBytes = result.bytes;
  }
  console.log(
    `incremental snapshot (one file changed): ${Math.round(median(incremental))} ms → ${size(incrementalBytes)}   [runs: ${incremental.map((ms) => `${Math.round(ms)} ms`).join(", ")}]`,
  );

  for (const syncOnRestore of [true, false]) {
    const restorer = createSnapshotter({ blobs, syncOnRestore, workDir: root });
    const restores: number[] = [];
    let archives = 0;
    for (let run = 0; run < runs; run++) {
      // A fresh target each time, as on a new host. Nothing is deleted until the end: on ext4,
      // creating files soon after deleting many is slow (inode allocation skips recently
      // deleted inodes), which would charge the clean-up to the next restore.
      const target = join(root, `restored-${label.length}-${syncOnRestore}-${run}`);
      settle();
      const started = performance.now();
      archives = (await restorer.restore("cmp_main", target)).archives;
      restores.push(performance.now() - started);
    }
    console.log(
      `restore (full + ${archives - 1} incrementals${syncOnRestore ? ", flushed to disk" : ", not flushed"}): ${seconds(median(restores))}   [runs: ${restores.map(seconds).join(", ")}]`,
    );
  }
}

const root = mkdtempSync(join(tmpdir(), "roost-bench-snapshot-"));
try {
  const disk = join(root, "computer");
  const home = buildHome(disk);
  const version = (command: string) =>
    execFileSync(command, ["--version"], { encoding: "utf8" }).split("\n")[0];
  console.log(
    `${version("tar")}; ${version("zstd")}; zstd level ${level}, threads ${threads === 0 ? "one per core" : threads}; median of ${runs} runs`,
  );

  // The same work done by hand, under the same load: what tar and zstd alone cost on this machine.
  const raw = (script: string) => {
    settle();
    const started = performance.now();
    execFileSync("sh", ["-c", script], { cwd: root });
    return performance.now() - started;
  };
  const rawCreate: number[] = [];
  const rawExtract: number[] = [];
  for (let run = 0; run < runs; run++) {
    rawCreate.push(
      raw(
        `tar -C computer -cf - --format=posix --listed-incremental=raw-${run}.snar --numeric-owner . | zstd -${level} -q -T${threads} > raw-${run}.tar.zst`,
      ),
    );
  }
  for (let run = 0; run < runs; run++)
    rawExtract.push(
      raw(
        `mkdir raw-${run} && zstd -d -q -c raw-${run}.tar.zst | tar -C raw-${run} --listed-incremental=/dev/null -xf -`,
      ),
    );
  console.log(
    `baseline, tar | zstd by hand: create ${seconds(median(rawCreate))}, extract ${seconds(median(rawExtract))}   [create runs: ${rawCreate.map(seconds).join(", ")}; extract runs: ${rawExtract.map(seconds).join(", ")}]`,
  );

  await measure(
    "blob store: local folder",
    createLocalBlobStore(join(root, "blobs")),
    root,
    home,
    disk,
  );

  const server = await createFakeS3Server({ buckets: ["roost"] });
  const s3 = createS3BlobStore({
    endpoint: server.endpoint,
    bucket: "roost",
    accessKeyId: "bench",
    secretAccessKey: "bench",
  });
  try {
    await measure("blob store: S3 (fake server on 127.0.0.1, in memory)", s3, root, home, disk);
  } finally {
    await s3.close();
    await server.close();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
