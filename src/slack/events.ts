/**
 * Slack's Events API in (docs/slack.md "In"): a signed request becomes a message on the
 * conversation of its thread or DM, stored before the 200 goes out; the conversation's durable
 * loop does the rest (the kick, and the sweep when a kick is lost).
 *
 * Invariants:
 *   SLK6 a request is handled only when its `v0` signature (HMAC-SHA256 of `v0:<timestamp>:<body>`
 *        with the link's signing secret, checked by Bolt's verifySlackRequest) matches and its
 *        timestamp is within 5 minutes; anything else answers 401 and does nothing.
 *   SLK7 one Slack message is one Roost message, whatever Slack sends for it: the client message
 *        id is `slack:<channel>:<ts>`, so a retry (`x-slack-retry-num`) and the `message` event
 *        that accompanies an `app_mention` store nothing twice and start no second turn.
 *   SLK8 the answer goes out as soon as the message is stored (Slack wants one within 3 s); the
 *        turn runs in the conversation's durable loop, which survives a crash of this process.
 *   SLK9 one conversation per thread (`channel` + `thread_ts`, shared place, the bot's shared
 *        computer) and one per person's DM: a linked person who may use the bot talks in their own
 *        chat (teams/ routing: their computer and accounts); anyone else is a shared place run
 *        with the bot's own credentials, on behalf of the bot's owner.
 *   SLK10 the leading mention of the bot is stripped; the bot's own messages and edits are ignored.
 *   SLK29 `app_uninstalled`, and `tokens_revoked` naming the bot's token, end what Roost holds for
 *         that workspace: an OAuth install is deleted (its token with it; audited as
 *         `slack.uninstall`), a single-workspace link keeps its settings but shows the error that
 *         says to reinstall and link again. Nothing else of the event is acted on.
 */
import { createHash, randomBytes } from "node:crypto";
import { isValidSlackRequest } from "@slack/bolt";
import { RoostError } from "../errors/index.ts";
import type { Logger } from "../log/index.ts";
import type { Bot, Conversation, SlackLink, SlackPlace, Store } from "../store/index.ts";
import { botAccessOf, mayUseConversation } from "../teams/index.ts";
import type { HeardMessage } from "./listeners.ts";
import type { SlackLinks } from "./service.ts";

/** How far a request's timestamp may be from now. @default 5 minutes (Slack's own advice) */
export const maxSignatureSkewMs = 5 * 60 * 1000;
/** How long a DM's first message waits for its person's name. @default 1000 */
export const nameLookupMs = 1000;
/** How long a person's sign-in link works. @default 1 hour */
export const personLinkTtlMs = 60 * 60 * 1000;
/** How long the code shown when a link is opened works. @default 10 minutes */
export const confirmCodeTtlMs = 10 * 60 * 1000;
const codeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/** SLST3: ten characters of a 32-letter alphabet (50 bits): not guessable within its TTL. */
export function newConfirmCode(): string {
  return [...randomBytes(10)].map((byte) => codeAlphabet[byte % 32]).join("");
}

export interface SlackAnswer {
  status: 200 | 400 | 401 | 404;
  body: Record<string, unknown>;
}

export interface SlackEventDependencies {
  store: Store;
  links: SlackLinks;
  /** Stores a person's message and hands it to the loop (ask.ts postMessage). */
  post(input: {
    conversationId: string;
    authorAccountId: string;
    text: string;
    clientMessageId: string;
  }): Promise<{ created: boolean }>;
  /** Listener routines (listeners.ts): told every channel message the bot hears. */
  hear?: (bot: Bot, message: HeardMessage) => Promise<unknown>;
  /** Where people open their sign-in link (the web app). */
  personLinkUrl(token: string): string;
  logger: Logger;
  clock: () => number;
}

interface EventPayload {
  type?: string;
  challenge?: string;
  team_id?: string;
  event?: SlackEvent;
}

interface SlackEvent {
  type?: string;
  /** `tokens_revoked`: the user ids whose tokens were revoked, by kind. */
  tokens?: { oauth?: string[]; bot?: string[] };
  subtype?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts?: string;
  thread_ts?: string;
  channel?: string;
  channel_type?: string;
}

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");
export const hashPersonToken = hashToken;

/** SLK6: Bolt's verification plus a bound on future timestamps (Bolt checks only the past). */
export function verifySignature(input: {
  signingSecret: string;
  body: string;
  signature: string | undefined;
  timestamp: string | undefined;
  nowMs: number;
}): boolean {
  if (input.signature === undefined || input.timestamp === undefined) return false;
  if (!/^\d{1,12}$/.test(input.timestamp)) return false;
  const timestampSec = Number(input.timestamp);
  if (Math.abs(input.nowMs - timestampSec * 1000) > maxSignatureSkewMs) return false;
  return isValidSlackRequest({
    signingSecret: input.signingSecret,
    body: input.body,
    headers: { "x-slack-signature": input.signature, "x-slack-request-timestamp": timestampSec },
    nowMilliseconds: input.nowMs,
  });
}

/** SLK10 */
export function stripLeadingMention(text: string, botUserId: string): string {
  const mention = new RegExp(`^\\s*<@${botUserId}(?:\\|[^>]*)?>[\\s:,]*`);
  return text.replace(mention, "").trim();
}

export function createSlackEvents(deps: SlackEventDependencies) {
  const { store, links, logger } = deps;
  /** SLK27: (bot, workspace) pairs whose uninstalled events were logged. */
  const uninstalledLogged = new Set<string>();

  /** Authenticates a request of `botId`'s app (SLK6); undefined when it does not pass. */
  async function authenticate(
    botId: string,
    body: string,
    headers: { signature: string | undefined; timestamp: string | undefined },
  ) {
    const opened = await links.open(botId);
    const bot = opened === undefined ? undefined : await store.getBot(botId);
    if (opened === undefined || bot === undefined) return undefined;
    const ok = verifySignature({
      signingSecret: opened.signingSecret,
      body,
      ...headers,
      nowMs: deps.clock(),
    });
    return ok ? { ...opened, bot } : undefined;
  }

  /** SLK9: the conversation of a place, made once (SLST2). */
  async function placeConversation(
    bot: Bot,
    key: string,
    make: { accountId: string; place: Conversation["place"]; title: () => Promise<string> },
    where: { channel: string; threadTs: string | null },
  ): Promise<{ place: SlackPlace; conversation: Conversation }> {
    const existing = await store.getSlackPlace(bot.id, key);
    if (existing !== undefined) {
      const conversation = await store.getConversation(existing.conversationId);
      if (conversation !== undefined) return { place: existing, conversation };
    }
    const made = await store.createConversation({
      accountId: make.accountId,
      botId: bot.id,
      title: await make.title(),
      place: make.place,
    });
    const place = await store.putSlackPlace({
      botId: bot.id,
      placeKey: key,
      conversationId: made.id,
      channel: where.channel,
      threadTs: where.threadTs,
    });
    if (place.conversationId === made.id) return { place, conversation: made };
    // SLST2: another event of this place won the race; ours is empty, so it goes.
    await store
      .deleteConversation({ id: made.id, actorAccountId: make.accountId })
      .catch(() => undefined);
    const conversation = await store.getConversation(place.conversationId);
    if (conversation === undefined)
      throw new RoostError("conflict", "a Slack place lost its conversation");
    return { place, conversation };
  }

  /**
   * A Slack person's name for a conversation's title (`users.info`); their id when it fails or
   * takes longer than `nameLookupMs` (SLK8: the answer to Slack must not wait on it).
   */
  async function nameOf(opened: { link: SlackLink; token: string }, user: string) {
    const lookup = links
      .clientOf(opened.link, opened.token)
      .call<{ user?: { real_name?: string; name?: string } }>("users.info", { user })
      .then((answer) => answer.user?.real_name ?? answer.user?.name ?? user)
      .catch(() => user);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(user), nameLookupMs);
    });
    try {
      return await Promise.race([lookup, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A one-time sign-in link for a Slack person (SLST3), told to them where they asked. */
  async function offerPersonLink(
    link: SlackLink,
    token: string,
    event: Required<Pick<SlackEvent, "user" | "channel">> & SlackEvent,
  ) {
    const raw = `rsl_${randomBytes(32).toString("base64url")}`;
    await store.createSlackLinkToken({
      tokenHash: hashToken(raw),
      botId: link.botId,
      slackTeamId: link.slackTeamId,
      slackUserId: event.user,
      expiresAt: deps.clock() + personLinkTtlMs,
    });
    const text = `Open this link while signed in to Roost to link your Slack account (it works once, for an hour): ${deps.personLinkUrl(raw)}`;
    const client = links.clientOf(link, token);
    // Ephemeral in a channel so only the asker sees the link; a DM is theirs already.
    if (event.channel_type === "im")
      await client.call("chat.postMessage", { channel: event.channel, text });
    else
      await client.call("chat.postEphemeral", {
        channel: event.channel,
        user: event.user,
        text,
        ...(event.thread_ts === undefined ? {} : { thread_ts: event.thread_ts }),
      });
  }

  /** SLST3: the same Slack person sends the code its link's opener was shown. */
  async function confirmPerson(
    link: SlackLink,
    token: string,
    event: Required<Pick<SlackEvent, "user" | "channel">> & SlackEvent,
    code: string,
  ) {
    const accountId = await store.confirmSlackPerson({
      slackTeamId: link.slackTeamId,
      slackUserId: event.user,
      codeHash: hashToken(code),
      openedAfter: deps.clock() - confirmCodeTtlMs,
    });
    const name = accountId === undefined ? undefined : (await store.getAccount(accountId))?.name;
    const text =
      accountId === undefined
        ? "That code does not match a sign-in link you opened in the last 10 minutes; send `link` for a new one."
        : `Linked: you are ${name ?? accountId} in Roost now. Your DMs with me are your own chat.`;
    const client = links.clientOf(link, token);
    if (event.channel_type === "im")
      await client.call("chat.postMessage", { channel: event.channel, text });
    else
      await client.call("chat.postEphemeral", { channel: event.channel, user: event.user, text });
  }

  async function handleMessage(
    opened: { link: SlackLink; token: string; bot: Bot },
    event: SlackEvent,
    retry: { num: string | undefined; reason: string | undefined },
  ): Promise<void> {
    const { link, bot } = opened;
    if (event.bot_id !== undefined || event.subtype !== undefined) return; // SLK10
    if (event.user === undefined || event.channel === undefined || event.ts === undefined) return;
    if (event.user === link.botUserId) return; // SLK10
    const slackUser = event.user;
    const team = link.slackTeamId;
    const isDm = event.type === "message" && event.channel_type === "im";
    const isMention = event.type === "app_mention";
    const isThreadReply =
      event.type === "message" &&
      !isDm &&
      event.thread_ts !== undefined &&
      event.thread_ts !== event.ts;
    if (!isDm && !isMention && !isThreadReply) return;
    const text = stripLeadingMention(event.text ?? "", link.botUserId); // SLK10
    if (text === "") return;
    const person = { user: event.user, channel: event.channel, ...event };
    // Linking answers in Slack after the 200 (SLK8); a failed answer is on the link (SLK5) and
    // logged, and the person asks again.
    const answered = (work: Promise<void>) =>
      work.catch((error: unknown) =>
        logger.warn("could not answer a Slack person's link request", {
          botId: bot.id,
          error: error instanceof Error ? error.message : String(error),
        }),
      );
    if (/^link( my account)?$/i.test(text)) {
      void answered(offerPersonLink(link, opened.token, person)); // SLK8: not before the 200
      return;
    }
    const confirm = /^confirm\s+([A-Za-z0-9]{10})$/.exec(text);
    if (confirm !== null) {
      void answered(confirmPerson(link, opened.token, person, confirm[1]!.toUpperCase())); // SLK8
      return;
    }
    const linked = await store.slackPersonAccount(team, event.user);
    let found: { place: SlackPlace; conversation: Conversation } | undefined;
    let author = bot.accountId;
    if (isDm) {
      // SLK9: a linked person who may use the bot: their own chat; anyone else: a shared place.
      const own = linked !== undefined && (await botAccessOf(store, linked, bot)) !== undefined;
      const key = `dm:${team}:${event.user}:${own ? linked : "unlinked"}`;
      found = await placeConversation(
        bot,
        key,
        {
          accountId: own ? linked : bot.accountId,
          place: own ? "direct" : "shared",
          title: async () => `Slack DM with ${await nameOf(opened, slackUser)}`,
        },
        { channel: event.channel, threadTs: null },
      );
      if (own) author = linked;
    } else {
      const threadTs = event.thread_ts ?? event.ts;
      const key = `thread:${team}:${event.channel}:${threadTs}`;
      if (isThreadReply && !isMention) {
        // A thread the bot is not in stays the people's own.
        const place = await store.getSlackPlace(bot.id, key);
        if (place === undefined) return;
      }
      found = await placeConversation(
        bot,
        key,
        {
          accountId: bot.accountId,
          place: "shared",
          title: async () => `Slack thread in ${event.channel}`,
        },
        { channel: event.channel, threadTs },
      );
      if (linked !== undefined && (await mayUseConversation(store, linked, found.conversation)))
        author = linked;
    }
    const { created } = await deps.post({
      conversationId: found.conversation.id,
      authorAccountId: author,
      text,
      clientMessageId: `slack:${event.channel}:${event.ts}`, // SLK7
    });
    if (!created && retry.num !== undefined)
      logger.info("slack retried an event already stored; answered once", {
        botId: bot.id,
        retryNum: retry.num,
        retryReason: retry.reason,
      });
  }

  /** SLK29: the app left a workspace, or its bot token there was revoked. */
  async function forgetWorkspace(
    opened: { link: SlackLink; bot: Bot },
    teamId: string | undefined,
    kind: string,
  ): Promise<void> {
    const { link, bot } = opened;
    if (teamId === undefined) return;
    if (link.clientId !== null) {
      const removed = await store.deleteSlackInstall(bot.id, teamId, bot.accountId);
      logger.info("slack workspace uninstalled the app; its install was removed", {
        botId: bot.id,
        teamId,
        event: kind,
        removed,
      });
      return;
    }
    if (teamId !== link.slackTeamId) return;
    await store.setSlackLinkError(bot.id, {
      message:
        kind === "app_uninstalled"
          ? "The Slack app was uninstalled from the workspace. Reinstall it, then link the bot again with the new bot token."
          : "Slack revoked the bot's token. Reinstall the app in the workspace, then link the bot again with the new bot token.",
      retryAfterMs: null,
    });
    logger.info("slack workspace uninstalled the app; the link shows it", {
      botId: bot.id,
      teamId,
      event: kind,
    });
  }

  /** An authenticated `event_callback` (from the HTTP URL or Socket Mode): its message stored. */
  async function dispatch(
    opened: { link: SlackLink; token: string; bot: Bot },
    payload: EventPayload,
    retry: { num: string | undefined; reason: string | undefined },
  ): Promise<void> {
    if (payload.type !== "event_callback" || payload.event === undefined) return;
    const kind = payload.event.type;
    if (
      kind === "app_uninstalled" ||
      (kind === "tokens_revoked" && (payload.event.tokens?.bot?.length ?? 0) > 0)
    ) {
      await forgetWorkspace(opened, payload.team_id, kind); // SLK29
      return;
    }
    if (opened.link.clientId !== null) {
      // SLK27: an OAuth link answers each workspace with its own install's token.
      const own =
        payload.team_id === undefined
          ? undefined
          : await links.open(opened.bot.id, payload.team_id);
      if (own === undefined || own.token === "") {
        const key = `${opened.bot.id}:${payload.team_id ?? "?"}`;
        if (!uninstalledLogged.has(key)) {
          uninstalledLogged.add(key);
          logger.info("slack event of a workspace without an install ignored", {
            botId: opened.bot.id,
            teamId: payload.team_id,
          }); // once per (bot, workspace)
        }
        return;
      }
      opened = { ...own, bot: opened.bot };
    } else if (payload.team_id !== undefined && payload.team_id !== opened.link.slackTeamId) {
      logger.info("slack event of another workspace ignored", {
        botId: opened.bot.id,
        teamId: payload.team_id,
      });
      return;
    }
    await handleMessage(opened, payload.event, retry); // SLK8: stored before the answer
    const event = payload.event;
    // Listener routines hear channel messages (not DMs, not the bot's own, not edits); a
    // failure answers 500, so Slack retries, and the runs are idempotent (listeners.ts SLK20).
    if (
      deps.hear !== undefined &&
      event.type === "message" &&
      event.channel_type !== "im" &&
      event.bot_id === undefined &&
      event.subtype === undefined &&
      event.user !== undefined &&
      event.user !== opened.link.botUserId &&
      event.channel !== undefined &&
      event.ts !== undefined
    )
      await deps.hear(opened.bot, {
        teamId: opened.link.slackTeamId,
        channel: event.channel,
        user: event.user,
        text: event.text ?? "",
        ts: event.ts,
        threadTs: event.thread_ts ?? null,
      });
  }

  return {
    /** `POST /v1/slack/{bot}/events` */
    async events(
      botId: string,
      body: string,
      headers: {
        signature: string | undefined;
        timestamp: string | undefined;
        retryNum: string | undefined;
        retryReason: string | undefined;
      },
    ): Promise<SlackAnswer> {
      const opened = await authenticate(botId, body, headers);
      if (opened === undefined)
        return {
          status: 401,
          body: {
            error:
              "the request's x-slack-signature does not match this bot's signing secret, or its timestamp is stale",
          },
        };
      let payload: EventPayload;
      try {
        payload = JSON.parse(body) as typeof payload;
      } catch {
        return { status: 400, body: { error: "the body is not JSON" } };
      }
      if (payload.type === "url_verification")
        return { status: 200, body: { challenge: String(payload.challenge ?? "") } };
      await dispatch(opened, payload, { num: headers.retryNum, reason: headers.retryReason });
      return { status: 200, body: { ok: true } };
    },
    authenticate,
    /**
     * An Events API payload that came over Socket Mode: the connection is authenticated by the
     * app-level token, so there is no signature to check (SLK22).
     */
    async fromSocket(
      botId: string,
      payload: unknown,
      retry: { num: string | undefined; reason: string | undefined },
    ): Promise<void> {
      const opened = await links.open(botId);
      const bot = opened === undefined ? undefined : await store.getBot(botId);
      if (opened === undefined || bot === undefined) return;
      await dispatch({ ...opened, bot }, payload as EventPayload, retry);
    },
  };
}

export type SlackEvents = ReturnType<typeof createSlackEvents>;
