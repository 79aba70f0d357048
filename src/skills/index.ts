/**
 * skills/: the user's skill library (ARCHITECTURE.md §8, docs/skills.md). One library per
 * account, shared by its bots: a skill is a folder with SKILL.md (front matter `name` and
 * `description`, then the instructions) and optional files. Only names and descriptions reach
 * the prompt (the skills index); the `skill` tool reads a body on demand; the files are copied to
 * `~/skills/<name>/` on the computer before a turn's first computer call.
 */
export { createSkillService, type SkillActor, type SkillService } from "./service.ts";
export {
  archiveKindOf,
  archiveLimits,
  archiveMediaTypes,
  readSkillArchive,
  type ArchiveFile,
  type ArchiveKind,
} from "./archive.ts";
export { parseSkillDocument, renderSkillDocument, type SkillDocument } from "./skill-document.ts";
export { createSkillsSection, skillsIndexIntro } from "./section.ts";
export { createSkillTools } from "./tool.ts";
export {
  createSkillSync,
  createSkillSyncHook,
  type SkillSync,
  type SkillSyncOptions,
  type SkillSyncReport,
  type SkillWorkerCaller,
} from "./sync.ts";
