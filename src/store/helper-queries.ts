/** The helpers part of the store (helper-types.ts, HST1–HST5), written once against `SqlDriver`. */
import { NotFoundError } from "../errors/index.ts";
import type { SqlDriver, SqlExecutor } from "./driver.ts";
import type { HelperRecord, HelperStatus, HelperStore } from "./helper-types.ts";

interface HelperRow {
  id: string;
  account_id: string;
  conversation_id: string;
  parent_conversation_id: string;
  bot_id: string;
  depth: number;
  task: string;
  instructions: string | null;
  tools: string | null;
  model: string | null;
  status: string;
  latest_output: string | null;
  created_at: number;
  updated_at: number;
}

const toHelper = (row: HelperRow): HelperRecord => ({
  id: row.id,
  accountId: row.account_id,
  conversationId: row.conversation_id,
  parentConversationId: row.parent_conversation_id,
  botId: row.bot_id,
  depth: Number(row.depth),
  task: row.task,
  instructions: row.instructions,
  tools: row.tools === null ? null : (JSON.parse(row.tools) as string[]),
  model: row.model,
  status: row.status as HelperStatus,
  latestOutput: row.latest_output,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

/**
 * STORE7: a deleted helper conversation's row goes with it, inside the delete's transaction. A
 * deleted parent leaves its helpers as they are (HST2: their rows never change while their
 * conversation exists); their results then go nowhere.
 */
export async function deleteHelpersOf(
  tx: SqlExecutor,
  where: "id = ?" | "bot_id = ?",
  key: string,
): Promise<void> {
  const selected = `SELECT id FROM conversations WHERE ${where}`;
  await tx.run(`DELETE FROM helpers WHERE conversation_id IN (${selected})`, [key]);
}

export function createHelperQueries(driver: SqlDriver, now: () => number): HelperStore {
  async function byId(executor: SqlExecutor, id: string) {
    const rows = await executor.all<HelperRow>("SELECT * FROM helpers WHERE id = ?", [id]);
    return rows[0] === undefined ? undefined : toHelper(rows[0]);
  }

  return {
    async createHelper(input) {
      const existing = await byId(driver, input.id);
      if (existing !== undefined) return { helper: existing, created: false }; // HST1
      try {
        return await driver.transaction(async (tx) => {
          // HST5: the parent's row is locked, so two starts at once count each other.
          const parent = await tx.all<{ id: string }>(
            `SELECT id FROM conversations WHERE id = ? AND account_id = ?${driver.lockRows}`,
            [input.parentConversationId, input.accountId],
          );
          if (parent.length === 0)
            throw new NotFoundError("conversation", input.parentConversationId);
          const running = await tx.all<{ count: number }>(
            "SELECT COUNT(*) AS count FROM helpers WHERE parent_conversation_id = ? AND status = 'running'",
            [input.parentConversationId],
          );
          const count = Number(running[0]?.count ?? 0);
          if (count >= input.maxRunning) return { capped: count };
          const at = now();
          await tx.run(
            "INSERT INTO conversations (id, account_id, bot_id, title, last_seq, created_at, updated_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
            [input.conversationId, input.accountId, input.botId, input.title, at, at],
          );
          await tx.run(
            "INSERT INTO helpers (id, account_id, conversation_id, parent_conversation_id, bot_id, depth, task, instructions, tools, model, status, latest_output, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', NULL, ?, ?)",
            [
              input.id,
              input.accountId,
              input.conversationId,
              input.parentConversationId,
              input.botId,
              input.depth,
              input.task,
              input.instructions,
              input.tools === null ? null : JSON.stringify(input.tools),
              input.model,
              at,
              at,
            ],
          );
          const helper = await byId(tx, input.id);
          if (helper === undefined) throw new NotFoundError("helper", input.id);
          return { helper, created: true };
        });
      } catch (error) {
        // HST1: a racing repeat made it; read that one.
        if (!driver.isUniqueViolation(error)) throw error;
        const winner = await byId(driver, input.id);
        if (winner === undefined) throw error;
        return { helper: winner, created: false };
      }
    },

    async getHelper(accountId, id) {
      const helper = await byId(driver, id);
      return helper?.accountId === accountId ? helper : undefined; // HST3
    },

    async helperOfConversation(conversationId) {
      const rows = await driver.all<HelperRow>("SELECT * FROM helpers WHERE conversation_id = ?", [
        conversationId,
      ]);
      return rows[0] === undefined ? undefined : toHelper(rows[0]);
    },

    async listHelpers(accountId, parentConversationId) {
      const rows = await driver.all<HelperRow>(
        "SELECT * FROM helpers WHERE account_id = ? AND parent_conversation_id = ? ORDER BY created_at, id",
        [accountId, parentConversationId],
      );
      return rows.map(toHelper);
    },

    async setHelperStatus(id, status, latestOutput) {
      // HST4: one conditional update; a stopped helper keeps its status.
      await driver.run(
        latestOutput === undefined
          ? "UPDATE helpers SET status = ?, updated_at = ? WHERE id = ? AND status <> 'stopped'"
          : "UPDATE helpers SET status = ?, latest_output = ?, updated_at = ? WHERE id = ? AND status <> 'stopped'",
        latestOutput === undefined ? [status, now(), id] : [status, latestOutput, now(), id],
      );
      return byId(driver, id);
    },

    async stopHelper(accountId, id) {
      await driver.run(
        "UPDATE helpers SET status = 'stopped', updated_at = ? WHERE id = ? AND account_id = ?",
        [now(), id, accountId],
      );
      const helper = await byId(driver, id);
      return helper?.accountId === accountId ? helper : undefined; // HST3
    },
  };
}
