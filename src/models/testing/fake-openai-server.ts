/**
 * A small real HTTP server on 127.0.0.1 that speaks the OpenAI `/v1/chat/completions` wire
 * format, for tests of anything that calls a model (no module mocks: the AI SDK's real HTTP
 * client talks to this over a real socket). It plays OpenAI itself (`flavor: "openai"`) or an
 * OpenAI-compatible server such as Ollama or vLLM (`flavor: "openai-compatible"`, the default).
 *
 * Invariants:
 * F1 Streaming replies follow the real wire format: `data: {chat.completion.chunk}` SSE lines, tool
 *    call arguments split across chunks, a usage chunk only when the request asked for it with
 *    `stream_options.include_usage`, then `data: [DONE]`.
 * F2 Requests are checked as the real API checks them, and refused with its status and error body
 *    (`{ error: { message, type, param, code } }`), see `checkChatCompletion` (FAKE2):
 *    - both flavors: a `model` and a non-empty `messages` array; each `tool` message answers a
 *      `tool_calls` id of the assistant message before its run of tool messages; each of those ids
 *      is answered before the next non-tool message; images only in `user` messages, as
 *      `data:image/…;base64,` URLs whose bytes are that image type;
 *    - `openai` only: `Authorization: Bearer <key>` (the given key, when one is set), tool call
 *      ids of at most 40 characters, function names matching `^[a-zA-Z0-9_-]{1,64}$`.
 */
import type { ServerResponse } from "node:http";
import {
  argumentsText,
  createChunkWriter,
  finishReasonOf,
  dataUrlImageMatches,
  isRecord,
  splitInto,
  startFakeProviderServer,
  supportedImageTypes,
  usageOf,
} from "./fake-provider-server.ts";
import type {
  FakeCompletionReply,
  FakeErrorReply,
  FakeHandler,
  FakeProviderRequest,
  FakeProviderServer,
  FakeReply,
} from "./fake-provider-server.ts";

export {
  fakeTextReply,
  type FakeCompletionReply,
  type FakeErrorReply,
  type FakeHangUpReply,
  type FakeToolCall,
} from "./fake-provider-server.ts";

/** The fields of a chat completion request body that tests usually look at. */
export interface FakeChatCompletionBody {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: Array<Record<string, unknown>>;
  tools?: Array<{
    type: string;
    function: { name: string; description?: string; parameters?: unknown };
  }>;
  [key: string]: unknown;
}

export type FakeOpenAiRequest = FakeProviderRequest<FakeChatCompletionBody>;
export type FakeOpenAiReply = FakeReply;
export type FakeOpenAiHandler = FakeHandler<FakeChatCompletionBody>;
export type FakeOpenAiServer = FakeProviderServer<FakeChatCompletionBody>;

/** Options for `startFakeOpenAiServer`. */
export interface FakeOpenAiServerOptions {
  /** Which server to play (F2). @default "openai-compatible" */
  flavor?: "openai" | "openai-compatible";
  /** The only API key accepted; any key (or, for openai-compatible, none) when unset. */
  apiKey?: string;
  /** Served at `GET /v1/models` in OpenAI's list format (with the same key check). @default none: 404 */
  models?: string[];
}

/** OpenAI's limit on tool call ids. */
export const openAiMaxCallIdLength = 40;

const statusMessages: Record<number, string> = {
  400: "Invalid request",
  401: "Incorrect API key provided",
  403: "You are not allowed to use this model",
  404: "The model does not exist",
  408: "Request timed out",
  409: "Conflict",
  429: "Rate limit reached",
  500: "The server had an error while processing your request",
  502: "Bad gateway",
  503: "The engine is currently overloaded",
};

function errorTypeFor(status: number): string {
  if (status === 429) return "requests";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

function writeOpenAiError(response: ServerResponse, reply: FakeErrorReply): void {
  const message = reply.message ?? statusMessages[reply.status] ?? `HTTP ${reply.status}`;
  response.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
  response.end(
    JSON.stringify({
      error: {
        message,
        type: reply.errorType ?? errorTypeFor(reply.status),
        param: reply.param ?? null,
        code: reply.code ?? null,
      },
    }),
  );
}

function invalid(
  message: string,
  param: string | null,
  code: string | null = null,
): FakeErrorReply {
  return { type: "error", status: 400, message, errorType: "invalid_request_error", param, code };
}

function tooLong(param: string, length: number): FakeErrorReply {
  return invalid(
    `Invalid '${param}': string too long. Expected a string with maximum length ${openAiMaxCallIdLength}, but got a string with length ${length} instead.`,
    param,
    "string_above_max_length",
  );
}

/** The checks on the content parts of one message (F2). */
function checkContentParts(
  message: Record<string, unknown>,
  index: number,
  role: string,
): FakeErrorReply | undefined {
  if (!Array.isArray(message.content)) return undefined;
  for (const [partIndex, part] of (message.content as unknown[]).entries()) {
    if (!isRecord(part) || part.type !== "image_url") continue;
    if (role !== "user") {
      return invalid(
        `Invalid 'messages[${index}]'. Image URLs are only allowed for messages with role 'user', but this message with role '${role}' contains an image URL.`,
        `messages[${index}]`,
      );
    }
    if (!dataUrlImageMatches(isRecord(part.image_url) ? part.image_url.url : undefined)) {
      return invalid(
        `You uploaded an unsupported image. Please make sure your image has of one the following formats: [${supportedImageTypes.map((type) => `'${type.slice(6)}'`).join(", ")}].`,
        `messages[${index}].content[${partIndex}].image_url`,
        "invalid_image_format",
      );
    }
  }
  return undefined;
}

/** Checks a chat completion request the way OpenAI (or a compatible server) does (F2). */
export function checkChatCompletion(
  request: FakeOpenAiRequest,
  flavor: "openai" | "openai-compatible",
  apiKey: string | undefined,
): FakeErrorReply | undefined {
  if (request.method !== "POST" || request.path !== "/v1/chat/completions") {
    return {
      type: "error",
      status: 404,
      message: `Invalid URL (${request.method} ${request.path})`,
      errorType: "invalid_request_error",
    };
  }
  const refused = checkKey(request, flavor, apiKey);
  if (refused !== undefined) return refused;
  const body = request.body;
  if (body === undefined) {
    return invalid(
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.)",
      null,
    );
  }
  return checkBody(body, flavor);
}

/** OpenAI's key check: a Bearer key, and the given one when set. */
function checkKey(
  request: FakeOpenAiRequest,
  flavor: "openai" | "openai-compatible",
  apiKey: string | undefined,
): FakeErrorReply | undefined {
  const authorization = request.headers.authorization;
  const key = authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined;
  if ((flavor === "openai" && key === undefined) || (apiKey !== undefined && key !== apiKey)) {
    return key === undefined
      ? {
          type: "error",
          status: 401,
          message:
            "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          errorType: "invalid_request_error",
        }
      : {
          type: "error",
          status: 401,
          message: `Incorrect API key provided: ${key.slice(0, 3)}***${key.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          errorType: "invalid_request_error",
          code: "invalid_api_key",
        };
  }
  return undefined;
}

function checkBody(
  body: FakeChatCompletionBody,
  flavor: "openai" | "openai-compatible",
): FakeErrorReply | undefined {
  if (typeof body.model !== "string" || body.model === "") {
    return invalid("you must provide a model parameter", null);
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return invalid("[] is too short - 'messages'", "messages", "empty_array");
  }
  if (flavor === "openai") {
    for (const [index, tool] of (body.tools ?? []).entries()) {
      if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.function.name)) {
        return invalid(
          `Invalid 'tools[${index}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
          `tools[${index}].function.name`,
          "invalid_value",
        );
      }
    }
  }

  // The tool_calls ids of the last assistant message, not yet answered; `undefined` once a
  // non-tool message has closed the run.
  let open: { ids: Set<string>; index: number } | undefined;
  let sawToolCalls = false;
  for (const [index, message] of body.messages.entries()) {
    const role = typeof message.role === "string" ? message.role : "";
    const contentProblem = checkContentParts(message, index, role);
    if (contentProblem !== undefined) return contentProblem;
    if (role === "tool") {
      const callId = message.tool_call_id;
      if (typeof callId !== "string") {
        return invalid(
          `Missing required parameter: 'messages[${index}].tool_call_id'.`,
          `messages[${index}].tool_call_id`,
          "missing_required_parameter",
        );
      }
      if (flavor === "openai" && callId.length > openAiMaxCallIdLength) {
        return tooLong(`messages[${index}].tool_call_id`, callId.length);
      }
      if (!sawToolCalls) {
        return invalid(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${index}].role`,
        );
      }
      if (open === undefined || !open.ids.has(callId)) {
        return invalid(
          `Invalid parameter: 'tool_call_id' of '${callId}' not found in 'tool_calls' of previous message.`,
          `messages.[${index}].tool_call_id`,
        );
      }
      open.ids.delete(callId);
      continue;
    }
    if (open !== undefined && open.ids.size > 0) {
      return invalid(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open.ids].join(", ")}`,
        `messages.[${index}].role`,
      );
    }
    open = undefined;
    sawToolCalls = false;
    if (role === "assistant" && Array.isArray(message.tool_calls)) {
      const ids = new Set<string>();
      for (const [callIndex, call] of (message.tool_calls as unknown[]).entries()) {
        const id = isRecord(call) ? call.id : undefined;
        if (typeof id !== "string") continue;
        if (flavor === "openai" && id.length > openAiMaxCallIdLength) {
          return tooLong(`messages[${index}].tool_calls[${callIndex}].id`, id.length);
        }
        ids.add(id);
      }
      open = { ids, index };
      sawToolCalls = true;
    }
  }
  if (open !== undefined && open.ids.size > 0) {
    return invalid(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open.ids].join(", ")}`,
      `messages.[${open.index + 1}].role`,
    );
  }
  return undefined;
}

function openAiUsage(reply: FakeCompletionReply): Record<string, unknown> {
  const usage = usageOf(reply);
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    // As OpenAI reports prompt caching: the cached part of prompt_tokens.
    ...(usage.cachedTokens === undefined
      ? {}
      : { prompt_tokens_details: { cached_tokens: usage.cachedTokens } }),
  };
}

function writeJson(
  response: ServerResponse,
  reply: FakeCompletionReply,
  body: FakeChatCompletionBody,
): void {
  const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_${index}`,
    type: "function",
    function: { name: call.name, arguments: argumentsText(call) },
  }));
  const text = (reply.textChunks ?? []).join("");
  response.writeHead(200, { "content-type": "application/json" });
  response.end(
    JSON.stringify({
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 1_700_000_000,
      model: body.model ?? "fake-model",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: text === "" ? null : text,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          finish_reason: finishReasonOf(reply),
        },
      ],
      usage: openAiUsage(reply),
    }),
  );
}

async function writeStream(
  response: ServerResponse,
  reply: FakeCompletionReply,
  body: FakeChatCompletionBody,
): Promise<void> {
  const send = createChunkWriter(response, reply.chunkDelayMs);
  const model = body.model ?? "fake-model";
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
    `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 1_700_000_000, model, choices, ...extra })}\n\n`;
  const delta = (value: Record<string, unknown>, finishReason: string | null = null): string =>
    chunk([{ index: 0, delta: value, finish_reason: finishReason }]);

  await send(delta({ role: "assistant", content: "" }));
  for (const text of reply.textChunks ?? []) await send(delta({ content: text }));
  for (const [index, call] of (reply.toolCalls ?? []).entries()) {
    // F1: the first fragment names the call; later fragments carry only more argument text.
    const fragments = splitInto(argumentsText(call), 3);
    await send(
      delta({
        tool_calls: [
          {
            index,
            id: call.id ?? `call_${index}`,
            type: "function",
            function: { name: call.name, arguments: fragments[0] },
          },
        ],
      }),
    );
    for (const fragment of fragments.slice(1)) {
      await send(delta({ tool_calls: [{ index, function: { arguments: fragment } }] }));
    }
  }
  await send(delta({}, finishReasonOf(reply)));
  if (body.stream_options?.include_usage === true)
    await send(chunk([], { usage: openAiUsage(reply) })); // F1
  await send("data: [DONE]\n\n");
  response.end();
}

/** Starts a fake OpenAI (or OpenAI-compatible) server on 127.0.0.1 with a random free port. */
export async function startFakeOpenAiServer(
  handler: FakeOpenAiHandler,
  options: FakeOpenAiServerOptions = {},
): Promise<FakeOpenAiServer> {
  const flavor = options.flavor ?? "openai-compatible";
  return startFakeProviderServer<FakeChatCompletionBody>(
    {
      check: (request) => checkChatCompletion(request, flavor, options.apiKey),
      writeError: writeOpenAiError,
      answer(request, response) {
        const models = options.models;
        if (models === undefined || request.method !== "GET" || request.path !== "/v1/models")
          return false;
        const refused = checkKey(request, flavor, options.apiKey);
        if (refused !== undefined) writeOpenAiError(response, refused);
        else {
          response.writeHead(200, { "content-type": "application/json" });
          response.end(
            JSON.stringify({
              object: "list",
              data: models.map((id) => ({
                id,
                object: "model",
                created: 1_700_000_000,
                owned_by: "fake",
              })),
            }),
          );
        }
        return true;
      },
      async writeCompletion(response, reply, request) {
        const body = request.body ?? {};
        if (body.stream === true) await writeStream(response, reply, body);
        else writeJson(response, reply, body);
      },
    },
    handler,
  );
}
