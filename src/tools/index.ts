/**
 * tools/: what a turn's model may call. A router (router.ts) composes tool sources — server tools
 * defined in this process (define.ts), computer tools that run on the user's computer through
 * the gateway (computer-tools.ts), later MCP and browser tools — behind one policy hook and one
 * redaction hook. Sources journal their own work through the call's durable context.
 */
export type {
  ToolCallContext,
  ToolCallRequest,
  ToolResult,
  ToolRouter,
  ToolTurnContext,
  TurnRoute,
  TurnTrigger,
} from "./types.ts";
export { redactionAccountOf, secretsOwnersOf } from "./route.ts";
export {
  createToolRouter,
  type AskHook,
  type PolicyDecision,
  type PolicyHook,
  type OutputRedaction,
  type RedactionHook,
  type ToolRouterOptions,
  type ToolSource,
} from "./router.ts";
export {
  defineToolSource,
  interruptedResult,
  interruptedToolMessage,
  serverTool,
  type AnyServerTool,
  type ServerTool,
} from "./define.ts";
export {
  asleepMessage,
  createComputerTools,
  defaultWakingTools,
  notConnectedMessage,
  redactedWriteMessage,
  type ComputerSecrets,
  type ComputerToolsOptions,
} from "./computer-tools.ts";
export {
  createHandoffTool,
  defaultHandoffTimeoutMs,
  handBackScreen,
  handedBackNotice,
  handoffToolName,
  recordScreenNotice,
  type HandoffWorkerCaller,
} from "./handoff-tool.ts";
