/**
 * Inputs and outputs of the computer tools, shared by the gateway (which checks outputs), the
 * loop (which shows them to the model) and the worker (which checks inputs). Relative paths are
 * resolved by the worker against its workspace directory; outputs always carry absolute paths.
 */
import { z } from "zod";
import {
  browserInputSchema,
  browserOutputSchema,
  desktopInputSchema,
  desktopOutputSchema,
} from "./browser.ts";

/** Limits the worker applies; part of the protocol so every worker behaves the same. */
export const toolLimits = {
  /** Lines returned by `read` when no `limit` is given. */
  readDefaultLines: 2000,
  /** Bytes of text `read` returns at most; longer ranges end early with `truncated: true`. */
  readMaxBytes: 256 * 1024,
  /** Largest image `read` returns (before base64). */
  readMaxImageBytes: 5 * 1024 * 1024,
  /** Bytes of each shell stream kept in a result; longer output keeps head and tail. */
  shellOutputBytes: 30_000,
  /** Bytes of each stream a `shell_status` tail returns by default. */
  shellStatusTailBytes: 4000,
  /** Bytes of output a call streams as chunks at most; the result still has head and tail. */
  streamMaxBytes: 1024 * 1024,
  /** Entries `list` and matches `glob` return by default. */
  listDefaultLimit: 1000,
  listMaxLimit: 10_000,
} as const;

/** Error codes a tool result may carry. Workers may send others; treat unknown codes as `internal`. */
export const toolErrorCodes = [
  "invalid_input",
  "unknown_tool",
  "not_found",
  "is_directory",
  "not_a_directory",
  "no_match",
  "not_unique",
  "binary_file",
  "too_large",
  "permission_denied",
  "timeout",
  "cancelled",
  "interrupted",
  "output_too_large",
  "invalid_output",
  "io_error",
  "internal",
  /** The screen is taken: every screen is in use, or a person controls it (browser, computer). */
  "busy",
  /** A program the tool needs is not installed on the computer (the message names the package). */
  "unavailable",
] as const;

export type ToolErrorCode = (typeof toolErrorCodes)[number];

const path = z.string().min(1).max(4096);
const lineNumber = z.number().int().positive();
const limit = z
  .number()
  .int()
  .positive()
  .max(toolLimits.listMaxLimit)
  .describe(`Most entries or matches to return (default ${toolLimits.listDefaultLimit}).`);
// Field descriptions are part of each tool's spec for the model (z.toJSONSchema emits them as
// `description`); a test keeps every tool's spec within its size budget.

// ── shell ───────────────────────────────────────────────────────────────────────────────────────

export const shellInputSchema = z.object({
  /** Run by a non-login `bash` in the workspace (or `cwd`). */
  command: z
    .string()
    .min(1)
    .max(100_000)
    .describe("The bash command line to run, e.g. `ls -la` or `npm test 2>&1 | tail -50`."),
  /** Working directory; relative to the workspace. */
  cwd: path.describe("Directory to run in; relative paths start at /workspace.").optional(),
  /** Extra environment variables for this command. */
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string())
    .describe("Extra environment variables for this command only.")
    .optional(),
  /** Start detached and return a job id at once; check it with `shell_status`. */
  background: z
    .boolean()
    .describe("Start detached and return a job id at once; follow it with shell_status.")
    .optional(),
});

export const shellCompletedOutputSchema = z.object({
  kind: z.literal("completed"),
  /** Null when the command was killed (timeout, cancel) or its status was lost. */
  exitCode: z.number().int().nullable(),
  timedOut: z.boolean(),
  durationMs: z.number().nonnegative(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutBytes: z.number().int().nonnegative(),
  stderrBytes: z.number().int().nonnegative(),
  stdoutTruncated: z.boolean(),
  stderrTruncated: z.boolean(),
  /** Set when the stream was truncated: the file holding its full text. */
  stdoutPath: z.string().optional(),
  stderrPath: z.string().optional(),
  /** Set when something unusual happened (for example, the worker restarted while it ran). */
  note: z.string().optional(),
});

export const shellStartedOutputSchema = z.object({
  kind: z.literal("started"),
  jobId: z.string(),
  pid: z.number().int(),
  stdoutPath: z.string(),
  stderrPath: z.string(),
});

export const shellOutputSchema = z.discriminatedUnion("kind", [
  shellCompletedOutputSchema,
  shellStartedOutputSchema,
]);

export const shellStatusInputSchema = z.object({
  jobId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "a job id as returned by shell with background: true")
    .describe("The job id that shell returned for a background command."),
  /** Bytes of each stream's tail to return. */
  tailBytes: z
    .number()
    .int()
    .nonnegative()
    .max(toolLimits.readMaxBytes)
    .describe(
      `Bytes from the end of stdout and of stderr to return (default ${toolLimits.shellStatusTailBytes}).`,
    )
    .optional(),
});

export const shellStatusOutputSchema = z.object({
  jobId: z.string(),
  command: z.string(),
  /** `lost`: the process is gone and left no exit status (the computer restarted). */
  state: z.enum(["running", "exited", "lost"]),
  pid: z.number().int().nullable(),
  exitCode: z.number().int().nullable(),
  startedAt: z.string(),
  endedAt: z.string().optional(),
  durationMs: z.number().nonnegative(),
  stdoutTail: z.string(),
  stderrTail: z.string(),
  stdoutBytes: z.number().int().nonnegative(),
  stderrBytes: z.number().int().nonnegative(),
  stdoutPath: z.string(),
  stderrPath: z.string(),
});

// ── files ───────────────────────────────────────────────────────────────────────────────────────

export const readInputSchema = z.object({
  path: path.describe("The file to read; relative paths start at /workspace."),
  /** First line to return, 1-based. @default 1 */
  offset: lineNumber.describe("First line to return, counting from 1 (default 1).").optional(),
  /** Lines to return. @default toolLimits.readDefaultLines */
  limit: z
    .number()
    .int()
    .positive()
    .describe(`How many lines to return (default ${toolLimits.readDefaultLines}).`)
    .optional(),
  /** Bytes of text to return at most. @default toolLimits.readMaxBytes */
  maxBytes: z
    .number()
    .int()
    .positive()
    .max(toolLimits.readMaxBytes)
    .describe(`Most bytes of text to return (default and maximum ${toolLimits.readMaxBytes}).`)
    .optional(),
});

export const imageMimeTypes = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;

export const readOutputSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("text"),
    path: z.string(),
    content: z.string(),
    /** First line returned (1-based); `endLine` is the last one, `startLine - 1` when none. */
    startLine: z.number().int().positive(),
    endLine: z.number().int().nonnegative(),
    /** Absent for very large files, whose lines are not all counted. */
    totalLines: z.number().int().nonnegative().optional(),
    /** True when the range stopped early at `maxBytes` or more lines follow. */
    truncated: z.boolean(),
    sizeBytes: z.number().int().nonnegative(),
  }),
  z.object({
    kind: z.literal("image"),
    path: z.string(),
    mimeType: z.enum(imageMimeTypes),
    /** Base64 of the file's bytes. */
    data: z.string(),
    sizeBytes: z.number().int().nonnegative(),
  }),
  z.object({
    kind: z.literal("binary"),
    path: z.string(),
    sizeBytes: z.number().int().nonnegative(),
  }),
]);

export const writeInputSchema = z.object({
  path: path.describe("The file to create or replace; relative paths start at /workspace."),
  content: z.string().describe("The whole new content of the file."),
  /** How `content` is encoded. @default "utf8" */
  encoding: z
    .enum(["utf8", "base64"])
    .describe("How content is encoded: utf8 text (default) or base64 for binary data.")
    .optional(),
});

/** The most of a replaced file's text a write records for its diff (the worker's write tool). */
export const writePreviousMaxBytes = 64 * 1024;

export const writeOutputSchema = z.object({
  path: z.string(),
  bytesWritten: z.number().int().nonnegative(),
  created: z.boolean(),
  /**
   * The replaced file's text, for the owner's diff (never the model's result text): only when it
   * was UTF-8 text of at most `writePreviousMaxBytes` inside the workspace.
   */
  previous: z.string().optional(),
  /** Why a replaced file's text was not recorded. */
  previousOmitted: z.enum(["binary", "too_large", "outside_workspace"]).optional(),
});

export const editInputSchema = z.object({
  path: path.describe("The file to edit; relative paths start at /workspace."),
  /** Exact text to find; must occur once unless `replaceAll`. */
  oldString: z
    .string()
    .min(1)
    .describe(
      "The exact text to replace, whitespace included; must occur exactly once unless replaceAll.",
    ),
  newString: z.string().describe("The text to put in its place."),
  replaceAll: z
    .boolean()
    .describe("Replace every occurrence of oldString instead of requiring exactly one.")
    .optional(),
});

export const editOutputSchema = z.object({
  path: z.string(),
  replacements: z.number().int().positive(),
});

export const listInputSchema = z.object({
  /** Directory to list. @default the workspace */
  path: path.describe("The directory to list (default /workspace).").optional(),
  limit: limit.optional(),
});

export const listEntrySchema = z.object({
  name: z.string(),
  type: z.enum(["file", "directory", "symlink", "other"]),
  sizeBytes: z.number().int().nonnegative(),
});

export const listOutputSchema = z.object({
  path: z.string(),
  entries: z.array(listEntrySchema),
  truncated: z.boolean(),
});

export const globInputSchema = z.object({
  /** A glob such as `src/**\/*.ts`, matched under `path`. */
  pattern: z
    .string()
    .min(1)
    .max(1000)
    .describe("A glob matched against paths under path, e.g. **/*.py or src/*.ts."),
  /** Directory to search from. @default the workspace */
  path: path.describe("The directory to search under (default /workspace).").optional(),
  limit: limit.optional(),
});

export const globOutputSchema = z.object({
  path: z.string(),
  /** Matches relative to `path`, sorted. */
  matches: z.array(z.string()),
  truncated: z.boolean(),
});

// ── registry ────────────────────────────────────────────────────────────────────────────────────

export const toolInputSchemas = {
  shell: shellInputSchema,
  shell_status: shellStatusInputSchema,
  read: readInputSchema,
  write: writeInputSchema,
  edit: editInputSchema,
  list: listInputSchema,
  glob: globInputSchema,
  browser: browserInputSchema,
  computer: desktopInputSchema,
} as const;

export const toolOutputSchemas = {
  shell: shellOutputSchema,
  shell_status: shellStatusOutputSchema,
  read: readOutputSchema,
  write: writeOutputSchema,
  edit: editOutputSchema,
  list: listOutputSchema,
  glob: globOutputSchema,
  browser: browserOutputSchema,
  computer: desktopOutputSchema,
} as const;

/** The computer tools every worker implements in protocol version 1. */
export type ToolName = keyof typeof toolInputSchemas;
export const toolNames = Object.keys(toolInputSchemas) as ToolName[];

export function isToolName(value: string): value is ToolName {
  return Object.hasOwn(toolInputSchemas, value);
}

export type ToolInput<T extends ToolName> = z.input<(typeof toolInputSchemas)[T]>;
export type ToolOutput<T extends ToolName> = z.output<(typeof toolOutputSchemas)[T]>;

export type ShellInput = z.output<typeof shellInputSchema>;
export type ShellOutput = z.output<typeof shellOutputSchema>;
export type ShellCompletedOutput = z.output<typeof shellCompletedOutputSchema>;
export type ShellStartedOutput = z.output<typeof shellStartedOutputSchema>;
export type ShellStatusInput = z.output<typeof shellStatusInputSchema>;
export type ShellStatusOutput = z.output<typeof shellStatusOutputSchema>;
export type ReadInput = z.output<typeof readInputSchema>;
export type ReadOutput = z.output<typeof readOutputSchema>;
export type WriteInput = z.output<typeof writeInputSchema>;
export type WriteOutput = z.output<typeof writeOutputSchema>;
export type EditInput = z.output<typeof editInputSchema>;
export type EditOutput = z.output<typeof editOutputSchema>;
export type ListInput = z.output<typeof listInputSchema>;
export type ListEntry = z.output<typeof listEntrySchema>;
export type ListOutput = z.output<typeof listOutputSchema>;
export type GlobInput = z.output<typeof globInputSchema>;
export type GlobOutput = z.output<typeof globOutputSchema>;
export type ImageMimeType = (typeof imageMimeTypes)[number];
