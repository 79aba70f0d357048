/**
 * Slack as the store keeps it (issue 14 §2, docs/slack.md): a bot's link to a Slack app, the
 * conversation of each Slack thread and DM, Slack people linked to Roost accounts, and the
 * "working…" message of each turn answered in Slack.
 *
 * Invariants (both implementations; checked by slack-store.test.ts):
 *   SLST1 one link per bot; its bot token and signing secret are stored only sealed (the caller
 *         seals them, src/secrets/crypto.ts).
 *   SLST2 one conversation per (bot, place key): two events of the same thread or DM racing to
 *         start it get the same conversation (the first insert wins; the loser reads it).
 *   SLST3 a Slack person (workspace, user) is linked to at most one account; a link token is kept
 *         only as its hash, is opened once (by the Roost account it will link) and expires; the
 *         link is made only when the same Slack person then sends the code the opener was shown
 *         (a stranger's link opened by a victim links nothing: the stranger never sees the code).
 *   SLST4 a turn has at most one "working…" message, and it is marked replied at most once.
 *   SLST5 an OAuth link (its `clientId` set) holds no token itself: each workspace's bot token is
 *         its own install row per (bot, workspace), stored only sealed; a relink keeps them.
 *   SLST6 an install `state` is kept only as its hash, belongs to one bot and one account, expires,
 *         and is taken at most once (one conditional update; a replay or a race takes nothing).
 *   SLST7 a listener routine's run has at most one Slack thread to answer in: the first write wins.
 *   SLST8 sign-in links and install states expired more than a day ago are deleted when the next
 *         one is made (in the same transaction): the tables hold what was made in about a day.
 */

export interface SlackLink {
  botId: string;
  /** The bot's owner, who linked it. */
  accountId: string;
  slackTeamId: string;
  slackTeamName: string;
  /** The app's bot user (`auth.test`'s `user_id`): its mention is stripped, its messages ignored. */
  botUserId: string;
  /** Bolt's `slackApiUrl`; null for https://slack.com/api/. */
  apiUrl: string | null;
  sealedToken: string;
  sealedSecret: string;
  /** Socket Mode's app-level token (`xapp-…`), sealed; null: the HTTP Events API only. */
  sealedAppToken: string | null;
  /** The last error a Slack call answered (revoked token, missing scope, rate limit). */
  /** SLST5: the app's OAuth client id; null: one workspace's bot token (`sealedToken`). */
  clientId: string | null;
  sealedClientSecret: string | null;
  lastError: string | null;
  lastErrorAt: number | null;
  retryAfterMs: number | null;
  createdAt: number;
  updatedAt: number;
}

/** SLST5: one workspace that installed an OAuth link's app, with its own bot token. */
export interface SlackInstall {
  botId: string;
  slackTeamId: string;
  slackTeamName: string;
  botUserId: string;
  sealedToken: string;
  /** The Roost account that started the install (the bot's owner). */
  installedBy: string;
  createdAt: number;
  updatedAt: number;
}

/** SLST7: the Slack thread a listener routine's run answers in. */
export interface SlackRunReply {
  runId: string;
  botId: string;
  slackTeamId: string;
  channel: string;
  threadTs: string;
}

export interface SlackPlace {
  botId: string;
  /** `dm:<team>:<user>` or `thread:<team>:<channel>:<thread_ts>`. */
  placeKey: string;
  conversationId: string;
  channel: string;
  /** The thread replies go to; null for a DM's top level. */
  threadTs: string | null;
  createdAt: number;
}

export interface SlackTurn {
  turnId: string;
  conversationId: string;
  workingTs: string | null;
  repliedAt: number | null;
}

export interface SlackStore {
  /** SLST1: creates or replaces the bot's link. */
  putSlackLink(
    link: Omit<SlackLink, "createdAt" | "updatedAt" | "lastError" | "lastErrorAt" | "retryAfterMs">,
  ): Promise<SlackLink>;
  getSlackLink(botId: string): Promise<SlackLink | undefined>;
  /** Every link that has a Socket Mode app token (each node connects them at start). */
  listSocketModeSlackLinks(): Promise<SlackLink[]>;
  /** Answers whether a link was removed; the bot's places and people stay (a relink resumes). */
  deleteSlackLink(botId: string): Promise<boolean>;
  /** Records (or with null clears) the link's last error; answers whether it changed. */
  setSlackLinkError(
    botId: string,
    error: { message: string; retryAfterMs: number | null } | null,
  ): Promise<boolean>;
  getSlackPlace(botId: string, placeKey: string): Promise<SlackPlace | undefined>;
  slackPlaceOfConversation(conversationId: string): Promise<SlackPlace | undefined>;
  /** SLST2: the first writer's place wins; answers the stored one. */
  putSlackPlace(place: Omit<SlackPlace, "createdAt">): Promise<SlackPlace>;
  slackPersonAccount(slackTeamId: string, slackUserId: string): Promise<string | undefined>;
  /** The Slack user linked to `accountId` in a workspace (for mentions on cards). */
  slackUserOfAccount(slackTeamId: string, accountId: string): Promise<string | undefined>;
  /** SLST3: stores a link token's hash. */
  createSlackLinkToken(input: {
    tokenHash: string;
    botId: string;
    slackTeamId: string;
    slackUserId: string;
    expiresAt: number;
  }): Promise<void>;
  /**
   * SLST3: opens the token once for `accountId`, recording the hash of the code that person was
   * shown; undefined when the token is unknown, already opened or expired.
   */
  openSlackLinkToken(
    tokenHash: string,
    accountId: string,
    codeHash: string,
  ): Promise<{ botId: string; slackTeamId: string; slackUserId: string } | undefined>;
  /**
   * SLST3: the Slack person sent a code: links them to the account that opened their token with
   * that code (once, before `expiresAfter`); answers the account, or undefined.
   */
  confirmSlackPerson(input: {
    slackTeamId: string;
    slackUserId: string;
    codeHash: string;
    openedAfter: number;
  }): Promise<string | undefined>;
  getSlackTurn(turnId: string): Promise<SlackTurn | undefined>;
  /** SLST4: the first working message of a turn wins. */
  putSlackTurn(input: {
    turnId: string;
    conversationId: string;
    workingTs: string | null;
  }): Promise<SlackTurn>;
  /** SLST4: answers false when the turn was already marked replied. */
  markSlackTurnReplied(turnId: string, conversationId: string): Promise<boolean>;
  /** SLST5: creates or replaces a workspace's install of the bot's app. */
  putSlackInstall(install: Omit<SlackInstall, "createdAt" | "updatedAt">): Promise<SlackInstall>;
  getSlackInstall(botId: string, slackTeamId: string): Promise<SlackInstall | undefined>;
  listSlackInstalls(botId: string): Promise<SlackInstall[]>;
  deleteSlackInstall(botId: string, slackTeamId: string, accountId: string): Promise<boolean>;
  /** SLST6: stores an install state's hash. */
  createSlackOAuthState(input: {
    stateHash: string;
    botId: string;
    accountId: string;
    expiresAt: number;
  }): Promise<void>;
  /** SLST7: where a listener run answers (the heard message's thread); the first write wins. */
  putSlackRunReply(input: SlackRunReply): Promise<void>;
  getSlackRunReply(runId: string): Promise<SlackRunReply | undefined>;
  /** SLST6: takes the state once for `botId`; answers its account, or undefined. */
  takeSlackOAuthState(stateHash: string, botId: string): Promise<string | undefined>;
}
