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
  /** The prompt sections this call was sent, hashed (PRM2). */
  prompt?: PromptHash[];
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
  /** The prompt sections this call was sent, hashed (PRM2). */
  prompt?: PromptHash[];
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
/** PRM2: a hash of each prompt section a model call was sent (and of the history it started with). */
export interface PromptHash {
  name: string;
  hash: string;
  chars: number;
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

/**
 * `POST /v1/conversations/{id}/interrupt`: `202 {interrupted: true}` when a running turn was
 * stopped, `200 {interrupted: false}` when none was running.
 */
export interface InterruptResult {
  interrupted: boolean;
}

export type ComputerState = "asleep" | "waking" | "awake" | "sleeping" | "failed";

export type ComputerIsolation = "full" | "unprivileged" | "none";

export interface Computer {
  id: string;
  state: ComputerState;
  provider: string;
  lastActiveAt: string | null;
  /** False for providers that run commands without a sandbox (development only). */
  isolated?: boolean;
  /**
   * How the computer is isolated: `full` (its own uid, memory, CPU and disk limits), `unprivileged`
   * (a sandbox in a user namespace of a server without root: no per-computer uid, no limits) or
   * `none` (the `process` provider, development only).
   */
  isolation?: ComputerIsolation;
  heldByTurns?: number;
  /** Why the last wake or sleep failed. */
  failure?: string | null;
}

export interface FileEntry {
  name: string;
  /** `other`: a FIFO, socket or device node. */
  type: "file" | "dir" | "symlink" | "other";
  size: number;
  modifiedAt: string | null;
  /** A symbolic link's target (the files API never follows links). */
  target?: string;
}

export interface Listing {
  path: string;
  entries: FileEntry[];
  /** More entries exist than one listing returns. */
  truncated: boolean;
}

/** `PUT /v1/computers/me/files/content`. */
export interface FileUploaded {
  path: string;
  size: number;
  created: boolean;
}

/** `DELETE /v1/computers/me/files`. */
export interface FileDeleted {
  path: string;
  type: FileEntry["type"];
}

/** `POST /v1/computers/me/files/rename`. */
export interface FileRenamed {
  from: string;
  to: string;
  type: FileEntry["type"];
}

/** `POST /v1/computers/me/files/mkdir`. */
export interface FolderMade {
  path: string;
  created: boolean;
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

/** `GET /v1/bots` and `GET /v1/conversations`: the list envelopes. */
export interface BotList {
  bots: Bot[];
}
export interface ConversationList {
  conversations: Conversation[];
}

/** `GET /v1/conversations/{id}/steps`. */
export interface StepPage {
  steps: Step[];
  /** The newest `seq` when the answer was made; more steps remain when it is above the last one. */
  lastSeq: number;
}

/** `POST /v1/conversations/{id}/messages` (202). */
export interface PostedMessage {
  messageId: string;
  seq: number;
  /** True when the clientMessageId was seen before: nothing new was stored. */
  duplicate: boolean;
}

/** One of the caller's API tokens (`GET /v1/tokens`); the token itself is never shown again. */
export interface Token {
  id: string;
  name: string;
  createdAt: string;
  /** When it last authenticated a request (to about a minute), or null when never. */
  lastUsedAt: string | null;
  /** True for the token that made this request. */
  current: boolean;
}
export interface TokenList {
  tokens: Token[];
}

/** `POST /v1/accounts/{id}/tokens` (201): the only time the token is shown. */
export interface CreatedToken {
  id: string;
  accountId: string;
  token: string;
}

/** `POST /v1/accounts` (201). */
export interface CreatedAccount {
  account: { id: string; name: string; isAdmin: boolean };
  token: string;
}

/** `GET /v1/health` (200 or 503). */
export interface Health {
  ok: boolean;
  checks: Record<string, string>;
}

/** One problem with a request: `path` names the field or query parameter (`policy.allow.0`). */
export interface ValidationIssue {
  path: string;
  message: string;
}

/** The body of every error answer (docs/api.md#errors). */
export interface ErrorBody {
  error: {
    /** Stable; one of the codes docs/api.md lists. */
    code: string;
    message: string;
    /** `issues` for invalid requests, `{ kind, id }` for not_found, `retryAfterSeconds` for rate_limited. */
    details?: { issues?: ValidationIssue[] } & Record<string, unknown>;
  };
}
