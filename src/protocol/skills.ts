/**
 * Skills on the computer (docs/skills.md, docs/worker-protocol.md "Skill operations"): the rules
 * of a skill's name and its files' paths, shared by the API, the store and the worker, and the two
 * operations the server sends a worker to keep `~/skills/<name>/` current. Like the file
 * operations they ride `call`/`result` frames, bypass the done-log, and are idempotent by design:
 *
 *   skills.sync  the account's skills as names and digests. The worker removes every skill folder
 *                it wrote that is not in the list, and answers which listed skills are missing or
 *                stale. Nothing is written when nothing changed.
 *   skills.put   one skill's whole folder. The worker writes it into a fresh hidden folder beside
 *                the others and renames it into place; a repeat of a put that already landed
 *                answers at once.
 *
 * Unknown fields are stripped, as for frames.
 */
import { z } from "zod";

/** Limits of a skill (docs/skills.md "Limits"); part of the protocol, so both ends agree. */
export const skillLimits = {
  /** Skills per account. */
  maxSkills: 200,
  /** Characters of a skill's one-line description. */
  maxDescriptionChars: 300,
  /** Bytes of SKILL.md's body (after the front matter), in UTF-8. */
  maxBodyBytes: 100_000,
  /** Files of one skill, SKILL.md included. */
  maxFiles: 200,
  /** Bytes of all of one skill's files together, SKILL.md included. */
  maxSkillBytes: 5 * 1024 * 1024,
  /** Bytes of all of an account's skills together. */
  maxAccountBytes: 100 * 1024 * 1024,
  /** Characters of a file's path inside its skill. */
  maxPathLength: 1024,
  /** Folders a path may go down (`a/b/c.txt` is 3 components). */
  maxPathComponents: 16,
  /** UTF-8 bytes of one path component (Linux NAME_MAX). */
  maxNameBytes: 255,
} as const;

/** A skill's name: 1–64 lowercase letters, digits and dashes, not starting with a dash. */
export const skillNamePattern = /^[a-z0-9][a-z0-9-]{0,63}$/;

export function isSkillName(value: string): boolean {
  return skillNamePattern.test(value);
}

/** The file every skill has, at its root. */
export const skillDocumentPath = "SKILL.md";

/** The only modes a skill's files get on the computer: executable or not. */
export const skillFileModes = [0o644, 0o755] as const;
export type SkillFileMode = (typeof skillFileModes)[number];

/** Why `path` cannot be a file's path inside a skill, or undefined when it can. */
export function skillPathProblem(path: string): string | undefined {
  if (path === "") return "the path is empty";
  if (path.length > skillLimits.maxPathLength)
    return `the path is longer than ${skillLimits.maxPathLength} characters`;
  if (path.startsWith("/"))
    return "the path is absolute (paths are relative to the skill's folder)";
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(path)) return "the path contains a control character";
  if (path.includes("\\")) return "the path contains a backslash (separate folders with /)";
  const parts = path.split("/");
  if (parts.length > skillLimits.maxPathComponents)
    return `the path is more than ${skillLimits.maxPathComponents} folders deep`;
  for (const name of parts) {
    if (name === "") return "the path has an empty component (a trailing or double /)";
    if (name === "." || name === "..") return "the path has a `.` or `..` component";
    if (Buffer.byteLength(name, "utf8") > skillLimits.maxNameBytes)
      return `a name in the path is longer than ${skillLimits.maxNameBytes} bytes`;
  }
  return undefined;
}

const skillName = z.string().regex(skillNamePattern, "a skill name: [a-z0-9][a-z0-9-]{0,63}");
const digest = z.string().regex(/^[0-9a-f]{64}$/, "a lowercase hex SHA-256");
const skillPath = z.string().superRefine((path, context) => {
  const problem = skillPathProblem(path);
  if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
});

/**
 * A skill's digest: SHA-256 over its files' paths, modes and contents' SHA-256s, in path order.
 * Both ends compute it the same way, so the worker can tell that what it received is whole.
 */
export function skillDigest(
  files: readonly { path: string; mode: number; sha256: string }[],
): string {
  // node:crypto at first use: the worker does not load it on a wake's path (worker/light-crypto.ts).
  const hash = process.getBuiltinModule("node:crypto").createHash("sha256");
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)))
    hash.update(`${file.path}\0${file.mode.toString(8)}\0${file.sha256}\n`);
  return hash.digest("hex");
}

// ── skills.sync ─────────────────────────────────────────────────────────────────────────────────
// Removing a skill that is gone and listing what is missing are both safe to repeat.

export const skillSyncInputSchema = z.object({
  /** Every skill of the account, each once. */
  skills: z
    .array(z.object({ name: skillName, digest }))
    .max(skillLimits.maxSkills)
    .refine(
      (skills) => new Set(skills.map((skill) => skill.name)).size === skills.length,
      "each skill is listed once",
    ),
});

export const skillSyncOutputSchema = z.object({
  /** Listed skills whose folder is missing or holds another digest: send them with skills.put. */
  stale: z.array(skillName).max(skillLimits.maxSkills),
  /** Skill folders removed because their skill is no longer listed. */
  removed: z.array(skillName).max(10_000),
});

// ── skills.put ──────────────────────────────────────────────────────────────────────────────────
// Replaces the skill's folder as a whole; a repeat after it landed answers `written: false`.

const base64 = z.string().refine((text) => text.length % 4 === 0, "base64 text");

export const skillPutInputSchema = z.object({
  name: skillName,
  /** skillDigest of `files`; the worker checks it before anything becomes visible. */
  digest,
  files: z
    .array(
      z.object({
        path: skillPath,
        mode: z.union([z.literal(0o644), z.literal(0o755)]),
        /** The file's bytes as base64 (a whole skill is at most maxSkillBytes). */
        data: base64,
      }),
    )
    .min(1)
    .max(skillLimits.maxFiles),
});

export const skillPutOutputSchema = z.object({
  name: skillName,
  digest,
  /** False when the folder already held this digest (a repeat). */
  written: z.boolean(),
  files: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
});

// ── registry ────────────────────────────────────────────────────────────────────────────────────

export const skillOperationInputSchemas = {
  "skills.sync": skillSyncInputSchema,
  "skills.put": skillPutInputSchema,
} as const;

export const skillOperationOutputSchemas = {
  "skills.sync": skillSyncOutputSchema,
  "skills.put": skillPutOutputSchema,
} as const;

export type SkillOperationName = keyof typeof skillOperationInputSchemas;
/** Sent in the worker's hello `capabilities` next to the tool names. */
export const skillOperationNames = Object.keys(skillOperationInputSchemas) as SkillOperationName[];

export function isSkillOperationName(value: string): value is SkillOperationName {
  return Object.hasOwn(skillOperationInputSchemas, value);
}

export type SkillOperationInput<T extends SkillOperationName> = z.input<
  (typeof skillOperationInputSchemas)[T]
>;
export type SkillOperationOutput<T extends SkillOperationName> = z.output<
  (typeof skillOperationOutputSchemas)[T]
>;

/** The worker's own names inside `~/skills`: never skill names (those never start with a dot). */
export const skillInternalNames = {
  state: ".roost-skills.json",
  stagePrefix: ".roost-stage-",
  trashPrefix: ".roost-trash-",
} as const;
