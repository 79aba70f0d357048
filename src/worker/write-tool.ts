/**
 * `write`: replace a file's content atomically, creating parent directories.
 *
 * A write over an existing text file records what it replaced (`previous`, for the owner's diff)
 * when that file is UTF-8 text of at most `writePreviousMaxBytes` inside the workspace; otherwise
 * `previousOmitted` says why not. The text is read before the rename that replaces it, and
 * recorded in the call's started record, so a call repeated after a worker restart (the rename
 * may already have happened) reports the content it replaced the first time, not its own.
 */
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import type { WriteInput, WriteOutput } from "../protocol/index.ts";
import { writePreviousMaxBytes } from "../protocol/index.ts";
import { isErrno, makeDirectories, writeFileAtomic } from "./fs-atomic.ts";
import { isBinary } from "./read-tool.ts";
import { resolveToolPath, toToolFailure, ToolFailure } from "./tool-context.ts";
import type { ToolContext } from "./tool-context.ts";

/** What the started record keeps: the facts about the file before the first attempt wrote it. */
type WriteDetail = Pick<WriteOutput, "created" | "previous" | "previousOmitted">;

export async function writeTool(input: WriteInput, context: ToolContext): Promise<WriteOutput> {
  const requested = resolveToolPath(context.workspace, input.path);
  const data =
    input.encoding === "base64"
      ? Buffer.from(input.content, "base64")
      : Buffer.from(input.content, "utf8");
  try {
    const target = await writeTarget(requested);
    await makeDirectories(path.dirname(target.file));
    const recorded = context.previous?.detail as WriteDetail | undefined;
    const before: WriteDetail = recorded ?? {
      created: target.mode === undefined,
      ...(target.mode === undefined ? {} : await previousContent(target.file, context.workspace)),
    };
    // Rewriting the same bytes is harmless, so a write repeated after a worker restart simply
    // runs again; what it replaced comes from the first attempt's record.
    await context.markStarted(before);
    await writeFileAtomic(target.file, data, context.durable, target.mode);
    return { path: requested, bytesWritten: data.byteLength, ...before };
  } catch (error) {
    throw toToolFailure(error, requested);
  }
}

/**
 * The text of the file about to be replaced, or why it is not recorded. Only a file inside the
 * workspace is read: a link to a file elsewhere (or a path outside it) is written, never read here.
 */
async function previousContent(
  file: string,
  workspace: string,
): Promise<Pick<WriteOutput, "previous" | "previousOmitted">> {
  const root = await fs.realpath(workspace).catch(() => path.resolve(workspace));
  if (!isInside(root, file)) return { previousOmitted: "outside_workspace" };
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return { previousOmitted: "outside_workspace" }; // swapped for a link since writeTarget looked
  }
  try {
    // A directory on the path swapped for a link since writeTarget looked: check what was opened.
    const opened = await fs.realpath(`/proc/self/fd/${handle.fd}`).catch(() => file);
    if (!isInside(root, opened)) return { previousOmitted: "outside_workspace" };
    const stat = await handle.stat();
    if (!stat.isFile()) return { previousOmitted: "binary" };
    if (stat.size > writePreviousMaxBytes) return { previousOmitted: "too_large" };
    const buffer = Buffer.alloc(writePreviousMaxBytes + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > writePreviousMaxBytes) return { previousOmitted: "too_large" };
    const bytes = buffer.subarray(0, bytesRead);
    if (isBinary(bytes)) return { previousOmitted: "binary" };
    try {
      return { previous: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
    } catch {
      return { previousOmitted: "binary" };
    }
  } finally {
    await handle.close();
  }
}

function isInside(root: string, file: string): boolean {
  const relative = path.relative(root, file);
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative);
}

/**
 * Where the bytes go: through a symlink to its target (renaming over the link would replace the
 * link itself), keeping an existing file's permission bits.
 */
export async function writeTarget(
  file: string,
): Promise<{ file: string; mode: number | undefined }> {
  try {
    const real = await fs.realpath(file);
    const stat = await fs.stat(real);
    if (stat.isDirectory())
      throw new ToolFailure("is_directory", `${file} is a directory; give a file path`);
    return { file: real, mode: stat.mode & 0o7777 };
  } catch (error) {
    if (isErrno(error, "ENOENT")) return { file, mode: undefined };
    throw error;
  }
}
