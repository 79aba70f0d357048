/**
 * loop/: the conversation loop (ARCHITECTURE.md §4), a Restate virtual object per conversation,
 * with its prompt sections and the owner's interrupts.
 */
export {
  runConversation,
  type EndedTurn,
  type LoopDependencies,
  type LoopUploads,
  type ModelCallDone,
  type ModelCallInfo,
  type SettledTurn,
  type TurnOutcome,
} from "./conversation-loop.ts";
export {
  createConversationObject,
  conversationObjectName,
  type ConversationObject,
} from "./conversation-object.ts";
export {
  historyStepLimit,
  renderMessageText,
  stepsToMessages,
  type TurnContext,
} from "./context.ts";
export {
  cleanTitle,
  createTitleHook,
  defaultConversationTitle,
  ruleTitle,
  titleFirstMessage,
} from "./titles.ts";
export { createTurnInterrupts, type RunningTurn, type TurnInterrupts } from "./interrupts.ts";
export {
  assembleSystemPrompt,
  computerRules,
  describeNow,
  hashText,
  loopSections,
  offersComputer,
  platformRules,
  selfHostedComputerRules,
  sectionOrder,
  type PromptSection,
  type PromptSectionSource,
  type SectionHash,
  type SectionInput,
  type SectionName,
} from "./prompt.ts";
export {
  compact,
  cutPoint,
  defaultCompaction,
  demoSummary,
  historyBudget,
  summarizerInstructions,
  type CompactionDependencies,
  type CompactionRange,
  type CompactionSettings,
} from "./compaction.ts";
