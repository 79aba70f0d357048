/**
 * The routines part of the store (routine-types.ts, RST1–RST6), written once against `SqlDriver`
 * (migration 14).
 */
import { NotFoundError, RoostError } from "../errors/index.ts";
import type { IdGenerator } from "../ids.ts";
import type { Api } from "../protocol/index.ts";
import type { SqlDriver, SqlExecutor } from "./driver.ts";
import type { AuditWriter } from "./types.ts";
import type { Routine, RoutineRun, RoutineStore } from "./routine-types.ts";

interface RoutineRow {
  id: string;
  account_id: string;
  bot_id: string;
  name: string;
  instruction: string;
  trigger_spec: string;
  target: string;
  enabled: number;
  misfire: string;
  budget: string | null;
  triage_model: string | null;
  generation: number;
  anchor_at: number;
  webhook_key_hash: string | null;
  next_run_at: number | null;
  armed_generation: number;
  created_at: number;
  updated_at: number;
}
interface RunRow {
  id: string;
  routine_id: string;
  account_id: string;
  status: string;
  kind: string;
  scheduled_at: number | null;
  started_at: number | null;
  finished_at: number | null;
  conversation_id: string | null;
  error: string | null;
  created_at: number;
}

const nullableNumber = (value: number | null) => (value === null ? null : Number(value));

const toRoutine = (row: RoutineRow): Routine => ({
  id: row.id,
  accountId: row.account_id,
  botId: row.bot_id,
  name: row.name,
  instruction: row.instruction,
  trigger: JSON.parse(row.trigger_spec) as Api.RoutineTrigger,
  target: JSON.parse(row.target) as Api.RoutineTarget,
  enabled: Number(row.enabled) === 1,
  misfire: row.misfire as Api.MisfirePolicy,
  budget: row.budget === null ? null : (JSON.parse(row.budget) as Api.Budget),
  triageModel: row.triage_model,
  generation: Number(row.generation),
  anchorAt: Number(row.anchor_at),
  webhookKeyHash: row.webhook_key_hash,
  nextRunAt: nullableNumber(row.next_run_at),
  armedGeneration: Number(row.armed_generation),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});
const toRun = (row: RunRow): RoutineRun => ({
  id: row.id,
  routineId: row.routine_id,
  accountId: row.account_id,
  status: row.status as Api.RoutineRunStatus,
  kind: row.kind as Api.RoutineRunKind,
  scheduledAt: nullableNumber(row.scheduled_at),
  startedAt: nullableNumber(row.started_at),
  finishedAt: nullableNumber(row.finished_at),
  conversationId: row.conversation_id,
  error: row.error,
  createdAt: Number(row.created_at),
});

const routineColumns =
  "id, account_id, bot_id, name, instruction, trigger_spec, target, enabled, misfire, budget, triage_model, generation, anchor_at, webhook_key_hash, next_run_at, armed_generation, created_at, updated_at";
const runColumns =
  "id, routine_id, account_id, status, kind, scheduled_at, started_at, finished_at, conversation_id, error, created_at";

export function createRoutineQueries(
  driver: SqlDriver,
  now: () => number,
  ids: IdGenerator,
  audit: AuditWriter,
): RoutineStore {
  async function routineById(executor: SqlExecutor, id: string, lock = "") {
    const rows = await executor.all<RoutineRow>(
      `SELECT ${routineColumns} FROM routines WHERE id = ?${lock}`,
      [id],
    );
    return rows[0] === undefined ? undefined : toRoutine(rows[0]);
  }
  async function runById(executor: SqlExecutor, id: string) {
    const rows = await executor.all<RunRow>(`SELECT ${runColumns} FROM routine_runs WHERE id = ?`, [
      id,
    ]);
    return rows[0] === undefined ? undefined : toRun(rows[0]);
  }

  return {
    async createRoutine(input) {
      return driver.transaction(async (tx) => {
        // RST1: one writer per bot at a time, so two creates cannot both see room.
        const locked = await tx.run("UPDATE bots SET name = name WHERE id = ? AND account_id = ?", [
          input.botId,
          input.accountId,
        ]);
        if (locked.changes === 0) throw new NotFoundError("bot", input.botId);
        const [counted] = await tx.all<{ count: number }>(
          "SELECT COUNT(*) AS count FROM routines WHERE bot_id = ?",
          [input.botId],
        );
        const count = Number(counted?.count ?? 0);
        if (count >= input.maxPerBot)
          throw new RoostError(
            "conflict",
            `the bot has ${count} routines, the most it may have: delete one before adding another`,
            { details: { limit: input.maxPerBot } },
          ); // RST1
        const at = now();
        const routine: Routine = {
          id: ids("rtn"),
          accountId: input.accountId,
          botId: input.botId,
          name: input.name,
          instruction: input.instruction,
          trigger: input.trigger,
          target: input.target,
          enabled: input.enabled,
          misfire: input.misfire,
          budget: input.budget,
          triageModel: input.triageModel,
          generation: 1,
          anchorAt: at,
          webhookKeyHash: input.webhookKeyHash,
          nextRunAt: null,
          armedGeneration: 0,
          createdAt: at,
          updatedAt: at,
        };
        await tx.run(
          `INSERT INTO routines (${routineColumns}, trigger_type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            routine.id,
            routine.accountId,
            routine.botId,
            routine.name,
            routine.instruction,
            JSON.stringify(routine.trigger),
            JSON.stringify(routine.target),
            routine.enabled ? 1 : 0,
            routine.misfire,
            routine.budget === null ? null : JSON.stringify(routine.budget),
            routine.triageModel,
            routine.generation,
            routine.anchorAt,
            routine.webhookKeyHash,
            null,
            0,
            at,
            at,
            routine.trigger.type,
          ],
        );
        await audit(tx, {
          accountId: input.accountId,
          action: "routine.create",
          target: routine.id,
          detail: { botId: routine.botId, name: routine.name, trigger: routine.trigger.type },
        });
        return routine;
      });
    },

    getRoutine: (id) => routineById(driver, id),

    async listRoutines(botId) {
      const rows = await driver.all<RoutineRow>(
        `SELECT ${routineColumns} FROM routines WHERE bot_id = ? ORDER BY created_at, id`,
        [botId],
      );
      return rows.map(toRoutine);
    },

    async updateRoutine(id, patch, actorAccountId) {
      return driver.transaction(async (tx) => {
        const existing = await routineById(tx, id, driver.lockRows);
        if (existing === undefined) throw new NotFoundError("routine", id);
        const at = now();
        const { reschedule, ...fields } = patch;
        const next: Routine = {
          ...existing,
          ...Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)),
          // RST2
          generation: reschedule ? existing.generation + 1 : existing.generation,
          anchorAt: reschedule ? at : existing.anchorAt,
          nextRunAt: reschedule ? null : existing.nextRunAt,
          updatedAt: at,
        };
        await tx.run(
          "UPDATE routines SET name = ?, instruction = ?, trigger_spec = ?, trigger_type = ?, target = ?, enabled = ?, misfire = ?, budget = ?, triage_model = ?, generation = ?, anchor_at = ?, webhook_key_hash = ?, next_run_at = ?, updated_at = ? WHERE id = ?",
          [
            next.name,
            next.instruction,
            JSON.stringify(next.trigger),
            next.trigger.type,
            JSON.stringify(next.target),
            next.enabled ? 1 : 0,
            next.misfire,
            next.budget === null ? null : JSON.stringify(next.budget),
            next.triageModel,
            next.generation,
            next.anchorAt,
            next.webhookKeyHash,
            next.nextRunAt,
            at,
            id,
          ],
        );
        await audit(tx, {
          accountId: actorAccountId,
          action: "routine.update",
          target: id,
          detail: {
            fields: Object.keys(fields).filter(
              (key) => (fields as Record<string, unknown>)[key] !== undefined,
            ),
          },
        });
        return next;
      });
    },

    async deleteRoutine(id, actorAccountId) {
      await driver.transaction(async (tx) => {
        const existing = await routineById(tx, id, driver.lockRows);
        if (existing === undefined) throw new NotFoundError("routine", id);
        await tx.run("DELETE FROM routine_runs WHERE routine_id = ?", [id]);
        await tx.run("DELETE FROM routines WHERE id = ?", [id]);
        await audit(tx, {
          accountId: actorAccountId,
          action: "routine.delete",
          target: id,
          detail: { botId: existing.botId, name: existing.name },
        });
      });
    },

    async markRoutineArmed(id, generation, nextRunAt) {
      // Only the current generation's arming counts (RST2): a stale one changes nothing.
      await driver.run(
        "UPDATE routines SET armed_generation = ?, next_run_at = ? WHERE id = ? AND generation = ?",
        [generation, nextRunAt, id, generation],
      );
    },

    async listUnarmedRoutines(limit) {
      const rows = await driver.all<RoutineRow>(
        `SELECT ${routineColumns} FROM routines WHERE enabled = 1 AND armed_generation < generation AND trigger_type = 'schedule' ORDER BY updated_at LIMIT ?`,
        [limit],
      );
      return rows.map(toRoutine);
    },

    async beginRoutineRun(input) {
      const existing = await runById(driver, input.id);
      if (existing !== undefined) return { run: existing, created: false }; // RST3
      try {
        return await driver.transaction(async (tx) => {
          const at = now();
          let conversationId: string | null = null;
          if (input.conversation !== null && "create" in input.conversation) {
            conversationId = ids("conv");
            try {
              await tx.run(
                "INSERT INTO conversations (id, account_id, bot_id, title, last_seq, created_at, updated_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
                [
                  conversationId,
                  input.accountId,
                  input.conversation.create.botId,
                  input.conversation.create.title,
                  at,
                  at,
                ],
              );
            } catch (error) {
              if (driver.isForeignKeyViolation(error))
                throw new NotFoundError("bot", input.conversation.create.botId);
              throw error;
            }
          } else if (input.conversation !== null) {
            conversationId = input.conversation.id;
          }
          const run: RoutineRun = {
            id: input.id,
            routineId: input.routineId,
            accountId: input.accountId,
            status: input.status,
            kind: input.kind,
            scheduledAt: input.scheduledAt,
            startedAt: input.status === "running" ? at : null,
            finishedAt: null,
            conversationId,
            error: null,
            createdAt: at,
          };
          await tx.run(
            `INSERT INTO routine_runs (${runColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            [
              run.id,
              run.routineId,
              run.accountId,
              run.status,
              run.kind,
              run.scheduledAt,
              run.startedAt,
              null,
              run.conversationId,
              null,
              at,
            ],
          );
          // RST4: the newest keepRuns stay.
          await tx.run(
            `DELETE FROM routine_runs WHERE routine_id = ? AND id NOT IN (SELECT id FROM routine_runs WHERE routine_id = ? ORDER BY created_at DESC, id DESC LIMIT ?)`,
            [input.routineId, input.routineId, input.keepRuns],
          );
          return { run, created: true };
        });
      } catch (error) {
        // RST3: a concurrent begin of the same id won; answer its run.
        if (!driver.isUniqueViolation(error)) throw error;
        const winner = await runById(driver, input.id);
        if (winner === undefined) throw error;
        return { run: winner, created: false };
      }
    },

    async finishRoutineRun({ id, status, error = null }) {
      await driver.run(
        "UPDATE routine_runs SET status = ?, error = ?, finished_at = ? WHERE id = ? AND status = 'running'",
        [status, error, now(), id],
      );
    },

    async listRoutineRuns(routineId, limit) {
      const rows = await driver.all<RunRow>(
        `SELECT ${runColumns} FROM routine_runs WHERE routine_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
        [routineId, limit],
      );
      return rows.map(toRun);
    },

    getRoutineRun: (id) => runById(driver, id),

    async getRoutineAccountSettings(accountId) {
      const rows = await driver.all<{ timezone: string | null; routines_paused_at: number | null }>(
        "SELECT timezone, routines_paused_at FROM accounts WHERE id = ?",
        [accountId],
      );
      const row = rows[0];
      return {
        timezone: row?.timezone ?? null,
        routinesPausedAt: nullableNumber(row?.routines_paused_at ?? null),
      };
    },

    async setAccountTimezone(accountId, timezone) {
      const changed = await driver.run("UPDATE accounts SET timezone = ? WHERE id = ?", [
        timezone,
        accountId,
      ]);
      if (changed.changes === 0) throw new NotFoundError("account", accountId);
    },

    async setRoutinesPaused(accountId, pausedAt) {
      const changed =
        pausedAt === null
          ? await driver.run(
              "UPDATE accounts SET routines_paused_at = NULL WHERE id = ? AND routines_paused_at IS NOT NULL",
              [accountId],
            )
          : await driver.run(
              "UPDATE accounts SET routines_paused_at = ? WHERE id = ? AND routines_paused_at IS NULL",
              [pausedAt, accountId],
            );
      return changed.changes > 0;
    },

    async lastAccountActivity(accountId) {
      const rows = await driver.all<{ last: number | null; created: number | null }>(
        "SELECT (SELECT MAX(last_used_at) FROM api_tokens WHERE account_id = ?) AS last, (SELECT created_at FROM accounts WHERE id = ?) AS created",
        [accountId, accountId],
      );
      const row = rows[0];
      if (row === undefined) return null;
      const values = [row.last, row.created].filter((value) => value !== null).map(Number);
      return values.length === 0 ? null : Math.max(...values);
    },
  };
}
