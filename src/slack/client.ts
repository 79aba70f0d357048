/**
 * Calls to Slack's Web API through `@slack/web-api`'s WebClient (what Bolt's App uses), pointed
 * at the link's `apiUrl` (Bolt's `slackApiUrl`) so tests and self-hosted gateways can stand in.
 *
 * Invariants:
 *   SLK1 the client never retries or waits by itself (no retries, rate-limited calls rejected):
 *        the durable step that made the call decides (a rate limit or an outage is a retryable
 *        RoostError with Slack's `retry-after`; a revoked token or a missing scope is terminal).
 *   SLK2 a token never appears in an error's message (only Slack's error code and the method).
 */
import { ErrorCode, WebClient, type WebAPICallResult } from "@slack/web-api";
import { RoostError } from "../errors/index.ts";

/** A silent logger for the SDKs: their lines are not Roost's (and must never carry a token). */
export const quietSlackLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  setLevel: () => undefined,
  getLevel: () => "error" as never,
  setName: () => undefined,
};

/** Slack's own API, when a link names none. */
export const defaultSlackApiUrl = "https://slack.com/api/";

/** Slack errors that no retry fixes: the link's settings must change (docs/slack.md "Errors"). */
const terminalErrors: Record<string, string> = {
  invalid_auth: "the bot token is not valid; copy the Bot User OAuth Token again and PUT the link",
  not_authed: "no bot token was sent; PUT the link with the Bot User OAuth Token",
  token_revoked: "the bot token was revoked; reinstall the app and PUT the link with the new token",
  token_expired: "the bot token expired; reinstall the app and PUT the link with the new token",
  account_inactive: "the app's bot user is deactivated; reinstall the app and PUT the link again",
  missing_scope:
    "the app lacks a scope this call needs; add it (docs/slack.md has the manifest) and reinstall",
  not_in_channel: "the bot is not in that channel; invite it with /invite",
  channel_not_found: "the channel is gone or the bot cannot see it",
  invalid_code: "the install's code is unknown, used or expired; start the install again",
  bad_client_secret:
    "the client secret does not match the app; copy it again from Basic Information and PUT the link",
  invalid_client_id:
    "the client id is not the app's; copy it again from Basic Information and PUT the link",
  bad_redirect_uri:
    "the redirect URL is not in the app's OAuth & Permissions → Redirect URLs; add the one GET /v1/bots/{id}/slack shows",
};

/** A Slack call that failed; `slackError` is Slack's code (`missing_scope`, `ratelimited`…). */
export class SlackCallError extends RoostError {
  override readonly name = "SlackCallError";
  readonly slackError: string;
  readonly method: string;
  constructor(
    method: string,
    slackError: string,
    message: string,
    options: { retryAfterMs?: number; needed?: string } = {},
  ) {
    super(
      options.retryAfterMs !== undefined
        ? slackError === "ratelimited"
          ? "rate_limited"
          : "unavailable"
        : "forbidden",
      message,
      options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs },
    );
    this.slackError = slackError;
    this.method = method;
  }
}

export interface SlackClient {
  /** A Web API method (`chat.postMessage`…); answers Slack's JSON (its `ok` is true). */
  call<T = WebAPICallResult>(method: string, args: Record<string, unknown>): Promise<T>;
  /** files.uploadV2: files.getUploadURLExternal, the upload, files.completeUploadExternal. */
  uploadFile(input: {
    channel: string;
    threadTs: string | null;
    filename: string;
    content: string;
    initialComment: string;
  }): Promise<void>;
}

function slackError(method: string, error: unknown): SlackCallError {
  const code = (error as { code?: unknown }).code;
  if (code === ErrorCode.RateLimitedError) {
    const seconds = Number((error as { retryAfter?: unknown }).retryAfter ?? 1);
    return new SlackCallError(
      method,
      "ratelimited",
      `slack: ${method} was rate limited; retrying after ${seconds}s`,
      { retryAfterMs: Math.max(1, seconds) * 1000 },
    );
  }
  if (code === ErrorCode.PlatformError) {
    const data = (error as { data?: { error?: string; needed?: string } }).data ?? {};
    const name = data.error ?? "unknown_error";
    const hint = terminalErrors[name];
    const needed =
      name === "missing_scope" && data.needed !== undefined ? ` (needs ${data.needed})` : "";
    if (hint !== undefined)
      return new SlackCallError(
        method,
        name,
        `slack: ${method} answered ${name}${needed}: ${hint}`,
      );
    // Anything else Slack answers (internal_error, fatal_error, request_timeout…) may pass.
    return new SlackCallError(method, name, `slack: ${method} answered ${name}`, {
      retryAfterMs: 2000,
    });
  }
  if (code === ErrorCode.HTTPError) {
    const status = Number((error as { statusCode?: unknown }).statusCode);
    return new SlackCallError(
      method,
      `http_${status}`,
      `slack: ${method} answered HTTP ${status}`,
      {
        retryAfterMs: 2000,
      },
    );
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new SlackCallError(method, "unreachable", `slack: ${method} failed: ${reason}`, {
    retryAfterMs: 1000,
  });
}

/**
 * oauth.v2.access: exchanges an install's `code` for that workspace's bot token, through the
 * WebClient (no token of its own; the client id and secret authenticate it). SLK2: an error
 * names Slack's code only.
 */
export async function exchangeSlackOAuthCode(input: {
  apiUrl: string | null;
  clientId: string;
  clientSecret: string;
  code: string;
  redirectUri: string;
}): Promise<{
  accessToken: string;
  teamId: string;
  teamName: string;
  botUserId: string;
  scope: string;
}> {
  const apiUrl = input.apiUrl ?? defaultSlackApiUrl;
  const web = new WebClient(undefined, {
    slackApiUrl: apiUrl.endsWith("/") ? apiUrl : `${apiUrl}/`,
    retryConfig: { retries: 0 }, // SLK1
    rejectRateLimitedCalls: true,
    timeout: 10_000,
    logger: quietSlackLogger,
  });
  let answer: {
    access_token?: string;
    token_type?: string;
    bot_user_id?: string;
    scope?: string;
    team?: { id?: string; name?: string } | null;
  };
  try {
    answer = await web.oauth.v2.access({
      client_id: input.clientId,
      client_secret: input.clientSecret,
      code: input.code,
      redirect_uri: input.redirectUri,
    });
  } catch (error) {
    throw slackError("oauth.v2.access", error);
  }
  if (
    answer.token_type !== "bot" ||
    answer.access_token === undefined ||
    answer.bot_user_id === undefined ||
    answer.team?.id === undefined
  )
    throw new SlackCallError(
      "oauth.v2.access",
      "no_bot_token",
      "slack: oauth.v2.access answered no bot token; give the app a bot user and bot scopes (docs/slack.md has the manifest)",
    );
  return {
    accessToken: answer.access_token,
    teamId: answer.team.id,
    teamName: answer.team.name ?? answer.team.id,
    botUserId: answer.bot_user_id,
    scope: answer.scope ?? "",
  };
}

export function createSlackClient(options: { token: string; apiUrl: string | null }): SlackClient {
  const apiUrl = options.apiUrl ?? defaultSlackApiUrl;
  const web = new WebClient(options.token, {
    slackApiUrl: apiUrl.endsWith("/") ? apiUrl : `${apiUrl}/`,
    retryConfig: { retries: 0 }, // SLK1
    rejectRateLimitedCalls: true, // SLK1
    timeout: 10_000,
    logger: quietSlackLogger, // SLK2
  });
  return {
    async call(method, args) {
      try {
        return (await web.apiCall(method, args)) as never;
      } catch (error) {
        throw slackError(method, error); // SLK2: built from Slack's code, never the request
      }
    },
    async uploadFile(input) {
      try {
        await web.filesUploadV2({
          channel_id: input.channel,
          ...(input.threadTs === null ? {} : { thread_ts: input.threadTs }),
          filename: input.filename,
          content: input.content,
          initial_comment: input.initialComment,
        } as Parameters<WebClient["filesUploadV2"]>[0]);
      } catch (error) {
        throw slackError("files.uploadV2", error);
      }
    },
  };
}
