/** The Slack part of the store (slack-types.ts, SLST1–SLST4), written once against `SqlDriver`. */
import type { SqlDriver } from "./driver.ts";
import type { SlackInstall, SlackLink, SlackPlace, SlackStore, SlackTurn } from "./slack-types.ts";
import type { AuditWriter } from "./types.ts";

interface LinkRow {
  bot_id: string;
  account_id: string;
  slack_team_id: string;
  slack_team_name: string;
  bot_user_id: string;
  api_url: string | null;
  sealed_token: string;
  sealed_secret: string;
  sealed_app_token: string | null;
  client_id: string | null;
  sealed_client_secret: string | null;
  last_error: string | null;
  last_error_at: number | string | null;
  retry_after_ms: number | string | null;
  created_at: number | string;
  updated_at: number | string;
}
interface InstallRow {
  bot_id: string;
  slack_team_id: string;
  slack_team_name: string;
  bot_user_id: string;
  sealed_token: string;
  installed_by: string;
  created_at: number | string;
  updated_at: number | string;
}
interface PlaceRow {
  bot_id: string;
  place_key: string;
  conversation_id: string;
  channel: string;
  thread_ts: string | null;
  created_at: number | string;
}
interface TurnRow {
  turn_id: string;
  conversation_id: string;
  working_ts: string | null;
  replied_at: number | string | null;
}

const orNull = (value: number | string | null) => (value === null ? null : Number(value));
const toLink = (row: LinkRow): SlackLink => ({
  botId: row.bot_id,
  accountId: row.account_id,
  slackTeamId: row.slack_team_id,
  slackTeamName: row.slack_team_name,
  botUserId: row.bot_user_id,
  apiUrl: row.api_url,
  sealedToken: row.sealed_token,
  sealedSecret: row.sealed_secret,
  sealedAppToken: row.sealed_app_token,
  clientId: row.client_id,
  sealedClientSecret: row.sealed_client_secret,
  lastError: row.last_error,
  lastErrorAt: orNull(row.last_error_at),
  retryAfterMs: orNull(row.retry_after_ms),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});
/** SLST8: how long past its expiry a sign-in link or install state is kept before it is removed. */
const expiredKeptMs = 24 * 60 * 60 * 1000;

const toInstall = (row: InstallRow): SlackInstall => ({
  botId: row.bot_id,
  slackTeamId: row.slack_team_id,
  slackTeamName: row.slack_team_name,
  botUserId: row.bot_user_id,
  sealedToken: row.sealed_token,
  installedBy: row.installed_by,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});
const toPlace = (row: PlaceRow): SlackPlace => ({
  botId: row.bot_id,
  placeKey: row.place_key,
  conversationId: row.conversation_id,
  channel: row.channel,
  threadTs: row.thread_ts,
  createdAt: Number(row.created_at),
});
const toTurn = (row: TurnRow): SlackTurn => ({
  turnId: row.turn_id,
  conversationId: row.conversation_id,
  workingTs: row.working_ts,
  repliedAt: orNull(row.replied_at),
});

export function createSlackQueries(
  driver: SqlDriver,
  now: () => number,
  insertAudit: AuditWriter,
): SlackStore {
  const one = async <Row>(sql: string, params: (string | number | null)[]) =>
    (await driver.all<Row>(sql, params))[0];
  const getSlackLink = async (botId: string) => {
    const row = await one<LinkRow>("SELECT * FROM slack_links WHERE bot_id = ?", [botId]);
    return row === undefined ? undefined : toLink(row);
  };
  const getSlackPlace = async (botId: string, placeKey: string) => {
    const row = await one<PlaceRow>(
      "SELECT * FROM slack_places WHERE bot_id = ? AND place_key = ?",
      [botId, placeKey],
    );
    return row === undefined ? undefined : toPlace(row);
  };
  const getSlackTurn = async (turnId: string) => {
    const row = await one<TurnRow>("SELECT * FROM slack_turns WHERE turn_id = ?", [turnId]);
    return row === undefined ? undefined : toTurn(row);
  };

  return {
    async putSlackLink(link) {
      const at = now();
      await driver.transaction(async (tx) => {
        // SLST1: one row per bot; a relink replaces the token, secret and workspace.
        await tx.run(
          `INSERT INTO slack_links (bot_id, account_id, slack_team_id, slack_team_name, bot_user_id, api_url,
             sealed_token, sealed_secret, sealed_app_token, client_id, sealed_client_secret,
             last_error, last_error_at, retry_after_ms, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?)
           ON CONFLICT (bot_id) DO UPDATE SET account_id = excluded.account_id,
             slack_team_id = excluded.slack_team_id, slack_team_name = excluded.slack_team_name,
             bot_user_id = excluded.bot_user_id, api_url = excluded.api_url,
             sealed_token = excluded.sealed_token, sealed_secret = excluded.sealed_secret, sealed_app_token = excluded.sealed_app_token,
             client_id = excluded.client_id, sealed_client_secret = excluded.sealed_client_secret,
             last_error = NULL, last_error_at = NULL, retry_after_ms = NULL, updated_at = excluded.updated_at`,
          [
            link.botId,
            link.accountId,
            link.slackTeamId,
            link.slackTeamName,
            link.botUserId,
            link.apiUrl,
            link.sealedToken,
            link.sealedSecret,
            link.sealedAppToken,
            link.clientId,
            link.sealedClientSecret,
            at,
            at,
          ],
        );
        await insertAudit(tx, {
          accountId: link.accountId,
          action: "slack.link",
          target: link.botId,
          detail:
            link.clientId === null ? { slackTeamId: link.slackTeamId } : { oauth: link.clientId },
        });
      });
      return (await getSlackLink(link.botId))!;
    },
    getSlackLink,
    async listSocketModeSlackLinks() {
      const rows = await driver.all<LinkRow>(
        "SELECT * FROM slack_links WHERE sealed_app_token IS NOT NULL ORDER BY bot_id",
      );
      return rows.map(toLink);
    },
    async deleteSlackLink(botId) {
      return driver.transaction(async (tx) => {
        const rows = await tx.all<LinkRow>("SELECT * FROM slack_links WHERE bot_id = ?", [botId]);
        const row = rows[0];
        if (row === undefined) return false;
        await tx.run("DELETE FROM slack_links WHERE bot_id = ?", [botId]);
        await tx.run("DELETE FROM slack_installs WHERE bot_id = ?", [botId]); // SLST5: tokens go too
        await insertAudit(tx, { accountId: row.account_id, action: "slack.unlink", target: botId });
        return true;
      });
    },
    async setSlackLinkError(botId, error) {
      const { changes } =
        error === null
          ? await driver.run(
              "UPDATE slack_links SET last_error = NULL, last_error_at = NULL, retry_after_ms = NULL WHERE bot_id = ? AND last_error IS NOT NULL",
              [botId],
            )
          : await driver.run(
              "UPDATE slack_links SET last_error = ?, last_error_at = ?, retry_after_ms = ? WHERE bot_id = ? AND (last_error IS NULL OR last_error <> ?)",
              [error.message, now(), error.retryAfterMs, botId, error.message],
            );
      return changes > 0;
    },
    getSlackPlace,
    async slackPlaceOfConversation(conversationId) {
      const row = await one<PlaceRow>("SELECT * FROM slack_places WHERE conversation_id = ?", [
        conversationId,
      ]);
      return row === undefined ? undefined : toPlace(row);
    },
    async putSlackPlace(place) {
      // SLST2: the first insert wins; a racing second one keeps the first's conversation.
      await driver.run(
        `INSERT INTO slack_places (bot_id, place_key, conversation_id, channel, thread_ts, created_at)
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (bot_id, place_key) DO NOTHING`,
        [place.botId, place.placeKey, place.conversationId, place.channel, place.threadTs, now()],
      );
      return (await getSlackPlace(place.botId, place.placeKey))!;
    },
    async slackPersonAccount(slackTeamId, slackUserId) {
      const row = await one<{ account_id: string }>(
        "SELECT account_id FROM slack_people WHERE slack_team_id = ? AND slack_user_id = ?",
        [slackTeamId, slackUserId],
      );
      return row?.account_id;
    },
    async slackUserOfAccount(slackTeamId, accountId) {
      const row = await one<{ slack_user_id: string }>(
        "SELECT slack_user_id FROM slack_people WHERE slack_team_id = ? AND account_id = ? ORDER BY created_at LIMIT 1",
        [slackTeamId, accountId],
      );
      return row?.slack_user_id;
    },
    async createSlackLinkToken(input) {
      const at = now();
      await driver.transaction(async (tx) => {
        // SLST8: links expired a day ago are of no use any more (their code's ten minutes too).
        await tx.run("DELETE FROM slack_link_tokens WHERE expires_at < ?", [at - expiredKeptMs]);
        await tx.run(
          `INSERT INTO slack_link_tokens (token_hash, bot_id, slack_team_id, slack_user_id, expires_at, used_at, created_at)
           VALUES (?, ?, ?, ?, ?, NULL, ?)`,
          [input.tokenHash, input.botId, input.slackTeamId, input.slackUserId, input.expiresAt, at],
        );
      });
    },
    async openSlackLinkToken(tokenHash, accountId, codeHash) {
      const at = now();
      // SLST3: one conditional update; a second open (or a racing one) changes nothing.
      const { changes } = await driver.run(
        "UPDATE slack_link_tokens SET used_at = ?, account_id = ?, code_hash = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?",
        [at, accountId, codeHash, tokenHash, at],
      );
      if (changes === 0) return undefined;
      const row = await one<{ bot_id: string; slack_team_id: string; slack_user_id: string }>(
        "SELECT bot_id, slack_team_id, slack_user_id FROM slack_link_tokens WHERE token_hash = ?",
        [tokenHash],
      );
      return row === undefined
        ? undefined
        : { botId: row.bot_id, slackTeamId: row.slack_team_id, slackUserId: row.slack_user_id };
    },
    async confirmSlackPerson(input) {
      return driver.transaction(async (tx) => {
        const [row] = await tx.all<{ token_hash: string; account_id: string; bot_id: string }>(
          `SELECT token_hash, account_id, bot_id FROM slack_link_tokens
           WHERE slack_team_id = ? AND slack_user_id = ? AND code_hash = ? AND confirmed_at IS NULL
             AND used_at > ?${driver.lockRows}`,
          [input.slackTeamId, input.slackUserId, input.codeHash, input.openedAfter],
        );
        if (row === undefined) return undefined;
        const at = now();
        const { changes } = await tx.run(
          "UPDATE slack_link_tokens SET confirmed_at = ? WHERE token_hash = ? AND confirmed_at IS NULL",
          [at, row.token_hash],
        );
        if (changes === 0) return undefined; // SLST3: once
        await tx.run(
          `INSERT INTO slack_people (slack_team_id, slack_user_id, account_id, created_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (slack_team_id, slack_user_id) DO UPDATE SET account_id = excluded.account_id`,
          [input.slackTeamId, input.slackUserId, row.account_id, at],
        );
        await insertAudit(tx, {
          accountId: row.account_id,
          action: "slack.person_link",
          target: `${input.slackTeamId}:${input.slackUserId}`,
          detail: { botId: row.bot_id },
        });
        return row.account_id;
      });
    },
    getSlackTurn,
    async putSlackTurn(input) {
      await driver.run(
        `INSERT INTO slack_turns (turn_id, conversation_id, working_ts, replied_at, created_at)
         VALUES (?, ?, ?, NULL, ?) ON CONFLICT (turn_id) DO NOTHING`,
        [input.turnId, input.conversationId, input.workingTs, now()],
      ); // SLST4
      return (await getSlackTurn(input.turnId))!;
    },
    async markSlackTurnReplied(turnId, conversationId) {
      await driver.run(
        `INSERT INTO slack_turns (turn_id, conversation_id, working_ts, replied_at, created_at)
         VALUES (?, ?, NULL, NULL, ?) ON CONFLICT (turn_id) DO NOTHING`,
        [turnId, conversationId, now()],
      );
      const { changes } = await driver.run(
        "UPDATE slack_turns SET replied_at = ? WHERE turn_id = ? AND replied_at IS NULL",
        [now(), turnId],
      ); // SLST4
      return changes > 0;
    },
    async putSlackInstall(install) {
      const at = now();
      await driver.transaction(async (tx) => {
        // SLST5: one row per (bot, workspace); a reinstall replaces its token.
        await tx.run(
          `INSERT INTO slack_installs (bot_id, slack_team_id, slack_team_name, bot_user_id, sealed_token,
             installed_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (bot_id, slack_team_id) DO UPDATE SET slack_team_name = excluded.slack_team_name,
             bot_user_id = excluded.bot_user_id, sealed_token = excluded.sealed_token,
             installed_by = excluded.installed_by, updated_at = excluded.updated_at`,
          [
            install.botId,
            install.slackTeamId,
            install.slackTeamName,
            install.botUserId,
            install.sealedToken,
            install.installedBy,
            at,
            at,
          ],
        );
        await insertAudit(tx, {
          accountId: install.installedBy,
          action: "slack.install",
          target: install.botId,
          detail: { slackTeamId: install.slackTeamId },
        });
      });
      return (await one<InstallRow>(
        "SELECT * FROM slack_installs WHERE bot_id = ? AND slack_team_id = ?",
        [install.botId, install.slackTeamId],
      ).then((row) => (row === undefined ? undefined : toInstall(row))))!;
    },
    async getSlackInstall(botId, slackTeamId) {
      const row = await one<InstallRow>(
        "SELECT * FROM slack_installs WHERE bot_id = ? AND slack_team_id = ?",
        [botId, slackTeamId],
      );
      return row === undefined ? undefined : toInstall(row);
    },
    async listSlackInstalls(botId) {
      const rows = await driver.all<InstallRow>(
        "SELECT * FROM slack_installs WHERE bot_id = ? ORDER BY created_at, slack_team_id",
        [botId],
      );
      return rows.map(toInstall);
    },
    async deleteSlackInstall(botId, slackTeamId, accountId) {
      return driver.transaction(async (tx) => {
        const { changes } = await tx.run(
          "DELETE FROM slack_installs WHERE bot_id = ? AND slack_team_id = ?",
          [botId, slackTeamId],
        );
        if (changes === 0) return false;
        await insertAudit(tx, {
          accountId,
          action: "slack.uninstall",
          target: botId,
          detail: { slackTeamId },
        });
        return true;
      });
    },
    async putSlackRunReply(input) {
      await driver.run(
        `INSERT INTO slack_run_replies (run_id, bot_id, slack_team_id, channel, thread_ts, created_at)
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
        [input.runId, input.botId, input.slackTeamId, input.channel, input.threadTs, now()],
      ); // SLST7
    },
    async getSlackRunReply(runId) {
      const row = await one<{
        run_id: string;
        bot_id: string;
        slack_team_id: string;
        channel: string;
        thread_ts: string;
      }>("SELECT * FROM slack_run_replies WHERE run_id = ?", [runId]);
      return row === undefined
        ? undefined
        : {
            runId: row.run_id,
            botId: row.bot_id,
            slackTeamId: row.slack_team_id,
            channel: row.channel,
            threadTs: row.thread_ts,
          };
    },
    async createSlackOAuthState(input) {
      const at = now();
      await driver.transaction(async (tx) => {
        await tx.run("DELETE FROM slack_oauth_states WHERE expires_at < ?", [at - expiredKeptMs]); // SLST8
        await tx.run(
          `INSERT INTO slack_oauth_states (state_hash, bot_id, account_id, expires_at, used_at, created_at)
           VALUES (?, ?, ?, ?, NULL, ?)`,
          [input.stateHash, input.botId, input.accountId, input.expiresAt, at],
        );
      });
    },
    async takeSlackOAuthState(stateHash, botId) {
      const at = now();
      // SLST6: one conditional update; a replay, another bot's state or an expired one takes nothing.
      const { changes } = await driver.run(
        "UPDATE slack_oauth_states SET used_at = ? WHERE state_hash = ? AND bot_id = ? AND used_at IS NULL AND expires_at > ?",
        [at, stateHash, botId, at],
      );
      if (changes === 0) return undefined;
      const row = await one<{ account_id: string }>(
        "SELECT account_id FROM slack_oauth_states WHERE state_hash = ?",
        [stateHash],
      );
      return row?.account_id;
    },
  };
}
