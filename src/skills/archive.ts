/**
 * A skill's folder uploaded as an archive: tar, gzip'd tar or zip, read in memory (a skill is at
 * most 5 MiB) with node-tar's parser and yauzl, and turned into the skill's files.
 *
 * Invariants:
 *   SKA1 only regular files and folders are accepted: a symbolic link, a hard link, a device, a
 *        FIFO, a sparse or any other kind of entry refuses the whole archive (400), as does an
 *        encrypted zip entry.
 *   SKA2 every path stays inside the skill's folder: an absolute path, a `..` component, a
 *        backslash or a control character refuses the archive (protocol skillPathProblem), and so
 *        does a path given twice or a name that is both a file and a folder.
 *   SKA3 sizes are limited by what is actually decompressed, never by what the archive declares:
 *        gzip is inflated with a hard output limit, every entry's bytes are counted as they are
 *        read and reading stops at the limit, and a declared size over what is left refuses the
 *        entry before it is read (a zip or tar bomb is a 413 after at most the limit's work).
 *   SKA4 SKILL.md is at the archive's root or inside its one top folder (which is then removed
 *        from every path); macOS's `__MACOSX/` and `.DS_Store` entries are dropped.
 */
import { gunzipSync } from "node:zlib";
import { Parser, type ReadEntry } from "tar";
import yauzl from "yauzl";
import { InvalidRequestError, RoostError } from "../errors/index.ts";
import { skillDocumentPath, skillLimits, skillPathProblem } from "../protocol/index.ts";

export type ArchiveKind = "tar" | "tar.gz" | "zip";

/** The request's media types for each kind. */
export const archiveMediaTypes: Record<string, ArchiveKind> = {
  "application/x-tar": "tar",
  "application/tar": "tar",
  "application/gzip": "tar.gz",
  "application/x-gzip": "tar.gz",
  "application/x-compressed-tar": "tar.gz",
  "application/zip": "zip",
  "application/x-zip-compressed": "zip",
};

export const archiveLimits = {
  /** Bytes of an uploaded archive (as sent). */
  maxArchiveBytes: 6 * 1024 * 1024,
  /** Bytes a tar may be once un-gzipped: the files, plus their headers and padding. */
  maxTarBytes: skillLimits.maxSkillBytes + 2 * 1024 * 1024,
  /** Entries of any kind (files, folders, metadata). */
  maxEntries: 2000,
} as const;

export interface ArchiveFile {
  path: string;
  mode: 0o644 | 0o755;
  content: Uint8Array;
}

function refuse(message: string): InvalidRequestError {
  return new InvalidRequestError(message, { issues: [{ path: "archive", message }] });
}

function tooLarge(): RoostError {
  return new RoostError(
    "payload_too_large",
    `the archive's files hold more than ${skillLimits.maxSkillBytes} bytes (a skill's limit): remove large files, or keep them elsewhere and fetch them from the skill's script`,
    { details: { limit: skillLimits.maxSkillBytes } },
  );
}

/** Kind of an archive by its media type (parameters ignored), or undefined when it is not one. */
export function archiveKindOf(contentType: string | undefined): ArchiveKind | undefined {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return archiveMediaTypes[type];
}

const gzipMagic = [0x1f, 0x8b];
const zipMagic = [0x50, 0x4b];
const startsWith = (bytes: Uint8Array, magic: readonly number[]) =>
  magic.every((byte, index) => bytes[index] === byte);

/** Collects entries with the limits of SKA3 and the rules of SKA1 and SKA2. */
function createCollector() {
  const files = new Map<string, ArchiveFile>();
  const folders = new Set<string>();
  let bytes = 0;
  let entries = 0;

  /** The entry's path as the skill will have it, or undefined for entries that are dropped. */
  function normalize(raw: string, isFolder: boolean): string | undefined {
    if (raw.startsWith("/"))
      throw refuse(
        `the archive has an absolute path (${JSON.stringify(raw.slice(0, 200))}): archive the skill's folder with relative paths`,
      );
    // `./x` and `x/` are the same as `x` (tar -C dir . writes them).
    const parts = raw.split("/").filter((part) => part !== ".");
    while (parts.at(-1) === "") parts.pop();
    const path = parts.join("/");
    if (path === "") return undefined;
    const problem = skillPathProblem(path);
    if (problem !== undefined)
      throw refuse(
        `the archive is refused: ${JSON.stringify(raw.slice(0, 200))}: ${problem}; every path must stay inside the skill's folder`,
      ); // SKA2
    const name = path.split("/").at(-1)!;
    if (path.split("/")[0] === "__MACOSX" || (!isFolder && name === ".DS_Store")) return undefined; // SKA4
    return path;
  }

  return {
    countEntry() {
      if (++entries > archiveLimits.maxEntries)
        throw refuse(
          `the archive has more than ${archiveLimits.maxEntries} entries; a skill has at most ${skillLimits.maxFiles} files`,
        );
    },
    folder(raw: string) {
      const path = normalize(raw, true);
      if (path !== undefined) folders.add(path);
    },
    /** SKA3: refuses a declared size over what is left, before reading it. */
    fileStart(raw: string, declaredSize: number): string | undefined {
      const path = normalize(raw, false);
      if (path === undefined) return undefined;
      if (files.has(path)) throw refuse(`the archive has ${JSON.stringify(path)} twice`); // SKA2
      if (files.size + 1 > skillLimits.maxFiles)
        throw refuse(
          `a skill has at most ${skillLimits.maxFiles} files (SKILL.md included); this archive has more`,
        );
      if (declaredSize > skillLimits.maxSkillBytes - bytes) throw tooLarge();
      return path;
    },
    /** SKA3: counts what was actually read. */
    chunk(length: number) {
      bytes += length;
      if (bytes > skillLimits.maxSkillBytes) throw tooLarge();
    },
    file(path: string, mode: number, content: Uint8Array) {
      files.set(path, { path, mode: (mode & 0o111) !== 0 ? 0o755 : 0o644, content });
    },
    finish(): ArchiveFile[] {
      const all = [...files.values()];
      // SKA2: `a` as a file and `a/b` below it cannot both be written.
      const prefixes = new Set(folders);
      for (const file of all) {
        const parts = file.path.split("/");
        for (let index = 1; index < parts.length; index++)
          prefixes.add(parts.slice(0, index).join("/"));
      }
      const clash = all.find((file) => prefixes.has(file.path));
      if (clash !== undefined)
        throw refuse(`${JSON.stringify(clash.path)} is both a file and a folder in the archive`);
      return stripTopFolder(all);
    },
  };
}

/** SKA4 */
function stripTopFolder(files: ArchiveFile[]): ArchiveFile[] {
  if (files.some((file) => file.path === skillDocumentPath)) return files;
  const tops = new Set(files.map((file) => file.path.split("/")[0]!));
  const [top] = tops;
  if (
    tops.size === 1 &&
    top !== undefined &&
    files.some((file) => file.path === `${top}/${skillDocumentPath}`)
  )
    return files.map((file) => ({ ...file, path: file.path.slice(top.length + 1) }));
  const found = files
    .slice(0, 5)
    .map((file) => file.path)
    .join(", ");
  throw refuse(
    `the archive has no ${skillDocumentPath} at its root or inside one top folder (it holds ${files.length === 0 ? "no files" : found}${files.length > 5 ? ", …" : ""}): archive the skill's folder, with ${skillDocumentPath} in it`,
  );
}

async function readTar(bytes: Uint8Array): Promise<ArchiveFile[]> {
  if (startsWith(bytes, gzipMagic) || startsWith(bytes, zipMagic))
    throw refuse(
      "the body is compressed, not a plain tar: send it as Content-Type: application/gzip (or application/zip for a zip)",
    );
  const collect = createCollector();
  const pending: Promise<void>[] = [];
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      const reason = error instanceof Error ? error : new Error(String(error));
      parser.abort(reason);
      reject(reason);
    };
    const parser = new Parser({
      strict: true,
      // Compressed input was handled (or refused) above; never let the parser inflate again.
      zstd: false,
      brotli: false,
      onReadEntry: (entry: ReadEntry) => {
        try {
          collect.countEntry();
          switch (entry.type) {
            case "Directory":
            case "GNUDumpDir":
              collect.folder(entry.path);
              entry.resume();
              return;
            case "File":
            case "OldFile":
            case "ContiguousFile":
              break;
            case "SymbolicLink":
              throw refuse(
                `the archive has a symbolic link (${JSON.stringify(entry.path)} → ${JSON.stringify(entry.linkpath ?? "")}); skills hold regular files only: archive the file the link points to instead`,
              ); // SKA1
            case "Link":
              throw refuse(
                `the archive has a hard link (${JSON.stringify(entry.path)} → ${JSON.stringify(entry.linkpath ?? "")}); skills hold regular files only: archive a copy of the file instead`,
              ); // SKA1
            case "CharacterDevice":
            case "BlockDevice":
            case "FIFO":
              throw refuse(
                `the archive has a device or FIFO (${JSON.stringify(entry.path)}); skills hold regular files only`,
              ); // SKA1
            default:
              throw refuse(
                `the archive has an entry of kind ${entry.type} (${JSON.stringify(entry.path)}); skills hold regular files and folders only`,
              ); // SKA1
          }
          const path = collect.fileStart(entry.path, entry.size);
          const chunks: Buffer[] = [];
          pending.push(
            new Promise<void>((done) => {
              entry.on("data", (chunk: Buffer) => {
                if (failed) return;
                try {
                  collect.chunk(chunk.byteLength); // SKA3
                  if (path !== undefined) chunks.push(chunk);
                } catch (error) {
                  fail(error);
                }
              });
              entry.on("end", () => {
                if (!failed && path !== undefined)
                  collect.file(path, entry.mode ?? 0o644, Buffer.concat(chunks));
                done();
              });
            }),
          );
        } catch (error) {
          fail(error);
        }
      },
    });
    // Entries the parser skips itself (sparse files, unknown kinds, oversized metadata).
    parser.on("ignoredEntry", (entry: ReadEntry) =>
      fail(
        refuse(
          `the archive has an entry of kind ${entry.type} (${JSON.stringify(entry.path)}); skills hold regular files and folders only`,
        ),
      ),
    ); // SKA1
    parser.on("error", (error: Error) =>
      fail(
        error instanceof RoostError
          ? error
          : refuse(`the body is not a valid tar archive (${error.message})`),
      ),
    );
    parser.on("end", () => {
      if (!failed) resolve();
    });
    parser.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  });
  await Promise.all(pending);
  return collect.finish();
}

function gunzip(bytes: Uint8Array): Uint8Array {
  if (!startsWith(bytes, gzipMagic))
    throw refuse(
      "the body is not gzip-compressed: send a .tar.gz as Content-Type: application/gzip, a plain tar as application/x-tar, a zip as application/zip",
    );
  try {
    return gunzipSync(bytes, { maxOutputLength: archiveLimits.maxTarBytes }); // SKA3
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge();
    throw refuse(`the body is not valid gzip (${(error as Error).message})`);
  }
}

async function readZip(bytes: Uint8Array): Promise<ArchiveFile[]> {
  if (!startsWith(bytes, zipMagic))
    throw refuse(
      "the body is not a zip archive: send a zip as Content-Type: application/zip, a .tar.gz as application/gzip",
    );
  const collect = createCollector();
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let zip: yauzl.ZipFile;
  try {
    zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
      yauzl.fromBuffer(
        buffer,
        { lazyEntries: true, decodeStrings: true, validateEntrySizes: true },
        (error, opened) => (error === null ? resolve(opened) : reject(error)),
      ),
    );
  } catch (error) {
    throw refuse(`the body is not a valid zip archive (${(error as Error).message})`);
  }
  if (zip.entryCount > archiveLimits.maxEntries)
    throw refuse(
      `the archive has ${zip.entryCount} entries; a skill has at most ${skillLimits.maxFiles} files`,
    );
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      zip.close();
      reject(
        error instanceof RoostError
          ? error
          : refuse(
              `the zip archive is refused: ${(error as Error).message}; every path must stay inside the skill's folder`,
            ),
      );
    };
    zip.on("error", fail);
    zip.on("end", () => {
      if (!failed) resolve();
    });
    zip.on("entry", (entry: yauzl.Entry) => {
      try {
        collect.countEntry();
        // The high 16 bits hold a Unix mode when the archiver was Unix (version made by 3).
        const unixMode = entry.versionMadeBy >>> 8 === 3 ? entry.externalFileAttributes >>> 16 : 0;
        const kind = unixMode & 0o170000;
        if (kind === 0o120000)
          throw refuse(
            `the archive has a symbolic link (${JSON.stringify(entry.fileName)}); skills hold regular files only: archive the file the link points to instead`,
          ); // SKA1
        const isFolder = entry.fileName.endsWith("/") || kind === 0o040000;
        if (kind !== 0 && kind !== 0o100000 && kind !== 0o040000)
          throw refuse(
            `the archive has a device, FIFO or socket (${JSON.stringify(entry.fileName)}); skills hold regular files only`,
          ); // SKA1
        if (isFolder) {
          collect.folder(entry.fileName);
          zip.readEntry();
          return;
        }
        if (entry.isEncrypted())
          throw refuse(
            `${JSON.stringify(entry.fileName)} is encrypted; upload the archive without a password`,
          ); // SKA1
        const path = collect.fileStart(entry.fileName, entry.uncompressedSize); // SKA3
        zip.openReadStream(entry, (error, stream) => {
          if (error !== null) {
            fail(refuse(`cannot read ${JSON.stringify(entry.fileName)}: ${error.message}`));
            return;
          }
          const chunks: Buffer[] = [];
          stream.on("data", (chunk: Buffer) => {
            if (failed) return;
            try {
              collect.chunk(chunk.byteLength); // SKA3
              if (path !== undefined) chunks.push(chunk);
            } catch (limit) {
              stream.destroy();
              fail(limit);
            }
          });
          stream.on("error", (streamError: Error) =>
            fail(
              refuse(
                `cannot read ${JSON.stringify(entry.fileName)} (${streamError.message}); the archive may be damaged`,
              ),
            ),
          );
          stream.on("end", () => {
            if (failed) return;
            if (path !== undefined) collect.file(path, unixMode, Buffer.concat(chunks));
            zip.readEntry();
          });
        });
      } catch (error) {
        fail(error);
      }
    });
    zip.readEntry();
  });
  return collect.finish();
}

/** The skill's files from an archive of `kind`; throws a 400 or 413 RoostError saying why not. */
export async function readSkillArchive(
  bytes: Uint8Array,
  kind: ArchiveKind,
): Promise<ArchiveFile[]> {
  if (bytes.byteLength > archiveLimits.maxArchiveBytes)
    throw new RoostError(
      "payload_too_large",
      `an archive is at most ${archiveLimits.maxArchiveBytes} bytes (this one has ${bytes.byteLength})`,
    );
  if (bytes.byteLength === 0) throw refuse("the body is empty: send the archive as the body");
  switch (kind) {
    case "tar":
      return readTar(bytes);
    case "tar.gz":
      return readTar(gunzip(bytes));
    case "zip":
      return readZip(bytes);
  }
}
