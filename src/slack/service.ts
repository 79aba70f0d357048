/**
 * A bot's link to a Slack app (docs/slack.md): `PUT /v1/bots/{id}/slack` checks the token with
 * `auth.test`, seals the token and the signing secret, and answers the URLs to paste into the
 * app's settings; Slack errors of later calls are kept on the link for `GET` to show.
 *
 * Invariants:
 *   SLK3 the bot token and signing secret are sealed with the secrets key (secrets/ SECR5,
 *        SECR6) under their own row (`slack:<bot>:token`, `slack:<bot>:secret`); no answer, log
 *        line or error holds either.
 *   SLK4 a link is made only with a token `auth.test` accepts; its workspace and bot user come
 *        from that answer, never from the request.
 *   SLK5 a Slack error is logged once when it starts (the link's stored error changes), not once
 *        per call, and is cleared by the next call that succeeds.
 *   SLK25 an OAuth link (client id and secret, no bot token) gets one bot token per workspace from
 *        oauth.v2.access, sealed under its own row (`slack:<bot>:install:<team>`); the workspace
 *        and bot user come from that answer (SLK4), never from the request.
 *   SLK26 an install is finished only with a `state` this server made for that bot's owner: 32
 *        random bytes, kept as its hash, expiring after `oauthStateTtlMs`, taken once (SLST6); a
 *        forged, replayed, expired or other bot's state stores nothing and calls no Slack method.
 *   SLK27 an event is answered with its own workspace's token (`open(botId, teamId)`); a
 *        workspace with no install opens nothing.
 */
import { createHash, randomBytes } from "node:crypto";
import { InvalidRequestError } from "../errors/index.ts";
import type { Logger } from "../log/index.ts";
import type { Api } from "../protocol/index.ts";
import type { SecretCipher } from "../secrets/index.ts";
import type { Bot, SlackInstall, SlackLink, Store } from "../store/index.ts";
import {
  createSlackClient,
  defaultSlackApiUrl,
  exchangeSlackOAuthCode,
  SlackCallError,
  type SlackClient,
} from "./client.ts";

export const slackEventsPath = (botId: string) => `/v1/slack/${botId}/events`;
export const slackInteractionsPath = (botId: string) => `/v1/slack/${botId}/interactions`;
export const slackInstallPath = (botId: string) => `/v1/slack/${botId}/install`;
export const slackOAuthCallbackPath = (botId: string) => `/v1/slack/${botId}/oauth/callback`;

/** SLK26: how long an install's `state` may wait for its callback. @default 600000 (10 min) */
export const oauthStateTtlMs = 10 * 60_000;

/** The bot scopes an install asks for: the manifest's (docs/slack.md "The app manifest"). */
export const slackBotScopes = [
  "app_mentions:read",
  "channels:history",
  "groups:history",
  "im:history",
  "mpim:history",
  "chat:write",
  "files:write",
  "reactions:write",
  "users:read",
] as const;

/** The team id of a place key (`dm:<team>:…`, `thread:<team>:…`). */
export const teamOfPlace = (place: { placeKey: string }) => place.placeKey.split(":")[1] ?? "";

const hashState = (state: string) => createHash("sha256").update(state).digest("base64url");

/** Slack's authorize page, beside the link's Web API (`https://slack.com/oauth/v2/authorize`). */
function authorizeUrl(apiUrl: string | null): URL {
  const api = new URL(apiUrl ?? defaultSlackApiUrl);
  return new URL("/oauth/v2/authorize", api.origin);
}

const tokenRow = (botId: string) => `slack:${botId}:token`;
const secretRow = (botId: string) => `slack:${botId}:secret`;
const appTokenRow = (botId: string) => `slack:${botId}:app`;
const clientSecretRow = (botId: string) => `slack:${botId}:client`;
const installRow = (botId: string, teamId: string) => `slack:${botId}:install:${teamId}`; // SLK25

export interface SlackLinks {
  link(
    bot: Bot,
    input: {
      /** One workspace's bot token; null with `oauth` (many workspaces, SLK25). */
      botToken: string | null;
      oauth: { clientId: string; clientSecret: string } | null;
      signingSecret: string;
      apiUrl: string | null;
      /** Socket Mode's app-level token (`xapp-…`); null: the HTTP Events API only. */
      appToken: string | null;
    },
    baseUrl: string,
  ): Promise<Api.SlackLinked>;
  status(botId: string, baseUrl: string): Promise<Api.SlackLinkStatus | undefined>;
  unlink(botId: string): Promise<boolean>;
  /**
   * The link with its token and secret opened (SLK3: for this process only). An OAuth link's
   * token is that of `teamId`'s install, and its link carries that workspace and bot user
   * (SLK27); without `teamId` (or with no install) its token is "" (the signing secret only).
   */
  open(
    botId: string,
    teamId?: string,
  ): Promise<
    { link: SlackLink; token: string; signingSecret: string; appToken: string | null } | undefined
  >;
  /** A client for the link that records its errors (SLK5). */
  clientOf(link: SlackLink, token: string): SlackClient;
  /** SLK26: Slack's authorize URL for an install of the bot's app, with a fresh `state`. */
  startInstall(link: SlackLink, accountId: string, baseUrl: string): Promise<string>;
  /**
   * SLK25, SLK26: the callback: takes the state, exchanges the code, stores the workspace's
   * sealed token; answers the workspace, or throws an InvalidRequestError saying why.
   */
  finishInstall(
    botId: string,
    input: { code: string; state: string },
    baseUrl: string,
  ): Promise<Api.SlackInstalledWorkspace>;
}

export interface SlackLinkDependencies {
  store: Store;
  cipher: SecretCipher;
  logger: Logger;
  /** Told after a link is made, replaced or removed (Socket Mode connects or disconnects). */
  onChange?: (botId: string) => void;
  /** @default createSlackClient */
  createClient?: typeof createSlackClient;
  /** @default exchangeSlackOAuthCode */
  exchangeCode?: typeof exchangeSlackOAuthCode;
  /** @default Date.now */
  clock?: () => number;
}

const iso = (epochMs: number) => new Date(epochMs).toISOString();

const installView = (install: SlackInstall): Api.SlackInstalledWorkspace => ({
  id: install.slackTeamId,
  name: install.slackTeamName,
  botUserId: install.botUserId,
  installedAt: iso(install.updatedAt),
});

export function statusView(
  link: SlackLink,
  baseUrl: string,
  installs: SlackInstall[] = [],
): Api.SlackLinkStatus {
  return {
    botId: link.botId,
    workspace:
      link.clientId === null
        ? { id: link.slackTeamId, name: link.slackTeamName }
        : { id: "", name: `${installs.length} workspace(s), installed by OAuth` },
    botUserId: link.botUserId,
    apiUrl: link.apiUrl,
    eventsUrl: `${baseUrl}${slackEventsPath(link.botId)}`,
    interactionsUrl: `${baseUrl}${slackInteractionsPath(link.botId)}`,
    state: link.lastError === null ? "ok" : "error",
    lastError:
      link.lastError === null
        ? null
        : {
            message: link.lastError,
            at: iso(link.lastErrorAt ?? 0),
            retryAfterMs: link.retryAfterMs,
          },
    socketMode: link.sealedAppToken !== null,
    linkedAt: iso(link.updatedAt),
    oauth:
      link.clientId === null
        ? null
        : {
            clientId: link.clientId,
            installUrl: `${baseUrl}${slackInstallPath(link.botId)}`,
            redirectUrl: `${baseUrl}${slackOAuthCallbackPath(link.botId)}`,
            workspaces: installs.map(installView),
          },
  };
}

export function createSlackLinks(deps: SlackLinkDependencies): SlackLinks {
  const { store, cipher, logger } = deps;
  const createClient = deps.createClient ?? createSlackClient;
  const exchange = deps.exchangeCode ?? exchangeSlackOAuthCode;
  const clock = deps.clock ?? Date.now;

  const clientOf = (link: SlackLink, token: string): SlackClient => {
    const raw = createClient({ token, apiUrl: link.apiUrl });
    const record = async (error: unknown) => {
      if (!(error instanceof SlackCallError)) return;
      const changed = await store
        .setSlackLinkError(link.botId, {
          message: error.message,
          retryAfterMs: error.retryAfterMs ?? null,
        })
        .catch(() => false);
      if (changed)
        logger.warn("slack call failed", {
          botId: link.botId,
          method: error.method,
          slackError: error.slackError,
          retryAfterMs: error.retryAfterMs,
          message: error.message,
        }); // SLK5: once, when the error starts or changes
    };
    const cleared = async () => {
      if ((await store.setSlackLinkError(link.botId, null).catch(() => false)) === true)
        logger.info("slack calls succeed again", { botId: link.botId });
    };
    return {
      async call(method, args) {
        try {
          const answer = await raw.call(method, args);
          await cleared();
          return answer as never;
        } catch (error) {
          await record(error);
          throw error;
        }
      },
      async uploadFile(input) {
        try {
          await raw.uploadFile(input);
          await cleared();
        } catch (error) {
          await record(error);
          throw error;
        }
      },
    };
  };

  return {
    async link(bot, input, baseUrl) {
      if (input.botToken === null) {
        if (input.oauth === null)
          throw new InvalidRequestError(
            "a Slack link needs a botToken (one workspace) or a clientId and clientSecret (OAuth install, many workspaces)",
          );
        // SLK25: no workspace yet; each install brings its own.
        const link = await store.putSlackLink({
          botId: bot.id,
          accountId: bot.accountId,
          slackTeamId: "",
          slackTeamName: "",
          botUserId: "",
          apiUrl: input.apiUrl,
          sealedToken: "",
          sealedSecret: cipher.seal(input.signingSecret, secretRow(bot.id)), // SLK3
          sealedAppToken:
            input.appToken === null ? null : cipher.seal(input.appToken, appTokenRow(bot.id)),
          clientId: input.oauth.clientId,
          sealedClientSecret: cipher.seal(input.oauth.clientSecret, clientSecretRow(bot.id)),
        });
        deps.onChange?.(bot.id);
        const status = statusView(link, baseUrl, await store.listSlackInstalls(bot.id));
        return { eventsUrl: status.eventsUrl, interactionsUrl: status.interactionsUrl, status };
      }
      const client = createClient({ token: input.botToken, apiUrl: input.apiUrl });
      let auth: { team_id?: string; team?: string; user_id?: string };
      try {
        auth = await client.call("auth.test", {}); // SLK4
      } catch (error) {
        if (error instanceof SlackCallError)
          throw new InvalidRequestError(
            `field "botToken": Slack's auth.test refused it (${error.slackError}); ${error.message.replace(/^slack: auth\.test answered [a-z_]+: /, "")}`,
            { issues: [{ path: "botToken", message: error.message }] },
          );
        throw error;
      }
      if (auth.team_id === undefined || auth.user_id === undefined)
        throw new InvalidRequestError(
          'field "botToken": auth.test did not name a workspace and bot user; use the Bot User OAuth Token (xoxb-…)',
          { issues: [{ path: "botToken", message: "not a bot token" }] },
        );
      const link = await store.putSlackLink({
        botId: bot.id,
        accountId: bot.accountId,
        slackTeamId: auth.team_id,
        slackTeamName: auth.team ?? auth.team_id,
        botUserId: auth.user_id,
        apiUrl: input.apiUrl,
        sealedToken: cipher.seal(input.botToken, tokenRow(bot.id)), // SLK3
        sealedSecret: cipher.seal(input.signingSecret, secretRow(bot.id)), // SLK3
        sealedAppToken:
          input.appToken === null ? null : cipher.seal(input.appToken, appTokenRow(bot.id)), // SLK3
        clientId: null,
        sealedClientSecret: null,
      });
      deps.onChange?.(bot.id);
      const status = statusView(link, baseUrl);
      return { eventsUrl: status.eventsUrl, interactionsUrl: status.interactionsUrl, status };
    },
    async status(botId, baseUrl) {
      const link = await store.getSlackLink(botId);
      if (link === undefined) return undefined;
      return statusView(
        link,
        baseUrl,
        link.clientId === null ? [] : await store.listSlackInstalls(botId),
      );
    },
    async unlink(botId) {
      const removed = await store.deleteSlackLink(botId);
      if (removed) deps.onChange?.(botId);
      return removed;
    },
    async open(botId, teamId) {
      const found = await store.getSlackLink(botId);
      if (found === undefined) return undefined;
      let link = found;
      let token = "";
      if (found.clientId === null) token = cipher.open(found.sealedToken, tokenRow(botId));
      else if (teamId !== undefined && teamId !== "") {
        // SLK27: that workspace's own token, workspace and bot user.
        const install = await store.getSlackInstall(botId, teamId);
        if (install !== undefined) {
          token = cipher.open(install.sealedToken, installRow(botId, teamId));
          link = {
            ...found,
            slackTeamId: install.slackTeamId,
            slackTeamName: install.slackTeamName,
            botUserId: install.botUserId,
          };
        }
      }
      return {
        link,
        token,
        signingSecret: cipher.open(link.sealedSecret, secretRow(botId)),
        appToken:
          link.sealedAppToken === null
            ? null
            : cipher.open(link.sealedAppToken, appTokenRow(botId)),
      };
    },
    clientOf,
    async startInstall(link, accountId, baseUrl) {
      if (link.clientId === null)
        throw new InvalidRequestError(
          `bot ${link.botId} is linked with one workspace's bot token; PUT /v1/bots/${link.botId}/slack with clientId and clientSecret (no botToken) to install it in many workspaces`,
        );
      const state = randomBytes(32).toString("base64url"); // SLK26
      await store.createSlackOAuthState({
        stateHash: hashState(state),
        botId: link.botId,
        accountId,
        expiresAt: clock() + oauthStateTtlMs,
      });
      const url = authorizeUrl(link.apiUrl);
      url.searchParams.set("client_id", link.clientId);
      url.searchParams.set("scope", slackBotScopes.join(","));
      url.searchParams.set("redirect_uri", `${baseUrl}${slackOAuthCallbackPath(link.botId)}`);
      url.searchParams.set("state", state);
      return url.toString();
    },
    async finishInstall(botId, input, baseUrl) {
      const link = await store.getSlackLink(botId);
      const refused = (why: string) =>
        new InvalidRequestError(`this Slack install cannot finish: ${why}`, {
          issues: [{ path: "state", message: why }],
        });
      // SLK26: the state first, before any call to Slack.
      const accountId = await store.takeSlackOAuthState(hashState(input.state), botId);
      if (accountId === undefined)
        throw refused(
          "its state is unknown, used, expired or of another bot; start again from the install link",
        );
      if (link?.clientId == null || link.sealedClientSecret === null)
        throw refused("the bot is no longer linked for OAuth install; PUT its Slack link again");
      if (accountId !== link.accountId)
        throw refused("the install was started by someone who no longer owns the bot");
      let answer: Awaited<ReturnType<typeof exchangeSlackOAuthCode>>;
      try {
        answer = await exchange({
          apiUrl: link.apiUrl,
          clientId: link.clientId,
          clientSecret: cipher.open(link.sealedClientSecret, clientSecretRow(botId)),
          code: input.code,
          redirectUri: `${baseUrl}${slackOAuthCallbackPath(botId)}`,
        });
      } catch (error) {
        if (error instanceof SlackCallError) {
          logger.warn("slack install failed", {
            botId,
            slackError: error.slackError,
            message: error.message,
          });
          throw refused(error.message);
        }
        throw error;
      }
      const install = await store.putSlackInstall({
        botId,
        slackTeamId: answer.teamId, // SLK25: from Slack's answer
        slackTeamName: answer.teamName,
        botUserId: answer.botUserId,
        sealedToken: cipher.seal(answer.accessToken, installRow(botId, answer.teamId)),
        installedBy: accountId,
      });
      logger.info("slack app installed", { botId, teamId: answer.teamId });
      return installView(install);
    },
  };
}
