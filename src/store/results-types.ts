/**
 * Results of a bot's work as the store keeps them (issue 11 §2–§3, docs/results.md): drafts for
 * the owner to send or discard, notifications, the owner's webhooks, the conversations bots write
 * to each other in, and how far the owner has read each conversation.
 *
 * Invariants (both implementations; checked by store.contract.ts):
 *   RES1 one conversation per (sender bot, receiver bot): two first messages at once still make
 *        one (the conversation and its thread row are written in one transaction; the loser of
 *        a race reads the winner's).
 *   RES2 a draft leaves `pending` (or `failed`) once: claiming it for a send and discarding it are
 *        each one conditional update, so of two racing sends, or a send and a discard, exactly one
 *        wins and the other answers a conflict that names the draft's status.
 *   RES3 notifications are idempotent by (account, id): a repeat returns the stored one unchanged.
 *   RES4 every read and write names the account: another account's draft or notification is as
 *        absent as a missing one.
 */
import type { Api } from "../protocol/index.ts";

export type DraftKind = Api.DraftKind;
export type DraftStatus = Api.DraftStatus;

export interface Draft {
  id: string;
  accountId: string;
  botId: string;
  conversationId: string;
  kind: DraftKind;
  to: string;
  subject: string | null;
  text: string;
  status: DraftStatus;
  /** How many sends were started (the key of each send's delivery). */
  sendAttempts: number;
  channel: string | null;
  error: string | null;
  createdAt: number;
  updatedAt: number;
  sentAt: number | null;
}

export interface StoredNotification {
  id: string;
  accountId: string;
  kind: Api.NotificationKind;
  title: string;
  body: string;
  botId: string | null;
  conversationId: string | null;
  subjectId: string | null;
  createdAt: number;
  readAt: number | null;
}

export type OwnerWebhookPurpose = Api.OwnerWebhook["purpose"];

export interface OwnerWebhookRecord {
  accountId: string;
  purpose: OwnerWebhookPurpose;
  url: string;
  secret: string;
  createdAt: number;
  updatedAt: number;
}

/** Per conversation: what the sidebar needs beyond the conversation row. */
export interface ConversationMarks {
  seenSeq: number | null;
  pendingDrafts: number;
  unreadAttention: number;
  unreadOther: number;
}

export interface ResultsStore {
  /** Idempotent by id (the draft tool derives it from its call id). */
  createDraft(
    input: Pick<
      Draft,
      "id" | "accountId" | "botId" | "conversationId" | "kind" | "to" | "subject" | "text"
    >,
  ): Promise<{ draft: Draft; created: boolean }>;
  /** RES4 */
  getDraft(accountId: string, id: string): Promise<Draft | undefined>;
  /** Newest first. */
  listDrafts(
    accountId: string,
    options?: { conversationId?: string; status?: DraftStatus; limit?: number },
  ): Promise<Draft[]>;
  /**
   * RES2: `pending` or `failed` → `sending`, counting the attempt; a conflict otherwise.
   * NotFoundError for no such draft of the account.
   */
  claimDraft(accountId: string, id: string): Promise<Draft>;
  /** `sending` → `sent` or `failed`; a draft that is not sending is returned unchanged. */
  finishDraftSend(
    id: string,
    outcome: { ok: true; channel: string } | { ok: false; channel: string | null; error: string },
  ): Promise<Draft | undefined>;
  /** RES2: `pending` or `failed` → `discarded`; audited. A conflict otherwise. */
  discardDraft(input: { accountId: string; id: string; actorAccountId: string }): Promise<Draft>;

  /** RES3 */
  putNotification(
    input: Omit<StoredNotification, "createdAt" | "readAt">,
  ): Promise<{ notification: StoredNotification; created: boolean }>;
  /** RES4 */
  getNotification(accountId: string, id: string): Promise<StoredNotification | undefined>;
  /** Newest first; `before` pages by creation time. */
  listNotifications(
    accountId: string,
    options?: { unread?: boolean; limit?: number; before?: number },
  ): Promise<StoredNotification[]>;
  countUnreadNotifications(accountId: string): Promise<number>;
  /** Marks the given notifications (or those of a conversation, or all) read; answers how many. */
  markNotificationsRead(
    accountId: string,
    which: { ids: readonly string[] } | { conversationId: string } | { all: true },
  ): Promise<number>;

  /** Replaces the account's webhook for `purpose`; audited (the secret is never in the audit). */
  setOwnerWebhook(input: {
    accountId: string;
    purpose: OwnerWebhookPurpose;
    url: string;
    secret: string;
  }): Promise<OwnerWebhookRecord>;
  getOwnerWebhook(
    accountId: string,
    purpose: OwnerWebhookPurpose,
  ): Promise<OwnerWebhookRecord | undefined>;
  /** Audited; false when there was none. */
  deleteOwnerWebhook(accountId: string, purpose: OwnerWebhookPurpose): Promise<boolean>;

  /** RES1: the receiver's conversation for messages from `fromBotId`, made on first use. */
  ensureBotThread(input: {
    accountId: string;
    fromBotId: string;
    toBotId: string;
    title: string;
  }): Promise<{ conversationId: string; created: boolean }>;

  /** The owner has seen the conversation up to `seq` (never moves back). */
  markConversationSeen(accountId: string, conversationId: string, seq: number): Promise<void>;
  /** The sidebar's marks of each of these conversations of the account. */
  conversationMarks(
    accountId: string,
    conversationIds: readonly string[],
  ): Promise<Map<string, ConversationMarks>>;
}
