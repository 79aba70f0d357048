/**
 * The results part of the store (results-types.ts, RES1–RES4), written once against `SqlDriver`.
 */
import { NotFoundError, RoostError } from "../errors/index.ts";
import { attentionKinds } from "../protocol/index.ts";
import type { SqlDriver, SqlExecutor } from "./driver.ts";
import type { AuditWriter } from "./types.ts";
import type {
  ConversationMarks,
  Draft,
  DraftKind,
  DraftStatus,
  OwnerWebhookPurpose,
  OwnerWebhookRecord,
  ResultsStore,
  StoredNotification,
} from "./results-types.ts";

interface DraftRow {
  id: string;
  account_id: string;
  bot_id: string;
  conversation_id: string;
  kind: string;
  recipient: string;
  subject: string | null;
  text: string;
  status: string;
  send_attempts: number;
  channel: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
  sent_at: number | null;
}
interface NotificationRow {
  account_id: string;
  id: string;
  kind: string;
  title: string;
  body: string;
  bot_id: string | null;
  conversation_id: string | null;
  subject_id: string | null;
  created_at: number;
  read_at: number | null;
}
interface WebhookRow {
  account_id: string;
  purpose: string;
  url: string;
  secret: string;
  created_at: number;
  updated_at: number;
}

const draftColumns =
  "id, account_id, bot_id, conversation_id, kind, recipient, subject, text, status, send_attempts, channel, error, created_at, updated_at, sent_at";
const notificationColumns =
  "account_id, id, kind, title, body, bot_id, conversation_id, subject_id, created_at, read_at";

const optionalNumber = (value: number | null) => (value === null ? null : Number(value));

const toDraft = (row: DraftRow): Draft => ({
  id: row.id,
  accountId: row.account_id,
  botId: row.bot_id,
  conversationId: row.conversation_id,
  kind: row.kind as DraftKind,
  to: row.recipient,
  subject: row.subject,
  text: row.text,
  status: row.status as DraftStatus,
  sendAttempts: Number(row.send_attempts),
  channel: row.channel,
  error: row.error,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
  sentAt: optionalNumber(row.sent_at),
});
const toNotification = (row: NotificationRow): StoredNotification => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind as StoredNotification["kind"],
  title: row.title,
  body: row.body,
  botId: row.bot_id,
  conversationId: row.conversation_id,
  subjectId: row.subject_id,
  createdAt: Number(row.created_at),
  readAt: optionalNumber(row.read_at),
});
const toWebhook = (row: WebhookRow): OwnerWebhookRecord => ({
  accountId: row.account_id,
  purpose: row.purpose as OwnerWebhookPurpose,
  url: row.url,
  secret: row.secret,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

/** `?, ?, ?` for a list of parameters. */
const placeholders = (count: number) => Array.from({ length: count }, () => "?").join(", ");

/**
 * STORE7: what a deleted conversation (or every conversation of a deleted bot) had of results,
 * inside the delete's transaction. `where` selects conversations as in sql-store.ts.
 */
export async function deleteResultsOf(
  tx: SqlExecutor,
  where: "id = ?" | "bot_id = ?",
  key: string,
): Promise<void> {
  const selected = `SELECT id FROM conversations WHERE ${where}`;
  for (const table of ["drafts", "notifications", "conversation_reads", "bot_threads"])
    await tx.run(`DELETE FROM ${table} WHERE conversation_id IN (${selected})`, [key]);
  // A deleted bot's threads into other bots' conversations: the row only (the conversation stays).
  if (where === "bot_id = ?") await tx.run("DELETE FROM bot_threads WHERE from_bot_id = ?", [key]);
}

export function createResultsQueries(
  driver: SqlDriver,
  now: () => number,
  audit: AuditWriter,
): ResultsStore {
  async function draftOf(executor: SqlExecutor, accountId: string, id: string, lock = "") {
    const rows = await executor.all<DraftRow>(
      `SELECT ${draftColumns} FROM drafts WHERE id = ? AND account_id = ?${lock}`,
      [id, accountId],
    );
    return rows[0] === undefined ? undefined : toDraft(rows[0]);
  }

  async function notificationOf(accountId: string, id: string) {
    const rows = await driver.all<NotificationRow>(
      `SELECT ${notificationColumns} FROM notifications WHERE account_id = ? AND id = ?`,
      [accountId, id],
    );
    return rows[0] === undefined ? undefined : toNotification(rows[0]);
  }

  /** RES2: the conflict a draft that already left `pending` answers. */
  function notOpen(draft: Draft, action: "send" | "discard"): RoostError {
    const why =
      draft.status === "sending"
        ? "it is being sent right now"
        : draft.status === "sent"
          ? "it was sent already"
          : "it was discarded";
    return new RoostError("conflict", `cannot ${action} draft ${draft.id}: ${why}`, {
      details: { draftId: draft.id, status: draft.status },
    });
  }

  return {
    async createDraft(input) {
      const at = now();
      try {
        await driver.run(`INSERT INTO drafts (${draftColumns}) VALUES (${placeholders(15)})`, [
          input.id,
          input.accountId,
          input.botId,
          input.conversationId,
          input.kind,
          input.to,
          input.subject,
          input.text,
          "pending",
          0,
          null,
          null,
          at,
          at,
          null,
        ]);
      } catch (error) {
        if (!driver.isUniqueViolation(error)) throw error;
        const existing = await draftOf(driver, input.accountId, input.id);
        if (existing === undefined) throw error;
        return { draft: existing, created: false };
      }
      const draft = await draftOf(driver, input.accountId, input.id);
      if (draft === undefined) throw new NotFoundError("draft", input.id);
      return { draft, created: true };
    },

    getDraft: (accountId, id) => draftOf(driver, accountId, id),

    async listDrafts(accountId, options = {}) {
      const conditions = ["account_id = ?"];
      const params: (string | number)[] = [accountId];
      if (options.conversationId !== undefined) {
        conditions.push("conversation_id = ?");
        params.push(options.conversationId);
      }
      if (options.status !== undefined) {
        conditions.push("status = ?");
        params.push(options.status);
      }
      const rows = await driver.all<DraftRow>(
        `SELECT ${draftColumns} FROM drafts WHERE ${conditions.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ?`,
        [...params, options.limit ?? 100],
      );
      return rows.map(toDraft);
    },

    async claimDraft(accountId, id) {
      return driver.transaction(async (tx) => {
        const at = now();
        // RES2: one conditional update; a racing claim or discard finds the status changed.
        const claimed = await tx.run(
          "UPDATE drafts SET status = 'sending', send_attempts = send_attempts + 1, error = NULL, updated_at = ? WHERE id = ? AND account_id = ? AND status IN ('pending', 'failed')",
          [at, id, accountId],
        );
        const draft = await draftOf(tx, accountId, id);
        if (draft === undefined) throw new NotFoundError("draft", id); // RES4
        if (claimed.changes === 0) throw notOpen(draft, "send");
        return draft;
      });
    },

    async finishDraftSend(id, outcome) {
      const at = now();
      await driver.run(
        outcome.ok
          ? "UPDATE drafts SET status = 'sent', channel = ?, error = NULL, sent_at = ?, updated_at = ? WHERE id = ? AND status = 'sending'"
          : "UPDATE drafts SET status = 'failed', channel = ?, error = ?, updated_at = ? WHERE id = ? AND status = 'sending'",
        outcome.ok ? [outcome.channel, at, at, id] : [outcome.channel, outcome.error, at, id],
      );
      const rows = await driver.all<DraftRow>(`SELECT ${draftColumns} FROM drafts WHERE id = ?`, [
        id,
      ]);
      return rows[0] === undefined ? undefined : toDraft(rows[0]);
    },

    async discardDraft({ accountId, id, actorAccountId }) {
      return driver.transaction(async (tx) => {
        const discarded = await tx.run(
          "UPDATE drafts SET status = 'discarded', updated_at = ? WHERE id = ? AND account_id = ? AND status IN ('pending', 'failed')",
          [now(), id, accountId],
        );
        const draft = await draftOf(tx, accountId, id);
        if (draft === undefined) throw new NotFoundError("draft", id); // RES4
        if (discarded.changes === 0) throw notOpen(draft, "discard"); // RES2
        await audit(tx, {
          accountId: actorAccountId,
          action: "draft.discard",
          target: id,
          detail: { conversationId: draft.conversationId, kind: draft.kind },
        });
        return draft;
      });
    },

    getNotification: (accountId, id) => notificationOf(accountId, id),

    async putNotification(input) {
      const read = () => notificationOf(input.accountId, input.id);
      // RES3: the first one stays as it was (one statement: no error to raise and catch).
      const inserted = await driver.run(
        `INSERT INTO notifications (${notificationColumns}) VALUES (${placeholders(10)}) ON CONFLICT (account_id, id) DO NOTHING`,
        [
          input.accountId,
          input.id,
          input.kind,
          input.title,
          input.body,
          input.botId,
          input.conversationId,
          input.subjectId,
          now(),
          null,
        ],
      );
      if (inserted.changes === 0) {
        const existing = await read();
        if (existing === undefined) throw new NotFoundError("notification", input.id);
        return { notification: existing, created: false };
      }
      const notification = await read();
      if (notification === undefined) throw new NotFoundError("notification", input.id);
      return { notification, created: true };
    },

    async listNotifications(accountId, options = {}) {
      const conditions = ["account_id = ?"];
      const params: (string | number)[] = [accountId];
      if (options.unread === true) conditions.push("read_at IS NULL");
      if (options.before !== undefined) {
        conditions.push("created_at < ?");
        params.push(options.before);
      }
      const rows = await driver.all<NotificationRow>(
        `SELECT ${notificationColumns} FROM notifications WHERE ${conditions.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ?`,
        [...params, options.limit ?? 50],
      );
      return rows.map(toNotification);
    },

    async countUnreadNotifications(accountId) {
      const rows = await driver.all<{ count: number }>(
        "SELECT COUNT(*) AS count FROM notifications WHERE account_id = ? AND read_at IS NULL",
        [accountId],
      );
      return Number(rows[0]?.count ?? 0);
    },

    async markNotificationsRead(accountId, which) {
      const at = now();
      if ("all" in which) {
        const result = await driver.run(
          "UPDATE notifications SET read_at = ? WHERE account_id = ? AND read_at IS NULL",
          [at, accountId],
        );
        return result.changes;
      }
      if ("conversationId" in which) {
        const result = await driver.run(
          "UPDATE notifications SET read_at = ? WHERE account_id = ? AND conversation_id = ? AND read_at IS NULL",
          [at, accountId, which.conversationId],
        );
        return result.changes;
      }
      if (which.ids.length === 0) return 0;
      const result = await driver.run(
        `UPDATE notifications SET read_at = ? WHERE account_id = ? AND read_at IS NULL AND id IN (${placeholders(which.ids.length)})`,
        [at, accountId, ...which.ids],
      );
      return result.changes;
    },

    async setOwnerWebhook({ accountId, purpose, url, secret }) {
      return driver.transaction(async (tx) => {
        const at = now();
        const existing = await tx.all<WebhookRow>(
          `SELECT * FROM owner_webhooks WHERE account_id = ? AND purpose = ?${driver.lockRows}`,
          [accountId, purpose],
        );
        const createdAt = existing[0] === undefined ? at : Number(existing[0].created_at);
        await tx.run("DELETE FROM owner_webhooks WHERE account_id = ? AND purpose = ?", [
          accountId,
          purpose,
        ]);
        await tx.run(
          "INSERT INTO owner_webhooks (account_id, purpose, url, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
          [accountId, purpose, url, secret, createdAt, at],
        );
        await audit(tx, {
          accountId,
          action: `webhook.${purpose}.set`,
          target: accountId,
          detail: { url: new URL(url).origin },
        });
        return { accountId, purpose, url, secret, createdAt, updatedAt: at };
      });
    },

    async getOwnerWebhook(accountId, purpose) {
      const rows = await driver.all<WebhookRow>(
        "SELECT * FROM owner_webhooks WHERE account_id = ? AND purpose = ?",
        [accountId, purpose],
      );
      return rows[0] === undefined ? undefined : toWebhook(rows[0]);
    },

    async deleteOwnerWebhook(accountId, purpose) {
      return driver.transaction(async (tx) => {
        const deleted = await tx.run(
          "DELETE FROM owner_webhooks WHERE account_id = ? AND purpose = ?",
          [accountId, purpose],
        );
        if (deleted.changes > 0)
          await audit(tx, {
            accountId,
            action: `webhook.${purpose}.delete`,
            target: accountId,
            detail: {},
          });
        return deleted.changes > 0;
      });
    },

    async ensureBotThread({ accountId, fromBotId, toBotId, title }) {
      const find = async (executor: SqlExecutor) => {
        const rows = await executor.all<{ conversation_id: string }>(
          "SELECT conversation_id FROM bot_threads WHERE from_bot_id = ? AND to_bot_id = ? AND account_id = ?",
          [fromBotId, toBotId, accountId],
        );
        return rows[0]?.conversation_id;
      };
      const existing = await find(driver);
      if (existing !== undefined) return { conversationId: existing, created: false };
      try {
        return await driver.transaction(async (tx) => {
          // The receiver must be the account's and still there (its row locked against a delete).
          const bot = await tx.all<{ id: string }>(
            `SELECT id FROM bots WHERE id = ? AND account_id = ?${driver.lockRows}`,
            [toBotId, accountId],
          );
          if (bot.length === 0) throw new NotFoundError("bot", toBotId);
          const at = now();
          const conversationId = `conv_${fromBotId.replace(/^bot_/, "")}_${toBotId.replace(/^bot_/, "")}`;
          await tx.run(
            "INSERT INTO conversations (id, account_id, bot_id, title, last_seq, created_at, updated_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
            [conversationId, accountId, toBotId, title, at, at],
          );
          await tx.run(
            "INSERT INTO bot_threads (from_bot_id, to_bot_id, account_id, conversation_id, created_at) VALUES (?, ?, ?, ?, ?)",
            [fromBotId, toBotId, accountId, conversationId, at],
          );
          return { conversationId, created: true };
        });
      } catch (error) {
        // RES1: the racing first message made it; use that one.
        if (!driver.isUniqueViolation(error)) throw error;
        const winner = await find(driver);
        if (winner === undefined) throw error;
        return { conversationId: winner, created: false };
      }
    },

    async markConversationSeen(accountId, conversationId, seq) {
      const at = now();
      const updated = await driver.run(
        "UPDATE conversation_reads SET seen_seq = ?, updated_at = ? WHERE conversation_id = ? AND account_id = ? AND seen_seq < ?",
        [seq, at, conversationId, accountId, seq],
      );
      if (updated.changes > 0) return;
      try {
        await driver.run(
          "INSERT INTO conversation_reads (conversation_id, account_id, seen_seq, updated_at) VALUES (?, ?, ?, ?)",
          [conversationId, accountId, seq, at],
        );
      } catch (error) {
        // It exists already, at this seq or beyond (never moves back).
        if (!driver.isUniqueViolation(error)) throw error;
      }
    },

    async conversationMarks(accountId, conversationIds) {
      const marks = new Map<string, ConversationMarks>();
      if (conversationIds.length === 0) return marks;
      for (const id of conversationIds)
        marks.set(id, { seenSeq: null, pendingDrafts: 0, unreadAttention: 0, unreadOther: 0 });
      const list = placeholders(conversationIds.length);
      const reads = await driver.all<{ conversation_id: string; seen_seq: number }>(
        `SELECT conversation_id, seen_seq FROM conversation_reads WHERE account_id = ? AND conversation_id IN (${list})`,
        [accountId, ...conversationIds],
      );
      for (const row of reads) {
        const mark = marks.get(row.conversation_id);
        if (mark !== undefined) mark.seenSeq = Number(row.seen_seq);
      }
      const drafts = await driver.all<{ conversation_id: string; count: number }>(
        `SELECT conversation_id, COUNT(*) AS count FROM drafts WHERE account_id = ? AND status IN ('pending', 'failed') AND conversation_id IN (${list}) GROUP BY conversation_id`,
        [accountId, ...conversationIds],
      );
      for (const row of drafts) {
        const mark = marks.get(row.conversation_id);
        if (mark !== undefined) mark.pendingDrafts = Number(row.count);
      }
      const unread = await driver.all<{ conversation_id: string; kind: string; count: number }>(
        `SELECT conversation_id, kind, COUNT(*) AS count FROM notifications WHERE account_id = ? AND read_at IS NULL AND conversation_id IN (${list}) GROUP BY conversation_id, kind`,
        [accountId, ...conversationIds],
      );
      for (const row of unread) {
        const mark = marks.get(row.conversation_id);
        if (mark === undefined) continue;
        if (attentionKinds.includes(row.kind as StoredNotification["kind"]))
          mark.unreadAttention += Number(row.count);
        else mark.unreadOther += Number(row.count);
      }
      return marks;
    },
  };
}
