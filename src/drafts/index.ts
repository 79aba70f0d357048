/**
 * drafts/: results the owner sends or discards (issue 11 §3, docs/results.md): the `draft` tool,
 * the `draft` object that sends one through a channel adapter, and the adapters (webhook today).
 */
export {
  channelFor,
  createWebhookChannel,
  notConfiguredMessage,
  type ChannelAdapter,
  type ChannelOutcome,
} from "./channels.ts";
export {
  createDraftObject,
  createDraftSender,
  draftObjectName,
  publishDraft,
  sendDraft,
  type DraftSender,
  type DraftSendDependencies,
  type DraftSendRequest,
  type DraftSendResult,
} from "./send.ts";
export { createDraftTools, draftIdOf, draftLimits } from "./tool.ts";
export { draftView } from "./views.ts";
