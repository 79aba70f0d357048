/** The screen-lease part of the store (screen-lease-types.ts, SCL1–SCL3), one SQL for both. */
import type { SqlDriver } from "./driver.ts";
import type {
  ScreenHandoff,
  ScreenHandoffState,
  ScreenLease,
  ScreenLeaseStore,
} from "./screen-lease-types.ts";
import type { AuditWriter } from "./types.ts";

interface LeaseRow {
  computer_id: string;
  screen_id: string;
  account_id: string;
  viewer_id: string;
  reason: string;
  started_at: number | string;
  until_at: number | string;
}

interface HandoffRow {
  id: string;
  account_id: string;
  bot_id: string;
  conversation_id: string;
  computer_id: string;
  screen_id: string;
  waiter_id: string;
  reason: string;
  state: string;
  created_at: number | string;
  settled_at: number | string | null;
}

const toHandoff = (row: HandoffRow): ScreenHandoff => ({
  id: row.id,
  accountId: row.account_id,
  botId: row.bot_id,
  conversationId: row.conversation_id,
  computerId: row.computer_id,
  screenId: row.screen_id,
  waiterId: row.waiter_id,
  reason: row.reason,
  state: row.state as ScreenHandoffState,
  createdAt: Number(row.created_at),
  settledAt: row.settled_at === null ? null : Number(row.settled_at),
});

const toLease = (row: LeaseRow): ScreenLease => ({
  computerId: row.computer_id,
  screenId: row.screen_id,
  accountId: row.account_id,
  viewerId: row.viewer_id,
  reason: row.reason,
  startedAt: Number(row.started_at),
  until: Number(row.until_at),
});

export function createScreenLeaseQueries(
  driver: SqlDriver,
  now: () => number,
  insertAudit: AuditWriter,
): ScreenLeaseStore {
  const getScreenLease = async (computerId: string, screenId: string) => {
    const rows = await driver.all<LeaseRow>(
      "SELECT * FROM screen_leases WHERE computer_id = ? AND screen_id = ?",
      [computerId, screenId],
    );
    return rows[0] === undefined ? undefined : toLease(rows[0]);
  };
  const getScreenHandoff = async (id: string) => {
    const rows = await driver.all<HandoffRow>("SELECT * FROM screen_handoffs WHERE id = ?", [id]);
    return rows[0] === undefined ? undefined : toHandoff(rows[0]);
  };
  return {
    getScreenLease,
    getScreenHandoff,

    async createScreenHandoff(input) {
      // SCL4: a replay's insert changes nothing, and answers the first.
      await driver.run(
        `INSERT INTO screen_handoffs (id, account_id, bot_id, conversation_id, computer_id,
           screen_id, waiter_id, reason, state, created_at, settled_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, NULL)
         ON CONFLICT (id) DO NOTHING`,
        [
          input.id,
          input.accountId,
          input.botId,
          input.conversationId,
          input.computerId,
          input.screenId,
          input.waiterId,
          input.reason,
          now(),
        ],
      );
      return (await getScreenHandoff(input.id))!;
    },

    async listPendingScreenHandoffs(computerId, screenId) {
      const rows = await driver.all<HandoffRow>(
        `SELECT * FROM screen_handoffs WHERE computer_id = ? AND screen_id = ? AND state = 'pending'
         ORDER BY created_at, id`,
        [computerId, screenId],
      );
      return rows.map(toHandoff);
    },

    async settleScreenHandoff(id, state) {
      const { changes } = await driver.run(
        "UPDATE screen_handoffs SET state = ?, settled_at = ? WHERE id = ? AND state = 'pending'",
        [state, now(), id],
      ); // SCL4
      return { changed: changes > 0, handoff: await getScreenHandoff(id) };
    },

    async takeScreenLease(input) {
      const at = now();
      return driver.transaction(async (tx) => {
        const before = await tx.all<LeaseRow>(
          `SELECT * FROM screen_leases WHERE computer_id = ? AND screen_id = ?${driver.lockRows}`,
          [input.computerId, input.screenId],
        );
        const previous = before[0] === undefined ? undefined : toLease(before[0]);
        const renewed =
          previous !== undefined && previous.viewerId === input.viewerId && previous.until > at;
        // SCL1: one conditional write; a concurrent taker's row makes this one change nothing.
        const { changes } = await tx.run(
          `INSERT INTO screen_leases
             (computer_id, screen_id, account_id, viewer_id, reason, started_at, until_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (computer_id, screen_id) DO UPDATE SET
             account_id = excluded.account_id,
             viewer_id = excluded.viewer_id,
             reason = excluded.reason,
             started_at = CASE WHEN screen_leases.viewer_id = excluded.viewer_id
               AND screen_leases.until_at > ? THEN screen_leases.started_at
               ELSE excluded.started_at END,
             until_at = excluded.until_at
           WHERE screen_leases.until_at <= ? OR screen_leases.viewer_id = excluded.viewer_id`,
          [
            input.computerId,
            input.screenId,
            input.accountId,
            input.viewerId,
            input.reason,
            at,
            input.until,
            at,
            at,
          ],
        );
        const rows = await tx.all<LeaseRow>(
          "SELECT * FROM screen_leases WHERE computer_id = ? AND screen_id = ?",
          [input.computerId, input.screenId],
        );
        const lease = toLease(rows[0]!);
        if (changes === 0) return { taken: false as const, holder: lease };
        if (!renewed)
          await insertAudit(tx, {
            accountId: input.accountId,
            action: "screen.control_taken",
            target: `${input.computerId}/${input.screenId}`,
            detail: {
              viewerId: input.viewerId,
              reason: input.reason,
              until: new Date(input.until).toISOString(),
            },
          }); // SCL3
        return { taken: true as const, renewed, lease };
      });
    },

    async listScreenLeases(computerId) {
      const rows = await driver.all<LeaseRow>(
        "SELECT * FROM screen_leases WHERE computer_id = ? ORDER BY screen_id",
        [computerId],
      );
      return rows.map(toLease);
    },

    async releaseScreenLease(input) {
      return driver.transaction(async (tx) => {
        const rows = await tx.all<LeaseRow>(
          `SELECT * FROM screen_leases WHERE computer_id = ? AND screen_id = ?${driver.lockRows}`,
          [input.computerId, input.screenId],
        );
        const lease = rows[0] === undefined ? undefined : toLease(rows[0]);
        if (lease === undefined) return undefined;
        if (input.viewerId !== undefined && lease.viewerId !== input.viewerId) return undefined;
        await tx.run("DELETE FROM screen_leases WHERE computer_id = ? AND screen_id = ?", [
          input.computerId,
          input.screenId,
        ]);
        await insertAudit(tx, {
          accountId: input.actorAccountId,
          action: "screen.control_released",
          target: `${input.computerId}/${input.screenId}`,
          detail: {
            viewerId: lease.viewerId,
            expired: lease.until <= now(),
            heldMs: Math.max(0, Math.min(now(), lease.until) - lease.startedAt),
          },
        }); // SCL3
        return lease;
      });
    },
  };
}
