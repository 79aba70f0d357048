/** `write`: replace a file's content atomically, creating parent directories. */
import { promises as fs } from "node:fs";
import path from "node:path";
                                                                    
import { isErrno, writeFileAtomic } from "./fs-atomic.js";
import { resolveToolPath, toToolFailure, ToolFailure } from "./tool-context.js";
                                                     

export async function writeTool(input            , context             )                       {
  const requested = resolveToolPath(context.workspace, input.path);
  const data =
    input.encoding === "base64"
      ? Buffer.from(input.content, "base64")
      : Buffer.from(input.content, "utf8");
  try {
    const target = await writeTarget(requested);
    await fs.mkdir(path.dirname(target.file), { recursive: true });
    // Rewriting the same bytes is harmless, so a write repeated after a worker restart simply runs again.
    await context.markStarted();
    await writeFileAtomic(target.file, data, context.durable, target.mode);
    return { path: requested, bytesWritten: data.byteLength, created: target.mode === undefined };
  } catch (error) {
    throw toToolFailure(error, requested);
  }
}

/**
 * Where the bytes go: through a symlink to its target (renaming over the link would replace the
 * link itself), keeping an existing file's permission bits.
 */
export async function writeTarget(
  file        ,
)                                                      {
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
