/**
 * The rules of an account's skill library (docs/skills.md): what a skill is (SKILL.md with a name
 * and a one-line description, then the body; optional files), its limits, and how each change is
 * made. The store makes every change whole (store SKST1–SKST4); this module decides what it is.
 *
 * Invariants:
 *   SKL1 every write is checked in full before anything is stored: the name, SKILL.md's front
 *        matter, the description and body, every path (protocol skillPathProblem), the number of
 *        files and their bytes; a refused write changes nothing and says how to fix it.
 *   SKL2 the skill's name is SKILL.md's `name`: a skill is never stored under another name than
 *        its document gives, and a rename is not an edit (delete and create instead).
 *   SKL3 an edit of the description or body rewrites SKILL.md and keeps every other file and
 *        front-matter line; it applies only to the skill it read (store SKST4), and is retried
 *        on a fresh read when an upload replaced the skill meanwhile.
 */
import { createHash } from "node:crypto";
import { InvalidRequestError, NotFoundError, RoostError } from "../errors/index.ts";
import {
  isSkillName,
  skillDigest,
  skillDocumentPath,
  skillLimits,
  skillPathProblem,
} from "../protocol/index.ts";
import type { Skill, SkillFile, SkillFileInfo, SkillSummary, Store } from "../store/index.ts";
import { readSkillArchive, type ArchiveKind } from "./archive.ts";
import {
  checkDescriptionAndBody,
  checkSkillText,
  parseSkillDocument,
  renderSkillDocument,
  type SkillDocument,
} from "./skill-document.ts";

const accountLimits = {
  maxSkills: skillLimits.maxSkills,
  maxAccountBytes: skillLimits.maxAccountBytes,
};

export interface SkillActor {
  accountId: string;
  /** Who asked, for the audit log. */
  actorAccountId: string;
}

export interface SkillService {
  /** A skill from its name, description and body (SKILL.md is made from them). */
  create(
    actor: SkillActor,
    input: { name: string; description: string; body: string },
  ): Promise<Skill>;
  /**
   * A skill from an archive of its folder. `create`: the name must be new; `upsert`: a skill of
   * that name is replaced. `name`, when given, must be SKILL.md's name (SKL2).
   */
  putArchive(
    actor: SkillActor,
    input: { bytes: Uint8Array; kind: ArchiveKind; mode: "create" | "upsert"; name?: string },
  ): Promise<{ skill: Skill; created: boolean }>;
  /** SKL3 */
  update(
    actor: SkillActor,
    name: string,
    patch: { description?: string; body?: string },
  ): Promise<Skill>;
  remove(actor: SkillActor, name: string): Promise<void>;
  /** The skill and its files; not_found for a missing one and for another account's. */
  get(accountId: string, name: string): Promise<{ skill: Skill; files: SkillFileInfo[] }>;
  readFile(accountId: string, name: string, path: string): Promise<SkillFile>;
  /** The skills a bot may use: all of the account's, or those of `allowed` that exist. */
  available(accountId: string, allowed: readonly string[] | null): Promise<SkillSummary[]>;
}

function invalid(field: string, message: string): InvalidRequestError {
  return new InvalidRequestError(message, { issues: [{ path: field, message }] });
}

function checkName(name: string, field = "name"): void {
  if (!isSkillName(name))
    throw invalid(
      field,
      `${JSON.stringify(name.slice(0, 80))} is not a skill name: use 1–64 lowercase letters, digits and dashes, starting with a letter or digit (e.g. pdf-tools)`,
    );
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** SKL1: the files' limits, their hashes, and the skill's digest. */
function prepareFiles(files: readonly { path: string; mode: number; content: Uint8Array }[]): {
  files: SkillFile[];
  digest: string;
} {
  if (files.length > skillLimits.maxFiles)
    throw invalid(
      "files",
      `a skill has at most ${skillLimits.maxFiles} files (SKILL.md included); this one has ${files.length}`,
    );
  let bytes = 0;
  const prepared = files.map((file): SkillFile => {
    const problem = skillPathProblem(file.path);
    if (problem !== undefined)
      throw invalid("files", `${JSON.stringify(file.path.slice(0, 200))}: ${problem}`);
    bytes += file.content.byteLength;
    return {
      path: file.path,
      mode: (file.mode & 0o111) !== 0 ? 0o755 : 0o644,
      size: file.content.byteLength,
      sha256: sha256(file.content),
      content: file.content,
    };
  });
  if (bytes > skillLimits.maxSkillBytes)
    throw new RoostError(
      "payload_too_large",
      `a skill's files hold at most ${skillLimits.maxSkillBytes} bytes together (these hold ${bytes}): remove large files`,
      { details: { limit: skillLimits.maxSkillBytes } },
    );
  return { files: prepared, digest: skillDigest(prepared) };
}

const decoder = new TextDecoder("utf-8", { fatal: true });

function documentOf(content: Uint8Array): SkillDocument {
  let text: string;
  try {
    text = decoder.decode(content);
  } catch {
    throw invalid("SKILL.md", "SKILL.md is not UTF-8 text: save it as UTF-8");
  }
  const document = parseSkillDocument(text);
  checkDescriptionAndBody(document);
  return document;
}

export function createSkillService(store: Store): SkillService {
  async function own(accountId: string, name: string): Promise<Skill> {
    const skill = isSkillName(name) ? await store.getSkill(accountId, name) : undefined;
    if (skill === undefined) throw new NotFoundError("skill", name);
    return skill;
  }

  return {
    async create(actor, input) {
      checkName(input.name);
      checkSkillText(input);
      const document: SkillDocument = {
        name: input.name,
        description: input.description.trim(),
        body: input.body.trimEnd(),
        extra: [],
      };
      const text = new TextEncoder().encode(renderSkillDocument(document));
      const { files, digest } = prepareFiles([
        { path: skillDocumentPath, mode: 0o644, content: text },
      ]);
      const { skill } = await store.putSkill({
        accountId: actor.accountId,
        name: document.name,
        description: document.description,
        body: document.body,
        digest,
        files,
        mode: "create",
        limits: accountLimits,
        actorAccountId: actor.actorAccountId,
        source: "fields",
      });
      return skill;
    },

    async putArchive(actor, input) {
      if (input.name !== undefined) checkName(input.name);
      const entries = await readSkillArchive(input.bytes, input.kind);
      const main = entries.find((entry) => entry.path === skillDocumentPath)!;
      const document = documentOf(main.content);
      if (input.name !== undefined && document.name !== input.name)
        throw invalid(
          "SKILL.md",
          `SKILL.md names the skill ${JSON.stringify(document.name)}, but the address names ${JSON.stringify(input.name)}: make them the same (a skill is renamed by deleting it and creating it anew)`,
        ); // SKL2
      const { files, digest } = prepareFiles(entries);
      return store.putSkill({
        accountId: actor.accountId,
        name: document.name,
        description: document.description,
        body: document.body,
        digest,
        files,
        mode: input.mode,
        limits: accountLimits,
        actorAccountId: actor.actorAccountId,
        source: `archive:${input.kind}`,
      });
    },

    async update(actor, name, patch) {
      checkSkillText(patch);
      for (let attempt = 1; ; attempt++) {
        const skill = await own(actor.accountId, name);
        const current = await store.readSkillFiles(skill.id);
        const main = current.find((file) => file.path === skillDocumentPath);
        let extra: string[] = [];
        try {
          if (main !== undefined) extra = documentOf(main.content).extra;
        } catch {
          // A document this version cannot read keeps only name, description and body.
        }
        const document: SkillDocument = {
          name: skill.name,
          description: patch.description?.trim() ?? skill.description,
          body: patch.body?.trimEnd() ?? skill.body,
          extra,
        };
        const text = new TextEncoder().encode(renderSkillDocument(document));
        const { files, digest } = prepareFiles([
          { path: skillDocumentPath, mode: main?.mode ?? 0o644, content: text },
          ...current.filter((file) => file.path !== skillDocumentPath),
        ]);
        try {
          return (
            await store.putSkill({
              accountId: actor.accountId,
              name: skill.name,
              description: document.description,
              body: document.body,
              digest,
              files,
              mode: "replace",
              ifDigest: skill.digest, // SKL3
              limits: accountLimits,
              actorAccountId: actor.actorAccountId,
              source: "edit",
            })
          ).skill;
        } catch (error) {
          // An upload landed between the read and the write: edit what it left (SKL3).
          if (!(error instanceof RoostError && error.code === "conflict") || attempt >= 3)
            throw error;
        }
      }
    },

    async remove(actor, name) {
      if (!isSkillName(name)) throw new NotFoundError("skill", name);
      await store.deleteSkill({
        accountId: actor.accountId,
        name,
        actorAccountId: actor.actorAccountId,
      });
    },

    async get(accountId, name) {
      const skill = await own(accountId, name);
      return { skill, files: await store.listSkillFiles(skill.id) };
    },

    async readFile(accountId, name, path) {
      const skill = await own(accountId, name);
      const file =
        skillPathProblem(path) === undefined
          ? await store.readSkillFile(skill.id, path)
          : undefined;
      if (file === undefined)
        throw new RoostError(
          "not_found",
          `skill ${JSON.stringify(name)} has no file ${JSON.stringify(path.slice(0, 200))} (GET /v1/skills/${name} lists its files)`,
          { details: { kind: "skill file", id: path } },
        );
      return file;
    },

    async available(accountId, allowed) {
      const all = await store.listSkills(accountId);
      if (allowed === null) return all;
      const wanted = new Set(allowed);
      return all.filter((skill) => wanted.has(skill.name));
    },
  };
}
