/**
 * Slack (docs/api.md "Slack", docs/slack.md): a bot's link to a Slack app, and the two URLs Slack
 * calls (Events API, interactivity), which carry Slack's signature instead of an API token.
 *
 * Invariants:
 *   SAPI1 only a bot's owner links, reads or unlinks it: another account's bot answers 404 like a
 *         missing one (API1); a teammate of a team bot gets 403 saying who can.
 *   SAPI2 the token and signing secret go in and never come out (no answer shows them; slack/
 *         SLK3); bad input is a 400 that says how to fix it and stores nothing.
 *   SAPI3 the Slack URLs answer 401 to anything not signed with the bot's signing secret (slack/
 *         SLK6), and are rate limited per bot before any work.
 *   SAPI4 an `apiUrl` is https (plain http only with ROOST_SLACK_INSECURE_API_URL=1), has no
 *         credentials, query or fragment.
 *   SAPI5 an OAuth install starts only from the bot's owner (SAPI1), behind the API token (a 302 to
 *         Slack, or `{url}` to a request that accepts JSON: the web app's button); its
 *         callback carries Slack's redirect instead, so it is authenticated by the single-use
 *         `state` alone (slack/ SLK26), rate limited per bot, and answers a small HTML page that
 *         echoes nothing of the request.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { RoostError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, Store } from "../store/index.ts";
import {
  confirmCodeTtlMs,
  hashPersonToken,
  newConfirmCode,
  slackEventsPath,
  slackInteractionsPath,
  type SlackEvents,
  type SlackLinks,
} from "../slack/index.ts";
import { usableBotOf } from "../teams/index.ts";
import { createRequestLimiter } from "./limits.ts";
import { readJson, refuseBody, text } from "./validation.ts";

/** SAPI3: requests per minute per bot on Slack's URLs. @default 1200 */
export const slackRequestsPerMinute = 1200;

export interface SlackRouteDependencies {
  store: Store;
  links: SlackLinks;
  events: SlackEvents;
  /** The interactivity handler (buttons); absent: interactions are acknowledged only. */
  interactions?: (botId: string, body: string) => Promise<void>;
  /** SAPI4 @default false */
  insecureApiUrl: boolean;
  publicUrl?: string;
  clock: () => number;
}

type SlackApp = Hono<{ Variables: { account: Account } }>;

const linkBody = (insecure: boolean) =>
  z
    .strictObject({
      botToken: text("botToken", { min: 1, max: 500 })
        .refine((value) => /^xox[bp]-[\w-]+$/.test(value), {
          error:
            "botToken must be the app's Bot User OAuth Token (xoxb-…), from OAuth & Permissions",
        })
        .optional(),
      clientId: text("clientId", { min: 1, max: 100 })
        .refine((value) => /^\d+\.\d+$/.test(value), {
          error: "clientId must be the app's Client ID (digits.digits), from Basic Information",
        })
        .optional(),
      clientSecret: text("clientSecret", { min: 1, max: 200 })
        .refine((value) => /^[0-9a-f]{16,128}$/i.test(value), {
          error: "clientSecret must be the app's Client Secret (hex), from Basic Information",
        })
        .optional(),
      signingSecret: text("signingSecret", { min: 1, max: 200 }).refine(
        (value) => /^[0-9a-f]{16,128}$/i.test(value),
        { error: "signingSecret must be the app's Signing Secret (hex), from Basic Information" },
      ),
      apiUrl: z
        .string({ error: "apiUrl must be a URL, such as https://slack.com/api/" })
        .max(500)
        .refine(
          (value) => {
            try {
              const url = new URL(value);
              return (
                (url.protocol === "https:" || (insecure && url.protocol === "http:")) &&
                url.username === "" &&
                url.password === "" &&
                url.search === "" &&
                url.hash === ""
              );
            } catch {
              return false;
            }
          },
          {
            error: insecure
              ? "apiUrl must be an http(s) URL with no credentials, query or fragment"
              : "apiUrl must be an https URL with no credentials, query or fragment (plain http needs ROOST_SLACK_INSECURE_API_URL=1)",
          },
        )
        .nullable()
        .optional(),
      appToken: z
        .string({ error: "appToken must be the app-level token (xapp-…) for Socket Mode, or null" })
        .max(500)
        .regex(/^xapp-[\w-]+$/, {
          error:
            "appToken must be the app-level token (xapp-…, Basic Information → App-Level Tokens, scope connections:write)",
        })
        .nullable()
        .optional(),
    })
    .refine(
      (input) =>
        input.botToken !== undefined
          ? input.clientId === undefined && input.clientSecret === undefined
          : input.clientId !== undefined && input.clientSecret !== undefined,
      {
        error:
          "send either botToken (one workspace) or clientId and clientSecret (OAuth install in many workspaces), not both",
      },
    );
const personBody = z.strictObject({
  token: text("token", { min: 1, max: 200 }).refine(
    (value) => /^rsl_[A-Za-z0-9_-]{43}$/.test(value),
    {
      error: "token must be the rsl_… token of the sign-in link the bot sent you in Slack",
    },
  ),
});

const escapeHtml = (value: string) =>
  value.replace(
    /[&<>"']/g,
    (char) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[char]!,
  );
/** SAPI5: the page the install's callback answers (no script, nothing of the request). */
const installPage = (title: string, message: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Roost · Slack · ${escapeHtml(title)}</title></head><body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></main></body></html>`;

/** The two URLs Slack calls; registered before the API-token check (SAPI3). */
export function registerSlackWebhookRoutes(app: Hono, deps: SlackRouteDependencies): void {
  const limiter = createRequestLimiter(
    {
      requestsPerMinute: slackRequestsPerMinute,
      requestBurst: slackRequestsPerMinute,
      eventStreamsPerAccount: 1,
    },
    deps.clock,
  );
  const signed = (context: Context) => ({
    signature: context.req.header("x-slack-signature"),
    timestamp: context.req.header("x-slack-request-timestamp"),
  });

  app.post("/v1/slack/:botId/events", async (context) => {
    const botId = context.req.param("botId");
    limiter.take(botId); // SAPI3: before anything else
    const body = await context.req.text();
    const answer = await deps.events.events(botId, body, {
      ...signed(context),
      retryNum: context.req.header("x-slack-retry-num"),
      retryReason: context.req.header("x-slack-retry-reason"),
    });
    if (answer.status === 401) throw new RoostError("unauthenticated", String(answer.body.error)); // SAPI3
    return context.json(answer.body, answer.status);
  });

  /** SAPI5: Slack's redirect after an install; the state alone authenticates it. */
  app.get("/v1/slack/:botId/oauth/callback", async (context) => {
    const botId = context.req.param("botId");
    limiter.take(botId); // SAPI3, SAPI5
    const code = context.req.query("code");
    const state = context.req.query("state");
    if (context.req.query("error") !== undefined)
      return context.html(
        installPage(
          "Not installed",
          "The install was cancelled in Slack. Start it again from Roost.",
        ),
        400,
      );
    if (
      code === undefined ||
      state === undefined ||
      code.length === 0 ||
      code.length > 500 ||
      state.length === 0 ||
      state.length > 200
    )
      return context.html(
        installPage(
          "Not installed",
          "This page is Slack's redirect after an install and needs its code and state; start the install again from Roost.",
        ),
        400,
      );
    try {
      const workspace = await deps.links.finishInstall(
        botId,
        { code, state },
        deps.publicUrl ?? new URL(context.req.url).origin,
      );
      return context.html(
        installPage(
          "Installed",
          `The bot is installed in the Slack workspace ${workspace.name}. You can close this page.`,
        ),
      );
    } catch (error) {
      if (error instanceof RoostError && error.code === "invalid_request")
        return context.html(installPage("Not installed", error.message), 400);
      throw error;
    }
  });

  app.post("/v1/slack/:botId/interactions", async (context) => {
    const botId = context.req.param("botId");
    limiter.take(botId); // SAPI3
    const body = await context.req.text();
    const ok = await deps.events.authenticate(botId, body, signed(context));
    if (ok === undefined)
      throw new RoostError(
        "unauthenticated",
        "the request's x-slack-signature does not match this bot's signing secret, or its timestamp is stale",
      );
    await deps.interactions?.(botId, body);
    return context.body(null, 200);
  });
}

/** The link's own routes, behind the API token. */
export function registerSlackRoutes(app: SlackApp, deps: SlackRouteDependencies): void {
  const { store, links } = deps;
  const baseUrl = (context: Context) => deps.publicUrl ?? new URL(context.req.url).origin;
  /** SAPI1 */
  const ownBot = async (context: Context<{ Variables: { account: Account } }>) => {
    const { bot, access } = await usableBotOf(
      store,
      context.get("account").id,
      context.req.param("id") ?? "",
    );
    if (access !== "owner")
      throw new RoostError(
        "forbidden",
        "only the bot's owner links it to Slack or reads its link; ask them",
      );
    return bot;
  };
  const body = linkBody(deps.insecureApiUrl);

  app.put("/v1/bots/:id/slack", async (context) => {
    const bot = await ownBot(context);
    const input = await readJson(context, body); // SAPI2, SAPI4
    const linked = await links.link(
      bot,
      {
        botToken: input.botToken ?? null,
        oauth:
          input.clientId === undefined || input.clientSecret === undefined
            ? null
            : { clientId: input.clientId, clientSecret: input.clientSecret },
        signingSecret: input.signingSecret,
        apiUrl: input.apiUrl ?? null,
        appToken: input.appToken ?? null,
      },
      baseUrl(context),
    );
    return context.json(linked satisfies Api.SlackLinked);
  });

  app.get("/v1/bots/:id/slack", async (context) => {
    const bot = await ownBot(context);
    const status = await links.status(bot.id, baseUrl(context));
    if (status === undefined)
      throw new RoostError(
        "not_found",
        `bot ${bot.id} is not linked to Slack (PUT /v1/bots/${bot.id}/slack links it)`,
      );
    return context.json(status satisfies Api.SlackLinkStatus);
  });

  app.delete("/v1/bots/:id/slack", async (context) => {
    const bot = await ownBot(context);
    await refuseBody(context, "DELETE /v1/bots/{id}/slack");
    if (!(await links.unlink(bot.id)))
      throw new RoostError("not_found", `bot ${bot.id} is not linked to Slack`);
    return context.body(null, 204);
  });

  /** SAPI5: starts an OAuth install: a redirect to Slack's authorize page with a fresh state. */
  app.get("/v1/slack/:id/install", async (context) => {
    const bot = await ownBot(context);
    const link = await store.getSlackLink(bot.id);
    if (link === undefined)
      throw new RoostError(
        "not_found",
        `bot ${bot.id} is not linked to Slack (PUT /v1/bots/${bot.id}/slack with clientId, clientSecret and signingSecret links it for OAuth install)`,
      );
    const url = await links.startInstall(link, context.get("account").id, baseUrl(context));
    // A page's script cannot read a redirect's target: it asks for the URL and goes there itself.
    if ((context.req.header("accept") ?? "").includes("application/json"))
      return context.json({ url });
    return context.redirect(url, 302);
  });

  app.get("/v1/bots/:id/slack/installs", async (context) => {
    const bot = await ownBot(context);
    const status = await links.status(bot.id, baseUrl(context));
    if (status?.oauth == null)
      throw new RoostError(
        "not_found",
        `bot ${bot.id} is not linked to Slack for OAuth install (PUT /v1/bots/${bot.id}/slack with clientId and clientSecret)`,
      );
    return context.json({ workspaces: status.oauth.workspaces });
  });

  app.delete("/v1/bots/:id/slack/installs/:teamId", async (context) => {
    const bot = await ownBot(context);
    await refuseBody(context, "DELETE /v1/bots/{id}/slack/installs/{teamId}");
    const teamId = context.req.param("teamId");
    if (!(await store.deleteSlackInstall(bot.id, teamId, context.get("account").id)))
      throw new RoostError(
        "not_found",
        `bot ${bot.id} has no install in the Slack workspace ${teamId.slice(0, 40)}`,
      );
    return context.body(null, 204);
  });

  /**
   * A Slack person's sign-in link, opened by the Roost account it will link (SLST3): answers a
   * code that the same Slack person sends to the bot to finish.
   */
  app.post("/v1/slack/people", async (context) => {
    const input = await readJson(context, personBody);
    const code = newConfirmCode();
    const opened = await store.openSlackLinkToken(
      hashPersonToken(input.token),
      context.get("account").id,
      hashPersonToken(code),
    );
    if (opened === undefined)
      throw new RoostError(
        "not_found",
        "this sign-in link was used, has expired or is unknown; send `link` to the bot in Slack for a new one",
      );
    return context.json({
      ...opened,
      code,
      expiresAt: new Date(deps.clock() + confirmCodeTtlMs).toISOString(),
      next: `send "confirm ${code}" to the bot in Slack, from the same Slack account, within ${confirmCodeTtlMs / 60_000} minutes`,
    } satisfies Api.SlackPersonOpened);
  });
}

export { slackEventsPath, slackInteractionsPath };
