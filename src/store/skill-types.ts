/**
 * An account's skill library (ARCHITECTURE.md §8, docs/skills.md) as the store keeps it: one row
 * per skill (its name, one-line description, SKILL.md body and digest) and one row per file, the
 * bytes included. The rules (names, paths, sizes, front matter) live in src/skills/; the store
 * makes each change whole.
 *
 * Invariants (both implementations; checked by store.contract.ts):
 *   SKST1 a skill changes as a whole: its row, all of its files and the audit entry are written
 *         in one transaction, so a reader sees the old skill or the new one, never a mix.
 *   SKST2 the account's limits passed with a write (number of skills, bytes in all) are checked
 *         in the write's transaction, under the account's lock, so concurrent writes can never
 *         exceed them.
 *   SKST3 names are unique per account: a create of a name that exists is a conflict, and a
 *         replace or delete of one that does not is not_found; another account's skill is as
 *         absent as a missing one.
 *   SKST4 a write with `ifDigest` happens only if the skill still has that digest (a conflict
 *         otherwise), so an edit cannot silently undo a concurrent upload.
 */

export interface SkillSummary {
  id: string;
  accountId: string;
  name: string;
  description: string;
  /** skillDigest of its files (protocol/skills.ts). */
  digest: string;
  /** Bytes of all of its files, SKILL.md included. */
  totalBytes: number;
  fileCount: number;
  createdAt: number;
  updatedAt: number;
}

export interface Skill extends SkillSummary {
  /** SKILL.md after its front matter. */
  body: string;
}

export interface SkillFileInfo {
  path: string;
  /** 0o644 or 0o755. */
  mode: number;
  size: number;
  sha256: string;
}

export interface SkillFile extends SkillFileInfo {
  content: Uint8Array;
}

export interface SkillAccountLimits {
  maxSkills: number;
  maxAccountBytes: number;
}

export interface SkillWrite {
  accountId: string;
  name: string;
  description: string;
  body: string;
  digest: string;
  /** Every file of the skill, SKILL.md included; they replace all of its files. */
  files: readonly SkillFile[];
  /** create: the name must be new; replace: it must exist; upsert: either. */
  mode: "create" | "replace" | "upsert";
  /** SKST4: only if the skill still has this digest. */
  ifDigest?: string;
  /** SKST2 */
  limits: SkillAccountLimits;
  /** Who asked, for the audit entry written with it (SKST1). */
  actorAccountId: string | null;
  /** A detail for the audit entry (e.g. how the skill arrived: fields or an archive). */
  source: string;
}

export interface SkillStore {
  /** SKST1–SKST4. Audits `skill.create` or `skill.update`. */
  putSkill(write: SkillWrite): Promise<{ skill: Skill; created: boolean }>;
  /** The account's skills by name, without bodies. */
  listSkills(accountId: string): Promise<SkillSummary[]>;
  /** SKST3: undefined for another account's skill. */
  getSkill(accountId: string, name: string): Promise<Skill | undefined>;
  listSkillFiles(skillId: string): Promise<SkillFileInfo[]>;
  /** One file with its bytes. */
  readSkillFile(skillId: string, path: string): Promise<SkillFile | undefined>;
  /** All of a skill's files with their bytes, by path. */
  readSkillFiles(skillId: string): Promise<SkillFile[]>;
  /** SKST1, SKST3: removes the skill and its files and audits `skill.delete`. */
  deleteSkill(input: {
    accountId: string;
    name: string;
    actorAccountId: string | null;
  }): Promise<SkillSummary>;
}
