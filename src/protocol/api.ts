/**
 * Wire types of the HTTP API (docs/api.md): the views the API returns, the steps' payloads and
 * the events of the live streams. Defined once, here; the server, the CLI and the web app import
 * them. Depends on nothing.
 */

export interface Me {
  id: string;
  name: string;
  isAdmin: boolean;
  defaultModel: { id: string; isDemo: boolean };
}

export interface Bot {
  id: string;
  name: string;
  instructions: string;
  /** `provider:model`, `demo`, or null for the platform default. */
  model: string | null;
  effectiveModel: string;
  isDemo: boolean;
  createdAt: string;
  updatedAt: string;
}

export type TurnState = "working" | "idle";

export interface Conversation {
  id: string;
  botId: string;
  title: string;
  lastSeq: number;
  state: TurnState;
  createdAt: string;
  updatedAt: string;
}

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

export interface MessagePayload {
  messageId: string;
  text: string;
  authorAccountId: string;
}
export interface ModelPayload {
  text: string;
  toolCalls: ToolCall[];
  model: string;
  usage?: { inputTokens: number; outputTokens: number };
}
export interface ToolPayload {
  callId: string;
  name: string;
  input: unknown;
  output: string;
  isError: boolean;
  details: Record<string, unknown>;
  durationMs: number;
}
export interface ReplyPayload {
  text: string;
  model: string;
  usage?: { inputTokens: number; outputTokens: number };
  finishReason?: string;
}
export interface ErrorPayload {
  code: string;
  message: string;
}
/** What was running when a turn was stopped: the model call, or a tool call (cancelled). */
export type StoppedCall = { kind: "model" } | { kind: "tool"; callId: string; name: string };
/** The turn was stopped before it answered (`POST …/interrupt`, or a message with `interrupt`). */
export interface InterruptedPayload {
  /** Who stopped it: the conversation's owner. */
  reason: "owner";
  stopped: StoppedCall[];
}

interface StepBase {
  seq: number;
  id: string;
  turnId: string | null;
  createdAt: string;
}
export type Step =
  | (StepBase & { kind: "message"; payload: MessagePayload })
  | (StepBase & { kind: "model"; payload: ModelPayload })
  | (StepBase & { kind: "tool"; payload: ToolPayload })
  | (StepBase & { kind: "reply"; payload: ReplyPayload })
  | (StepBase & { kind: "error"; payload: ErrorPayload })
  | (StepBase & { kind: "interrupted"; payload: InterruptedPayload });
export type StepKind = Step["kind"];

/** `POST /v1/conversations/{id}/messages` answers `202` with this. */
export interface PostedMessage {
  messageId: string;
  seq: number;
  /** True when the clientMessageId was seen before: nothing new was stored. */
  duplicate: boolean;
}

/**
 * `POST /v1/conversations/{id}/interrupt`: `202 {interrupted: true}` when a running turn was
 * stopped, `200 {interrupted: false}` when none was running.
 */
export interface InterruptResult {
  interrupted: boolean;
}

export type ComputerState = "asleep" | "waking" | "awake" | "sleeping" | "failed";

export interface Computer {
  id: string;
  state: ComputerState;
  provider: string;
  lastActiveAt: string | null;
  /** False for providers that run commands without a sandbox (development only). */
  isolated?: boolean;
  heldByTurns?: number;
  /** Why the last wake or sleep failed. */
  failure?: string | null;
}

export interface FileEntry {
  name: string;
  type: "file" | "dir" | "symlink";
  size: number;
  modifiedAt: string | null;
}

export interface Listing {
  path: string;
  entries: FileEntry[];
}

/** Events of `GET /v1/conversations/{id}/events`. */
export type StreamEvent =
  | { type: "hello"; seq: number; state: TurnState }
  | { type: "changed"; seq: number }
  /** `reset`: a model call is being retried; drop what this turn streamed since its last step. */
  | { type: "delta"; turnId: string; text: string; reset?: boolean }
  | { type: "turn"; state: TurnState; turnId: string | null }
  | { type: "computer"; state: ComputerState; computerId?: string }
  /** Output of a running computer tool as it streams; the tool step holds the final result. */
  | { type: "tool-output"; callId: string; stream: "stdout" | "stderr"; data: string };
