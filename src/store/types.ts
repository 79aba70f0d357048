/**
 * The store keeps the conversation record users see: accounts, tokens, bots, conversations,
 * messages, the append-only step log and the audit log.
 *
 * Invariants (both implementations; checked by store.contract.ts):
 *   STORE1 steps of a conversation have a gapless sequence 1, 2, 3…; a message is a step too.
 *   STORE2 appending a step is idempotent by its id: a repeat returns the stored step, unchanged.
 *   STORE3 appending a message is idempotent by (conversation, clientMessageId).
 *   STORE4 every write of several rows happens in one transaction: nothing is stored half-way.
 *   STORE5 API tokens are stored only as SHA-256 hashes.
 *   STORE6 a message stored concurrently with a take is either taken or sees the take's waiter.
 *   STORE7 a delete removes the thing and everything of it, and its audit entry, in one
 *          transaction that first locks what it deletes: a step, message or conversation added
 *          concurrently either goes with it or fails with NotFoundError; nothing is half-gone.
 *   STORE8 what is deleted reads as absent: reads answer undefined or nothing and never throw;
 *          writes into it (appendStep, appendMessage, createConversation) throw NotFoundError.
 *   STORE9 a computer has a self-hosted worker token exactly while its kind is `self-hosted`:
 *          the kind and the token change in one transaction, a new token replaces the old one
 *          (which then matches nothing), and going back to hosted deletes it.
 *   STORE10 a computer's home host changes only by a compare-and-set from the home the caller
 *          saw (claimComputerHome): two hosts never both become its home (decision 0040).
 */
import type { SqlExecutor } from "./driver.ts";
import type { Api } from "../protocol/index.ts";
import type { MemoryStore } from "./memory-types.ts";
import type { SkillStore } from "./skill-types.ts";
import type { RoutineStore } from "./routine-types.ts";
import type { ResultsStore } from "./results-types.ts";
import type { HelperStore } from "./helper-types.ts";
import type { SecretStore } from "./secret-types.ts";
import type { ModelProviderStore } from "./provider-types.ts";
import type { McpStore } from "./mcp-types.ts";
import type { ScreenLeaseStore } from "./screen-lease-types.ts";
import type { WorkerLocationStore } from "./worker-location-types.ts";
import type { UsageStore } from "./usage-types.ts";
import type { ApprovalStore } from "./approval-types.ts";
import type { TeamStore } from "./team-types.ts";
import type { SlackStore } from "./slack-types.ts";
import type { AttachmentStore } from "./attachment-types.ts";
import type { SearchStore } from "./search-types.ts";

export type MessageSource = Api.MessageSource;

export type * from "./memory-types.ts";
export type * from "./skill-types.ts";
export type * from "./routine-types.ts";
export type * from "./results-types.ts";
export type * from "./helper-types.ts";
export type * from "./secret-types.ts";
export type * from "./mcp-types.ts";
export type * from "./screen-lease-types.ts";
export type * from "./usage-types.ts";
export type * from "./approval-types.ts";
export type * from "./team-types.ts";
export type * from "./slack-types.ts";
export type * from "./attachment-types.ts";
export type * from "./provider-types.ts";
export type * from "./search-types.ts";

export interface Account {
  id: string;
  name: string;
  isAdmin: boolean;
  createdAt: number;
}

export interface ApiToken {
  id: string;
  accountId: string;
  name: string;
  createdAt: number;
  /** When the token last authenticated a request, to the minute or so; null when never. */
  lastUsedAt: number | null;
}

export interface Bot {
  id: string;
  accountId: string;
  name: string;
  instructions: string;
  /** `provider:model`, `demo`, or null for the platform default. */
  model: string | null;
  /** The memory pass proposes instead of writing; changes wait in the memory inbox. */
  memoryReview: boolean;
  /** Names of the account's skills this bot may use; null = all of them. */
  skills: string[] | null;
  /** Notify the owner when it finishes a turn or needs input (issue 11 §3). */
  notify: boolean;
  /** The team it is published to (a team bot, docs/teams.md); null: the owner's alone. */
  teamId: string | null;
  /** Its browser calls record a few frames per second, kept with the turn (issue 13 §4). */
  browserRecording: boolean;
  createdAt: number;
  updatedAt: number;
}

/** The bot's settings that live in its `settings` JSON column (new ones need no migration). */
export interface BotSettings {
  memoryReview?: boolean;
  skills?: string[] | null;
  notify?: boolean;
  browserRecording?: boolean;
}

/**
 * Where a conversation happens (docs/teams.md): `direct` is one person's own chat (the web app,
 * the CLI, a 1:1 DM); `shared` is a place several people talk (a channel, group DM or thread).
 */
export type ConversationPlace = "direct" | "shared";

export interface Conversation {
  id: string;
  /** Who started it; in a direct place the only person who may read and write it. */
  accountId: string;
  botId: string;
  title: string;
  /** Sequence number of the newest step; 0 when empty. */
  lastSeq: number;
  place: ConversationPlace;
  createdAt: number;
  updatedAt: number;
}

export interface Message {
  id: string;
  conversationId: string;
  clientMessageId: string;
  authorAccountId: string;
  text: string;
  /** The step sequence number the message was stored at. */
  seq: number;
  /** Which inbox take picked the message up; null while it waits. */
  takenBy: string | null;
  /** The conversation's last seq when the message was taken (null while it waits). */
  takenAtSeq: number | null;
  /** Where it came from; absent for a person's chat message. */
  source?: MessageSource;
  /** Uploads the person attached (migration 30); absent when none. */
  attachments?: Api.MessageAttachment[];
  createdAt: number;
}

export const stepKinds = [
  "message",
  "model",
  "tool",
  "reply",
  "error",
  "interrupted",
  "summary",
  "no_reply",
  "budget_reached",
  "approval",
] as const;
export type StepKind = (typeof stepKinds)[number];

export interface Step {
  conversationId: string;
  seq: number;
  /** Stable id chosen by the writer; repeats of the same id are ignored (STORE2). */
  id: string;
  turnId: string | null;
  kind: StepKind;
  payload: Record<string, unknown>;
  createdAt: number;
}

export interface AuditEntry {
  id: string;
  accountId: string | null;
  action: string;
  target: string;
  detail: Record<string, unknown>;
  createdAt: number;
}

export type ComputerKind = "hosted" | "self-hosted";

export interface Computer {
  id: string;
  accountId: string;
  /** The hosted provider it was created with (its disk is that provider's, whatever the kind). */
  provider: string;
  /** `self-hosted` while the account's own machine is its computer (STORE9). */
  kind: ComputerKind;
  createdAt: number;
  /** The node that runs it and holds its disk (decision 0040); null before its first wake. */
  homeHost: string | null;
}

/** What a delete removed (STORE7). */
export interface DeletedCounts {
  conversations: number;
  messages: number;
  steps: number;
}

/** Who asked for a write, for the audit entry written in the same transaction. */
export interface Actor {
  actorAccountId: string | null;
}

export interface BotPatch {
  name?: string;
  instructions?: string;
  model?: string | null;
  memoryReview?: boolean;
  skills?: string[] | null;
  notify?: boolean;
  /** Publish to a team (its owner must belong to it, TEAM3), or null to unpublish. */
  teamId?: string | null;
  browserRecording?: boolean;
}

export interface Store
  extends
    MemoryStore,
    SkillStore,
    RoutineStore,
    ResultsStore,
    HelperStore,
    UsageStore,
    ApprovalStore,
    SecretStore,
    TeamStore,
    SlackStore,
    AttachmentStore,
    McpStore,
    ScreenLeaseStore,
    ModelProviderStore,
    SearchStore,
    WorkerLocationStore {
  readonly kind: "sqlite" | "postgres";
  /** Bring the schema up to date. Safe to call on every start. */
  migrate(): Promise<void>;
  close(): Promise<void>;

  createAccount(input: { name: string; isAdmin: boolean }): Promise<Account>;
  getAccount(id: string): Promise<Account | undefined>;
  /** Every account, oldest first (the admin's accounts list). */
  listAccounts(): Promise<Account[]>;
  findAdminAccount(): Promise<Account | undefined>;
  /**
   * STORE-ADMIN1: the one admin account, created if there is none. Nodes that call it at the
   * same time on one database get the same account; `created` is true for exactly one of them.
   */
  ensureAdminAccount(name: string): Promise<{ account: Account; created: boolean }>;
  /** STORE5: pass the SHA-256 hash, never the token. */
  createApiToken(input: { accountId: string; name: string; tokenHash: string }): Promise<ApiToken>;
  findAccountByTokenHash(tokenHash: string): Promise<Account | undefined>;
  /** The live token with this hash and its account (STORE5: pass the hash). */
  findApiToken(tokenHash: string): Promise<{ token: ApiToken; account: Account } | undefined>;
  /** The account's live tokens, oldest first. */
  listApiTokens(accountId: string): Promise<ApiToken[]>;
  /** Records that the token authenticated a request at `at`. */
  touchApiToken(id: string, at: number): Promise<void>;
  /**
   * STORE7: deletes the account's token (its hash goes with it, so it never matches again) and
   * audits `token.revoke`. NotFoundError when the account has no token of that id.
   */
  revokeApiToken(input: { id: string; accountId: string } & Actor): Promise<void>;

  /** Throws a `conflict` RoostError when the account already has a bot of that name. */
  createBot(input: {
    accountId: string;
    name: string;
    instructions: string;
    model: string | null;
    memoryReview?: boolean;
    skills?: string[] | null;
    notify?: boolean;
    /** TEAM3: NotFoundError when the account is not a member of the team. */
    teamId?: string | null;
    browserRecording?: boolean;
  }): Promise<Bot>;
  listBots(accountId: string): Promise<Bot[]>;
  /** Other accounts' bots published to a team this account belongs to, oldest first. */
  listTeamBotsFor(accountId: string): Promise<Bot[]>;
  getBot(id: string): Promise<Bot | undefined>;
  findBotByName(accountId: string, name: string): Promise<Bot | undefined>;
  updateBot(id: string, patch: BotPatch): Promise<Bot>;
  /**
   * STORE7: deletes the bot, its conversations and their messages and steps, and audits
   * `bot.delete`, in one transaction. NotFoundError when there is no such bot.
   */
  deleteBot(input: { id: string } & Actor): Promise<DeletedCounts>;

  createConversation(input: {
    accountId: string;
    botId: string;
    title: string;
    /** @default "direct" */
    place?: ConversationPlace;
  }): Promise<Conversation>;
  listConversations(
    accountId: string,
    options?: { botId?: string; limit?: number },
  ): Promise<Conversation[]>;
  getConversation(id: string): Promise<Conversation | undefined>;
  /** Sets the title and audits `conversation.rename`. NotFoundError when there is no such conversation. */
  renameConversation(input: { id: string; title: string } & Actor): Promise<Conversation>;
  /**
   * STORE7: deletes the conversation with its messages and steps and audits `conversation.delete`,
   * in one transaction. NotFoundError when there is no such conversation.
   */
  deleteConversation(input: { id: string } & Actor): Promise<DeletedCounts>;

  /** STORE1, STORE3, STORE4: stores the message and its `message` step together. */
  appendMessage(input: {
    conversationId: string;
    clientMessageId: string;
    authorAccountId: string;
    text: string;
    /** Where it came from; absent for a person's chat message. */
    source?: MessageSource;
    /** It starts a branch from an earlier message (Api.MessagePayload.replaces); kept in its step. */
    replaces?: Api.MessageReplaces;
    /** Uploads attached to it (checked by the caller: the conversation's own). */
    attachments?: Api.MessageAttachment[];
  }): Promise<{ message: Message; created: boolean; waiter: string | null }>;
  /**
   * Marks every waiting message of the conversation as taken by `takeId` and returns all messages
   * taken by `takeId`, oldest first. Repeating a take returns the same messages (plus any that
   * arrived since), so a retried journal step never loses one.
   *
   * STORE6 `waiter` (or null) is recorded on the conversation in the same transaction. appendMessage
   * returns the waiter current at its commit, so a message either is taken by this take or sees
   * the waiter: a loop about to wait for follow-ups can never miss one.
   */
  takeInbox(conversationId: string, takeId: string, waiter?: string | null): Promise<Message[]>;
  /** Conversations with messages no loop has taken yet, with the oldest waiting message's id. */
  listWaitingConversations(options?: {
    limit?: number;
  }): Promise<{ conversationId: string; oldestMessageId: string; waiter: string | null }[]>;
  /** Messages not yet taken by any loop, oldest first. */
  pendingMessages(conversationId: string): Promise<Message[]>;
  /** Messages with seq > `afterSeq` (default 0), oldest first. */
  listMessages(
    conversationId: string,
    options?: { limit?: number; afterSeq?: number },
  ): Promise<Message[]>;

  /** STORE1, STORE2; NotFoundError when the conversation does not exist (STORE8). */
  appendStep(input: {
    conversationId: string;
    id: string;
    turnId: string | null;
    kind: StepKind;
    payload: Record<string, unknown>;
  }): Promise<Step>;
  listSteps(
    conversationId: string,
    options?: { afterSeq?: number; limit?: number },
  ): Promise<Step[]>;
  /** The newest step of `kind` (e.g. the latest compaction summary), if any. */
  latestStepOfKind(conversationId: string, kind: StepKind): Promise<Step | undefined>;

  /** The account's computer, created with `provider` (and kind `hosted`) on first use (one per account). */
  ensureComputer(accountId: string, provider: string): Promise<Computer>;
  getComputer(id: string): Promise<Computer | undefined>;
  /** Replaces the computer's worker token (STORE5: hash only). */
  setWorkerToken(computerId: string, tokenHash: string, expiresAt: number): Promise<void>;
  /** The computer a live worker token belongs to; expired tokens match nothing. */
  findComputerByWorkerToken(tokenHash: string, now: number): Promise<string | undefined>;
  clearWorkerToken(computerId: string): Promise<void>;
  /**
   * STORE10: makes `home` the computer's home host if its home is still `expected` (a
   * compare-and-set, so two hosts can never both become the home). True when `home` is the home
   * afterwards; false when another host got there first or the computer does not exist.
   */
  claimComputerHome(computerId: string, expected: string | null, home: string): Promise<boolean>;
  /**
   * STORE9: makes the computer self-hosted with this worker token (STORE5: hash only), replacing
   * an earlier self-hosted token and deleting the hosted worker token, in one transaction.
   * `rotated` says an earlier self-hosted token was replaced. NotFoundError for no such computer.
   */
  useSelfHosted(computerId: string, tokenHash: string): Promise<{ rotated: boolean }>;
  /** STORE9: back to hosted; deletes the self-hosted token. `changed` is false when it was hosted already. */
  useHosted(computerId: string): Promise<{ changed: boolean }>;
  /** The self-hosted computer a worker token belongs to (STORE5: pass the hash). */
  findSelfHostedComputer(tokenHash: string): Promise<string | undefined>;
  /** The computer's egress policy (JSON as given), or null for the platform default. */
  getNetworkPolicy(computerId: string): Promise<unknown>;
  setNetworkPolicy(computerId: string, policy: unknown): Promise<void>;

  audit(input: {
    accountId: string | null;
    action: string;
    target: string;
    detail?: Record<string, unknown>;
  }): Promise<void>;
  listAudit(options?: { accountId?: string; limit?: number }): Promise<AuditEntry[]>;
}

/** How the query modules write an audit row inside their own transaction (sql-store.ts). */
export type AuditWriter = (
  executor: SqlExecutor,
  input: Parameters<Store["audit"]>[0],
) => Promise<void>;
