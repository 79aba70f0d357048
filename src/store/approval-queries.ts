/** The tool-policy and approvals part of the store (approval-types.ts, APS1–APS3), one SQL for both. */
import type { Api } from "../protocol/index.ts";
import type { SqlDriver } from "./driver.ts";
import type { ApprovalRecord, ApprovalStore, StoredToolPolicy } from "./approval-types.ts";

interface PolicyRow {
  bot_id: string;
  policy: string;
  updated_at: number | string;
}
interface ApprovalRow {
  id: string;
  account_id: string;
  bot_id: string;
  conversation_id: string;
  turn_id: string;
  call_id: string;
  waiter_id: string;
  tool: string;
  input: string;
  reason: string;
  bot_reason: string | null;
  review: string | null;
  approvers: string;
  state: string;
  decided_by: string | null;
  decided_at: number | string | null;
  remembered: string | null;
  released: number | string;
  expires_at: number | string;
  created_at: number | string;
}

const toPolicy = (row: PolicyRow): StoredToolPolicy => ({
  botId: row.bot_id,
  policy: JSON.parse(row.policy) as Api.ToolPolicy,
  updatedAt: Number(row.updated_at),
});

const toApproval = (row: ApprovalRow): ApprovalRecord => ({
  id: row.id,
  accountId: row.account_id,
  botId: row.bot_id,
  conversationId: row.conversation_id,
  turnId: row.turn_id,
  callId: row.call_id,
  waiterId: row.waiter_id,
  tool: row.tool,
  input: JSON.parse(row.input) as unknown,
  reason: row.reason,
  botReason: row.bot_reason,
  review: row.review === null ? null : (JSON.parse(row.review) as Api.ReviewVerdict),
  approvers: JSON.parse(row.approvers) as string[],
  state: row.state as Api.ApprovalState,
  decidedBy: row.decided_by,
  decidedAt: row.decided_at === null ? null : Number(row.decided_at),
  remembered: row.remembered,
  released: Number(row.released) === 1,
  expiresAt: Number(row.expires_at),
  createdAt: Number(row.created_at),
});

export function createApprovalQueries(driver: SqlDriver, now: () => number): ApprovalStore {
  const getApproval = async (id: string) => {
    const rows = await driver.all<ApprovalRow>("SELECT * FROM approvals WHERE id = ?", [id]);
    return rows[0] === undefined ? undefined : toApproval(rows[0]);
  };
  return {
    async getToolPolicy(botId) {
      const rows = await driver.all<PolicyRow>("SELECT * FROM tool_policies WHERE bot_id = ?", [
        botId,
      ]);
      return rows[0] === undefined ? undefined : toPolicy(rows[0]);
    },

    async setToolPolicy(botId, policy) {
      const at = now();
      await driver.run(
        `INSERT INTO tool_policies (bot_id, policy, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (bot_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at`,
        [botId, JSON.stringify(policy), at],
      );
      return { botId, policy, updatedAt: at };
    },

    async createApproval(approval) {
      // APS1: the first write of an id wins.
      await driver.run(
        `INSERT INTO approvals (id, account_id, bot_id, conversation_id, turn_id, call_id, waiter_id,
           tool, input, reason, bot_reason, review, approvers, state, released, expires_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)
         ON CONFLICT (id) DO NOTHING`,
        [
          approval.id,
          approval.accountId,
          approval.botId,
          approval.conversationId,
          approval.turnId,
          approval.callId,
          approval.waiterId,
          approval.tool,
          JSON.stringify(approval.input ?? null),
          approval.reason,
          approval.botReason,
          approval.review === null ? null : JSON.stringify(approval.review),
          JSON.stringify(approval.approvers),
          approval.expiresAt,
          approval.createdAt,
        ],
      );
      return (await getApproval(approval.id))!;
    },

    getApproval,

    async listApprovals(accountId, { state, limit = 100 } = {}) {
      const rows = await driver.all<ApprovalRow>(
        `SELECT * FROM approvals WHERE account_id = ?${state === undefined ? "" : " AND state = ?"}
         ORDER BY created_at DESC, id DESC LIMIT ?`,
        state === undefined ? [accountId, limit] : [accountId, state, limit],
      );
      return rows.map(toApproval);
    },

    async settleApproval(id, outcome) {
      // APS2: one conditional update; whoever changes the row first decided.
      const { changes } = await driver.run(
        `UPDATE approvals SET state = ?, decided_by = ?, decided_at = ?, remembered = ?
         WHERE id = ? AND state = 'pending'`,
        [outcome.state, outcome.decidedBy, outcome.at, outcome.remembered ?? null, id],
      );
      const approval = await getApproval(id);
      return approval === undefined ? undefined : { approval, changed: changes > 0 };
    },

    async markApprovalReleased(id) {
      await driver.run("UPDATE approvals SET released = 1 WHERE id = ?", [id]);
    },

    async listUnreleasedApprovals(limit) {
      const rows = await driver.all<ApprovalRow>(
        `SELECT * FROM approvals WHERE state <> 'pending' AND released = 0
         ORDER BY decided_at, id LIMIT ?`,
        [limit],
      );
      return rows.map(toApproval);
    },

    async listOverdueApprovals(atMs, limit) {
      const rows = await driver.all<ApprovalRow>(
        `SELECT * FROM approvals WHERE state = 'pending' AND expires_at < ?
         ORDER BY expires_at, id LIMIT ?`,
        [atMs, limit],
      );
      return rows.map(toApproval);
    },

    async pendingApprovalsOf(conversationId) {
      const rows = await driver.all<ApprovalRow>(
        "SELECT * FROM approvals WHERE conversation_id = ? AND state = 'pending' ORDER BY created_at",
        [conversationId],
      );
      return rows.map(toApproval);
    },
  };
}
