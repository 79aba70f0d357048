export { runConversation, type LoopDependencies } from "./conversation-loop.ts";
export {
  createConversationObject,
  conversationObjectName,
  type ConversationObject,
} from "./conversation-object.ts";
export type { DurableContext, StepOptions } from "./durable.ts";
export { StepFailedError } from "./durable.ts";
export { buildSystemPrompt, stepsToMessages, platformRules, type TurnContext } from "./context.ts";
