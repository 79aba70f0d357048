/**
 * Wire types of the skills API (docs/api.md "Skills"), part of `Api` (api.ts re-exports them).
 * Depends on nothing.
 */

export interface SkillSummary {
  name: string;
  /** One line. */
  description: string;
  /** Bytes of all of its files, SKILL.md included. */
  sizeBytes: number;
  fileCount: number;
  /** Changes whenever any of its files does (SHA-256 hex). */
  digest: string;
  createdAt: string;
  updatedAt: string;
}

export interface SkillFileEntry {
  /** Relative to the skill's folder, `/`-separated; the computer has it at `~/skills/<name>/<path>`. */
  path: string;
  sizeBytes: number;
  executable: boolean;
  sha256: string;
}

export interface SkillDetail extends SkillSummary {
  /** SKILL.md after its front matter. */
  body: string;
  files: SkillFileEntry[];
}

export interface SkillList {
  skills: SkillSummary[];
  /** The account's limits (docs/skills.md). */
  limits: {
    maxSkills: number;
    maxDescriptionChars: number;
    maxBodyBytes: number;
    maxFiles: number;
    maxSkillBytes: number;
    maxAccountBytes: number;
    maxArchiveBytes: number;
  };
}
