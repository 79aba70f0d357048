export { runConversation, type LoopDependencies } from "./conversation-loop.ts";
export {
  createConversationObject,
  conversationObjectName,
  durableObjectRetryPolicy,
  type ConversationObject,
} from "./conversation-object.ts";
export { createMemoryDurable, type MemoryDurable } from "./memory-durable.ts";
export type { DurableContext, StepOptions } from "./durable.ts";
export { StepFailedError } from "./durable.ts";
export { buildSystemPrompt, stepsToMessages, platformRules, type TurnContext } from "./context.ts";
