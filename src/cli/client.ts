/**
 * A typed client for Roost's HTTP API (docs/api.md) over `fetch`. The CLI talks to Roost only
 * through this module; tests use it too. It knows the wire format, nothing of the server's code.
 */
import type { Api } from "../protocol/index.ts";
import { readSse } from "./sse.ts";

/** The API answered with its error envelope `{error: {code, message, details?}}`. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  constructor(status: number, code: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** Roost could not be reached at all (nothing listening, DNS, reset before an answer). */
export class ConnectionError extends Error {
  override readonly name = "ConnectionError";
  readonly url: string;
  constructor(url: string, cause: unknown) {
    const code = causeCode(cause);
    super(
      code === "ECONNREFUSED"
        ? `cannot reach Roost at ${url} — is it running? (start it with npm start)`
        : `cannot reach Roost at ${url}: ${code ?? innermostMessage(cause)} — is the URL right? (set --url or ROOST_URL)`,
      { cause },
    );
    this.url = url;
  }
}

function innermostMessage(error: unknown): string {
  let current = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}

function causeCode(error: unknown): string | undefined {
  for (let current: unknown = error; current instanceof Error; current = current.cause) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    // AggregateError (IPv4 and IPv6 both refused) keeps the codes in `errors`.
    if (current instanceof AggregateError) {
      const first: unknown = current.errors[0];
      const inner = (first as { code?: unknown } | undefined)?.code;
      if (typeof inner === "string") return inner;
    }
  }
  return undefined;
}

export interface ClientOptions {
  /** Base URL of Roost, e.g. `http://127.0.0.1:7700`. */
  url: string;
  token: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

export interface RoostClient {
  readonly url: string;
  me(): Promise<Api.Me>;
  listBots(): Promise<Api.Bot[]>;
  getBot(id: string): Promise<Api.Bot>;
  createBot(input: {
    name: string;
    instructions?: string;
    model?: string | null;
  }): Promise<Api.Bot>;
  updateBot(
    id: string,
    patch: { name?: string; instructions?: string; model?: string | null },
  ): Promise<Api.Bot>;
  listConversations(query?: { botId?: string; limit?: number }): Promise<Api.Conversation[]>;
  getConversation(id: string): Promise<Api.Conversation>;
  createConversation(input: { botId: string; title?: string }): Promise<Api.Conversation>;
  /** `PATCH /v1/conversations/{id}`: renames it. */
  renameConversation(id: string, title: string): Promise<Api.Conversation>;
  /** `DELETE /v1/conversations/{id}`: deletes it with its messages and steps. */
  deleteConversation(id: string): Promise<void>;
  postMessage(
    conversationId: string,
    input: { text: string; clientMessageId: string },
  ): Promise<Api.PostedMessage>;
  /** Stops the conversation's running turn; `interrupted` is false when none was running. */
  interrupt(conversationId: string): Promise<Api.InterruptResult>;
  listSteps(
    conversationId: string,
    query?: { after?: number; limit?: number },
  ): Promise<{ steps: Api.Step[]; lastSeq: number }>;
  /**
   * Opens the conversation's event stream. Resolves once the server answered (so the
   * subscription exists); the iterator ends when the server closes the stream.
   */
  openEvents(
    conversationId: string,
    signal?: AbortSignal,
  ): Promise<AsyncGenerator<Api.StreamEvent>>;
  /** `GET /v1/computers/me/files?path=` (wakes the computer). */
  listFiles(path?: string): Promise<Api.Listing>;
  /** `GET /v1/computers/me/files/content?path=`: the file's bytes as they arrive. */
  downloadFile(
    path: string,
    signal?: AbortSignal,
  ): Promise<{ size: number | undefined; body: ReadableStream<Uint8Array> }>;
  /** `PUT /v1/computers/me/files/content?path=` with the file's bytes. */
  uploadFile(path: string, bytes: Uint8Array): Promise<Api.FileUploaded>;
  createAccount(
    name: string,
  ): Promise<{ account: { id: string; name: string; isAdmin: boolean }; token: string }>;
  /** `GET /v1/approvals` (newest first), optionally of one state. */
  listApprovals(state?: Api.ApprovalState): Promise<Api.Approval[]>;
  /** `POST /v1/approvals/{id}`. */
  decideApproval(id: string, input: Api.ApprovalDecisionInput): Promise<Api.Approval>;
  /** `accountId` "me" is the calling account. */
  createToken(
    accountId: string,
    name?: string,
  ): Promise<{ id: string; accountId: string; token: string }>;
}

export function createClient(options: ClientOptions): RoostClient {
  const base = options.url.replace(/\/+$/, "");
  const fetchImpl = options.fetch ?? globalThis.fetch;

  async function send(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${options.token}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    try {
      return await fetchImpl(`${base}${path}`, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        signal: signal ?? null,
      });
    } catch (error) {
      if (signal?.aborted === true) throw error;
      throw new ConnectionError(base, error);
    }
  }

  async function sendBytes(path: string, bytes: Uint8Array): Promise<Response> {
    try {
      return await fetchImpl(`${base}${path}`, {
        method: "PUT",
        headers: {
          authorization: `Bearer ${options.token}`,
          "content-type": "application/octet-stream",
        },
        body: bytes,
      });
    } catch (error) {
      throw new ConnectionError(base, error);
    }
  }

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    return decode<T>(await send(method, path, body), method, path);
  }

  async function decode<T>(response: Response, method: string, path: string): Promise<T> {
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      throw new ApiError(
        response.status,
        "bad_response",
        `${method} ${path} answered ${response.status} with a body that is not JSON — is ${base} a Roost server?`,
      );
    }
    if (!response.ok) throw toApiError(response.status, parsed, `${method} ${path}`);
    return parsed as T;
  }

  const segment = encodeURIComponent;

  return {
    url: base,
    me: () => call("GET", "/v1/me"),
    listBots: async () => (await call<{ bots: Api.Bot[] }>("GET", "/v1/bots")).bots,
    getBot: (id) => call("GET", `/v1/bots/${segment(id)}`),
    listApprovals: async (state) =>
      (
        await call<Api.ApprovalList>(
          "GET",
          `/v1/approvals${state === undefined ? "" : `?state=${segment(state)}`}`,
        )
      ).approvals,
    decideApproval: (id, input) => call("POST", `/v1/approvals/${segment(id)}`, input),
    createBot: (input) => call("POST", "/v1/bots", input),
    updateBot: (id, patch) => call("PATCH", `/v1/bots/${segment(id)}`, patch),
    listConversations: async (query = {}) =>
      (
        await call<{ conversations: Api.Conversation[] }>(
          "GET",
          `/v1/conversations${queryString(query)}`,
        )
      ).conversations,
    getConversation: (id) => call("GET", `/v1/conversations/${segment(id)}`),
    createConversation: (input) => call("POST", "/v1/conversations", input),
    renameConversation: (id, title) => call("PATCH", `/v1/conversations/${segment(id)}`, { title }),
    deleteConversation: async (id) => {
      await call("DELETE", `/v1/conversations/${segment(id)}`);
    },
    postMessage: (conversationId, input) =>
      call("POST", `/v1/conversations/${segment(conversationId)}/messages`, input),
    interrupt: (conversationId) =>
      call("POST", `/v1/conversations/${segment(conversationId)}/interrupt`, {}),
    listSteps: (conversationId, query = {}) =>
      call("GET", `/v1/conversations/${segment(conversationId)}/steps${queryString(query)}`),
    async openEvents(conversationId, signal) {
      const path = `/v1/conversations/${segment(conversationId)}/events`;
      const response = await send("GET", path, undefined, signal);
      if (!response.ok || response.body === null) {
        const text = await response.text();
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        throw toApiError(response.status, parsed, `GET ${path}`);
      }
      return decodeEvents(readSse(response.body));
    },
    listFiles: (path) => call("GET", `/v1/computers/me/files${queryString({ path })}`),
    async downloadFile(path, signal) {
      const route = `/v1/computers/me/files/content${queryString({ path })}`;
      const response = await send("GET", route, undefined, signal);
      if (!response.ok || response.body === null) {
        await decode(response, "GET", route); // throws the API's error
        throw new ApiError(response.status, "bad_response", `GET ${route} answered without a body`);
      }
      const length = response.headers.get("content-length");
      return {
        size: length === null ? undefined : Number(length),
        body: response.body,
      };
    },
    async uploadFile(path, bytes) {
      const route = `/v1/computers/me/files/content${queryString({ path })}`;
      return decode(await sendBytes(route, bytes), "PUT", route);
    },
    createAccount: (name) => call("POST", "/v1/accounts", { name }),
    createToken: (accountId, name) =>
      call("POST", `/v1/accounts/${segment(accountId)}/tokens`, name === undefined ? {} : { name }),
  };
}

function queryString(query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query))
    if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

function toApiError(status: number, body: unknown, what: string): ApiError {
  const error = (
    body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined
  )?.error;
  if (error !== undefined && typeof error.code === "string" && typeof error.message === "string") {
    const details =
      typeof error.details === "object" && error.details !== null
        ? (error.details as Record<string, unknown>)
        : undefined;
    return new ApiError(status, error.code, error.message, details);
  }
  return new ApiError(
    status,
    "bad_response",
    `${what} answered ${status} without Roost's error envelope`,
  );
}

async function* decodeEvents(
  messages: AsyncGenerator<{ event: string; data: string }>,
): AsyncGenerator<Api.StreamEvent> {
  for await (const message of messages) {
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      continue; // Not ours to understand; events are hints, the steps are the record.
    }
    if (typeof data !== "object" || data === null) continue;
    const fields = data as Record<string, unknown>;
    switch (message.event) {
      case "hello":
      case "changed":
        if (typeof fields.seq !== "number") continue;
        if (message.event === "hello")
          yield {
            type: "hello",
            seq: fields.seq,
            state: fields.state === "working" ? "working" : "idle",
          };
        else yield { type: "changed", seq: fields.seq };
        break;
      case "delta":
        if (typeof fields.text === "string" && typeof fields.turnId === "string")
          yield {
            type: "delta",
            turnId: fields.turnId,
            text: fields.text,
            ...(fields.reset === true ? { reset: true as const } : {}),
          };
        break;
      case "turn":
        yield {
          type: "turn",
          state: fields.state === "working" ? "working" : "idle",
          turnId: typeof fields.turnId === "string" ? fields.turnId : null,
        };
        break;
      case "tool-output":
        if (typeof fields.callId === "string" && typeof fields.data === "string") {
          yield {
            type: "tool-output",
            callId: fields.callId,
            stream: fields.stream === "stderr" ? "stderr" : "stdout",
            data: fields.data,
          };
        }
        break;
      case "computer":
        if (typeof fields.computerId === "string" && isComputerState(fields.state)) {
          yield { type: "computer", computerId: fields.computerId, state: fields.state };
        }
        break;
      default:
        break; // Newer servers may send more event types; ignore them.
    }
  }
}

const computerStates = new Set<unknown>([
  "asleep",
  "waking",
  "awake",
  "sleeping",
  "failed",
  "connected",
  "disconnected",
] satisfies Api.ComputerState[]);

function isComputerState(value: unknown): value is Api.ComputerState {
  return computerStates.has(value);
}
