/**
 * `edit`: exact-string replacement. Fails when the string is missing, or occurs more than once
 * without `replaceAll`, so the model never edits a place it did not mean.
 *
 * Recovery: before writing, the call records the SHA-256 the file will have afterwards. If the
 * worker dies and the call is repeated, a file that already has that hash means the edit
 * happened; anything else runs the edit again against the file as it is now.
 */
import { promises as fs } from "node:fs";
import type { EditInput, EditOutput } from "../protocol/index.ts";
import { writeFileAtomic } from "./fs-atomic.ts";
import { nodeCrypto } from "./light-crypto.ts";
import { resolveToolPath, toToolFailure, ToolFailure } from "./tool-context.ts";
import type { ToolContext } from "./tool-context.ts";
import { isBinary } from "./read-tool.ts";
import { writeTarget } from "./write-tool.ts";

interface EditDetail {
  afterSha256: string;
  replacements: number;
}

export async function editTool(input: EditInput, context: ToolContext): Promise<EditOutput> {
  const file = resolveToolPath(context.workspace, input.path);
  if (input.oldString === input.newString) {
    throw new ToolFailure(
      "invalid_input",
      "oldString and newString are the same; nothing to change",
    );
  }
  try {
    const target = await writeTarget(file);
    if (target.mode === undefined) {
      throw new ToolFailure("not_found", `${file} does not exist (use write to create a file)`);
    }
    const bytes = await fs.readFile(target.file);
    const previous = context.previous?.detail as EditDetail | undefined;
    if (previous !== undefined && sha256(bytes) === previous.afterSha256) {
      return { path: file, replacements: previous.replacements };
    }
    if (isBinary(bytes.subarray(0, 8192))) {
      throw new ToolFailure(
        "binary_file",
        `${file} is a binary file; edit works on text (use shell for binary files)`,
      );
    }
    const text = bytes.toString("utf8");
    const count = countOccurrences(text, input.oldString);
    if (count === 0) {
      throw new ToolFailure(
        "no_match",
        `oldString was not found in ${file}; read the file and copy the exact text, including whitespace and indentation`,
      );
    }
    if (count > 1 && input.replaceAll !== true) {
      throw new ToolFailure(
        "not_unique",
        `oldString occurs ${count} times in ${file}; include more surrounding lines to make it unique, or set replaceAll to change every occurrence`,
      );
    }
    // split/join, not String.replace: `$&` and friends in newString must stay literal.
    const replaced =
      input.replaceAll === true
        ? text.split(input.oldString).join(input.newString)
        : replaceFirst(text, input.oldString, input.newString);
    const after = Buffer.from(replaced, "utf8");
    await context.markStarted({
      afterSha256: sha256(after),
      replacements: count,
    } satisfies EditDetail);
    await writeFileAtomic(target.file, after, context.durable, target.mode);
    return { path: file, replacements: count };
  } catch (error) {
    throw toToolFailure(error, file);
  }
}

function countOccurrences(text: string, search: string): number {
  let count = 0;
  for (let at = text.indexOf(search); at !== -1; at = text.indexOf(search, at + search.length))
    count += 1;
  return count;
}

function replaceFirst(text: string, search: string, replacement: string): string {
  const at = text.indexOf(search);
  return text.slice(0, at) + replacement + text.slice(at + search.length);
}

function sha256(bytes: Uint8Array): string {
  return nodeCrypto().createHash("sha256").update(bytes).digest("hex");
}
