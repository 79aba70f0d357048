/**
 * File operations: what the server asks a computer's worker to do with files under its
 * workspace on behalf of the files API (docs/worker-protocol.md, "File operations"). They ride
 * the same `call`/`result` frames as the tools but are not model tools: the worker runs them
 * without its done-log, and each one is idempotent by its own design (described per operation
 * below and in the doc), so a call the gateway re-sends after a reconnect is safe.
 *
 * Paths on the wire are relative to the workspace: `""` is the workspace itself, otherwise
 * components joined by `/`, none of them empty, `.` or `..`, none holding NUL or longer than 255
 * bytes. Both ends check this with `workspacePathSchema`; the worker then resolves the path one
 * component at a time without following a link (src/worker/workspace-fs.ts).
 *
 * Unknown fields are stripped, as for frames.
 */
import { z } from "zod";

/** Limits every worker applies to file operations (part of the protocol). */
export const fileLimits = {
  /** Bytes of file content in one `files.read` answer or `files.write` call (4 MiB as base64). */
  chunkBytes: 3 * 1024 * 1024,
  /** Largest file `files.write`/`files.commit` accept (the files API's upload limit). */
  maxUploadBytes: 25 * 1024 * 1024,
  /** Entries one `files.list` returns at most; more sets `truncated`. */
  listMaxEntries: 10_000,
  /** An upload not committed or aborted within this long is removed by the worker. */
  uploadTtlMs: 60 * 60 * 1000,
  /** Longest path on the wire, in characters. */
  maxPathLength: 4096,
  /** Longest name of one component, in UTF-8 bytes (Linux NAME_MAX). */
  maxNameBytes: 255,
} as const;

/** Error codes a file operation's result may carry. Unknown codes from a newer worker mean `internal`. */
export const fileErrorCodes = [
  "invalid_input",
  "unknown_tool",
  "not_found",
  "is_directory",
  "not_a_directory",
  "not_a_file",
  "is_symlink",
  "exists",
  "not_empty",
  "changed",
  "too_large",
  "permission_denied",
  "no_space",
  "cancelled",
  "io_error",
  "internal",
] as const;

export type FileErrorCode = (typeof fileErrorCodes)[number];

/** Why a wire path is not acceptable, or undefined when it is. */
export function workspacePathProblem(path: string): string | undefined {
  if (path === "") return undefined;
  if (path.length > fileLimits.maxPathLength)
    return `the path is longer than ${fileLimits.maxPathLength} characters`;
  if (path.includes("\0")) return "the path contains a NUL byte";
  for (const name of path.split("/")) {
    if (name === "") return "the path has an empty component (a leading, trailing or double /)";
    if (name === "." || name === "..") return "the path has a `.` or `..` component";
    if (Buffer.byteLength(name, "utf8") > fileLimits.maxNameBytes)
      return `a name in the path is longer than ${fileLimits.maxNameBytes} bytes`;
  }
  return undefined;
}

/** A path relative to the workspace, as described in the module header. */
export const workspacePathSchema = z.string().superRefine((path, context) => {
  const problem = workspacePathProblem(path);
  if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
});

/** How the API and the worker name a wire path to people: `/workspace/<path>`. */
export function displayWorkspacePath(path: string): string {
  return path === "" ? "/workspace" : `/workspace/${path}`;
}

/** Names the worker gives its own temporary files; listings never show them. */
export const internalNamePatterns = {
  upload: /^\.roost-upload-[A-Za-z0-9_-]{16,64}\.tmp$/,
  trash: /^\.roost-trash-[0-9a-f]{32}$/,
} as const;

export function uploadTempName(uploadId: string): string {
  return `.roost-upload-${uploadId}.tmp`;
}

export function isInternalName(name: string): boolean {
  return internalNamePatterns.upload.test(name) || internalNamePatterns.trash.test(name);
}

const uploadId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{16,64}$/, "an upload id: 16 to 64 characters of [A-Za-z0-9_-]");
const byteCount = z.number().int().nonnegative();
/** Base64 text of at most one chunk; its characters are checked when it is decoded (decodeChunk). */
const base64Chunk = z
  .string()
  .max(Math.ceil(fileLimits.chunkBytes / 3) * 4)
  .refine((text) => text.length % 4 === 0, "base64 text (a multiple of 4 characters)");

/**
 * Decodes a chunk's base64, or undefined when it is not canonical base64. Node's decoder skips
 * characters outside the alphabet, so a decoded length that differs from what the text's length
 * promises gives them away, at no cost beyond the decoding (a regex over 4 MiB is slow).
 */
export function decodeChunk(text: string): Buffer | undefined {
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const bytes = Buffer.from(text, "base64");
  return text.length % 4 === 0 && bytes.byteLength === (text.length / 4) * 3 - padding
    ? bytes
    : undefined;
}
/** Epoch milliseconds. */
const timestamp = z.number().nonnegative();

// ── files.list ──────────────────────────────────────────────────────────────────────────────────
// A read: repeating it is harmless.

export const fileListInputSchema = z.object({
  path: workspacePathSchema,
  /** @default fileLimits.listMaxEntries */
  limit: z.number().int().positive().max(fileLimits.listMaxEntries).optional(),
});

export const fileEntryTypes = ["file", "dir", "symlink", "other"] as const;

export const fileEntrySchema = z.object({
  name: z.string().min(1),
  /** `other`: a FIFO, socket or device node. */
  type: z.enum(fileEntryTypes),
  /** Bytes (for a link: the length of its target). */
  size: byteCount,
  modifiedAt: timestamp,
  /** A symbolic link's target, as written in the link (it is never followed). */
  target: z.string().optional(),
});

export const fileListOutputSchema = z.object({
  path: workspacePathSchema,
  /** Sorted: folders first, then by name. */
  entries: z.array(fileEntrySchema).max(fileLimits.listMaxEntries),
  truncated: z.boolean(),
});

// ── files.read ──────────────────────────────────────────────────────────────────────────────────
// A read of one range: repeating it is harmless. `version` ties the ranges of one download to
// one state of the file.

export const fileReadInputSchema = z.object({
  path: workspacePathSchema,
  offset: byteCount,
  length: z.number().int().positive().max(fileLimits.chunkBytes),
  /** The `version` of the first range; a file that changed since answers `changed`. */
  version: z.string().min(1).max(200).optional(),
});

export const fileReadOutputSchema = z.object({
  /** The whole file's size. */
  size: byteCount,
  modifiedAt: timestamp,
  /** Identifies this state of the file (device, inode, times and size). */
  version: z.string().min(1).max(200),
  offset: byteCount,
  /** Base64 of the bytes read (fewer than asked only at the end of the file). */
  data: base64Chunk,
  /** True when this range reaches the end of the file. */
  eof: z.boolean(),
});

// ── files.write ─────────────────────────────────────────────────────────────────────────────────
// Writes `data` at `offset` of the upload's temporary file in the target's folder (creating the
// folders on the way and the temporary file at offset 0). Writing the same bytes at the same
// offset again is harmless.

export const fileWriteInputSchema = z.object({
  uploadId,
  /** The file the upload will become. */
  path: workspacePathSchema,
  offset: byteCount.max(fileLimits.maxUploadBytes),
  data: base64Chunk,
});

export const fileWriteOutputSchema = z.object({
  /** `offset` plus the bytes of this chunk. */
  written: byteCount,
});

// ── files.commit ────────────────────────────────────────────────────────────────────────────────
// Checks the temporary file's size and SHA-256 and renames it over `path`. Repeated after it
// succeeded (the temporary file is gone), it answers success again when `path` holds exactly
// those bytes, with `created: false`.

export const fileCommitInputSchema = z.object({
  uploadId,
  path: workspacePathSchema,
  size: byteCount.max(fileLimits.maxUploadBytes),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, "a lowercase hex SHA-256"),
});

export const fileCommitOutputSchema = z.object({
  path: workspacePathSchema,
  size: byteCount,
  /** False when the upload replaced a file (or the commit was a repeat). */
  created: z.boolean(),
});

// ── files.abort ─────────────────────────────────────────────────────────────────────────────────
// Removes the upload's temporary file; harmless when it is gone already.

export const fileAbortInputSchema = z.object({ uploadId, path: workspacePathSchema });
export const fileAbortOutputSchema = z.object({ removed: z.boolean() });

// ── files.delete ────────────────────────────────────────────────────────────────────────────────
// A file or link is unlinked; a folder is renamed to a hidden trash name derived from the call
// id, then removed, so the folder disappears at once and whole. A repeat finds the trash of the
// same call id and finishes it; once that is gone too, a repeat answers `not_found`.

export const fileDeleteInputSchema = z.object({
  path: workspacePathSchema.refine((path) => path !== "", "the workspace itself cannot be deleted"),
  /** Required for a folder that is not empty. */
  recursive: z.boolean(),
});

export const fileDeleteOutputSchema = z.object({
  path: workspacePathSchema,
  type: z.enum(fileEntryTypes),
});

// ── files.rename ────────────────────────────────────────────────────────────────────────────────
// Never replaces: an existing `to` answers `exists`. The destination folder must exist. A repeat
// after it succeeded answers `not_found` (the source is gone); the rename happened once.

export const fileRenameInputSchema = z.object({
  from: workspacePathSchema.refine((path) => path !== "", "the workspace itself cannot be renamed"),
  to: workspacePathSchema.refine((path) => path !== "", "nothing can replace the workspace"),
});

export const fileRenameOutputSchema = z.object({
  from: workspacePathSchema,
  to: workspacePathSchema,
  type: z.enum(fileEntryTypes),
});

// ── files.mkdir ─────────────────────────────────────────────────────────────────────────────────
// An existing folder answers `created: false`, so a repeat is harmless.

export const fileMkdirInputSchema = z.object({
  path: workspacePathSchema,
  /** Create missing parent folders too. */
  parents: z.boolean(),
});

export const fileMkdirOutputSchema = z.object({
  path: workspacePathSchema,
  created: z.boolean(),
});

// ── registry ────────────────────────────────────────────────────────────────────────────────────

export const fileInputSchemas = {
  "files.list": fileListInputSchema,
  "files.read": fileReadInputSchema,
  "files.write": fileWriteInputSchema,
  "files.commit": fileCommitInputSchema,
  "files.abort": fileAbortInputSchema,
  "files.delete": fileDeleteInputSchema,
  "files.rename": fileRenameInputSchema,
  "files.mkdir": fileMkdirInputSchema,
} as const;

export const fileOutputSchemas = {
  "files.list": fileListOutputSchema,
  "files.read": fileReadOutputSchema,
  "files.write": fileWriteOutputSchema,
  "files.commit": fileCommitOutputSchema,
  "files.abort": fileAbortOutputSchema,
  "files.delete": fileDeleteOutputSchema,
  "files.rename": fileRenameOutputSchema,
  "files.mkdir": fileMkdirOutputSchema,
} as const;

export type FileOperationName = keyof typeof fileInputSchemas;
/** Sent in the worker's hello `capabilities` next to the tool names. */
export const fileOperationNames = Object.keys(fileInputSchemas) as FileOperationName[];

export function isFileOperationName(value: string): value is FileOperationName {
  return Object.hasOwn(fileInputSchemas, value);
}

export type FileOperationInput<T extends FileOperationName> = z.input<(typeof fileInputSchemas)[T]>;
export type FileOperationOutput<T extends FileOperationName> = z.output<
  (typeof fileOutputSchemas)[T]
>;
export type FileListEntry = z.output<typeof fileEntrySchema>;
export type FileEntryType = (typeof fileEntryTypes)[number];
