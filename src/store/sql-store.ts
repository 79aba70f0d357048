/**
 * The one `Store` implementation, written against `SqlDriver`, so SQLite and Postgres run the
 * same queries. Invariants STORE1–STORE8 are listed in types.ts.
 */
import { NotFoundError, RoostError } from "../errors/index.ts";
import { newId, type IdGenerator } from "../ids.ts";
import type { SqlDriver, SqlExecutor } from "./driver.ts";
import { createMemoryQueries } from "./memory-queries.ts";
import { createSkillQueries } from "./skill-queries.ts";
import { createRoutineQueries } from "./routine-queries.ts";
import { createResultsQueries, deleteResultsOf } from "./results-queries.ts";
import { createUsageQueries } from "./usage-queries.ts";
import { createApprovalQueries } from "./approval-queries.ts";
import { createScreenLeaseQueries } from "./screen-lease-queries.ts";
import { createWorkerLocationQueries } from "./worker-location-queries.ts";
import { createSecretQueries } from "./secret-queries.ts";
import { createTeamQueries } from "./team-queries.ts";
import { createSlackQueries } from "./slack-queries.ts";
import { createAttachmentQueries, deleteAttachmentsOf } from "./attachment-queries.ts";
import { createMcpQueries } from "./mcp-queries.ts";
import { createProviderQueries } from "./provider-queries.ts";
import { createHelperQueries, deleteHelpersOf } from "./helper-queries.ts";
import { createSearchQueries } from "./search-queries.ts";
import { migrations } from "./migrations.ts";
import type { Api } from "../protocol/index.ts";
import type {
  Account,
  ApiToken,
  AuditEntry,
  Bot,
  BotPatch,
  BotSettings,
  Computer,
  Conversation,
  ConversationPlace,
  DeletedCounts,
  Message,
  MessageSource,
  Step,
  StepKind,
  Store,
} from "./types.ts";

interface AccountRow {
  id: string;
  name: string;
  is_admin: number;
  created_at: number;
}
interface BotRow {
  id: string;
  account_id: string;
  name: string;
  instructions: string;
  model: string | null;
  settings: string;
  team_id: string | null;
  created_at: number;
  updated_at: number;
}
interface ConversationRow {
  id: string;
  account_id: string;
  bot_id: string;
  title: string;
  last_seq: number;
  place: string;
  created_at: number;
  updated_at: number;
}
interface MessageRow {
  id: string;
  conversation_id: string;
  client_message_id: string;
  author_account_id: string;
  text: string;
  seq: number;
  taken_by: string | null;
  created_at: number;
  taken_at_seq: number | null;
  source: string | null;
  attachments: string | null;
}
interface StepRow {
  conversation_id: string;
  seq: number;
  id: string;
  turn_id: string | null;
  kind: string;
  payload: string;
  created_at: number;
}
interface ApiTokenRow {
  id: string;
  account_id: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}
interface AuditRow {
  id: string;
  account_id: string | null;
  action: string;
  target: string;
  detail: string;
  created_at: number;
}

const toAccount = (row: AccountRow): Account => ({
  id: row.id,
  name: row.name,
  isAdmin: Number(row.is_admin) === 1,
  createdAt: Number(row.created_at),
});
const toBot = (row: BotRow): Bot => {
  const settings = JSON.parse(row.settings) as BotSettings;
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    instructions: row.instructions,
    model: row.model,
    memoryReview: settings.memoryReview === true,
    skills: settings.skills ?? null,
    notify: settings.notify === true,
    teamId: row.team_id ?? null,
    browserRecording: settings.browserRecording === true,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
};
const settingsOf = (
  bot: Pick<Bot, "memoryReview" | "skills" | "notify" | "browserRecording">,
): string =>
  JSON.stringify({
    memoryReview: bot.memoryReview,
    skills: bot.skills,
    notify: bot.notify,
    browserRecording: bot.browserRecording,
  } satisfies BotSettings);
const toConversation = (row: ConversationRow): Conversation => ({
  id: row.id,
  accountId: row.account_id,
  botId: row.bot_id,
  title: row.title,
  lastSeq: Number(row.last_seq),
  place: row.place === "shared" ? "shared" : "direct",
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});
const toApiToken = (row: ApiTokenRow): ApiToken => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  createdAt: Number(row.created_at),
  lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
});
const toMessage = (row: MessageRow): Message => ({
  id: row.id,
  conversationId: row.conversation_id,
  clientMessageId: row.client_message_id,
  authorAccountId: row.author_account_id,
  text: row.text,
  seq: Number(row.seq),
  takenBy: row.taken_by,
  takenAtSeq: row.taken_at_seq === null ? null : Number(row.taken_at_seq),
  ...(row.source === null ? {} : { source: JSON.parse(row.source) as MessageSource }),
  ...(row.attachments === null
    ? {}
    : { attachments: JSON.parse(row.attachments) as Api.MessageAttachment[] }),
  createdAt: Number(row.created_at),
});
const toStep = (row: StepRow): Step => ({
  conversationId: row.conversation_id,
  seq: Number(row.seq),
  id: row.id,
  turnId: row.turn_id,
  kind: row.kind as StepKind,
  payload: JSON.parse(row.payload) as Record<string, unknown>,
  createdAt: Number(row.created_at),
});
interface ComputerRow {
  id: string;
  account_id: string;
  provider: string;
  kind: string;
  created_at: number;
  home_host?: string | null;
}
const toComputer = (row: ComputerRow): Computer => ({
  id: row.id,
  accountId: row.account_id,
  provider: row.provider,
  kind: row.kind === "self-hosted" ? "self-hosted" : "hosted",
  createdAt: Number(row.created_at),
  homeHost: row.home_host ?? null,
});
const toAudit = (row: AuditRow): AuditEntry => ({
  id: row.id,
  accountId: row.account_id,
  action: row.action,
  target: row.target,
  detail: JSON.parse(row.detail) as Record<string, unknown>,
  createdAt: Number(row.created_at),
});

const messageColumns =
  "id, conversation_id, client_message_id, author_account_id, text, seq, taken_by, created_at, taken_at_seq, source, attachments";
const stepColumns = "conversation_id, seq, id, turn_id, kind, payload, created_at";
const apiTokenColumns = "id, account_id, name, created_at, last_used_at";

/**
 * Epoch milliseconds that never repeat within this process, so rows created back to back keep
 * their creation order in lists ordered by `created_at` (ties across processes fall back to id).
 */
function createMonotonicClock(): () => number {
  let last = 0;
  return () => {
    last = Math.max(Date.now(), last + 1);
    return last;
  };
}

export interface SqlStoreOptions {
  clock?: () => number;
  ids?: IdGenerator;
}

export function createSqlStore(driver: SqlDriver, options: SqlStoreOptions = {}): Store {
  const now = options.clock ?? createMonotonicClock();
  const ids = options.ids ?? newId;

  async function first<Row>(
    executor: SqlExecutor,
    sql: string,
    params: (string | number | null)[],
  ) {
    const rows = await executor.all<Row>(sql, params);
    return rows[0];
  }

  /** STORE1: the next sequence number, taken under the conversation row's write lock. */
  async function nextSeq(
    tx: SqlExecutor,
    conversationId: string,
    at: number,
  ): Promise<{ seq: number; waiter: string | null }> {
    const row = await first<{ last_seq: number; waiter: string | null }>(
      tx,
      "UPDATE conversations SET last_seq = last_seq + 1, updated_at = ? WHERE id = ? RETURNING last_seq, waiter",
      [at, conversationId],
    );
    if (row === undefined) throw new NotFoundError("conversation", conversationId); // STORE8
    return { seq: Number(row.last_seq), waiter: row.waiter };
  }

  async function findStep(executor: SqlExecutor, id: string) {
    const row = await first<StepRow>(executor, `SELECT ${stepColumns} FROM steps WHERE id = ?`, [
      id,
    ]);
    return row === undefined ? undefined : toStep(row);
  }

  async function findMessageByClientId(
    executor: SqlExecutor,
    conversationId: string,
    clientMessageId: string,
  ) {
    const row = await first<MessageRow>(
      executor,
      `SELECT ${messageColumns} FROM messages WHERE conversation_id = ? AND client_message_id = ?`,
      [conversationId, clientMessageId],
    );
    return row === undefined ? undefined : toMessage(row);
  }

  async function insertAudit(
    executor: SqlExecutor,
    { accountId, action, target, detail = {} }: Parameters<Store["audit"]>[0],
  ) {
    await executor.run(
      "INSERT INTO audit_log (id, account_id, action, target, detail, created_at) VALUES (?, ?, ?, ?, ?, ?)",
      [ids("aud"), accountId, action, target, JSON.stringify(detail), now()],
    );
  }

  /**
   * STORE7: deletes the steps, messages and rows of the conversations `where` selects (locked
   * first, so a concurrent append waits and then finds them gone).
   */
  async function deleteConversations(
    tx: SqlExecutor,
    where: "id = ?" | "bot_id = ?",
    key: string,
  ): Promise<DeletedCounts> {
    const locked = await tx.all<{ id: string }>(
      `SELECT id FROM conversations WHERE ${where}${driver.lockRows}`,
      [key],
    );
    const selected = `SELECT id FROM conversations WHERE ${where}`;
    await deleteResultsOf(tx, where, key); // drafts, notifications, reads and threads go too
    await deleteHelpersOf(tx, where, key); // helper rows, as parent or helper
    await deleteAttachmentsOf(tx, where, key); // ATS2
    const steps = await tx.run(`DELETE FROM steps WHERE conversation_id IN (${selected})`, [key]);
    const messages = await tx.run(`DELETE FROM messages WHERE conversation_id IN (${selected})`, [
      key,
    ]);
    const conversations = await tx.run(`DELETE FROM conversations WHERE ${where}`, [key]);
    if (conversations.changes !== locked.length) {
      // Cannot happen while the rows are locked; refuse rather than leave anything half-gone.
      throw new RoostError("internal", "conversations changed while they were being deleted");
    }
    return {
      conversations: conversations.changes,
      messages: messages.changes,
      steps: steps.changes,
    };
  }

  /**
   * TEAM3: a bot is published only to a team its owner belongs to; the team's row is locked
   * (Postgres) so a concurrent removal of the owner either sees the bot and unpublishes it or
   * happens first and this fails.
   */
  async function requireMembership(tx: SqlExecutor, teamId: string, accountId: string) {
    await tx.all(`SELECT id FROM teams WHERE id = ?${driver.lockRows}`, [teamId]);
    const member = await first<{ role: string }>(
      tx,
      "SELECT role FROM team_members WHERE team_id = ? AND account_id = ?",
      [teamId, accountId],
    );
    if (member === undefined) throw new NotFoundError("team", teamId);
  }

  /** Run an insert that may race with an identical one; on a unique violation, read the winner. */
  async function idempotent<T>(
    insert: () => Promise<T>,
    readExisting: () => Promise<T | undefined>,
  ): Promise<T> {
    try {
      return await insert();
    } catch (error) {
      if (!driver.isUniqueViolation(error)) throw error;
      const existing = await readExisting();
      if (existing === undefined) throw error;
      return existing;
    }
  }

  async function findAdmin(): Promise<Account | undefined> {
    const row = await first<AccountRow>(
      driver,
      "SELECT * FROM accounts WHERE is_admin = 1 ORDER BY created_at, id LIMIT 1",
      [],
    );
    return row === undefined ? undefined : toAccount(row);
  }

  return {
    ...createMemoryQueries(driver, now, ids),
    ...createSkillQueries(driver, now, ids, insertAudit),
    ...createRoutineQueries(driver, now, ids, insertAudit),
    ...createResultsQueries(driver, now, insertAudit),
    ...createHelperQueries(driver, now),
    ...createUsageQueries(driver, now),
    ...createApprovalQueries(driver, now),
    ...createSecretQueries(driver, now, insertAudit),
    ...createTeamQueries(driver, now, ids, insertAudit),
    ...createSlackQueries(driver, now, insertAudit),
    ...createAttachmentQueries(driver, now),
    ...createMcpQueries(driver, now, insertAudit),
    ...createScreenLeaseQueries(driver, now, insertAudit),
    ...createProviderQueries(driver, now, insertAudit),
    ...createSearchQueries(driver, toConversation),
    ...createWorkerLocationQueries(driver),
    kind: driver.kind,

    async migrate() {
      await driver.withMigrationLock(async () => {
        await driver.run(
          "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)",
        );
        const applied = new Set(
          (await driver.all<{ version: number }>("SELECT version FROM schema_migrations")).map(
            (row) => Number(row.version),
          ),
        );
        for (const migration of migrations) {
          if (applied.has(migration.version)) continue;
          await driver.transaction(async (tx) => {
            for (const statement of [
              ...migration.statements,
              ...((driver.kind === "sqlite" ? migration.sqlite : migration.postgres) ?? []),
            ])
              await tx.run(statement);
            await tx.run("INSERT INTO schema_migrations (version) VALUES (?)", [migration.version]);
          });
        }
      });
    },

    close: () => driver.close(),

    async createAccount({ name, isAdmin }) {
      const account: Account = { id: ids("acct"), name, isAdmin, createdAt: now() };
      await driver.run(
        "INSERT INTO accounts (id, name, is_admin, created_at) VALUES (?, ?, ?, ?)",
        [account.id, name, isAdmin ? 1 : 0, account.createdAt],
      );
      return account;
    },

    async getAccount(id) {
      const row = await first<AccountRow>(driver, "SELECT * FROM accounts WHERE id = ?", [id]);
      return row === undefined ? undefined : toAccount(row);
    },

    async listAccounts() {
      const rows = await driver.all<AccountRow>(
        "SELECT * FROM accounts ORDER BY created_at, id",
        [],
      );
      return rows.map(toAccount);
    },

    findAdminAccount: findAdmin,

    async ensureAdminAccount(name) {
      const existing = await findAdmin();
      if (existing !== undefined) return { account: existing, created: false };
      const id = ids("acct");
      // STORE-ADMIN1: the unique index accounts_one_admin lets one insert through.
      await driver.run(
        "INSERT INTO accounts (id, name, is_admin, created_at) VALUES (?, ?, 1, ?) ON CONFLICT DO NOTHING",
        [id, name, now()],
      );
      const account = await findAdmin();
      if (account === undefined) throw new Error("the admin account vanished while it was made");
      return { account, created: account.id === id };
    },

    async createApiToken({ accountId, name, tokenHash }) {
      const token: ApiToken = {
        id: ids("tok"),
        accountId,
        name,
        createdAt: now(),
        lastUsedAt: null,
      };
      await driver.run(
        "INSERT INTO api_tokens (id, account_id, name, token_hash, created_at) VALUES (?, ?, ?, ?, ?)",
        [token.id, accountId, name, tokenHash, token.createdAt],
      );
      return token;
    },

    async findAccountByTokenHash(tokenHash) {
      const row = await first<AccountRow>(
        driver,
        "SELECT a.* FROM accounts a JOIN api_tokens t ON t.account_id = a.id WHERE t.token_hash = ?",
        [tokenHash],
      );
      return row === undefined ? undefined : toAccount(row);
    },

    async findApiToken(tokenHash) {
      const row = await first<
        ApiTokenRow & { account_name: string; is_admin: number; account_created_at: number }
      >(
        driver,
        `SELECT t.id, t.account_id, t.name, t.created_at, t.last_used_at,
           a.name AS account_name, a.is_admin, a.created_at AS account_created_at
         FROM api_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = ?`,
        [tokenHash],
      );
      if (row === undefined) return undefined;
      return {
        token: toApiToken(row),
        account: toAccount({
          id: row.account_id,
          name: row.account_name,
          is_admin: row.is_admin,
          created_at: row.account_created_at,
        }),
      };
    },

    async listApiTokens(accountId) {
      const rows = await driver.all<ApiTokenRow>(
        `SELECT ${apiTokenColumns} FROM api_tokens WHERE account_id = ? ORDER BY created_at, id`,
        [accountId],
      );
      return rows.map(toApiToken);
    },

    async touchApiToken(id, at) {
      await driver.run("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [at, id]);
    },

    async revokeApiToken({ id, accountId, actorAccountId }) {
      await driver.transaction(async (tx) => {
        const row = await first<ApiTokenRow>(
          tx,
          `SELECT ${apiTokenColumns} FROM api_tokens WHERE id = ? AND account_id = ?`,
          [id, accountId],
        );
        if (row === undefined) throw new NotFoundError("token", id);
        await tx.run("DELETE FROM api_tokens WHERE id = ?", [id]);
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "token.revoke",
          target: id,
          detail: { accountId, name: row.name },
        });
      });
    },

    async createBot({
      accountId,
      name,
      instructions,
      model,
      memoryReview = false,
      skills = null,
      notify = false,
      teamId = null,
      browserRecording = false,
    }) {
      const at = now();
      const bot: Bot = {
        id: ids("bot"),
        accountId,
        name,
        instructions,
        model,
        memoryReview,
        skills,
        notify,
        teamId,
        browserRecording,
        createdAt: at,
        updatedAt: at,
      };
      try {
        await driver.transaction(async (tx) => {
          if (teamId !== null) await requireMembership(tx, teamId, accountId); // TEAM3
          await tx.run(
            "INSERT INTO bots (id, account_id, name, instructions, model, settings, team_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [bot.id, accountId, name, instructions, model, settingsOf(bot), teamId, at, at],
          );
        });
      } catch (error) {
        if (driver.isUniqueViolation(error)) {
          throw new RoostError(
            "conflict",
            `a bot named ${JSON.stringify(name)} already exists (pick another name)`,
            {
              details: { field: "name" },
            },
          );
        }
        throw error;
      }
      return bot;
    },

    async listBots(accountId) {
      const rows = await driver.all<BotRow>(
        "SELECT * FROM bots WHERE account_id = ? ORDER BY created_at, id",
        [accountId],
      );
      return rows.map(toBot);
    },

    async listTeamBotsFor(accountId) {
      const rows = await driver.all<BotRow>(
        `SELECT b.* FROM bots b JOIN team_members m ON m.team_id = b.team_id
         WHERE m.account_id = ? AND b.account_id <> ? ORDER BY b.created_at, b.id`,
        [accountId, accountId],
      );
      return rows.map(toBot);
    },

    async getBot(id) {
      const row = await first<BotRow>(driver, "SELECT * FROM bots WHERE id = ?", [id]);
      return row === undefined ? undefined : toBot(row);
    },

    async findBotByName(accountId, name) {
      const row = await first<BotRow>(
        driver,
        "SELECT * FROM bots WHERE account_id = ? AND name = ?",
        [accountId, name],
      );
      return row === undefined ? undefined : toBot(row);
    },

    async updateBot(id, patch: BotPatch) {
      return driver.transaction(async (tx) => {
        const row = await first<BotRow>(tx, "SELECT * FROM bots WHERE id = ?", [id]);
        if (row === undefined) throw new RoostError("not_found", `bot ${id} not found`);
        const bot = toBot(row);
        const next: Bot = {
          ...bot,
          name: patch.name ?? bot.name,
          instructions: patch.instructions ?? bot.instructions,
          model: patch.model === undefined ? bot.model : patch.model,
          memoryReview: patch.memoryReview ?? bot.memoryReview,
          skills: patch.skills === undefined ? bot.skills : patch.skills,
          notify: patch.notify ?? bot.notify,
          teamId: patch.teamId === undefined ? bot.teamId : patch.teamId,
          browserRecording: patch.browserRecording ?? bot.browserRecording,
          updatedAt: now(),
        };
        if (patch.teamId !== undefined && patch.teamId !== null)
          await requireMembership(tx, patch.teamId, bot.accountId); // TEAM3
        try {
          await tx.run(
            "UPDATE bots SET name = ?, instructions = ?, model = ?, settings = ?, team_id = ?, updated_at = ? WHERE id = ?",
            [
              next.name,
              next.instructions,
              next.model,
              settingsOf(next),
              next.teamId,
              next.updatedAt,
              id,
            ],
          );
        } catch (error) {
          if (driver.isUniqueViolation(error)) {
            throw new RoostError(
              "conflict",
              `a bot named ${JSON.stringify(next.name)} already exists (pick another name)`,
              {
                details: { field: "name" },
              },
            );
          }
          throw error;
        }
        return next;
      });
    },

    async deleteBot({ id, actorAccountId }) {
      return driver.transaction(async (tx) => {
        // STORE7: the bot row first, so no conversation can be added to it meanwhile.
        const row = await first<BotRow>(tx, `SELECT * FROM bots WHERE id = ?${driver.lockRows}`, [
          id,
        ]);
        if (row === undefined) throw new NotFoundError("bot", id);
        const counts = await deleteConversations(tx, "bot_id = ?", id);
        // What the bot remembered goes with it (its user facts stay: they belong to the account).
        if (driver.kind === "sqlite")
          await tx.run(
            "DELETE FROM memory_log_words WHERE fact_id IN (SELECT id FROM memory_facts WHERE bot_id = ?)",
            [id],
          );
        await tx.run("DELETE FROM memory_revisions WHERE bot_id = ?", [id]);
        await tx.run("DELETE FROM memory_facts WHERE bot_id = ?", [id]);
        // Its routines and their runs go too (their scheduled calls then find nothing: RST2).
        await tx.run(
          "DELETE FROM routine_runs WHERE routine_id IN (SELECT id FROM routines WHERE bot_id = ?)",
          [id],
        );
        await tx.run("DELETE FROM routines WHERE bot_id = ?", [id]);
        // Its tool policy goes too; its approvals stay, like the audit log (a record of decisions).
        await tx.run("DELETE FROM tool_policies WHERE bot_id = ?", [id]);
        // Its secrets (SST1): their sealed values are of no use to anyone else.
        await tx.run("DELETE FROM secrets WHERE scope = 'bot' AND owner_id = ?", [id]);
        await tx.run("DELETE FROM mcp_servers WHERE scope = 'bot' AND owner_id = ?", [id]);
        // SLST1: the bot's Slack link (its sealed token), places and open sign-in links go too.
        await tx.run("DELETE FROM slack_links WHERE bot_id = ?", [id]);
        await tx.run("DELETE FROM slack_installs WHERE bot_id = ?", [id]);
        await tx.run("DELETE FROM slack_oauth_states WHERE bot_id = ?", [id]);
        await tx.run("DELETE FROM slack_run_replies WHERE bot_id = ?", [id]);
        await tx.run("DELETE FROM slack_places WHERE bot_id = ?", [id]);
        await tx.run("DELETE FROM slack_link_tokens WHERE bot_id = ?", [id]);
        await tx.run("DELETE FROM bots WHERE id = ?", [id]);
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "bot.delete",
          target: id,
          detail: { name: row.name, ...counts },
        });
        return counts;
      });
    },

    async createConversation({ accountId, botId, title, place = "direct" }) {
      const at = now();
      const conversation: Conversation = {
        id: ids("conv"),
        accountId,
        botId,
        title,
        lastSeq: 0,
        place,
        createdAt: at,
        updatedAt: at,
      };
      try {
        await driver.run(
          "INSERT INTO conversations (id, account_id, bot_id, title, last_seq, place, created_at, updated_at) VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
          [conversation.id, accountId, botId, title, place satisfies ConversationPlace, at, at],
        );
      } catch (error) {
        // STORE8: the bot was deleted (perhaps a moment ago, while this request was under way).
        if (driver.isForeignKeyViolation(error)) throw new NotFoundError("bot", botId);
        throw error;
      }
      return conversation;
    },

    async listConversations(accountId, { botId, limit = 100 } = {}) {
      const rows =
        botId === undefined
          ? await driver.all<ConversationRow>(
              "SELECT * FROM conversations WHERE account_id = ? ORDER BY updated_at DESC, id LIMIT ?",
              [accountId, limit],
            )
          : await driver.all<ConversationRow>(
              "SELECT * FROM conversations WHERE account_id = ? AND bot_id = ? ORDER BY updated_at DESC, id LIMIT ?",
              [accountId, botId, limit],
            );
      return rows.map(toConversation);
    },

    async getConversation(id) {
      const row = await first<ConversationRow>(driver, "SELECT * FROM conversations WHERE id = ?", [
        id,
      ]);
      return row === undefined ? undefined : toConversation(row);
    },

    async renameConversation({ id, title, actorAccountId }) {
      return driver.transaction(async (tx) => {
        const row = await first<ConversationRow>(
          tx,
          "UPDATE conversations SET title = ?, updated_at = ? WHERE id = ? RETURNING *",
          [title, now(), id],
        );
        if (row === undefined) throw new NotFoundError("conversation", id);
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "conversation.rename",
          target: id,
          detail: { title },
        });
        return toConversation(row);
      });
    },

    async deleteConversation({ id, actorAccountId }) {
      return driver.transaction(async (tx) => {
        const counts = await deleteConversations(tx, "id = ?", id);
        if (counts.conversations === 0) throw new NotFoundError("conversation", id);
        await insertAudit(tx, {
          accountId: actorAccountId,
          action: "conversation.delete",
          target: id,
          detail: { messages: counts.messages, steps: counts.steps },
        });
        return counts;
      });
    },

    async appendMessage({
      conversationId,
      clientMessageId,
      authorAccountId,
      text,
      source,
      replaces,
      attachments,
    }) {
      const existing = await findMessageByClientId(driver, conversationId, clientMessageId);
      if (existing !== undefined) return { message: existing, created: false, waiter: null }; // STORE3
      return idempotent<{ message: Message; created: boolean; waiter: string | null }>(
        () =>
          driver.transaction(async (tx) => {
            // STORE4: the message row and its step are written together.
            const at = now();
            const { seq, waiter } = await nextSeq(tx, conversationId, at); // STORE6
            const message: Message = {
              id: ids("msg"),
              conversationId,
              clientMessageId,
              authorAccountId,
              text,
              seq,
              takenBy: null,
              takenAtSeq: null,
              ...(source === undefined ? {} : { source }),
              ...(attachments === undefined || attachments.length === 0 ? {} : { attachments }),
              createdAt: at,
            };
            const sourceJson = source === undefined ? null : JSON.stringify(source);
            await tx.run(
              `INSERT INTO messages (${messageColumns}) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, NULL, ?, ?)`,
              [
                message.id,
                conversationId,
                clientMessageId,
                authorAccountId,
                text,
                seq,
                at,
                sourceJson,
                message.attachments === undefined ? null : JSON.stringify(message.attachments),
              ],
            );
            await tx.run(
              `INSERT INTO steps (${stepColumns}) VALUES (?, ?, ?, NULL, 'message', ?, ?)`,
              [
                conversationId,
                seq,
                `${message.id}`,
                JSON.stringify({
                  messageId: message.id,
                  text,
                  authorAccountId,
                  ...(source === undefined ? {} : { source }),
                  ...(replaces === undefined ? {} : { replaces }),
                  ...(message.attachments === undefined
                    ? {}
                    : { attachments: message.attachments }),
                } satisfies Api.MessagePayload),
                at,
              ],
            );
            return { message, created: true, waiter };
          }),
        async () => {
          const winner = await findMessageByClientId(driver, conversationId, clientMessageId);
          return winner === undefined
            ? undefined
            : { message: winner, created: false, waiter: null };
        },
      );
    },

    async takeInbox(conversationId, takeId, waiter = null) {
      return driver.transaction(async (tx) => {
        // STORE6: lock the conversation row first, as appendMessage does, and record the waiter.
        await tx.run("UPDATE conversations SET waiter = ? WHERE id = ?", [waiter, conversationId]);
        // HIS1: remember how far the conversation had got when the loop took each message.
        await tx.run(
          `UPDATE messages SET taken_by = ?,
             taken_at_seq = (SELECT last_seq FROM conversations WHERE id = ?)
           WHERE conversation_id = ? AND taken_by IS NULL`,
          [takeId, conversationId, conversationId],
        );
        const rows = await tx.all<MessageRow>(
          `SELECT ${messageColumns} FROM messages WHERE conversation_id = ? AND taken_by = ? ORDER BY seq`,
          [conversationId, takeId],
        );
        return rows.map(toMessage);
      });
    },

    async listWaitingConversations({ limit = 1000 } = {}) {
      const rows = await driver.all<{ conversation_id: string; id: string; waiter: string | null }>(
        `SELECT m.conversation_id, m.id, c.waiter FROM messages m
         JOIN conversations c ON c.id = m.conversation_id
         WHERE m.taken_by IS NULL AND m.seq = (
           SELECT MIN(w.seq) FROM messages w WHERE w.conversation_id = m.conversation_id AND w.taken_by IS NULL)
         ORDER BY m.created_at LIMIT ?`,
        [limit],
      );
      return rows.map((row) => ({
        conversationId: row.conversation_id,
        oldestMessageId: row.id,
        waiter: row.waiter,
      }));
    },

    async pendingMessages(conversationId) {
      const rows = await driver.all<MessageRow>(
        `SELECT ${messageColumns} FROM messages WHERE conversation_id = ? AND taken_by IS NULL ORDER BY seq`,
        [conversationId],
      );
      return rows.map(toMessage);
    },

    async listMessages(conversationId, { limit = 1000, afterSeq = 0 } = {}) {
      const rows = await driver.all<MessageRow>(
        `SELECT ${messageColumns} FROM messages WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
        [conversationId, afterSeq, limit],
      );
      return rows.map(toMessage);
    },

    async appendStep({ conversationId, id, turnId, kind, payload }) {
      const existing = await findStep(driver, id);
      if (existing !== undefined) return existing; // STORE2
      return idempotent(
        () =>
          driver.transaction(async (tx) => {
            const at = now();
            const { seq } = await nextSeq(tx, conversationId, at);
            await tx.run(`INSERT INTO steps (${stepColumns}) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
              conversationId,
              seq,
              id,
              turnId,
              kind,
              JSON.stringify(payload),
              at,
            ]);
            return { conversationId, seq, id, turnId, kind, payload, createdAt: at };
          }),
        () => findStep(driver, id),
      );
    },

    async latestStepOfKind(conversationId, kind) {
      const row = await first<StepRow>(
        driver,
        `SELECT ${stepColumns} FROM steps WHERE conversation_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1`,
        [conversationId, kind],
      );
      return row === undefined ? undefined : toStep(row);
    },

    async listSteps(conversationId, { afterSeq = 0, limit = 500 } = {}) {
      const rows = await driver.all<StepRow>(
        `SELECT ${stepColumns} FROM steps WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
        [conversationId, afterSeq, limit],
      );
      return rows.map(toStep);
    },

    async ensureComputer(accountId, provider) {
      const read = async () => {
        const row = await first<ComputerRow>(
          driver,
          "SELECT * FROM computers WHERE account_id = ?",
          [accountId],
        );
        return row === undefined ? undefined : toComputer(row);
      };
      const existing = await read();
      if (existing !== undefined) return existing;
      return idempotent(async () => {
        const computer: Computer = {
          id: ids("cmp"),
          accountId,
          provider,
          kind: "hosted",
          createdAt: now(),
          homeHost: null,
        };
        await driver.run(
          "INSERT INTO computers (id, account_id, provider, created_at) VALUES (?, ?, ?, ?)",
          [computer.id, accountId, provider, computer.createdAt],
        );
        return computer;
      }, read);
    },

    async getComputer(id) {
      const row = await first<ComputerRow>(driver, "SELECT * FROM computers WHERE id = ?", [id]);
      return row === undefined ? undefined : toComputer(row);
    },

    async setWorkerToken(computerId, tokenHash, expiresAt) {
      await driver.transaction(async (tx) => {
        await tx.run("DELETE FROM worker_tokens WHERE computer_id = ?", [computerId]);
        await tx.run(
          "INSERT INTO worker_tokens (computer_id, token_hash, expires_at) VALUES (?, ?, ?)",
          [computerId, tokenHash, expiresAt],
        );
      });
    },

    async findComputerByWorkerToken(tokenHash, at) {
      const row = await first<{ computer_id: string }>(
        driver,
        "SELECT computer_id FROM worker_tokens WHERE token_hash = ? AND expires_at > ?",
        [tokenHash, at],
      );
      return row?.computer_id;
    },

    async getNetworkPolicy(computerId) {
      const row = await first<{ network_policy: string | null }>(
        driver,
        "SELECT network_policy FROM computers WHERE id = ?",
        [computerId],
      );
      if (row === undefined) throw new RoostError("not_found", `computer ${computerId} not found`);
      return row.network_policy === null ? null : (JSON.parse(row.network_policy) as unknown);
    },

    async setNetworkPolicy(computerId, policy) {
      const result = await driver.run("UPDATE computers SET network_policy = ? WHERE id = ?", [
        policy === null ? null : JSON.stringify(policy),
        computerId,
      ]);
      if (result.changes === 0)
        throw new RoostError("not_found", `computer ${computerId} not found`);
    },

    async clearWorkerToken(computerId) {
      await driver.run("DELETE FROM worker_tokens WHERE computer_id = ?", [computerId]);
    },

    async claimComputerHome(computerId, expected, home) {
      // STORE10: one statement, so the check and the write cannot be separated.
      const result =
        expected === null
          ? await driver.run(
              "UPDATE computers SET home_host = ? WHERE id = ? AND (home_host IS NULL OR home_host = ?)",
              [home, computerId, home],
            )
          : await driver.run(
              "UPDATE computers SET home_host = ? WHERE id = ? AND home_host IN (?, ?)",
              [home, computerId, expected, home],
            );
      return result.changes === 1;
    },

    async useSelfHosted(computerId, tokenHash) {
      return driver.transaction(async (tx) => {
        // STORE9: kind and token together; the hosted worker token goes, so only this one works.
        const changed = await tx.run("UPDATE computers SET kind = 'self-hosted' WHERE id = ?", [
          computerId,
        ]);
        if (changed.changes === 0)
          throw new RoostError("not_found", `computer ${computerId} not found`);
        const replaced = await tx.run("DELETE FROM self_hosted_tokens WHERE computer_id = ?", [
          computerId,
        ]);
        await tx.run(
          "INSERT INTO self_hosted_tokens (computer_id, token_hash, created_at) VALUES (?, ?, ?)",
          [computerId, tokenHash, now()],
        );
        await tx.run("DELETE FROM worker_tokens WHERE computer_id = ?", [computerId]);
        return { rotated: replaced.changes > 0 };
      });
    },

    async useHosted(computerId) {
      return driver.transaction(async (tx) => {
        const removed = await tx.run("DELETE FROM self_hosted_tokens WHERE computer_id = ?", [
          computerId,
        ]);
        const changed = await tx.run(
          "UPDATE computers SET kind = 'hosted' WHERE id = ? AND kind = 'self-hosted'",
          [computerId],
        );
        return { changed: removed.changes > 0 || changed.changes > 0 };
      });
    },

    async findSelfHostedComputer(tokenHash) {
      const row = await first<{ computer_id: string }>(
        driver,
        "SELECT t.computer_id FROM self_hosted_tokens t JOIN computers c ON c.id = t.computer_id WHERE t.token_hash = ? AND c.kind = 'self-hosted'",
        [tokenHash],
      );
      return row?.computer_id;
    },

    async audit(input) {
      await insertAudit(driver, input);
    },

    async listAudit({ accountId, limit = 100 } = {}) {
      const rows =
        accountId === undefined
          ? await driver.all<AuditRow>(
              "SELECT * FROM audit_log ORDER BY created_at DESC, id LIMIT ?",
              [limit],
            )
          : await driver.all<AuditRow>(
              "SELECT * FROM audit_log WHERE account_id = ? ORDER BY created_at DESC, id LIMIT ?",
              [accountId, limit],
            );
      return rows.map(toAudit);
    },
  };
}
