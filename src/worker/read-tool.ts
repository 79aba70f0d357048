/** `read`: a line range of a text file, an image as base64, or a note that the file is binary. */
import { createReadStream, promises as fs } from "node:fs";
import { toolLimits } from "../protocol/index.ts";
import type { ImageMimeType, ReadInput, ReadOutput } from "../protocol/index.ts";
import { resolveToolPath, toToolFailure, ToolFailure } from "./tool-context.ts";
import type { ToolContext } from "./tool-context.ts";

/** Files larger than this are not read to the end just to count their lines. */
const countLinesUpToBytes = 16 * 1024 * 1024;
const sniffBytes = 8192;

export async function readTool(input: ReadInput, context: ToolContext): Promise<ReadOutput> {
  const file = resolveToolPath(context.workspace, input.path);
  let stat;
  try {
    stat = await fs.stat(file);
  } catch (error) {
    throw toToolFailure(error, file);
  }
  if (stat.isDirectory())
    throw new ToolFailure("is_directory", `${file} is a directory (use list to see its entries)`);

  const head = await readHead(file, sniffBytes).catch((error: unknown) => {
    throw toToolFailure(error, file);
  });
  const mimeType = imageMimeType(head);
  if (mimeType !== undefined) {
    if (stat.size > toolLimits.readMaxImageBytes) {
      throw new ToolFailure(
        "too_large",
        `${file} is a ${stat.size}-byte image; images up to ${toolLimits.readMaxImageBytes} bytes can be read (resize it with a shell command first)`,
      );
    }
    const data = await fs.readFile(file);
    return {
      kind: "image",
      path: file,
      mimeType,
      data: data.toString("base64"),
      sizeBytes: data.byteLength,
    };
  }
  if (isBinary(head)) return { kind: "binary", path: file, sizeBytes: stat.size };

  const startLine = input.offset ?? 1;
  const lineLimit = input.limit ?? toolLimits.readDefaultLines;
  const maxBytes = input.maxBytes ?? toolLimits.readMaxBytes;
  const countAll = stat.size <= countLinesUpToBytes;

  const lines: string[] = [];
  let bytes = 0;
  let lineNumber = 0;
  let stoppedEarly = false;
  let cutByBytes = false;
  const stream = createReadStream(file, { encoding: "utf8" });
  // Loaded at the first text read, not at the worker's start (decision 0021, sixth pass).
  const { createInterface } = process.getBuiltinModule("node:readline");
  const reader = createInterface({ input: stream, crlfDelay: Infinity });
  try {
    for await (const line of reader) {
      lineNumber += 1;
      if (lineNumber < startLine) continue;
      if (lines.length >= lineLimit || cutByBytes) {
        stoppedEarly = true;
        if (!countAll) break;
        continue;
      }
      const lineBytes = Buffer.byteLength(line, "utf8") + 1;
      if (bytes + lineBytes > maxBytes) {
        cutByBytes = true;
        // A single line longer than the budget: return its beginning rather than nothing.
        if (lines.length === 0) lines.push(cutToBytes(line, maxBytes));
        stoppedEarly = true;
        if (!countAll) break;
        continue;
      }
      lines.push(line);
      bytes += lineBytes;
    }
  } catch (error) {
    throw toToolFailure(error, file);
  } finally {
    reader.close();
    stream.destroy();
  }

  const output: ReadOutput = {
    kind: "text",
    path: file,
    content: lines.join("\n"),
    startLine,
    endLine: startLine + lines.length - 1,
    truncated: stoppedEarly || cutByBytes,
    sizeBytes: stat.size,
  };
  if (countAll) output.totalLines = lineNumber;
  return output;
}

async function readHead(file: string, length: number): Promise<Buffer> {
  const handle = await fs.open(file, "r");
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

export function imageMimeType(head: Uint8Array): ImageMimeType | undefined {
  const startsWith = (bytes: number[], at = 0) =>
    bytes.every((byte, index) => head[at + index] === byte);
  if (startsWith([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (startsWith([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (startsWith([0x47, 0x49, 0x46, 0x38])) return "image/gif";
  if (startsWith([0x52, 0x49, 0x46, 0x46]) && startsWith([0x57, 0x45, 0x42, 0x50], 8))
    return "image/webp";
  return undefined;
}

/** A NUL byte or bytes that are not UTF-8 in the first 8 KiB mean binary. */
export function isBinary(head: Buffer): boolean {
  if (head.includes(0)) return true;
  // Ignore a multi-byte character cut off by the sniff window.
  let end = head.length;
  for (let back = 1; back <= 3 && end - back >= 0; back += 1) {
    const byte = head[end - back];
    if (byte === undefined) break;
    if ((byte & 0xc0) === 0xc0) {
      end -= back;
      break;
    }
    if ((byte & 0x80) === 0) break;
  }
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head.subarray(0, end));
    return false;
  } catch {
    return true;
  }
}

function cutToBytes(text: string, maxBytes: number): string {
  const buffer = Buffer.from(text, "utf8");
  if (buffer.byteLength <= maxBytes) return text;
  return new TextDecoder("utf-8").decode(buffer.subarray(0, charBoundary(buffer, maxBytes)));
}

/** The largest index ≤ `at` that starts a UTF-8 character. */
export function charBoundary(buffer: Uint8Array, at: number): number {
  let index = Math.min(at, buffer.length);
  while (index > 0 && index < buffer.length && ((buffer[index] ?? 0) & 0xc0) === 0x80) index -= 1;
  return index;
}
