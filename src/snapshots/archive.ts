/**
 * The archive format: GNU tar with `--listed-incremental`, compressed by zstd (tar runs zstd as
 * its compress program, so the uncompressed stream never passes through Node, and tar reports a
 * failing zstd as its own failure).
 *
 * Invariants:
 *   A1 an archive stream ends only after tar (and so zstd) exited 0; any failure errors the
 *      stream instead, so a consumer never stores a truncated archive as if it were whole.
 *   A2 archives keep numeric owners, modes, mtimes (to the nanosecond), symlinks, hard links and
 *      empty folders;
 *      extraction uses `--listed-incremental=/dev/null`, so files deleted between generations
 *      are deleted on extraction too.
 *   A3 the marker file (and its temporary) are never archived: anchored excludes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { PassThrough, Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

export const markerFileName = ".roost-snapshot.json";
export const markerTempName = ".roost-snapshot.json.tmp";

const toolEnv = { ...process.env, LC_ALL: "C" };

function collectStderr(child: ChildProcess): () => string {
  let text = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    if (text.length < 16_384) text += chunk;
  });
  return () => text.trim().split("\n").slice(-5).join("; ");
}

function exited(child: ChildProcess, what: string, stderr: () => string): Promise<void> {
  return new Promise((resolve, reject) => {
    child.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        error.code === "ENOENT"
          ? new Error(
              `${what}: GNU tar and zstd are required for snapshots (Debian: apt-get install tar zstd)`,
            )
          : error,
      );
    });
    child.once("close", (code, signal) => {
      if (code === 0) resolve();
      else if (signal)
        reject(
          new Error(`${what}: tar was stopped by ${signal}${stderr() ? `: ${stderr()}` : ""}`),
        );
      else if (code === 1)
        reject(
          Object.assign(
            new Error(
              `${what}: files changed while they were being read (${stderr()}); stop the computer's processes before snapshotting`,
            ),
            { changedWhileReading: true },
          ),
        );
      else reject(new Error(`${what}: tar exited with ${code}: ${stderr() || "no message"}`));
    });
  });
}

export interface CreateArchiveOptions {
  sourceDir: string;
  /** tar's incremental state: absent or empty for a full archive, the previous state for an incremental; updated in place. */
  stateFile: string;
  /** zstd level. */
  level: number;
  /** zstd worker threads; 0 means one per core. */
  threads: number;
  /** Paths relative to `sourceDir` left out of the archive (anchored: `tmp` is only `<sourceDir>/tmp`). */
  exclude: readonly string[];
  signal?: AbortSignal;
}

export interface RunningArchive {
  /** The compressed archive (A1). */
  stream: Readable;
  /** SHA-256 (hex) and length of what `stream` delivered; complete once it ended. */
  digest(): { sha256: string; bytes: number };
  /** Settles with tar's outcome. */
  finished: Promise<void>;
  /** Stop tar (when the consumer gave up). */
  kill(): void;
}

/** Start archiving `sourceDir` (A1–A3). */
export function createArchive(options: CreateArchiveOptions): RunningArchive {
  const args = [
    "--create",
    "--file=-",
    `--directory=${options.sourceDir}`,
    `--listed-incremental=${options.stateFile}`,
    "--no-check-device", // a disk re-attached on another host keeps its inodes but not its device number
    "--numeric-owner",
    // POSIX (pax) headers keep mtimes to the nanosecond (the default GNU format keeps whole
    // seconds, which can confuse make and other mtime-comparing tools); atime and ctime are
    // not restorable anyway, so they are left out.
    "--format=posix",
    "--pax-option=delete=atime,delete=ctime",
    `--use-compress-program=zstd -${options.level} -q -T${options.threads}`,
    "--anchored",
    `--exclude=./${markerFileName}`, // A3
    `--exclude=./${markerTempName}`,
    ...options.exclude.map((path) => `--exclude=./${path}`),
    ".",
  ];
  const tar = spawn("tar", args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: toolEnv,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const stderr = collectStderr(tar);
  const finished = exited(tar, `archiving ${options.sourceDir}`, stderr);
  const hash = createHash("sha256");
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  const output = new PassThrough();
  // A consumer that gave up (a failed upload) no longer listens; the error still reaches anyone
  // reading, and must not become an uncaught 'error' event.
  output.on("error", () => undefined);
  counter.pipe(output, { end: false });
  tar.stdout.pipe(counter);
  // A1: end the output only once tar's outcome is known and every byte has gone through.
  let digest: { sha256: string; bytes: number } | undefined;
  Promise.all([finished, new Promise<void>((resolve) => counter.once("end", resolve))]).then(
    () => {
      digest = { sha256: hash.digest("hex"), bytes };
      output.end();
    },
    (error: unknown) => output.destroy(error as Error),
  );
  return {
    stream: output,
    digest() {
      if (!digest) throw new Error("archive digest read before the archive ended");
      return digest;
    },
    finished,
    kill() {
      // Closing our end of the pipe first makes tar's zstd (which holds the write end) fail with
      // EPIPE instead of blocking forever on a reader that stopped reading; then tar's 'close' comes.
      tar.stdout.destroy();
      counter.destroy();
      if (tar.exitCode === null && tar.signalCode === null) tar.kill("SIGKILL");
    },
  };
}

export interface ExtractArchiveOptions {
  source: Readable;
  targetDir: string;
  expectedSha256: string;
  expectedBytes: number;
  signal?: AbortSignal;
}

/** Extract one generation into `targetDir` (A2), checking the archive's length and SHA-256 on the way. */
export async function extractArchive(options: ExtractArchiveOptions): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  const args = [
    "--extract",
    "--file=-",
    `--directory=${options.targetDir}`,
    "--listed-incremental=/dev/null", // A2: apply each generation's deletions
    "--numeric-owner",
    "--preserve-permissions",
    asRoot ? "--same-owner" : "--no-same-owner",
    "--use-compress-program=zstd",
  ];
  const tar = spawn("tar", args, {
    stdio: ["pipe", "ignore", "pipe"],
    env: toolEnv,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const stderr = collectStderr(tar);
  const hash = createHash("sha256");
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  const [fed, ran] = await Promise.allSettled([
    pipeline(options.source, counter, tar.stdin),
    exited(tar, `extracting into ${options.targetDir}`, stderr),
  ]);
  if (ran.status === "rejected") {
    // tar's own message says more than the EPIPE its early exit causes upstream; a source that
    // broke first (a dropped S3 connection) is the real cause of tar's "unexpected EOF".
    const readError = fed.status === "rejected" ? (fed.reason as NodeJS.ErrnoException) : undefined;
    if (
      readError &&
      readError.code !== "EPIPE" &&
      readError.code !== "ERR_STREAM_PREMATURE_CLOSE"
    ) {
      throw new Error(
        `reading the archive failed: ${readError.message} (${(ran.reason as Error).message})`,
        { cause: readError },
      );
    }
    throw ran.reason;
  }
  if (fed.status === "rejected")
    throw new Error(`reading the archive failed: ${(fed.reason as Error).message}`, {
      cause: fed.reason,
    });
  if (bytes !== options.expectedBytes)
    throw new Error(`the archive has ${bytes} bytes, the manifest says ${options.expectedBytes}`);
  const sha256 = hash.digest("hex");
  if (sha256 !== options.expectedSha256)
    throw new Error(
      `the archive's SHA-256 is ${sha256}, the manifest says ${options.expectedSha256}`,
    );
}

/** Whether GNU tar (with --listed-incremental) and zstd are installed; the reason names what is missing. */
export async function detectSnapshotTools(): Promise<{ ok: true } | { ok: false; reason: string }> {
  const version = (command: string) =>
    new Promise<string | undefined>((resolve) => {
      const child = spawn(command, ["--version"], {
        stdio: ["ignore", "pipe", "ignore"],
        env: toolEnv,
      });
      let out = "";
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => (out += chunk));
      child.once("error", () => resolve(undefined));
      child.once("close", (code) => resolve(code === 0 ? out : undefined));
    });
  const [tar, zstd] = await Promise.all([version("tar"), version("zstd")]);
  if (tar === undefined || zstd === undefined) {
    return {
      ok: false,
      reason: `${[tar === undefined ? "tar" : "", zstd === undefined ? "zstd" : ""].filter(Boolean).join(" and ")} not found (Debian: apt-get install tar zstd)`,
    };
  }
  if (!tar.includes("GNU tar"))
    return {
      ok: false,
      reason:
        "tar is not GNU tar (snapshots need --listed-incremental; Debian: apt-get install tar)",
    };
  return { ok: true };
}
