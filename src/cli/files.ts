/**
 * `roost files ls|get|put`: the files of the account's computer, under /workspace, over the files
 * API (docs/api.md "Files"). Every route wakes a sleeping computer first; the CLI does not.
 *
 * Invariants:
 *   FCLI1 `get` writes only the path it was given, or, when that is a folder, one entry directly
 *         in it, named by the last component of the remote path (never `.`, `..` or empty): a
 *         remote name cannot steer the write elsewhere.
 *   FCLI2 `get` writes a temporary file beside the target and renames it over the target once
 *         every byte arrived (as many as Content-Length said), so an interrupted or cut-off
 *         download leaves no partial file, and a link planted at the target is replaced, never
 *         followed.
 *   FCLI3 bytes are passed through untouched (no text decoding) in both directions.
 */
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { readFile, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { fileLimits } from "../protocol/index.ts";
import {
  booleanOption,
  renderHelp,
  table,
  UsageError,
  type Command,
  type CommandGroup,
} from "./args.ts";
import { clientEnvironment, clientFor, clientOptions } from "./client-config.ts";
import { CliError, paint, type CliIo, type InputStream } from "./io.ts";

const workspace = "/workspace";

/** The last component of a remote path, for naming a download; undefined if it has none usable. */
export function remoteBaseName(remote: string): string | undefined {
  const name = remote
    .split("/")
    .filter((part) => part !== "")
    .at(-1);
  if (name === undefined || name === "." || name === "..") return undefined;
  return name;
}

/** `1.2 MiB`: a size for people. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

const lsCommand: Command = {
  spec: {
    name: "files ls",
    summary: "List a folder of your computer (default /workspace).",
    synopsis: "[PATH] [options]",
    description:
      "PATH is /workspace/… or relative to /workspace. Folders end in /, links show their target.\nThe computer is woken if it sleeps.",
    options: {
      long: { type: "boolean", short: "l", description: "with type, size and modification time" },
      json: { type: "boolean", description: "print the API's listing as JSON" },
      ...clientOptions,
    },
    positionals: { min: 0, max: 1, names: "PATH" },
    environment: clientEnvironment,
    examples: ["roost files ls", "roost files ls -l notes"],
  },
  async run(args, io) {
    const path = args.positionals[0] ?? workspace;
    const listing = await clientFor(args, io).listFiles(path);
    if (booleanOption(args, "json")) {
      io.stdout.write(`${JSON.stringify(listing, null, 2)}\n`);
      return 0;
    }
    const label = (entry: (typeof listing.entries)[number]) =>
      entry.type === "dir"
        ? `${entry.name}/`
        : entry.type === "symlink"
          ? `${entry.name} -> ${entry.target ?? "?"}`
          : entry.name;
    if (booleanOption(args, "long")) {
      for (const line of table(
        listing.entries.map((entry) => [
          entry.type,
          entry.type === "dir" ? "-" : formatSize(entry.size),
          entry.modifiedAt?.slice(0, 16).replace("T", " ") ?? "-",
          label(entry),
        ]),
      ))
        io.stdout.write(`${line}\n`);
    } else {
      for (const entry of listing.entries) io.stdout.write(`${label(entry)}\n`);
    }
    if (listing.entries.length === 0) io.stderr.write(`${listing.path} is empty\n`);
    if (listing.truncated)
      io.stderr.write(
        `${paint(io, io.stderr, "yellow", `(only the first ${listing.entries.length} entries of ${listing.path}; list a subfolder to see more)`)}\n`,
      );
    return 0;
  },
};

/** Node's side of stdout, when it is a Node stream (the process's): backpressure and errors. */
interface NodeOutput {
  write(chunk: Uint8Array): unknown;
  once?(event: "drain" | "error", listener: (error?: unknown) => void): unknown;
  removeListener?(event: "error", listener: (error?: unknown) => void): unknown;
}

/**
 * Copies the download to stdout, waiting for it to drain when it asks to. A reader that goes away
 * (`roost files get f - | head -c 10`) ends the copy quietly, like `cat`: true when it did.
 */
async function copyToStdout(
  io: CliIo,
  body: ReadableStream<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
): Promise<boolean> {
  const out = io.stdout as unknown as NodeOutput;
  let closed = false;
  let wake: () => void = () => undefined;
  const onError = (error?: unknown) => {
    if ((error as { code?: unknown } | undefined)?.code !== "EPIPE") throw error;
    closed = true;
    wake();
  };
  out.once?.("error", onError);
  const reader = body.getReader();
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done || closed) break;
      onChunk(next.value);
      const accepted = out.write(next.value); // FCLI3
      if (accepted === false && typeof out.once === "function")
        await new Promise<void>((resolve) => {
          wake = resolve;
          out.once?.("drain", () => resolve());
        });
      if (closed) break;
    }
  } finally {
    out.removeListener?.("error", onError);
    if (closed) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
  return closed;
}

const getCommand: Command = {
  spec: {
    name: "files get",
    summary: "Download a file from your computer.",
    synopsis: "REMOTE [LOCAL|-] [options]",
    description: [
      "LOCAL defaults to the remote file's name in the current folder; a folder gets the file",
      "inside it under its remote name; `-` writes the bytes to stdout. An existing file is",
      "replaced, only once the whole file arrived (a cut-off download leaves nothing).",
    ].join("\n"),
    options: { ...clientOptions },
    positionals: { min: 1, max: 2, names: "REMOTE" },
    environment: clientEnvironment,
    examples: ["roost files get report.pdf", "roost files get logs/app.log - | tail"],
  },
  async run(args, io) {
    const [remote = "", local] = args.positionals;
    const client = clientFor(args, io);
    if (local === "-") {
      const download = await client.downloadFile(remote);
      let received = 0;
      const readerLeft = await copyToStdout(io, download.body, (chunk) => {
        received += chunk.byteLength;
      });
      if (!readerLeft) checkLength(remote, received, download.size);
      return 0;
    }
    const target = await localTarget(remote, local);
    const download = await client.downloadFile(remote);
    // FCLI2
    const temporary = join(
      dirname(target),
      `.${basename(target)}.roost-get-${randomBytes(6).toString("hex")}`,
    );
    let received = 0;
    try {
      const counted = Readable.fromWeb(download.body);
      counted.on("data", (chunk: Uint8Array) => (received += chunk.byteLength));
      await pipeline(counted, createWriteStream(temporary, { flags: "wx" }));
      checkLength(remote, received, download.size);
      await rename(temporary, target);
    } catch (error) {
      await rm(temporary, { force: true });
      // A local file-system failure (permissions, a full disk) is the user's to fix.
      if (error instanceof Error && "syscall" in error)
        throw new CliError(`cannot write ${target}: ${error.message}`);
      throw error;
    }
    io.stderr.write(`${remote} → ${target} (${formatSize(received)})\n`);
    return 0;
  },
};

function checkLength(remote: string, received: number, expected: number | undefined): void {
  if (expected !== undefined && received !== expected)
    throw new CliError(
      `the download of ${remote} was cut off after ${received} of ${expected} bytes (the file changed while it was read?); run the command again`,
    );
}

/** FCLI1: the local file a download goes to. */
async function localTarget(remote: string, local: string | undefined): Promise<string> {
  const name = remoteBaseName(remote);
  const folder = local === undefined ? "." : local;
  const isFolder =
    local === undefined ||
    local.endsWith("/") ||
    (await stat(local).then(
      (info) => info.isDirectory(),
      () => false,
    ));
  if (!isFolder) {
    const parent = dirname(resolve(local));
    const parentIsFolder = await stat(parent).then(
      (info) => info.isDirectory(),
      () => false,
    );
    if (!parentIsFolder)
      throw new CliError(`cannot write ${local}: the folder ${parent} does not exist`);
    return resolve(local);
  }
  if (name === undefined)
    throw new CliError(
      `${JSON.stringify(remote)} names no file; give a file's path (see \`roost files ls\`)`,
      2,
    );
  const exists = await stat(folder).then(
    (info) => info.isDirectory(),
    () => false,
  );
  if (!exists) throw new CliError(`cannot write into ${folder}: it is not a folder`);
  return join(resolve(folder), name);
}

const putCommand: Command = {
  spec: {
    name: "files put",
    summary: "Upload a file to your computer.",
    synopsis: "LOCAL REMOTE [options]",
    description: [
      `LOCAL is a file, or \`-\` for stdin. REMOTE is /workspace/… or relative to /workspace; a`,
      `REMOTE ending in / gets LOCAL's name. Missing folders are made, an existing file replaced.`,
      `Files up to ${formatSize(fileLimits.maxUploadBytes)} (${fileLimits.maxUploadBytes} bytes).`,
    ].join("\n"),
    options: { ...clientOptions },
    positionals: { min: 2, max: 2, names: "LOCAL and REMOTE" },
    environment: clientEnvironment,
    examples: ["roost files put notes.md notes/", "pg_dump db | roost files put - backups/db.sql"],
  },
  async run(args, io) {
    const [local = "", remoteArgument = ""] = args.positionals;
    let remote = remoteArgument;
    if (remote.endsWith("/")) {
      if (local === "-")
        throw new UsageError(
          "roost files put: with LOCAL `-` (stdin), REMOTE must name the file, not a folder",
          renderHelp(putCommand.spec),
        );
      remote = `${remote}${basename(local)}`;
    }
    const bytes = local === "-" ? await readLimited(io.stdin) : await readLocalFile(local);
    const uploaded = await clientFor(args, io).uploadFile(remote, bytes);
    io.stderr.write(
      `${local === "-" ? "stdin" : local} → ${uploaded.path} (${formatSize(uploaded.size)}${uploaded.created ? "" : ", replaced"})\n`,
    );
    return 0;
  },
};

function tooLarge(what: string, size: number): CliError {
  return new CliError(
    `${what} is ${what === "stdin" ? "more than " : ""}${formatSize(size)}; uploads are limited to ${formatSize(fileLimits.maxUploadBytes)} (${fileLimits.maxUploadBytes} bytes)`,
  );
}

async function readLocalFile(local: string): Promise<Uint8Array> {
  const info = await stat(local).catch(() => undefined);
  if (info === undefined) throw new CliError(`no file ${local}`);
  if (!info.isFile())
    throw new CliError(
      `${local} is ${info.isDirectory() ? "a folder" : "not a regular file"}; files put uploads one file`,
    );
  if (info.size > fileLimits.maxUploadBytes) throw tooLarge(local, info.size);
  const bytes = await readFile(local);
  if (bytes.byteLength > fileLimits.maxUploadBytes) throw tooLarge(local, bytes.byteLength);
  return bytes;
}

/** stdin, up to the upload limit (stops reading past it). */
async function readLimited(input: InputStream): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of input) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    size += bytes.byteLength;
    if (size > fileLimits.maxUploadBytes) throw tooLarge("stdin", size);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks);
}

export const filesGroup: CommandGroup = {
  name: "files",
  summary: "List, download and upload the files of your computer (/workspace).",
  commands: [lsCommand, getCommand, putCommand],
  defaultCommand: "ls",
};
