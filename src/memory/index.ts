/**
 * memory/: what bots remember (ARCHITECTURE.md §8). Facts in tiers (user facts shared by an
 * account's bots; a bot's profile, dated log and notes), every change a reviewable revision, the
 * `memory` tool for writes during a turn, a post-turn pass that runs as its own durable job, and
 * the prompt's memory section. docs/memory.md describes it for users.
 */
export {
  createMemoryService,
  defaultNoteTtlMs,
  maxFactChars,
  memoryLimits,
  ownerOf,
  promptLogEntries,
  type MemoryEdit,
  type MemoryService,
  type MemoryView,
} from "./service.ts";
export { createLexicalRanker, type LexicalRankerOptions, type MemoryRanker } from "./ranker.ts";
export { createMemorySection } from "./section.ts";
export { createMemoryTools } from "./tool.ts";
export {
  createMemoryPassObject,
  demoPass,
  memoryPassObjectName,
  passInstructions,
  runMemoryPass,
  updateMemoryTool,
  type MemoryPassDependencies,
  type MemoryPassOutcome,
  type MemoryPassRequest,
  type MemoryUpdate,
} from "./pass.ts";
