/**
 * The file operations of the files API (protocol/files.ts, docs/worker-protocol.md): list, ranged
 * read, chunked upload (write, commit, abort), delete, rename and mkdir under the workspace. The
 * worker runs them as the computer's own user, so whatever they create belongs to that user.
 *
 * Invariants:
 *   FOP1 File operations never touch the done-log (they are not model tools): each is idempotent
 *        by its own design, as protocol/files.ts says per operation, so a call the gateway
 *        re-sends is answered correctly without a record of the first.
 *   FOP2 Every path goes through workspace-fs.ts (WFS1–WFS4): nothing is opened by a path that
 *        could follow a link, and nothing is checked by path and then opened.
 *   FOP3 An upload becomes visible only by one rename of its complete, checked (size and
 *        SHA-256), fsync'd temporary file in the target's own folder.
 *   FOP4 A folder is deleted by renaming it to a hidden trash name first, so a failure leaves
 *        either the whole folder or nothing visible; unfinished trash and uploads are recorded
 *        in the state dir and removed by `sweep`.
 */
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import {
  decodeChunk,
  displayWorkspacePath,
  fileInputSchemas,
  fileLimits,
  isInternalName,
  uploadTempName,
} from "../protocol/index.ts";
import type {
  FileEntryType,
  FileListEntry,
  FileOperationName,
  FileOperationOutput,
  ToolError,
} from "../protocol/index.ts";
import type { z } from "zod";
import { isErrno, writeFileAtomic } from "./fs-atomic.ts";
import { nodeCrypto, sha256 } from "./light-crypto.ts";
import {
  at,
  components,
  FileOperationFailure,
  lstatAt,
  openFileAt,
  openWorkspaceRoot,
  removeTree,
  splitLast,
  symlinkFailure,
  syncFolder,
  toFileFailure,
  walk,
} from "./workspace-fs.ts";

const { O_WRONLY, O_CREAT } = constants;

export interface FileOperationsOptions {
  /** The workspace root (`/workspace` inside a computer). */
  workspace: string;
  /** The worker's durable state dir: unfinished uploads and trash are recorded below it. */
  stateDir: string;
  /** fsync what is written. @default true */
  fsync?: boolean;
  now?: () => number;
  log?: (line: string) => void;
}

export interface FileOperationCall {
  callId: string;
  tool: FileOperationName;
  input: unknown;
  signal: AbortSignal;
}

export type FileOperationOutcome = { ok: true; output: unknown } | { ok: false; error: ToolError };

export interface FileOperations {
  run(call: FileOperationCall): Promise<FileOperationOutcome>;
  /** Removes expired uploads and finishes interrupted deletes (FOP4). */
  sweep(): Promise<void>;
}

interface UploadRecord {
  uploadId: string;
  path: string;
  createdAt: number;
}

interface TrashRecord {
  /** The folder the trash is in (wire path). */
  parent: string;
  name: string;
  createdAt: number;
}

/** Trash older than this is finished by the sweep (younger trash may still be in use). */
const trashSweepAgeMs = 10 * 60 * 1000;

type Handlers = {
  [T in FileOperationName]: (
    input: z.output<(typeof fileInputSchemas)[T]>,
    call: FileOperationCall,
  ) => Promise<FileOperationOutput<T>>;
};

export function createFileOperations(options: FileOperationsOptions): FileOperations {
  const durable = options.fsync ?? true;
  const now = options.now ?? Date.now;
  const log = options.log ?? (() => undefined);
  const uploadsDir = path.join(options.stateDir, "files", "uploads");
  const trashDir = path.join(options.stateDir, "files", "trash");

  /** Runs `body` with the workspace root open. */
  async function withRoot<T>(body: (root: FileHandle) => Promise<T>): Promise<T> {
    const root = await openWorkspaceRoot(options.workspace);
    try {
      return await body(root);
    } finally {
      await root.close();
    }
  }

  /** Runs `body` with the folder at `parts` open (FOP2). */
  function inFolder<T>(
    parts: readonly string[],
    body: (folder: FileHandle) => Promise<T>,
    create = false,
  ): Promise<T> {
    return withRoot(async (root) => {
      const { folder } = await walk(root, parts, create);
      try {
        return await body(folder);
      } finally {
        await folder.close();
      }
    });
  }

  const recordFile = (dir: string, key: string) => path.join(dir, `${key}.json`);

  async function readRecord<T>(file: string): Promise<T | undefined> {
    try {
      return JSON.parse(await fs.readFile(file, "utf8")) as T;
    } catch {
      return undefined; // gone, or torn without fsync: nothing to finish
    }
  }

  async function writeRecord(dir: string, key: string, record: unknown): Promise<void> {
    await fs.mkdir(dir, { recursive: true });
    await writeFileAtomic(recordFile(dir, key), JSON.stringify(record), durable);
  }

  const dropRecord = (dir: string, key: string) => fs.rm(recordFile(dir, key), { force: true });

  const trashKey = (callId: string) => sha256(callId).toString("hex").slice(0, 32);

  async function sha256Of(handle: FileHandle, size: number): Promise<string> {
    const hash = nodeCrypto().createHash("sha256");
    const buffer = Buffer.alloc(Math.min(1024 * 1024, Math.max(1, size)));
    let position = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
    return hash.digest("hex");
  }

  const typeOf = (stat: import("node:fs").Stats): FileEntryType =>
    stat.isDirectory()
      ? "dir"
      : stat.isFile()
        ? "file"
        : stat.isSymbolicLink()
          ? "symlink"
          : "other";

  const handlers: Handlers = {
    async "files.list"(input) {
      const limit = input.limit ?? fileLimits.listMaxEntries;
      return inFolder(components(input.path), async (folder) => {
        const dirents = (await fs.readdir(at(folder), { withFileTypes: true })).filter(
          (dirent) => !isInternalName(dirent.name),
        );
        dirents.sort((a, b) =>
          a.isDirectory() !== b.isDirectory()
            ? a.isDirectory()
              ? -1
              : 1
            : a.name < b.name
              ? -1
              : a.name > b.name
                ? 1
                : 0,
        );
        const entries: FileListEntry[] = [];
        for (const dirent of dirents.slice(0, limit)) {
          const stat = await fs.lstat(at(folder, dirent.name)).catch(() => undefined);
          if (stat === undefined) continue; // removed since the readdir
          const entry: FileListEntry = {
            name: dirent.name,
            type: typeOf(stat),
            size: stat.size,
            modifiedAt: Math.max(0, Math.floor(stat.mtimeMs)),
          };
          if (entry.type === "symlink") {
            const target = await fs.readlink(at(folder, dirent.name)).catch(() => undefined);
            if (target !== undefined) entry.target = target;
          }
          entries.push(entry);
        }
        return { path: input.path, entries, truncated: dirents.length > limit };
      });
    },

    async "files.read"(input) {
      const { parent, name } = splitLast(input.path, "a download");
      const display = displayWorkspacePath(input.path);
      return inFolder(parent, async (folder) => {
        const { handle, stat } = await openFileAt(folder, name, display);
        try {
          const version = [stat.dev, stat.ino, stat.mtimeNs, stat.ctimeNs, stat.size].join("-");
          if (input.version !== undefined && input.version !== version) {
            throw new FileOperationFailure(
              "changed",
              `${display} changed while it was being downloaded; download it again`,
            );
          }
          const size = Number(stat.size);
          const length = Math.max(0, Math.min(input.length, size - input.offset));
          const buffer = Buffer.alloc(length);
          let filled = 0;
          while (filled < length) {
            const { bytesRead } = await handle.read(
              buffer,
              filled,
              length - filled,
              input.offset + filled,
            );
            if (bytesRead === 0) break;
            filled += bytesRead;
          }
          return {
            size,
            modifiedAt: Math.max(0, Math.floor(Number(stat.mtimeMs))),
            version,
            offset: input.offset,
            data: buffer.subarray(0, filled).toString("base64"),
            eof: input.offset + filled >= size,
          };
        } finally {
          await handle.close();
        }
      });
    },

    async "files.write"(input) {
      const { parent, name } = splitLast(input.path, "an upload");
      const display = displayWorkspacePath(input.path);
      const data = decodeChunk(input.data);
      if (data === undefined)
        throw new FileOperationFailure("invalid_input", "the chunk's data is not valid base64");
      if (input.offset + data.byteLength > fileLimits.maxUploadBytes) {
        throw new FileOperationFailure(
          "too_large",
          `uploads are limited to ${fileLimits.maxUploadBytes} bytes`,
        );
      }
      const first = input.offset === 0;
      return inFolder(
        parent,
        async (folder) => {
          const temp = uploadTempName(input.uploadId);
          if (!first && (await lstatAt(folder, temp, display)) === undefined) {
            throw new FileOperationFailure(
              "not_found",
              `the upload to ${display} is not in progress (it was aborted, committed or expired); upload the file again`,
            );
          }
          if (first) {
            // What the commit would refuse makes the upload pointless: say so at once.
            const existing = await lstatAt(folder, name, display);
            if (existing?.isDirectory() === true)
              throw new FileOperationFailure("is_directory", `${display} is a folder`);
            if (existing?.isSymbolicLink() === true)
              throw await symlinkFailure(folder, name, display);
          }
          if (first) {
            // Recorded before the temporary file exists, so an abandoned one is always found (FOP4).
            const record: UploadRecord = {
              uploadId: input.uploadId,
              path: input.path,
              createdAt: now(),
            };
            await writeRecord(uploadsDir, input.uploadId, record);
          }
          const { handle } = await openFileAt(
            folder,
            temp,
            display,
            O_WRONLY | (first ? O_CREAT : 0),
          );
          try {
            let written = 0;
            while (written < data.byteLength) {
              const { bytesWritten } = await handle.write(
                data,
                written,
                data.byteLength - written,
                input.offset + written,
              );
              written += bytesWritten;
            }
          } finally {
            await handle.close();
          }
          return { written: input.offset + data.byteLength };
        },
        first, // the folders on the way are made with the first chunk, as the user
      );
    },

    async "files.commit"(input) {
      const { parent, name } = splitLast(input.path, "an upload");
      const display = displayWorkspacePath(input.path);
      const temp = uploadTempName(input.uploadId);
      const result = await inFolder(parent, async (folder) => {
        let opened;
        try {
          opened = await openFileAt(folder, temp, display);
        } catch (error) {
          if (!(error instanceof FileOperationFailure) || error.code !== "not_found") throw error;
          return repeatedCommit(folder);
        }
        const { handle, stat } = opened;
        let created: boolean;
        try {
          if (Number(stat.size) !== input.size) {
            throw new FileOperationFailure(
              "changed",
              `the upload to ${display} holds ${stat.size} bytes, not ${input.size}; upload the file again`,
            );
          }
          if ((await sha256Of(handle, input.size)) !== input.sha256) {
            throw new FileOperationFailure(
              "changed",
              `the upload to ${display} does not hold the bytes sent (SHA-256 differs); upload the file again`,
            );
          }
          if (durable) await handle.datasync();
          const existing = await lstatAt(folder, name, display);
          if (existing?.isDirectory() === true)
            throw new FileOperationFailure("is_directory", `${display} is a folder`);
          if (existing?.isSymbolicLink() === true)
            throw await symlinkFailure(folder, name, display);
          created = existing === undefined;
          // A replaced file keeps its permission bits; a new one gets the usual rw-r--r--.
          await handle.chmod(existing?.isFile() === true ? existing.mode & 0o7777 : 0o644);
        } finally {
          await handle.close();
        }
        try {
          await fs.rename(at(folder, temp), at(folder, name)); // FOP3: WFS2, no final link followed
        } catch (error) {
          throw toFileFailure(error, display);
        }
        if (durable) await syncFolder(folder);
        return { path: input.path, size: input.size, created };
      });
      await dropRecord(uploadsDir, input.uploadId);
      return result;

      /** FOP1: a commit repeated after it succeeded finds the bytes in place. */
      async function repeatedCommit(folder: FileHandle) {
        const { handle, stat } = await openFileAt(folder, name, display).catch(() => {
          throw notInProgress();
        });
        try {
          if (
            Number(stat.size) !== input.size ||
            (await sha256Of(handle, input.size)) !== input.sha256
          )
            throw notInProgress();
          return { path: input.path, size: input.size, created: false };
        } finally {
          await handle.close();
        }
      }
      function notInProgress() {
        return new FileOperationFailure(
          "not_found",
          `the upload to ${display} is not in progress (it was aborted or expired); upload the file again`,
        );
      }
    },

    async "files.abort"(input) {
      const { parent } = splitLast(input.path, "an upload");
      const display = displayWorkspacePath(input.path);
      let removed = false;
      try {
        removed = await inFolder(parent, async (folder) => {
          try {
            await fs.unlink(at(folder, uploadTempName(input.uploadId)));
            return true;
          } catch (error) {
            if (isErrno(error, "ENOENT")) return false;
            throw toFileFailure(error, display);
          }
        });
      } catch (error) {
        // No folder to look in (gone, or now a file or link): the temporary file is not reachable there.
        if (
          !(error instanceof FileOperationFailure) ||
          !["not_found", "not_a_directory", "is_symlink"].includes(error.code)
        )
          throw error;
      }
      await dropRecord(uploadsDir, input.uploadId);
      return { removed };
    },

    async "files.delete"(input, call) {
      const { parent, name } = splitLast(input.path, "a delete");
      const display = displayWorkspacePath(input.path);
      const key = trashKey(call.callId);
      const trashName = `.roost-trash-${key}`;
      return inFolder(parent, async (folder) => {
        const stat = await lstatAt(folder, name, display);
        if (stat === undefined) {
          // FOP1: the same call repeated after its rename to trash finishes that trash.
          if ((await lstatAt(folder, trashName, display)) !== undefined) {
            await finishTrash(folder, parent, trashName, key, call.signal);
            return { path: input.path, type: "dir" as const };
          }
          throw new FileOperationFailure("not_found", `${display} does not exist`);
        }
        const type = typeOf(stat);
        if (type !== "dir") {
          try {
            await fs.unlink(at(folder, name)); // WFS2: a link is removed, not its target
          } catch (error) {
            throw toFileFailure(error, display);
          }
        } else if (!input.recursive) {
          try {
            await fs.rmdir(at(folder, name));
          } catch (error) {
            if (isErrno(error, "ENOTEMPTY") || isErrno(error, "EEXIST")) {
              throw new FileOperationFailure(
                "not_empty",
                `${display} is a folder that is not empty; delete it recursively to remove everything in it`,
              );
            }
            throw toFileFailure(error, display);
          }
        } else {
          const record: TrashRecord = {
            parent: parent.join("/"),
            name: trashName,
            createdAt: now(),
          };
          await writeRecord(trashDir, key, record);
          try {
            await fs.rename(at(folder, name), at(folder, trashName)); // FOP4: gone at once, whole
          } catch (error) {
            await dropRecord(trashDir, key);
            throw toFileFailure(error, display);
          }
          if (durable) await syncFolder(folder);
          await finishTrash(folder, parent, trashName, key, call.signal);
        }
        if (durable) await syncFolder(folder);
        return { path: input.path, type };
      });
    },

    async "files.rename"(input) {
      const from = splitLast(input.from, "a rename");
      const to = splitLast(input.to, "a rename");
      const fromDisplay = displayWorkspacePath(input.from);
      const toDisplay = displayWorkspacePath(input.to);
      if (input.from === input.to)
        throw new FileOperationFailure("invalid_input", `${fromDisplay} already has that name`);
      if (input.to.startsWith(`${input.from}/`))
        throw new FileOperationFailure(
          "invalid_input",
          `${fromDisplay} cannot be moved into itself (${toDisplay})`,
        );
      return withRoot(async (root) => {
        const source = (await walk(root, from.parent)).folder;
        try {
          const target = (await walk(root, to.parent)).folder;
          try {
            const stat = await lstatAt(source, from.name, fromDisplay);
            if (stat === undefined)
              throw new FileOperationFailure("not_found", `${fromDisplay} does not exist`);
            const type = typeOf(stat);
            if (type === "dir") await moveFolder(source, from.name, target, to.name);
            else await moveNonFolder(source, from.name, target, to.name, stat.ino);
            if (durable) {
              await syncFolder(target);
              await syncFolder(source);
            }
            return { from: input.from, to: input.to, type };
          } finally {
            await target.close();
          }
        } finally {
          await source.close();
        }
      });

      async function exists(folder: FileHandle, name: string): Promise<never> {
        const there = await lstatAt(folder, name, toDisplay);
        throw new FileOperationFailure(
          "exists",
          `${toDisplay} already exists${there === undefined ? "" : ` (a ${describe(typeOf(there))})`}; a rename never replaces anything: delete it or pick another name`,
        );
      }

      /**
       * Never replacing, without renameat2(RENAME_NOREPLACE): an empty placeholder folder is
       * made at the destination (mkdir fails if anything is there), and rename(2) of a folder
       * replaces only an empty folder, atomically.
       */
      async function moveFolder(
        source: FileHandle,
        name: string,
        target: FileHandle,
        newName: string,
      ) {
        try {
          await fs.mkdir(at(target, newName), 0o700);
        } catch (error) {
          if (isErrno(error, "EEXIST")) await exists(target, newName);
          throw toFileFailure(error, toDisplay);
        }
        try {
          await fs.rename(at(source, name), at(target, newName));
        } catch (error) {
          await fs.rmdir(at(target, newName)).catch(() => undefined);
          if (isErrno(error, "EINVAL"))
            throw new FileOperationFailure(
              "invalid_input",
              `${fromDisplay} cannot be moved into itself (${toDisplay})`,
            );
          if (isErrno(error, "ENOTEMPTY") || isErrno(error, "EEXIST"))
            await exists(target, newName);
          throw toFileFailure(error, fromDisplay);
        }
      }

      /** Never replacing: link(2) fails if the name exists; then the old name is unlinked. */
      async function moveNonFolder(
        source: FileHandle,
        name: string,
        target: FileHandle,
        newName: string,
        inode: number,
      ) {
        try {
          await fs.link(at(source, name), at(target, newName)); // links the link itself, not its target
        } catch (error) {
          if (isErrno(error, "EEXIST")) await exists(target, newName);
          if (!["EPERM", "ENOTSUP", "EOPNOTSUPP", "EMLINK"].some((code) => isErrno(error, code)))
            throw toFileFailure(error, fromDisplay);
          // No hard links here: a checked rename. Only the computer's own processes could race it.
          if ((await lstatAt(target, newName, toDisplay)) !== undefined)
            await exists(target, newName);
          try {
            await fs.rename(at(source, name), at(target, newName));
          } catch (renameError) {
            throw toFileFailure(renameError, fromDisplay);
          }
          return;
        }
        // Unlink the old name only if it is still the file just linked.
        const current = await lstatAt(source, name, fromDisplay);
        if (current !== undefined && current.ino === inode) await fs.unlink(at(source, name));
      }
    },

    async "files.mkdir"(input) {
      const display = displayWorkspacePath(input.path);
      if (input.path === "") return { path: "", created: false };
      if (input.parents) {
        const created = await withRoot(async (root) => {
          const walked = await walk(root, components(input.path), true).catch((error: unknown) => {
            throw asExists(error);
          });
          await walked.folder.close();
          return walked.created;
        });
        return { path: input.path, created };
      }
      const { parent, name } = splitLast(input.path, "a new folder");
      return inFolder(parent, async (folder) => {
        try {
          await fs.mkdir(at(folder, name));
        } catch (error) {
          if (!isErrno(error, "EEXIST")) throw toFileFailure(error, display);
          const there = await lstatAt(folder, name, display);
          if (there?.isDirectory() !== true)
            throw new FileOperationFailure(
              "exists",
              `${display} already exists and is not a folder`,
            );
          return { path: input.path, created: false };
        }
        if (durable) await syncFolder(folder);
        return { path: input.path, created: true };
      });

      /** A file where a folder should be is a conflict with what exists, not a bad path. */
      function asExists(error: unknown): FileOperationFailure {
        if (error instanceof FileOperationFailure && error.code === "not_a_directory")
          return new FileOperationFailure(
            "exists",
            `${error.message}, so ${display} cannot be made (a file is in the way)`,
          );
        return toFileFailure(error, display);
      }
    },
  };

  /** Removes a trash folder and then its record; a failure leaves the record for `sweep`. */
  async function finishTrash(
    folder: FileHandle,
    parent: readonly string[],
    trashName: string,
    key: string,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      await removeTree(folder, trashName, signal);
      await dropRecord(trashDir, key);
    } catch (error) {
      // The folder is already gone from view (FOP4); what is left is hidden and swept later.
      log(
        `worker: removing deleted folder ${displayWorkspacePath([...parent, trashName].join("/"))} failed (will retry): ${(error as Error).message}`,
      );
    }
  }

  function describe(type: FileEntryType): string {
    return type === "dir" ? "folder" : type === "symlink" ? "symbolic link" : type;
  }

  async function run(call: FileOperationCall): Promise<FileOperationOutcome> {
    const schema = fileInputSchemas[call.tool];
    const parsed = schema.safeParse(call.input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where =
        issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`;
      return {
        ok: false,
        error: {
          code: "invalid_input",
          message: `invalid ${call.tool} input${where}: ${issue?.message ?? "schema mismatch"}`,
        },
      };
    }
    try {
      const handler = handlers[call.tool] as (
        input: unknown,
        call: FileOperationCall,
      ) => Promise<unknown>;
      return { ok: true, output: await handler(parsed.data, call) };
    } catch (error) {
      const failure =
        error instanceof FileOperationFailure ? error : toFileFailure(error, "the path");
      if (failure.code === "internal" || failure.code === "io_error")
        log(`worker: ${call.tool} failed: ${(error as Error).stack ?? String(error)}`);
      return { ok: false, error: { code: failure.code, message: failure.message } };
    }
  }

  return {
    run,
    async sweep() {
      const sweptAt = now();
      for (const name of await fs.readdir(uploadsDir).catch(() => [] as string[])) {
        const key = name.replace(/\.json$/, "");
        const record = await readRecord<UploadRecord>(path.join(uploadsDir, name));
        if (record !== undefined && sweptAt - record.createdAt < fileLimits.uploadTtlMs) continue;
        if (record !== undefined) {
          const outcome = await run({
            callId: `sweep-${key}`,
            tool: "files.abort",
            input: { uploadId: record.uploadId, path: record.path },
            signal: new AbortController().signal,
          });
          if (!outcome.ok) {
            log(`worker: removing an expired upload failed: ${outcome.error.message}`);
            continue;
          }
        }
        await dropRecord(uploadsDir, key);
      }
      for (const name of await fs.readdir(trashDir).catch(() => [] as string[])) {
        const key = name.replace(/\.json$/, "");
        const record = await readRecord<TrashRecord>(path.join(trashDir, name));
        if (record !== undefined && sweptAt - record.createdAt < trashSweepAgeMs) continue;
        if (record === undefined) {
          await dropRecord(trashDir, key);
          continue;
        }
        try {
          await inFolder(components(record.parent), (folder) =>
            finishTrash(
              folder,
              components(record.parent),
              record.name,
              key,
              new AbortController().signal,
            ),
          );
        } catch (error) {
          if (error instanceof FileOperationFailure && error.code === "not_found")
            await dropRecord(trashDir, key);
          else log(`worker: finishing a delete failed: ${(error as Error).message}`);
        }
      }
    },
  };
}
