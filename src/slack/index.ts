/**
 * slack/: Slack as a channel (issue 14 §2, docs/slack.md, decision 0034): a bot linked to a Slack
 * app takes Events API requests in as messages of its conversations, and shows their turns in
 * Slack's threads. The loop knows none of it (ARCHITECTURE.md §13 "Channels").
 */
export {
  createSlackClient,
  defaultSlackApiUrl,
  exchangeSlackOAuthCode,
  SlackCallError,
  type SlackClient,
} from "./client.ts";
export {
  createSlackLinks,
  oauthStateTtlMs,
  slackBotScopes,
  slackEventsPath,
  slackInstallPath,
  slackInteractionsPath,
  slackOAuthCallbackPath,
  teamOfPlace,
  statusView,
  type SlackLinks,
} from "./service.ts";
export {
  confirmCodeTtlMs,
  createSlackEvents,
  hashPersonToken,
  newConfirmCode,
  maxSignatureSkewMs,
  personLinkTtlMs,
  stripLeadingMention,
  verifySignature,
  type SlackAnswer,
  type SlackEvents,
} from "./events.ts";
export { createSlackTurnHooks, maxInlineReplyChars, workingText } from "./turns.ts";
export { createSlackCards, type DraftSend } from "./cards.ts";
export { createSlackReactTool } from "./react-tool.ts";
export { createSlackListeners, type HeardMessage } from "./listeners.ts";
export { createSlackSockets } from "./socket-mode.ts";
