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
 */
import { InvalidRequestError } from "../errors/index.ts";
import type { Logger } from "../log/index.ts";
import type { Api } from "../protocol/index.ts";
import type { SecretCipher } from "../secrets/index.ts";
import type { Bot, SlackLink, Store } from "../store/index.ts";
import { createSlackClient, SlackCallError, type SlackClient } from "./client.ts";

export const slackEventsPath = (botId: string) => `/v1/slack/${botId}/events`;
export const slackInteractionsPath = (botId: string) => `/v1/slack/${botId}/interactions`;

const tokenRow = (botId: string) => `slack:${botId}:token`;
const secretRow = (botId: string) => `slack:${botId}:secret`;
const appTokenRow = (botId: string) => `slack:${botId}:app`;

export interface SlackLinks {
  link(
    bot: Bot,
    input: {
      botToken: string;
      signingSecret: string;
      apiUrl: string | null;
      /** Socket Mode's app-level token (`xapp-…`); null: the HTTP Events API only. */
      appToken: string | null;
    },
    baseUrl: string,
  ): Promise<Api.SlackLinked>;
  status(botId: string, baseUrl: string): Promise<Api.SlackLinkStatus | undefined>;
  unlink(botId: string): Promise<boolean>;
  /** The link with its token and secret opened (SLK3: for this process only). */
  open(
    botId: string,
  ): Promise<
    { link: SlackLink; token: string; signingSecret: string; appToken: string | null } | undefined
  >;
  /** A client for the link that records its errors (SLK5). */
  clientOf(link: SlackLink, token: string): SlackClient;
}

export interface SlackLinkDependencies {
  store: Store;
  cipher: SecretCipher;
  logger: Logger;
  /** Told after a link is made, replaced or removed (Socket Mode connects or disconnects). */
  onChange?: (botId: string) => void;
  /** @default createSlackClient */
  createClient?: typeof createSlackClient;
}

const iso = (epochMs: number) => new Date(epochMs).toISOString();

export function statusView(link: SlackLink, baseUrl: string): Api.SlackLinkStatus {
  return {
    botId: link.botId,
    workspace: { id: link.slackTeamId, name: link.slackTeamName },
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
  };
}

export function createSlackLinks(deps: SlackLinkDependencies): SlackLinks {
  const { store, cipher, logger } = deps;
  const createClient = deps.createClient ?? createSlackClient;

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
      });
      deps.onChange?.(bot.id);
      const status = statusView(link, baseUrl);
      return { eventsUrl: status.eventsUrl, interactionsUrl: status.interactionsUrl, status };
    },
    async status(botId, baseUrl) {
      const link = await store.getSlackLink(botId);
      return link === undefined ? undefined : statusView(link, baseUrl);
    },
    async unlink(botId) {
      const removed = await store.deleteSlackLink(botId);
      if (removed) deps.onChange?.(botId);
      return removed;
    },
    async open(botId) {
      const link = await store.getSlackLink(botId);
      if (link === undefined) return undefined;
      return {
        link,
        token: cipher.open(link.sealedToken, tokenRow(botId)),
        signingSecret: cipher.open(link.sealedSecret, secretRow(botId)),
        appToken:
          link.sealedAppToken === null
            ? null
            : cipher.open(link.sealedAppToken, appTokenRow(botId)),
      };
    },
    clientOf,
  };
}
