/**
 * The skills part of the store (skill-types.ts, SKST1–SKST4), written once against `SqlDriver`.
 * File contents are binary columns: BLOB on SQLite, BYTEA on Postgres (migration 11).
 */
import { NotFoundError, RoostError } from "../errors/index.ts";
import type { IdGenerator } from "../ids.ts";
import type { SqlDriver, SqlExecutor } from "./driver.ts";
import type { AuditWriter } from "./types.ts";
import type {
  Skill,
  SkillFile,
  SkillFileInfo,
  SkillStore,
  SkillSummary,
  SkillWrite,
} from "./skill-types.ts";

interface SkillRow {
  id: string;
  account_id: string;
  name: string;
  description: string;
  body?: string;
  digest: string;
  total_bytes: number;
  file_count: number;
  created_at: number;
  updated_at: number;
}
interface FileRow {
  path: string;
  mode: number;
  size: number;
  sha256: string;
  content?: Uint8Array;
}

const summaryColumns =
  "id, account_id, name, description, digest, total_bytes, file_count, created_at, updated_at";
const fileColumns = "path, mode, size, sha256";

const toSummary = (row: SkillRow): SkillSummary => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  description: row.description,
  digest: row.digest,
  totalBytes: Number(row.total_bytes),
  fileCount: Number(row.file_count),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});
const toSkill = (row: SkillRow): Skill => ({ ...toSummary(row), body: row.body ?? "" });
const toInfo = (row: FileRow): SkillFileInfo => ({
  path: row.path,
  mode: Number(row.mode),
  size: Number(row.size),
  sha256: row.sha256,
});
const toFile = (row: FileRow): SkillFile => ({
  ...toInfo(row),
  // pg answers a Buffer, node:sqlite a Uint8Array: both are Uint8Arrays.
  content: row.content ?? new Uint8Array(),
});

export function createSkillQueries(
  driver: SqlDriver,
  now: () => number,
  ids: IdGenerator,
  audit: AuditWriter,
): SkillStore {
  async function skillByName(executor: SqlExecutor, accountId: string, name: string, lock = "") {
    const rows = await executor.all<SkillRow>(
      `SELECT ${summaryColumns}, body FROM skills WHERE account_id = ? AND name = ?${lock}`,
      [accountId, name],
    );
    return rows[0];
  }

  return {
    async putSkill(write: SkillWrite) {
      return driver.transaction(async (tx) => {
        // SKST2: one writer per account at a time, so two writes cannot both see room.
        const locked = await tx.run("UPDATE accounts SET name = name WHERE id = ?", [
          write.accountId,
        ]);
        if (locked.changes === 0) throw new NotFoundError("account", write.accountId);
        const existing = await skillByName(tx, write.accountId, write.name, driver.lockRows);
        if (existing !== undefined && write.mode === "create")
          throw new RoostError(
            "conflict",
            `a skill named ${JSON.stringify(write.name)} already exists: choose another name, or change that one`,
            { details: { name: write.name } },
          ); // SKST3
        if (existing === undefined && write.mode === "replace")
          throw new NotFoundError("skill", write.name); // SKST3
        if (write.ifDigest !== undefined && existing?.digest !== write.ifDigest)
          throw new RoostError(
            "conflict",
            `skill ${JSON.stringify(write.name)} changed meanwhile; read it again and repeat the change`,
            { details: { name: write.name } },
          ); // SKST4

        const totalBytes = write.files.reduce((sum, file) => sum + file.content.byteLength, 0);
        const [others] = await tx.all<{ count: number; bytes: number | string | null }>(
          "SELECT COUNT(*) AS count, SUM(total_bytes) AS bytes FROM skills WHERE account_id = ? AND name <> ?",
          [write.accountId, write.name],
        );
        const count = Number(others?.count ?? 0);
        const bytes = Number(others?.bytes ?? 0);
        if (existing === undefined && count + 1 > write.limits.maxSkills)
          throw new RoostError(
            "conflict",
            `the account has ${count} skills, the most it may have: delete one before adding another`,
            { details: { limit: write.limits.maxSkills } },
          ); // SKST2
        if (bytes + totalBytes > write.limits.maxAccountBytes)
          throw new RoostError(
            "payload_too_large",
            `the account's skills would hold ${bytes + totalBytes} bytes, over the ${write.limits.maxAccountBytes}-byte limit: delete or shrink a skill first`,
            { details: { limit: write.limits.maxAccountBytes } },
          ); // SKST2

        const at = now();
        const skill: Skill = {
          id: existing?.id ?? ids("skill"),
          accountId: write.accountId,
          name: write.name,
          description: write.description,
          body: write.body,
          digest: write.digest,
          totalBytes,
          fileCount: write.files.length,
          createdAt: existing === undefined ? at : Number(existing.created_at),
          updatedAt: at,
        };
        if (existing === undefined) {
          await tx.run(
            `INSERT INTO skills (${summaryColumns}, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            [
              skill.id,
              skill.accountId,
              skill.name,
              skill.description,
              skill.digest,
              skill.totalBytes,
              skill.fileCount,
              skill.createdAt,
              skill.updatedAt,
              skill.body,
            ],
          );
        } else {
          await tx.run(
            "UPDATE skills SET description = ?, body = ?, digest = ?, total_bytes = ?, file_count = ?, updated_at = ? WHERE id = ?",
            [
              skill.description,
              skill.body,
              skill.digest,
              skill.totalBytes,
              skill.fileCount,
              at,
              skill.id,
            ],
          );
          await tx.run("DELETE FROM skill_files WHERE skill_id = ?", [skill.id]);
        }
        for (const file of write.files)
          await tx.run(
            `INSERT INTO skill_files (skill_id, ${fileColumns}, content) VALUES (?, ?, ?, ?, ?, ?)`,
            [skill.id, file.path, file.mode, file.content.byteLength, file.sha256, file.content],
          );
        await audit(tx, {
          accountId: write.actorAccountId,
          action: existing === undefined ? "skill.create" : "skill.update",
          target: skill.id,
          detail: {
            name: skill.name,
            digest: skill.digest,
            files: skill.fileCount,
            bytes: skill.totalBytes,
            source: write.source,
          },
        }); // SKST1
        return { skill, created: existing === undefined };
      });
    },

    async listSkills(accountId) {
      const rows = await driver.all<SkillRow>(
        `SELECT ${summaryColumns} FROM skills WHERE account_id = ? ORDER BY name`,
        [accountId],
      );
      return rows.map(toSummary);
    },

    async getSkill(accountId, name) {
      const row = await skillByName(driver, accountId, name);
      return row === undefined ? undefined : toSkill(row);
    },

    async listSkillFiles(skillId) {
      const rows = await driver.all<FileRow>(
        `SELECT ${fileColumns} FROM skill_files WHERE skill_id = ? ORDER BY path`,
        [skillId],
      );
      return rows.map(toInfo);
    },

    async readSkillFile(skillId, path) {
      const rows = await driver.all<FileRow>(
        `SELECT ${fileColumns}, content FROM skill_files WHERE skill_id = ? AND path = ?`,
        [skillId, path],
      );
      return rows[0] === undefined ? undefined : toFile(rows[0]);
    },

    async readSkillFiles(skillId) {
      const rows = await driver.all<FileRow>(
        `SELECT ${fileColumns}, content FROM skill_files WHERE skill_id = ? ORDER BY path`,
        [skillId],
      );
      return rows.map(toFile);
    },

    async deleteSkill({ accountId, name, actorAccountId }) {
      return driver.transaction(async (tx) => {
        const existing = await skillByName(tx, accountId, name, driver.lockRows);
        if (existing === undefined) throw new NotFoundError("skill", name); // SKST3
        await tx.run("DELETE FROM skill_files WHERE skill_id = ?", [existing.id]);
        await tx.run("DELETE FROM skills WHERE id = ?", [existing.id]);
        await audit(tx, {
          accountId: actorAccountId,
          action: "skill.delete",
          target: existing.id,
          detail: { name, digest: existing.digest },
        }); // SKST1
        return toSummary(existing);
      });
    },
  };
}
