/**
 * The page's only way to the server: the documented HTTP API with a bearer token.
 * Errors become `ApiError` with the server's stable code and its fix-it message.
 */
import type {
  Bot,
  BotBudgetView,
  Budget,
  Computer,
  Conversation,
  InterruptResult,
  Listing,
  ListeningPorts,
  Me,
  PostedMessage,
  SkillDetail,
  SkillList,
  PreviewLink,
  Step,
} from "./types.ts";
import type { BotMemory, MemoryChangeResult, MemoryRevision, MemoryRevisionPage } from "./types.ts";
import type { Approval, ApprovalDecisionInput } from "./types.ts";
import type { PutSecretRequest, SecretList, SecretView } from "./types.ts";
import type { HelperList } from "./types.ts";
import type { Upload } from "./types.ts";
import type {
  AcceptedInvitation,
  SlackPersonOpened,
  CreatedInvitation,
  TeamDetail,
  TeamList,
  TeamMember,
  TeamRole,
} from "./types.ts";
import type {
  ConversationSeen,
  ConversationSearch,
  Draft,
  DraftList,
  NotificationList,
  NotificationsRead,
} from "./types.ts";

export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly status: number;
  /** The server's error code, or `network` when the server could not be reached. */
  readonly code: string;
  /** The error body's `details` (e.g. `issues`, or `provider` for a model without credentials). */
  readonly details: Record<string, unknown> | undefined;
  constructor(status: number, code: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
  /** Whether repeating the same request later may succeed. */
  get retryable(): boolean {
    return (
      this.code === "network" ||
      this.status === 429 ||
      this.status === 502 ||
      this.status === 503 ||
      this.status === 504
    );
  }
}

export const networkErrorMessage =
  "Can't reach the Roost server. Check that it is still running (npm start); this page keeps trying.";

/** Reads an error body `{error: {code, message}}`, falling back to the status line. */
export async function toApiError(response: Response): Promise<ApiError> {
  let code = `http_${response.status}`;
  let message = `The server answered ${response.status} ${response.statusText}.`;
  let details: Record<string, unknown> | undefined;
  try {
    const body = (await response.json()) as {
      error?: { code?: string; message?: string; details?: Record<string, unknown> };
    };
    if (typeof body.error?.code === "string") code = body.error.code;
    if (typeof body.error?.message === "string") message = body.error.message;
    if (typeof body.error?.details === "object") details = body.error.details;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message, details);
}

export interface ApiClientOptions {
  token: string;
  /** Called on any 401, so the app can ask for a new token. */
  onUnauthenticated?: () => void;
}

export function createApiClient(options: ApiClientOptions) {
  const { token } = options;
  const authorization = `Bearer ${token}`;

  async function send(
    method: string,
    path: string,
    init: {
      json?: unknown;
      body?: BodyInit;
      contentType?: string;
      accept?: string;
      signal?: AbortSignal;
    } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { authorization };
    if (init.contentType !== undefined) headers["content-type"] = init.contentType;
    if (init.accept !== undefined) headers.accept = init.accept;
    let body: BodyInit | undefined = init.body;
    if (init.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(init.json);
    }
    let response: Response;
    try {
      response = await fetch(path, { method, headers, body, signal: init.signal ?? null });
    } catch (error) {
      if (init.signal?.aborted === true) throw error;
      throw new ApiError(0, "network", networkErrorMessage);
    }
    if (!response.ok) {
      const error = await toApiError(response);
      if (response.status === 401) options.onUnauthenticated?.();
      throw error;
    }
    return response;
  }

  async function json<T>(
    method: string,
    path: string,
    init: { json?: unknown; body?: BodyInit; contentType?: string; signal?: AbortSignal } = {},
  ): Promise<T> {
    const response = await send(method, path, init);
    return (await response.json()) as T;
  }

  const enc = encodeURIComponent;

  return {
    token,
    authorization,
    send,
    me: (signal?: AbortSignal) => json<Me>("GET", "/v1/me", { signal }),
    listBots: async () => (await json<{ bots: Bot[] }>("GET", "/v1/bots")).bots,
    getBot: (id: string) => json<Bot>("GET", `/v1/bots/${enc(id)}`),
    /** The bot's budget with what it used today and this month (docs/usage.md). */
    botBudget: (id: string, signal?: AbortSignal) =>
      json<BotBudgetView>("GET", `/v1/bots/${enc(id)}/budget`, { signal }),
    setBotBudget: (id: string, budget: Budget) =>
      json<BotBudgetView>("PUT", `/v1/bots/${enc(id)}/budget`, { json: budget }),
    /** The bot's secrets: names and metadata, never values (docs/secrets.md). */
    listSecrets: (botId: string, signal?: AbortSignal) =>
      json<SecretList>("GET", `/v1/bots/${enc(botId)}/secrets`, { signal }),
    putSecret: (botId: string, name: string, value: string) =>
      json<SecretView>("PUT", `/v1/bots/${enc(botId)}/secrets/${enc(name)}`, {
        json: { value } satisfies PutSecretRequest,
      }),
    createBot: (input: {
      name: string;
      instructions: string;
      model: string | null;
      memoryReview?: boolean;
      skills?: string[] | null;
      notify?: boolean;
      teamId?: string | null;
      browserRecording?: boolean;
    }) => json<Bot>("POST", "/v1/bots", { json: input }),
    updateBot: (
      id: string,
      patch: {
        name?: string;
        instructions?: string;
        model?: string | null;
        memoryReview?: boolean;
        skills?: string[] | null;
        notify?: boolean;
        teamId?: string | null;
        browserRecording?: boolean;
      },
    ) => json<Bot>("PATCH", `/v1/bots/${enc(id)}`, { json: patch }),
    listConversations: async (botId?: string) =>
      (
        await json<{ conversations: Conversation[] }>(
          "GET",
          `/v1/conversations?limit=200${botId === undefined ? "" : `&botId=${enc(botId)}`}`,
        )
      ).conversations,
    /** The conversation's helpers (docs/helpers.md). */
    helpers: async (conversationId: string, signal?: AbortSignal) =>
      (
        await json<HelperList>("GET", `/v1/conversations/${enc(conversationId)}/helpers`, {
          signal,
        })
      ).helpers,
    getConversation: (id: string, signal?: AbortSignal) =>
      json<Conversation>("GET", `/v1/conversations/${enc(id)}`, { signal }),
    createConversation: (botId: string, title?: string) =>
      json<Conversation>("POST", "/v1/conversations", {
        json: title === undefined ? { botId } : { botId, title },
      }),
    sendMessage: (
      conversationId: string,
      text: string,
      clientMessageId: string,
      attachments: readonly string[] = [],
    ) =>
      json<PostedMessage>("POST", `/v1/conversations/${enc(conversationId)}/messages`, {
        json:
          attachments.length === 0
            ? { text, clientMessageId }
            : { text, clientMessageId, attachments },
      }),
    /** A file to attach to a message (docs/uploads.md); send its id with the message. */
    upload: (conversationId: string, name: string, file: Blob, type: string) =>
      json<Upload>("POST", `/v1/conversations/${enc(conversationId)}/uploads?name=${enc(name)}`, {
        body: file,
        contentType: type,
      }),
    renameConversation: (id: string, title: string) =>
      json<Conversation>("PATCH", `/v1/conversations/${enc(id)}`, { json: { title } }),
    deleteConversation: async (id: string) => {
      await send("DELETE", `/v1/conversations/${enc(id)}`);
    },
    /** Titles, messages and replies of the caller's conversations (docs/api.md "Search"). */
    searchConversations: (q: string, signal?: AbortSignal) =>
      json<ConversationSearch>("GET", `/v1/conversations/search?q=${enc(q)}&limit=20`, {
        signal,
      }),
    /** A new branch that asks the last message again (docs/api.md "Branches"). */
    regenerate: (conversationId: string, clientMessageId: string) =>
      json<PostedMessage>("POST", `/v1/conversations/${enc(conversationId)}/regenerate`, {
        json: { clientMessageId },
      }),
    /** A new branch from an edited message. */
    editMessage: (
      conversationId: string,
      messageId: string,
      text: string,
      clientMessageId: string,
    ) =>
      json<PostedMessage>(
        "POST",
        `/v1/conversations/${enc(conversationId)}/messages/${enc(messageId)}/edit`,
        { json: { text, clientMessageId } },
      ),
    /** Stops the conversation's running turn; `interrupted` is false when none was running. */
    interrupt: (conversationId: string, options: { stopHelpers?: boolean } = {}) =>
      json<InterruptResult>("POST", `/v1/conversations/${enc(conversationId)}/interrupt`, {
        json: options.stopHelpers === true ? { stopHelpers: true } : {},
      }),
    listSteps: (conversationId: string, after: number, limit: number, signal?: AbortSignal) =>
      json<{ steps: Step[]; lastSeq: number }>(
        "GET",
        `/v1/conversations/${enc(conversationId)}/steps?after=${after}&limit=${limit}`,
        {
          signal,
        },
      ),
    eventsUrl: (conversationId: string) => `/v1/conversations/${enc(conversationId)}/events`,
    computer: (signal?: AbortSignal) => json<Computer>("GET", "/v1/computers/me", { signal }),
    wakeComputer: () => json<Computer>("POST", "/v1/computers/me/wake"),
    sleepComputer: () => json<Computer>("POST", "/v1/computers/me/sleep"),
    listFiles: (path: string, signal?: AbortSignal, page?: { limit: number; cursor?: string }) =>
      json<Listing>(
        "GET",
        `/v1/computers/me/files?path=${enc(path)}${page === undefined ? "" : `&limit=${page.limit}${page.cursor === undefined ? "" : `&cursor=${enc(page.cursor)}`}`}`,
        { signal },
      ),
    deleteFile: (path: string, recursive = false) =>
      json<unknown>(
        "DELETE",
        `/v1/computers/me/files?path=${enc(path)}${recursive ? "&recursive=true" : ""}`,
      ),
    renameFile: (from: string, to: string) =>
      json<unknown>("POST", "/v1/computers/me/files/rename", { json: { from, to } }),
    makeFolder: (path: string) =>
      json<unknown>("POST", "/v1/computers/me/files/mkdir", { json: { path } }),
    downloadFile: async (path: string) =>
      (await send("GET", `/v1/computers/me/files/content?path=${enc(path)}`)).blob(),
    /** An attachment's bytes (GET /v1/conversations/{id}/attachments/{attachmentId}). */
    attachment: async (conversationId: string, attachmentId: string, signal?: AbortSignal) =>
      (
        await send(
          "GET",
          `/v1/conversations/${enc(conversationId)}/attachments/${enc(attachmentId)}`,
          { signal },
        )
      ).blob(),
    uploadFile: async (path: string, file: Blob) => {
      await send("PUT", `/v1/computers/me/files/content?path=${enc(path)}`, { body: file });
    },

    // Memory (docs/api.md "Memory"): a bot's facts, and the account's user facts under /v1/me.
    // `scope` picks the owner: "bot" is the bot's own memory, "user" the facts all its bots share.
    memory: (botId: string, signal?: AbortSignal) =>
      json<BotMemory>("GET", `/v1/bots/${enc(botId)}/memory`, { signal }),
    memoryRevisions: (
      scope: MemoryScope,
      query: { before?: string; limit?: number; status?: MemoryRevision["status"] } = {},
      signal?: AbortSignal,
    ) => {
      const search = new URLSearchParams();
      for (const [key, value] of Object.entries(query))
        if (value !== undefined) search.set(key, String(value));
      const suffix = search.size === 0 ? "" : `?${search.toString()}`;
      return json<MemoryRevisionPage>("GET", `${memoryBase(scope)}/revisions${suffix}`, {
        signal,
      });
    },
    addMemory: (
      scope: MemoryScope,
      input: { tier: string; text: string; expiresInHours?: number },
    ) =>
      json<MemoryChangeResult>("POST", memoryBase(scope), {
        // The user tier is implied by /v1/me/memory, which takes only the text.
        json: scope.kind === "user" ? { text: input.text } : input,
      }),
    editMemory: (scope: MemoryScope, factId: string, text: string) =>
      json<MemoryChangeResult>("PATCH", `${memoryBase(scope)}/${enc(factId)}`, { json: { text } }),
    removeMemory: (scope: MemoryScope, factId: string) =>
      json<MemoryChangeResult>("DELETE", `${memoryBase(scope)}/${enc(factId)}`),
    /** Revert an applied revision, or accept or reject a proposed one. */
    decideMemory: (
      scope: MemoryScope,
      revisionId: string,
      action: "revert" | "accept" | "reject",
    ) =>
      json<MemoryChangeResult>(
        "POST",
        `${memoryBase(scope)}/revisions/${enc(revisionId)}/${action}`,
      ),
    listSkills: (signal?: AbortSignal) => json<SkillList>("GET", "/v1/skills", { signal }),
    /** Teams (docs/teams.md). */
    listTeams: async (signal?: AbortSignal) =>
      (await json<TeamList>("GET", "/v1/teams", { signal })).teams,
    getTeam: (id: string, signal?: AbortSignal) =>
      json<TeamDetail>("GET", `/v1/teams/${enc(id)}`, { signal }),
    createTeam: (name: string) => json<TeamDetail>("POST", "/v1/teams", { json: { name } }),
    putTeamMember: (id: string, accountId: string, role: TeamRole) =>
      json<{ members: TeamMember[] }>("POST", `/v1/teams/${enc(id)}/members`, {
        json: { accountId, role },
      }),
    removeTeamMember: async (id: string, accountId: string) => {
      await send("DELETE", `/v1/teams/${enc(id)}/members`, { json: { accountId } });
    },
    createInvitation: (id: string, role: TeamRole) =>
      json<CreatedInvitation>("POST", `/v1/teams/${enc(id)}/invitations`, { json: { role } }),
    acceptInvitation: (token: string) =>
      json<AcceptedInvitation>("POST", `/v1/invitations/${enc(token)}/accept`),
    openSlackLink: (token: string) =>
      json<SlackPersonOpened>("POST", "/v1/slack/people", { json: { token } }),
    getSkill: (name: string, signal?: AbortSignal) =>
      json<SkillDetail>("GET", `/v1/skills/${enc(name)}`, { signal }),
    createSkill: (input: { name: string; description: string; body: string }) =>
      json<SkillDetail>("POST", "/v1/skills", { json: input }),
    updateSkill: (name: string, patch: { description?: string; body?: string }) =>
      json<SkillDetail>("PATCH", `/v1/skills/${enc(name)}`, { json: patch }),
    deleteSkill: async (name: string) => {
      await send("DELETE", `/v1/skills/${enc(name)}`);
    },
    /** A skill's folder as a .zip, .tar or .tar.gz: a new skill, or (with `name`) its new files. */
    uploadSkill: (file: File, name?: string) =>
      json<SkillDetail>(
        name === undefined ? "POST" : "PUT",
        name === undefined ? "/v1/skills" : `/v1/skills/${enc(name)}/archive`,
        { body: file, contentType: archiveType(file.name) },
      ),
    skillFile: async (name: string, path: string, signal?: AbortSignal) =>
      (
        await send("GET", `/v1/skills/${enc(name)}/files/${path.split("/").map(enc).join("/")}`, {
          signal,
        })
      ).arrayBuffer(),
    /** The TCP ports listening inside the awake computer (`computer_asleep` while it sleeps). */
    listPorts: (signal?: AbortSignal) =>
      json<ListeningPorts>("GET", "/v1/computers/me/ports", { signal }),
    // Results (docs/results.md): drafts, notifications, what the owner has read, the account stream.
    getDraft: (id: string, signal?: AbortSignal) =>
      json<Draft>("GET", `/v1/drafts/${enc(id)}`, { signal }),
    sendDraft: (id: string) => json<Draft>("POST", `/v1/drafts/${enc(id)}/send`),
    getApproval: (id: string, signal?: AbortSignal) =>
      json<Approval>("GET", `/v1/approvals/${enc(id)}`, { signal }),
    decideApproval: (id: string, input: ApprovalDecisionInput) =>
      json<Approval>("POST", `/v1/approvals/${enc(id)}`, { json: input }),
    discardDraft: (id: string) => json<Draft>("POST", `/v1/drafts/${enc(id)}/discard`),
    conversationDrafts: (conversationId: string) =>
      json<DraftList>("GET", `/v1/conversations/${enc(conversationId)}/drafts`),
    notifications: (unread = false) =>
      json<NotificationList>("GET", `/v1/notifications${unread ? "?unread=true" : ""}`),
    markNotificationsRead: (
      which: { ids: string[] } | { conversationId: string } | { all: true },
    ) => json<NotificationsRead>("POST", "/v1/notifications/read", { json: which }),
    markSeen: (conversationId: string, seq: number) =>
      json<ConversationSeen>("POST", `/v1/conversations/${enc(conversationId)}/seen`, {
        json: { seq },
      }),
    accountEventsUrl: "/v1/events",
    /** A short-lived link that opens the port's preview in a browser, on a host of its own. */
    previewLink: (port: number) =>
      json<PreviewLink>("POST", "/v1/computers/me/preview-links", { json: { port } }),
  };
}

export type ApiClient = ReturnType<typeof createApiClient>;

/** Whose memory a call acts on: one bot's own, or the account's user facts. */
export type MemoryScope = { kind: "bot"; botId: string } | { kind: "user" };

function memoryBase(scope: MemoryScope): string {
  return scope.kind === "user"
    ? "/v1/me/memory"
    : `/v1/bots/${encodeURIComponent(scope.botId)}/memory`;
}

/** The media type the skills API expects for an archive, from its file name. */
export function archiveType(fileName: string): string {
  const lower = fileName.toLowerCase();
  if (lower.endsWith(".zip")) return "application/zip";
  if (lower.endsWith(".tar")) return "application/x-tar";
  return "application/gzip"; // .tar.gz, .tgz
}

/** `GET /auth/local`: the embedded install's token for a page opened on this computer, or undefined. */
export async function fetchLocalToken(): Promise<string | undefined> {
  try {
    const response = await fetch("/auth/local", { headers: { accept: "application/json" } });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { token?: unknown };
    return typeof body.token === "string" && body.token !== "" ? body.token : undefined;
  } catch {
    return undefined;
  }
}
