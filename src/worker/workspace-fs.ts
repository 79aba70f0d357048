/**
 * No-follow, race-free access to paths under the workspace, for the file operations of the files
 * API (file-operations.ts). Node has no openat(2) family, so every "at" call names its target as
 * `/proc/self/fd/<folder fd>/<name>`: the kernel starts from the folder the fd holds and looks
 * `name` up in it, whatever was renamed or swapped since that fd was opened.
 *
 * Invariants:
 *   WFS1 A path is walked one component at a time from an fd on the workspace root; each folder
 *        is opened with O_DIRECTORY|O_NOFOLLOW relative to its parent's fd, so a symbolic link
 *        anywhere on the path is refused (`is_symlink`), never followed, and a swap between two
 *        steps cannot lead outside the folder the previous fd holds.
 *   WFS2 The last component is acted on as `<parent fd>/<name>` with calls that never follow a
 *        final link: open with O_NOFOLLOW, lstat, mkdir, rename, link, unlink, rmdir, readlink.
 *   WFS3 File contents are read or written only through an fd whose fstat says "regular file";
 *        opens carry O_NONBLOCK so a FIFO cannot hang the worker. An lstat before an open only
 *        chooses the error message; what the fd's fstat says decides.
 *   WFS4 Names are single components (protocol workspacePathSchema, checked again here): never
 *        empty, `.` or `..`, never with `/` or NUL.
 */
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { displayWorkspacePath, workspacePathProblem } from "../protocol/index.ts";
import type { FileErrorCode } from "../protocol/index.ts";
import { isErrno } from "./fs-atomic.ts";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** A file operation's failure, answered as `{ok: false, error: {code, message}}`. */
export class FileOperationFailure extends Error {
  override readonly name = "FileOperationFailure";
  readonly code: FileErrorCode;
  constructor(code: FileErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** `<fd>` or `<fd>/<name>` of an open folder, as a path the kernel resolves from that folder (WFS2). */
export function at(folder: FileHandle, name?: string): string {
  if (name !== undefined && (name === "" || name === "." || name === ".." || /[/\0]/.test(name)))
    throw new FileOperationFailure("invalid_input", `${JSON.stringify(name)} is not a name`); // WFS4
  return name === undefined ? `/proc/self/fd/${folder.fd}` : `/proc/self/fd/${folder.fd}/${name}`;
}

/** Splits a wire path into its components after checking it again (WFS4). */
export function components(path: string): string[] {
  const problem = workspacePathProblem(path);
  if (problem !== undefined) throw new FileOperationFailure("invalid_input", problem);
  return path === "" ? [] : path.split("/");
}

/** The parent's components and the last name of a path that is not the workspace itself. */
export function splitLast(path: string, what: string): { parent: string[]; name: string } {
  const parts = components(path);
  const name = parts.pop();
  if (name === undefined)
    throw new FileOperationFailure(
      "invalid_input",
      `${what} must name something inside /workspace`,
    );
  return { parent: parts, name };
}

/**
 * Opens the workspace root. The configured workspace path itself is trusted (the operator set
 * it); everything below it is walked without following links.
 */
export async function openWorkspaceRoot(workspace: string): Promise<FileHandle> {
  const root = await fs.open(workspace, O_RDONLY | O_DIRECTORY);
  try {
    const [direct, viaProc] = await Promise.all([
      root.stat(),
      fs.stat(at(root)).catch(() => undefined),
    ]);
    if (viaProc === undefined || viaProc.ino !== direct.ino || viaProc.dev !== direct.dev) {
      throw new FileOperationFailure(
        "internal",
        "the worker resolves paths through /proc/self/fd, which is not available here (mount /proc in the computer)",
      );
    }
    return root;
  } catch (error) {
    await root.close();
    throw error;
  }
}

function openFolderAt(parent: FileHandle, name: string): Promise<FileHandle> {
  return fs.open(at(parent, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK); // WFS1
}

/**
 * Opens the folder at `parts` below `root`, one component at a time (WFS1), creating missing
 * folders when `create` is set. Always returns a new handle (the root's own for no parts), which
 * the caller closes. `created` says whether any folder was made.
 */
export async function walk(
  root: FileHandle,
  parts: readonly string[],
  create = false,
): Promise<{ folder: FileHandle; created: boolean }> {
  let current = await fs.open(at(root), O_RDONLY | O_DIRECTORY);
  let created = false;
  try {
    for (let index = 0; index < parts.length; index++) {
      const name = parts[index]!;
      const display = displayWorkspacePath(parts.slice(0, index + 1).join("/"));
      let next: FileHandle;
      try {
        next = await openFolderAt(current, name);
      } catch (error) {
        if (!create || !isErrno(error, "ENOENT"))
          throw await openFailure(error, current, name, display);
        try {
          await fs.mkdir(at(current, name)); // WFS2: mkdir never follows a final link
          created = true;
        } catch (mkdirError) {
          if (!isErrno(mkdirError, "EEXIST")) throw toFileFailure(mkdirError, display);
        }
        try {
          next = await openFolderAt(current, name);
        } catch (reopenError) {
          throw await openFailure(reopenError, current, name, display);
        }
      }
      await current.close();
      current = next;
    }
    return { folder: current, created };
  } catch (error) {
    await current.close().catch(() => undefined);
    throw error;
  }
}

/** Why `<folder>/<name>` could not be opened, in words that say what is there. */
async function openFailure(
  error: unknown,
  folder: FileHandle,
  name: string,
  display: string,
): Promise<FileOperationFailure> {
  // O_NOFOLLOW|O_DIRECTORY on a link fails with ENOTDIR (or ELOOP): look at what is there.
  if (isErrno(error, "ELOOP") || isErrno(error, "ENOTDIR")) {
    const there = await fs.lstat(at(folder, name)).catch(() => undefined);
    if (there?.isSymbolicLink() === true || (there === undefined && isErrno(error, "ELOOP")))
      return symlinkFailure(folder, name, display);
    if (there?.isDirectory() === true) {
      // It was something else when opened: it is being swapped right now.
      return new FileOperationFailure(
        "changed",
        `${display} changed while it was being opened; try again`,
      );
    }
    return new FileOperationFailure("not_a_directory", `${display} is not a folder`);
  }
  return toFileFailure(error, display);
}

export async function symlinkFailure(
  folder: FileHandle,
  name: string,
  display: string,
): Promise<FileOperationFailure> {
  const target = await fs.readlink(at(folder, name)).catch(() => undefined);
  return new FileOperationFailure(
    "is_symlink",
    `${display} is a symbolic link${target === undefined ? "" : ` (to ${target})`}; the files API does not follow links: use the path it points to`,
  );
}

export interface OpenedFile {
  handle: FileHandle;
  stat: import("node:fs").BigIntStats;
}

/**
 * Opens `<folder>/<name>` as a regular file (WFS2, WFS3). `flags` adds to O_NOFOLLOW|O_NONBLOCK;
 * without O_WRONLY/O_RDWR it opens for reading.
 */
export async function openFileAt(
  folder: FileHandle,
  name: string,
  display: string,
  flags: number = O_RDONLY,
  mode = 0o600,
): Promise<OpenedFile> {
  // A hint only (WFS3): it turns "a folder" or "a FIFO" into a clear error before any open.
  const hint = await fs.lstat(at(folder, name)).catch(() => undefined);
  if (hint?.isDirectory() === true)
    throw new FileOperationFailure("is_directory", `${display} is a folder, not a file`);
  if (hint?.isSymbolicLink() === true) throw await symlinkFailure(folder, name, display);
  if (hint !== undefined && !hint.isFile())
    throw new FileOperationFailure(
      "not_a_file",
      `${display} is not a regular file (a FIFO, socket or device)`,
    );
  let handle: FileHandle;
  try {
    handle = await fs.open(at(folder, name), flags | O_NOFOLLOW | O_NONBLOCK, mode);
  } catch (error) {
    if (isErrno(error, "ELOOP")) throw await symlinkFailure(folder, name, display);
    if (isErrno(error, "EISDIR"))
      throw new FileOperationFailure("is_directory", `${display} is a folder, not a file`);
    if (isErrno(error, "ENXIO"))
      throw new FileOperationFailure("not_a_file", `${display} is not a regular file`);
    throw toFileFailure(error, display);
  }
  try {
    const stat = await handle.stat({ bigint: true });
    if (stat.isDirectory())
      throw new FileOperationFailure("is_directory", `${display} is a folder, not a file`);
    if (!stat.isFile())
      throw new FileOperationFailure("not_a_file", `${display} is not a regular file`); // WFS3
    return { handle, stat };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** lstat of `<folder>/<name>`, or undefined when nothing is there. */
export async function lstatAt(folder: FileHandle, name: string, display: string) {
  try {
    return await fs.lstat(at(folder, name));
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    throw toFileFailure(error, display);
  }
}

/**
 * Removes `<folder>/<name>` and everything below it without following a link (WFS1, WFS2): each
 * folder is opened no-follow and emptied through its own fd; anything that is not a folder when
 * opened is unlinked. Folders the user made unwritable are made writable first (the worker owns
 * them). Stops with `cancelled` when `signal` aborts.
 */
export async function removeTree(
  folder: FileHandle,
  name: string,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) throw new FileOperationFailure("cancelled", "the call was cancelled");
  let child: FileHandle;
  try {
    child = await openFolderAt(folder, name);
  } catch (error) {
    if (isErrno(error, "ENOENT")) return;
    if (!isErrno(error, "ELOOP") && !isErrno(error, "ENOTDIR")) throw error;
    await fs.unlink(at(folder, name)).catch((unlinkError: unknown) => {
      if (!isErrno(unlinkError, "ENOENT")) throw unlinkError;
    });
    return;
  }
  try {
    await child.chmod(0o700).catch(() => undefined);
    for (const entry of await fs.readdir(at(child))) await removeTree(child, entry, signal);
  } finally {
    await child.close();
  }
  await fs.rmdir(at(folder, name)).catch((error: unknown) => {
    if (!isErrno(error, "ENOENT")) throw error;
  });
}

/** fsync of a folder, so a rename or unlink in it survives a crash. */
export async function syncFolder(folder: FileHandle): Promise<void> {
  await folder.sync().catch((error: unknown) => {
    if (!isErrno(error, "EINVAL") && !isErrno(error, "EROFS")) throw error;
  });
}

/** Maps a Node file-system error to a file operation failure naming `display`. */
export function toFileFailure(error: unknown, display: string): FileOperationFailure {
  if (error instanceof FileOperationFailure) return error;
  const code =
    typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;
  switch (code) {
    case "ENOENT":
      return new FileOperationFailure("not_found", `${display} does not exist`);
    case "ELOOP":
      return new FileOperationFailure(
        "is_symlink",
        `${display} is a symbolic link; the files API does not follow links`,
      );
    case "ENOTDIR":
      return new FileOperationFailure(
        "not_a_directory",
        `a component of ${display} is not a folder`,
      );
    case "EISDIR":
      return new FileOperationFailure("is_directory", `${display} is a folder`);
    case "EEXIST":
      return new FileOperationFailure("exists", `${display} already exists`);
    case "ENOTEMPTY":
      return new FileOperationFailure("not_empty", `${display} is a folder that is not empty`);
    case "EACCES":
    case "EPERM":
      return new FileOperationFailure("permission_denied", `permission denied for ${display}`);
    case "EROFS":
      return new FileOperationFailure(
        "permission_denied",
        `${display} is on a read-only file system`,
      );
    case "ENOSPC":
    case "EDQUOT":
      return new FileOperationFailure(
        "no_space",
        `the computer's disk is full (writing ${display}); delete something and try again`,
      );
    case "EFBIG":
      return new FileOperationFailure("too_large", `${display} would be too large`);
    case "ENAMETOOLONG":
      return new FileOperationFailure("invalid_input", `${display} is too long a path`);
    default:
      return new FileOperationFailure(
        code === undefined ? "internal" : "io_error",
        `${display}: ${error instanceof Error ? error.message : String(error)}`,
      );
  }
}
