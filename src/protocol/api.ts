/**
 * Wire types of the HTTP API (docs/api.md): the views the API returns, the steps' payloads and
 * the events of the live streams. Defined once, here; the server, the CLI and the web app import
 * them. Depends on nothing.
 */

export type * from "./skills-api.ts";
export type * from "./teams-api.ts";
import type { BotTeam, ConversationPlace } from "./teams-api.ts";
export type * from "./mcp-api.ts";
export type * from "./providers-api.ts";
export type * from "./slack-api.ts";

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
  /** The memory pass proposes; its changes wait in the memory inbox for the owner. */
  memoryReview: boolean;
  /** The skills this bot may use, by name; null for all of the account's skills. */
  skills: string[] | null;
  /** Notify the owner when this bot finishes a turn or needs input (a draft to review). */
  notify: boolean;
  /** The team it is published to (a team bot), or null. */
  teamId: string | null;
  /** Set on a teammate's team bot in `GET /v1/bots`: the caller may talk to it, not edit it. */
  team?: BotTeam & { ownerName: string };
  /** True when the caller owns it (and so may edit it). */
  own: boolean;
  /** Its `browser` calls record a few frames per second, kept with the turn as an attachment. */
  browserRecording: boolean;
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
  /** Where it happens (docs/teams.md). */
  place: ConversationPlace;
  /**
   * The sidebar's state: `working` (a turn runs), `needs_attention` (a draft to review or an
   * unread notification that needs the owner), `unread` (steps the owner has not seen), `idle`.
   */
  activity?: ConversationActivity;
  /** A helper's conversation (`GET /v1/conversations/{id}` only): its helper and its parent. */
  helper?: { id: string; parentConversationId: string; status: HelperStatus };
  createdAt: string;
  updatedAt: string;
}

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

/** Where a message came from: a person in a chat, a routine, a webhook, another bot. */
export type MessageSource =
  | { kind: "chat" }
  | { kind: "routine"; routineId: string; runId: string }
  | { kind: "webhook"; routineId: string; runId: string }
  | { kind: "bot"; fromBotId: string; fromConversationId: string; hop: number }
  /** The live view: a person handed back the bot's screen it was refused while they held it. */
  | { kind: "screen"; screenId: string }
  // ── helpers (issue 15 §1, docs/helpers.md) ──
  /** `task`: the parent's task or message to its helper; `result`: the helper's answer to its parent. */
  | {
      kind: "helper";
      helperId: string;
      parentConversationId: string;
      direction: "task" | "result";
    };
export type TriggerKind = MessageSource["kind"];

/** A spend cap (a bot's, or a routine's); each given limit is checked before every model call. */
export interface Budget {
  tokensPerDay?: number;
  tokensPerMonth?: number;
  /** In the price table's currency (USD by default). */
  costPerDay?: number;
  costPerMonth?: number;
}

/** Which limit of which budget a turn reached (docs/usage.md). */
export type BudgetLimit = keyof Budget;

/**
 * The turn parked before a model call because a budget was reached; it goes on by itself when
 * the budget is raised or the period ends (docs/usage.md).
 */
export interface BudgetReachedPayload {
  /** Whose budget: the bot's, or the routine's that started the turn. */
  scope: "bot" | "routine";
  /** The bot or routine id. */
  scopeId: string;
  limit: BudgetLimit;
  /** The limit's value and what was used in its period (tokens, or cost in the price table's currency). */
  allowed: number;
  used: number;
  /** When the period ends and the turn goes on by itself (ISO 8601, UTC). */
  resumesAt: string;
  /** One sentence for people: which limit, and how to raise it. */
  message: string;
}

/** Tokens and cost over a period (cost null when no call had a price). */
export interface UsageAmount {
  tokens: number;
  inputTokens: number;
  outputTokens: number;
  cost: number | null;
  calls: number;
  /** Calls whose model has no price, left out of `cost`. */
  unpricedCalls: number;
}

/** `GET /v1/bots/{id}/budget` and what `PUT` answers. */
export interface BotBudgetView {
  botId: string;
  /** `{}` when the bot has no limits. */
  budget: Budget;
  /** Today and this month, UTC. */
  today: UsageAmount;
  thisMonth: UsageAmount;
  /** Turns of this bot parked at a reached budget right now. */
  parkedTurns: number;
  currency: string;
}

export type UsageGroupBy = "bot" | "routine" | "trigger" | "day";

/** `GET /v1/usage?groupBy=…&from=…&to=…` */
export interface UsageReport {
  groupBy: UsageGroupBy;
  from: string;
  to: string;
  currency: string;
  groups: (UsageAmount & {
    /** The bot id, routine id, trigger kind (chat, routine, webhook, bot) or day (YYYY-MM-DD, UTC). */
    key: string;
    cachedTokens: number;
  })[];
}

export interface MessagePayload {
  messageId: string;
  text: string;
  authorAccountId: string;
  /** Absent for a person's chat message. */
  source?: MessageSource;
  /**
   * This message starts a new branch (docs/chat.md "Branches"): the message stored at `seq`, and
   * everything after it up to this one, leave the active history but stay in the record.
   * `edit`: the person changed that message; `regenerate`: the same words, asked again.
   */
  replaces?: MessageReplaces;
  /** Files the person attached (uploads, docs/uploads.md); absent when none. */
  attachments?: MessageAttachment[];
}
export interface MessageReplaces {
  seq: number;
  reason: "edit" | "regenerate";
}
/**
 * A file attached to a message: an upload (POST /v1/conversations/{id}/uploads), and where the
 * loop copies it on the computer (`/workspace/attachments/<conversation>/<name>`).
 */
export interface MessageAttachment {
  id: string;
  name: string;
  mimeType: string;
  size: number;
  path: string;
}
/** The bot decided that nothing needs saying (the `no_reply` result). */
export interface NoReplyPayload {
  reason: string;
}
export interface ModelPayload {
  text: string;
  toolCalls: ToolCall[];
  model: string;
  usage?: { inputTokens: number; outputTokens: number };
  /** The prompt sections this call was sent, hashed (PRM2). */
  prompt?: PromptHash[];
}
/** What a tool call left in the conversation for the owner (GET /v1/conversations/{id}/attachments). */
export type AttachmentKind = "screenshot" | "image" | "download" | "recording" | "upload";
export interface Attachment {
  id: string;
  conversationId: string;
  turnId: string;
  /** The tool call that produced it (its tool step's `callId`). */
  callId: string;
  kind: AttachmentKind;
  name: string;
  mimeType: string;
  size: number;
  createdAt: string;
}
export interface AttachmentList {
  attachments: Attachment[];
}
/** `POST /v1/conversations/{id}/uploads`: an upload, ready to attach to a message by its id. */
export interface Upload extends Attachment {
  kind: "upload";
  /** Where the loop copies it on the computer once a message names it. */
  path: string;
}
/** The upload limits (docs/uploads.md), also in every over-limit error. */
export interface UploadLimits {
  maxBytes: number;
  maxPerMessage: number;
  mimeTypes: string[];
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
/** Compaction: the conversation up to `coversThroughSeq`, summarised for the model's prompt. */
export interface SummaryPayload {
  text: string;
  fromSeq: number;
  coversThroughSeq: number;
  model: string;
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
  | (StepBase & { kind: "interrupted"; payload: InterruptedPayload })
  | (StepBase & { kind: "summary"; payload: SummaryPayload })
  | (StepBase & { kind: "no_reply"; payload: NoReplyPayload })
  | (StepBase & { kind: "budget_reached"; payload: BudgetReachedPayload })
  | (StepBase & { kind: "approval"; payload: ApprovalPayload });
export type StepKind = Step["kind"];

/**
 * `POST /v1/conversations/{id}/interrupt`: `202 {interrupted: true}` when a running turn was
 * stopped, `200 {interrupted: false}` when none was running.
 */
export interface InterruptResult {
  interrupted: boolean;
  /** The conversation's helpers still running (docs/helpers.md): a client offers to stop them. */
  runningHelpers?: Helper[];
  /** The helpers `{stopHelpers: true}` stopped. */
  stoppedHelpers?: string[];
}

/** A hosted computer's lifecycle (Roost starts and stops it). */
export type HostedComputerState = "asleep" | "waking" | "awake" | "sleeping" | "failed";
/** A self-hosted machine never sleeps or wakes: its worker is connected, or it is not. */
export type SelfHostedComputerState = "connected" | "disconnected";
export type ComputerState = HostedComputerState | SelfHostedComputerState;

/** `hosted`: a computer Roost runs (its provider); `self-hosted`: the user's own machine running `roost worker`. */
export type ComputerKind = "hosted" | "self-hosted";

export type ComputerIsolation = "full" | "unprivileged" | "none";

export interface Computer {
  id: string;
  kind: ComputerKind;
  /** `hosted`: one of the hosted states; `self-hosted`: `connected` or `disconnected`. */
  state: ComputerState;
  /** Whether its worker is connected to this server right now. */
  connected: boolean;
  /** What runs it: the hosted provider (`local`, `process`), or `self-hosted`. */
  provider: string;
  lastActiveAt: string | null;
  /** False where commands run without Roost's sandbox: the `process` provider, or a self-hosted machine. */
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
  /** The node that runs the computer and holds its disk (decision 0040); null before its first wake. */
  home?: string | null;
}

/**
 * `POST /v1/computers/me/self-hosted` (201): the only time the worker token is shown. `command`
 * is the exact line to run on the machine.
 */
export interface SelfHostedRegistration {
  computerId: string;
  token: string;
  serverUrl: string;
  command: string;
  /** True when an earlier self-hosted token was replaced (it stopped working at once). */
  rotated: boolean;
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
  /** With `limit`: the `cursor` of the next page; absent on the last page. */
  nextCursor?: string;
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
/** A TCP port listening inside the computer (`GET /v1/computers/me/ports`). */
export interface ListeningPort {
  port: number;
  /** Where it listens: `127.0.0.1`, `0.0.0.0`, `::1`, `::`. */
  addresses: string[];
}

export interface ListeningPorts {
  ports: ListeningPort[];
}

/** `POST /v1/computers/me/preview-links`: a browser link to a port, without the bearer header. */
export interface PreviewLink {
  url: string;
  port: number;
  /** ISO time after which the link no longer opens (a session it opened lasts longer). */
  expiresAt: string;
}

/** One screen of the caller's computer (`GET /v1/computers/me/screens`, docs/live-view.md). */
export interface Screen {
  /** `s-<botId>`. */
  id: string;
  botId: string;
  width: number;
  height: number;
  /** A bot's `browser` or `computer` call is running on it. */
  busy: boolean;
  /** Who holds the control lease; null: nobody (every viewer is view-only). */
  controller: ScreenController | null;
}

export interface ScreenController {
  /** The live view (one viewer) holding the lease. */
  viewerId: string;
  /** ISO time the lease ends unless renewed. */
  until: string;
  /** `person` (Take control) or `handoff` (the bot asked, ask_user_to_take_over). */
  reason: string;
}

export interface ScreenList {
  screens: Screen[];
}

/** `POST /v1/computers/me/screens/{id}/viewers`: a WebSocket address for one live view. */
export interface ScreenViewer {
  viewerId: string;
  /** The path of the VNC WebSocket, with its ticket (`?ticket=`); good until `expiresAt`. */
  path: string;
  expiresAt: string;
}

/** `POST /v1/computers/me/screens/{id}/control`: the lease now held. */
export interface ScreenControl {
  screenId: string;
  controller: ScreenController;
}

export type StreamEvent =
  | { type: "hello"; seq: number; state: TurnState }
  | { type: "changed"; seq: number }
  /** `reset`: a model call is being retried; drop what this turn streamed since its last step. */
  | { type: "delta"; turnId: string; text: string; reset?: boolean }
  | { type: "turn"; state: TurnState; turnId: string | null }
  /** `heldByTurns`: the turns holding it awake, sent when a turn takes or lets go of it. */
  | { type: "computer"; state: ComputerState; computerId?: string; heldByTurns?: number }
  /** Output of a running computer tool as it streams; the tool step holds the final result. */
  | { type: "tool-output"; callId: string; stream: "stdout" | "stderr"; data: string }
  /** The conversation has a new title (an automatic one after its first message or reply). */
  | { type: "renamed"; title: string };

/** `GET /v1/bots` and `GET /v1/conversations`: the list envelopes. */
export interface BotList {
  bots: Bot[];
}
export interface ConversationList {
  conversations: Conversation[];
}

/** `GET /v1/conversations/search?q=` (docs/api.md "Search"): the caller's conversations that match. */
export interface ConversationSearch {
  results: ConversationSearchHit[];
}
export interface ConversationSearchHit {
  conversation: Conversation;
  /** The newest matching message or reply, cut around the words; null when only the title matched. */
  match: { seq: number; kind: "message" | "reply"; snippet: string } | null;
}

/** `POST /v1/conversations/{id}/messages/{messageId}/edit` (docs/api.md "Branches"). */
export interface EditMessageRequest {
  text: string;
  clientMessageId: string;
}
/** `POST /v1/conversations/{id}/regenerate`. */
export interface RegenerateRequest {
  clientMessageId: string;
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

/** What a bot remembers (GET /v1/bots/{id}/memory). */
/** `team`: a team bot's team memory, read by everyone who talks to it (docs/teams.md). */
export type MemoryTier = "user" | "profile" | "log" | "note" | "team";
export interface MemoryFact {
  id: string;
  tier: MemoryTier;
  text: string;
  createdAt: string;
  updatedAt: string;
  /** Notes expire; other facts never do. */
  expiresAt: string | null;
}
export interface MemoryRevision {
  id: string;
  factId: string;
  /** bot: one bot's memory; user: the account's user facts; team: a team bot's team memory. */
  scope: "bot" | "user" | "team";
  tier: MemoryTier;
  action: "add" | "replace" | "remove";
  /** Who made it: the bot's memory tool, the post-turn pass, or a person. */
  author: "tool" | "pass" | "user";
  conversationId: string | null;
  turnId: string | null;
  before: string | null;
  after: string | null;
  /** proposed: waiting in the memory inbox (review mode). */
  status: "applied" | "proposed" | "rejected";
  /** The revision this one reverts. */
  revertOf: string | null;
  /** Provenance: the person it was made for (the talking person), when known. */
  byAccountId: string | null;
  createdAt: string;
}
export interface BotMemory {
  user: MemoryFact[];
  profile: MemoryFact[];
  note: MemoryFact[];
  /** Newest first, at most 100. */
  log: MemoryFact[];
  memoryReview: boolean;
  /** Each limited tier's limits (the log has none). */
  limits: Record<"user" | "profile" | "note", { facts: number; chars: number }>;
}
export interface UserMemory {
  user: MemoryFact[];
}
export interface MemoryRevisionPage {
  /** Newest first. */
  revisions: MemoryRevision[];
  /** Pass as `before` for the next page; null at the end. */
  next: string | null;
}
export interface MemoryChangeResult {
  revision: MemoryRevision;
  fact: MemoryFact;
}

// ── Routines (issue 11 §1; docs/routines.md) ────────────────────────────────────────────────
/** Named schedules; each becomes a cron expression in the routine's timezone. */
export type SchedulePreset = "hourly" | "daily" | "weekdays" | "weekly" | "monthly";
export type Weekday = "sun" | "mon" | "tue" | "wed" | "thu" | "fri" | "sat";
/** What starts a routine. Closed per `type`; later kinds (`event`) are added, never changed. */
export type RoutineTrigger =
  | { type: "schedule"; cron: string; timezone?: string }
  | { type: "schedule"; everyMs: number }
  | {
      type: "schedule";
      preset: SchedulePreset;
      /** "HH:MM", for daily, weekdays, weekly, monthly. @default "09:00" */
      at?: string;
      /** Minute past the hour, for hourly. @default 0 */
      minute?: number;
      /** For weekly. @default "mon" */
      day?: Weekday;
      /** For monthly. @default 1 */
      dayOfMonth?: number;
      timezone?: string;
    }
  | { type: "webhook" }
  /**
   * A listener on the bot's Slack channels (docs/slack.md "Listeners"): a message containing
   * `phrase` (case-insensitive), or with no phrase every new top-level message; only messages
   * sent after the routine was saved count.
   */
  | { type: "slack"; phrase?: string };
/** Where a run's message goes. */
export type RoutineTarget =
  { kind: "new_conversation" } | { kind: "conversation"; conversationId: string };
/** What happens to runs that were due while the platform was down. */
export type MisfirePolicy = "skip" | "once" | "catch_up";
export interface RoutineWebhook {
  url: string;
  /** Shown once, when it is made (create or rotate); null in every later view. */
  key: string | null;
}
export interface Routine {
  id: string;
  botId: string;
  name: string;
  instruction: string;
  trigger: RoutineTrigger;
  target: RoutineTarget;
  enabled: boolean;
  misfire: MisfirePolicy;
  budget: Budget | null;
  /** A cheaper model spec for the run's first call (the budget module uses it). */
  triageModel: string | null;
  /** The timezone its schedule runs in (its own, else the account's); null for webhooks. */
  timezone: string | null;
  /** When the next scheduled run is due (ISO), when scheduled; null otherwise. */
  nextRunAt: string | null;
  /** The account's routines are paused after the owner's absence (resume: POST /v1/routines/resume). */
  paused: boolean;
  webhook: RoutineWebhook | null;
  createdAt: string;
  updatedAt: string;
}
export interface RoutineList {
  routines: Routine[];
}
export type RoutineRunStatus =
  "running" | "replied" | "no_reply" | "failed" | "interrupted" | "missed";
/** Why a run happened: its schedule, a late schedule slot, the run endpoint, a webhook call. */
export type RoutineRunKind = "schedule" | "catch_up" | "manual" | "webhook";
export interface RoutineRun {
  id: string;
  status: RoutineRunStatus;
  kind: RoutineRunKind;
  /** The schedule slot it was for (ISO), for schedule, catch_up and missed runs. */
  scheduledAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  conversationId: string | null;
  error: string | null;
  /** Null until usage is recorded for the run. */
  tokens: number | null;
  cost: number | null;
}
export interface RoutineRunList {
  runs: RoutineRun[];
}
export interface StartedRun {
  runId: string;
  conversationId: string;
}
export interface RoutinesResumed {
  resumed: boolean;
}
export interface AccountSettings {
  /** IANA name; routines without their own timezone run in it; null = the server's (ROOST_TIMEZONE). */
  timezone: string | null;
}

// ── Results (issue 11 §2–§3): bot-to-bot messages, drafts, notifications ─────────────────────

export type ConversationActivity = "working" | "needs_attention" | "unread" | "idle";

/** What a draft is: an email, a Slack message, or a message to a person. */
export type DraftKind = "email" | "slack" | "message";
/** pending → sending → sent | failed (a failed draft may be sent again); pending → discarded. */
export type DraftStatus = "pending" | "sending" | "sent" | "failed" | "discarded";

export interface Draft {
  id: string;
  botId: string;
  conversationId: string;
  kind: DraftKind;
  /** Where it goes: an email address, a Slack channel or person, a person's name. */
  to: string;
  /** Emails only. */
  subject: string | null;
  text: string;
  status: DraftStatus;
  /** Which channel adapter sent it (or tried to). */
  channel: string | null;
  /** Why the last send failed. */
  error: string | null;
  createdAt: string;
  updatedAt: string;
  sentAt: string | null;
}
export interface DraftList {
  /** Newest first. */
  drafts: Draft[];
}

export type NotificationKind =
  | "finished"
  | "needs_input"
  | "missed_run"
  | "budget_reached"
  | "routines_paused"
  | "draft"
  | "approval"
  // Secrets (docs/secrets.md): a bot asked for a secret it does not have (request_secret).
  | "secret_request";

export interface Notification {
  id: string;
  kind: NotificationKind;
  title: string;
  body: string;
  botId: string | null;
  conversationId: string | null;
  subjectId: string | null;
  /** Whether it asks something of the owner (shown as "Needs attention"). */
  needsAttention: boolean;
  createdAt: string;
  readAt: string | null;
}
export interface NotificationList {
  /** Newest first. */
  notifications: Notification[];
  unread: number;
}
/** `POST /v1/conversations/{id}/seen`: how far the owner has read it now. */
export interface ConversationSeen {
  seq: number;
  /** The conversation's notifications marked read with it. */
  notificationsRead: number;
}
/** `POST /v1/notifications/read`. */
export interface NotificationsRead {
  marked: number;
}

/** An endpoint of the owner's own that Roost posts to (notifications, or drafts to send). */
export interface OwnerWebhook {
  purpose: "notifications" | "drafts";
  url: string;
  createdAt: string;
  updatedAt: string;
}
/** `PUT /v1/notifications/webhook` and `PUT /v1/drafts/webhook` (200): the only time the secret is shown. */
export interface OwnerWebhookCreated extends OwnerWebhook {
  /** Each delivery carries `x-roost-signature: sha256=<hex HMAC-SHA256 of the body with it>`. */
  secret: string;
}

/** Events of the account's stream, `GET /v1/events`. */
export type AccountStreamEvent =
  | { type: "hello"; at: string }
  | { type: "notification"; notification: Notification }
  /** Something changed in one of the account's conversations (refresh the sidebar). */
  | { type: "activity"; conversationId: string; state?: TurnState; seq?: number }
  | { type: "draft"; draftId: string; conversationId: string; status: DraftStatus };

/** The body a notifications webhook receives (POST, JSON). */
export interface NotificationDelivery {
  type: "notification";
  notification: Notification;
}
/** The body a drafts webhook receives (POST, JSON); answering 2xx means it was sent. */
export interface DraftDelivery {
  type: "draft";
  /** The same for every retry of one send: de-duplicate by it. */
  deliveryId: string;
  draft: Draft;
}

// ── tool policy and approvals (issue 12 §1, docs/approvals.md) ──

export type ToolDecision = "allow" | "ask" | "deny";

/**
 * One rule of a bot's tool policy. `tool` is a tool name or a glob (`*`, `mcp_*`); `match` a
 * pattern on the call (a command prefix glob for shell, a path glob for file tools, a host for
 * browser and network tools); `unless` a pattern on the same field that exempts a call.
 */
export interface ToolPolicyRule {
  tool: string;
  match?: string;
  unless?: string;
  decision: ToolDecision;
}

/** `PUT /v1/bots/{id}/tool-policy` body (the whole policy), and part of its view. */
export interface ToolPolicy {
  rules: ToolPolicyRule[];
  /** Whether the documented default rules apply as well. @default true */
  useDefaults: boolean;
  /** The independent review model (null: none). `"demo"` is the deterministic reviewer. */
  reviewModel: string | null;
}

/** `GET /v1/bots/{id}/tool-policy`. */
export interface ToolPolicyView extends ToolPolicy {
  botId: string;
  /** The default rules (applied when `useDefaults`), for reference. */
  defaults: ToolPolicyRule[];
  updatedAt: string | null;
}

/** The independent review model's verdict on one call. */
export interface ReviewVerdict {
  decision: ToolDecision;
  reason: string;
  /** The model that judged. */
  model: string;
}

export type ApprovalState = "pending" | "approved" | "denied" | "expired";

/** `GET /v1/approvals/{id}`, an entry of `GET /v1/approvals`. */
export interface Approval {
  id: string;
  botId: string;
  conversationId: string;
  turnId: string;
  callId: string;
  tool: string;
  input: unknown;
  /** Why it needs approval: the rule or the review that asked. */
  reason: string;
  /** What the bot said it was doing before the call (its text of that model call), if anything. */
  botReason: string | null;
  /** The review model's verdict, when one judged the call. */
  review: ReviewVerdict | null;
  /** Who may answer: the account ids (today the bot's owner). */
  approvers: string[];
  state: ApprovalState;
  decidedBy: string | null;
  decidedAt: string | null;
  /** The pattern remembered with the decision (a rule added to the bot's policy). */
  remembered: string | null;
  /** When it is denied unless answered. */
  expiresAt: string;
  createdAt: string;
}

export interface ApprovalList {
  /** Newest first. */
  approvals: Approval[];
}

/** `POST /v1/approvals/{id}` body. */
export interface ApprovalDecisionInput {
  decision: "approve" | "deny";
  /** Also add a rule with this pattern (`match`) for this tool to the bot's policy. */
  remember?: string;
}

/** A step: a call waits for approval (state pending), or its approval was settled. */
export interface ApprovalPayload {
  approvalId: string;
  callId: string;
  tool: string;
  input: unknown;
  reason: string;
  review: ReviewVerdict | null;
  state: ApprovalState;
  expiresAt: string;
}

// Secrets (docs/secrets.md): names and metadata only; a value is written, never read back.

/** `PUT /v1/bots/{id}/secrets/{NAME}` and `PUT /v1/me/secrets/{NAME}`. */
export interface PutSecretRequest {
  /** 8–4,096 bytes. */
  value: string;
  /** Brokered: the computer sees `roost-secret:NAME`; the egress proxy swaps in the value for these hosts only. */
  broker?: { hosts: string[] };
}
export interface SecretView {
  name: string;
  /** `bot`: this bot's; `user`: shared by all of the account's bots. */
  scope: "bot" | "user";
  /** Set for a bot's secret. */
  botId?: string;
  broker: { hosts: string[] } | null;
  createdAt: string;
  updatedAt: string;
}
export interface SecretList {
  secrets: SecretView[];
  /** At most this many per bot, and per user. */
  limit: number;
}

// ── helpers (issue 15 §1, docs/helpers.md) ──
/** A helper's lifecycle (docs/helpers.md). */
export type HelperStatus = "running" | "idle" | "done" | "stopped" | "failed";
/** A helper: a conversation of its own, started by a bot from its parent conversation. */
export interface Helper {
  id: string;
  /** The helper's own conversation (readable with the conversation routes). */
  conversationId: string;
  parentConversationId: string;
  botId: string;
  /** 1 for a helper of a person's conversation, 2 for a helper's helper… */
  depth: number;
  task: string;
  instructions: string | null;
  /** The tools it was given (null: all of the parent's but the helper tools). */
  tools: string[] | null;
  /** Its model (null: the bot's). */
  model: string | null;
  status: HelperStatus;
  /** The text of its latest reply (or error); null before it has one. */
  latestOutput: string | null;
  createdAt: number;
  updatedAt: number;
}
/** `GET /v1/conversations/{id}/helpers`. */
export interface HelperList {
  helpers: Helper[];
}
