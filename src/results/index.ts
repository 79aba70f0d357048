/**
 * results/: how a bot's work ends besides a reply (issue 11 §2–§3, docs/results.md): a message to
 * another bot (`message_bot`), deliberately nothing (`no_reply`), and telling the owner when a bot
 * with notifications on finishes or needs input. Drafts are in drafts/, notifications in
 * notifications/.
 */
import { defineToolSource, type ToolSource } from "../tools/index.ts";
import { messageBotTool, type MessageBotDependencies } from "./message-bot.ts";
import { noReplyTool } from "./no-reply.ts";

export { botMessageLimits, messageBotTool, type MessageBotDependencies } from "./message-bot.ts";
export { noReplyTool } from "./no-reply.ts";
export { createFinishedHook } from "./finished.ts";
export type { DeliveredMessage } from "./types.ts";

/** The `message_bot` and `no_reply` tools. */
export function createResultTools(deps: MessageBotDependencies): ToolSource {
  return defineToolSource("results", [messageBotTool(deps), noReplyTool()]);
}
