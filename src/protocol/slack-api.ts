/**
 * Wire types of the Slack API (docs/api.md "Slack", docs/slack.md), part of `Api` (api.ts
 * re-exports them). Depends on nothing.
 */

/** `PUT /v1/bots/{id}/slack`'s answer: the URLs to paste into the Slack app's settings. */
export interface SlackLinked {
  eventsUrl: string;
  interactionsUrl: string;
  status: SlackLinkStatus;
}

/** `GET /v1/bots/{id}/slack`: the link, never its token or signing secret. */
export interface SlackLinkStatus {
  botId: string;
  workspace: { id: string; name: string };
  botUserId: string;
  /** Bolt's `slackApiUrl`; null for Slack itself. */
  apiUrl: string | null;
  eventsUrl: string;
  interactionsUrl: string;
  /** `ok`, or `error` with the last error a Slack call answered (revoked token, missing scope…). */
  state: "ok" | "error";
  /** Events come over Socket Mode (an app-level token is set) as well as the HTTP URL. */
  socketMode: boolean;
  lastError: { message: string; at: string; retryAfterMs: number | null } | null;
  linkedAt: string;
  /**
   * An OAuth link (many workspaces; docs/slack.md "Many workspaces"): the app's client id, the
   * URL that starts an install, the redirect URL to put in the app's manifest, and the installed
   * workspaces (never their tokens). Null for a link with one workspace's bot token.
   */
  oauth: {
    clientId: string;
    installUrl: string;
    redirectUrl: string;
    workspaces: SlackInstalledWorkspace[];
  } | null;
}

/** One workspace that installed a bot's Slack app (`GET /v1/bots/{id}/slack/installs`). */
export interface SlackInstalledWorkspace {
  id: string;
  name: string;
  botUserId: string;
  installedAt: string;
}

/**
 * `POST /v1/slack/people`: the sign-in link is opened; the Slack person it names is linked to
 * the caller's account once they send `confirm <code>` to the bot.
 */
export interface SlackPersonOpened {
  botId: string;
  slackTeamId: string;
  slackUserId: string;
  code: string;
  expiresAt: string;
  /** What to do next, in words. */
  next: string;
}
