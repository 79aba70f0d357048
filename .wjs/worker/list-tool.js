/** `list` (one directory's entries) and `glob` (paths matching a pattern under a directory). */
import { promises as fs } from "node:fs";
import path from "node:path";
import { toolLimits } from "../protocol/index.js";
                                                                                                    
import { resolveToolPath, toToolFailure, ToolFailure } from "./tool-context.js";
                                                     

export async function listTool(input           , context             )                      {
  const dir = resolveToolPath(context.workspace, input.path ?? ".");
  const limit = input.limit ?? toolLimits.listDefaultLimit;
  try {
    await requireDirectory(dir);
    const dirents = await fs.readdir(dir, { withFileTypes: true });
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const entries              = [];
    for (const dirent of dirents.slice(0, limit)) {
      const stat = await fs.lstat(path.join(dir, dirent.name)).catch(() => undefined);
      const type                    = dirent.isFile()
        ? "file"
        : dirent.isDirectory()
          ? "directory"
          : dirent.isSymbolicLink()
            ? "symlink"
            : "other";
      entries.push({ name: dirent.name, type, sizeBytes: stat?.size ?? 0 });
    }
    return { path: dir, entries, truncated: dirents.length > limit };
  } catch (error) {
    throw toToolFailure(error, dir);
  }
}

/** Matches collected before sorting; beyond it the walk stops and the result says truncated. */
const globScanCap = 100_000;

export async function globTool(input           , context             )                      {
  const dir = resolveToolPath(context.workspace, input.path ?? ".");
  const limit = input.limit ?? toolLimits.listDefaultLimit;
  if (path.isAbsolute(input.pattern) || input.pattern.split(/[\\/]/).includes("..")) {
    throw new ToolFailure(
      "invalid_input",
      "pattern must be relative to path and stay under it (set path to search elsewhere)",
    );
  }
  try {
    await requireDirectory(dir);
    const matches           = [];
    let capped = false;
    for await (const match of fs.glob(input.pattern, { cwd: dir })) {
      if (context.now() > context.deadline) {
        throw new ToolFailure(
          "timeout",
          `glob ${input.pattern} ran out of time; narrow the pattern or the path`,
        );
      }
      if (context.signal.aborted) throw new ToolFailure("cancelled", "the call was cancelled");
      if (matches.length >= globScanCap) {
        capped = true;
        break;
      }
      matches.push(match);
    }
    matches.sort();
    return {
      path: dir,
      matches: matches.slice(0, limit),
      truncated: capped || matches.length > limit,
    };
  } catch (error) {
    throw toToolFailure(error, dir);
  }
}

async function requireDirectory(dir        )                {
  const stat = await fs.stat(dir);
  if (!stat.isDirectory())
    throw new ToolFailure("not_a_directory", `${dir} is not a directory (use read for files)`);
}
