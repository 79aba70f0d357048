/**
 * A small real HTTP server on 127.0.0.1 that speaks Anthropic's Messages API (`POST /v1/messages`),
 * streamed or not, for tests of the Anthropic adapter over a real socket.
 *
 * Invariants:
 * FA1 Streams are Anthropic's SSE events in Anthropic's order: `message_start`, then per content
 *     block `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`, the
 *     first one empty) / `content_block_stop`, a `ping` after the first block starts, then
 *     `message_delta` (stop reason, output tokens) and `message_stop`.
 * FA2 Requests are checked as Anthropic checks them and refused with its status and body
 *     (`{ type: "error", error: { type, message }, request_id }`), see `checkMessagesRequest`
 *     (FAKE2): `x-api-key` (the given key, when one is set) and `anthropic-version` headers;
 *     `model`, `max_tokens` and `messages`; roles `user`/`assistant` only, starting with `user`
 *     and alternating; no empty message or text block; `tool_use.id` and
 *     `tool_result.tool_use_id` matching `^[a-zA-Z0-9_-]+$`; every `tool_use` answered by a
 *     `tool_result` at the start of the next message, and every `tool_result` answering a
 *     `tool_use` of the message before; base64 images of a supported type whose bytes are that
 *     type; tool names matching `^[a-zA-Z0-9_-]{1,128}$` with an object `input_schema`.
 */
import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import {
  argumentsText,
  createChunkWriter,
  finishReasonOf,
  imageMatches,
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
  FakeToolCall,
} from "./fake-provider-server.ts";

/** A content block of a Messages API request. */
export type AnthropicContentBlock = Record<string, unknown> & { type: string };

/** The fields of a Messages API request body that tests usually look at. */
export interface FakeAnthropicBody {
  model?: string;
  max_tokens?: number;
  stream?: boolean;
  system?: string | AnthropicContentBlock[];
  messages?: Array<{ role: string; content: string | AnthropicContentBlock[] }>;
  tools?: Array<{ name: string; description?: string; input_schema?: unknown }>;
  [key: string]: unknown;
}

export type FakeAnthropicRequest = FakeProviderRequest<FakeAnthropicBody>;
export type FakeAnthropicHandler = FakeHandler<FakeAnthropicBody>;
export type FakeAnthropicServer = FakeProviderServer<FakeAnthropicBody>;

/** Options for `startFakeAnthropicServer`. */
export interface FakeAnthropicServerOptions {
  /** The only key accepted in `x-api-key`; any non-empty key when unset. */
  apiKey?: string;
}

/** Anthropic's pattern for tool ids. */
export const anthropicToolIdPattern = /^[a-zA-Z0-9_-]+$/;

const errorTypes: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

const statusMessages: Record<number, string> = {
  401: "invalid x-api-key",
  403: "Your API key does not have permission to use the specified resource.",
  404: "The requested resource could not be found.",
  429: "Number of request tokens has exceeded your per-minute rate limit",
  500: "Internal server error",
  529: "Overloaded",
};

function writeAnthropicError(response: ServerResponse, reply: FakeErrorReply): void {
  const type =
    reply.errorType ??
    errorTypes[reply.status] ??
    (reply.status >= 500 ? "api_error" : "invalid_request_error");
  const message = reply.message ?? statusMessages[reply.status] ?? `HTTP ${reply.status}`;
  response.writeHead(reply.status, {
    "content-type": "application/json",
    "request-id": `req_fake${randomBytes(6).toString("hex")}`,
    ...reply.headers,
  });
  response.end(
    JSON.stringify({
      type: "error",
      error: { type, message },
      request_id: `req_fake${randomBytes(6).toString("hex")}`,
    }),
  );
}

function invalid(message: string): FakeErrorReply {
  return { type: "error", status: 400, message, errorType: "invalid_request_error" };
}

function blocksOf(content: string | AnthropicContentBlock[]): AnthropicContentBlock[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

/** The checks on one image block at `path` (FA2). */
function checkImage(block: AnthropicContentBlock, path: string): FakeErrorReply | undefined {
  const source = isRecord(block.source) ? block.source : {};
  if (source.type !== "base64") return undefined;
  const mediaType = typeof source.media_type === "string" ? source.media_type : "";
  if (!supportedImageTypes.includes(mediaType)) {
    return invalid(
      `${path}.image.source.base64.media_type: Input should be ${supportedImageTypes.map((type) => `'${type}'`).join(", ")}`,
    );
  }
  if (typeof source.data !== "string" || !imageMatches(mediaType, source.data)) {
    return invalid(
      `${path}.image.source.base64: Image does not match the provided media type ${mediaType}`,
    );
  }
  return undefined;
}

/** Checks a Messages API request the way Anthropic does (FA2). */
export function checkMessagesRequest(
  request: FakeAnthropicRequest,
  apiKey: string | undefined,
): FakeErrorReply | undefined {
  if (request.method !== "POST" || request.path !== "/v1/messages") {
    return { type: "error", status: 404, message: "Not Found", errorType: "not_found_error" };
  }
  const key = request.headers["x-api-key"];
  if (key === undefined || key === "") {
    return { type: "error", status: 401, message: "x-api-key header is required" };
  }
  if (apiKey !== undefined && key !== apiKey) {
    return { type: "error", status: 401, message: "invalid x-api-key" };
  }
  if (request.headers["anthropic-version"] === undefined) {
    return invalid("anthropic-version: header is required");
  }
  const body = request.body;
  if (body === undefined) return invalid("There was an error parsing the body: not valid JSON");
  if (typeof body.model !== "string" || body.model === "") return invalid("model: Field required");
  if (typeof body.max_tokens !== "number") return invalid("max_tokens: Field required");
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return invalid("messages: at least one message is required");
  }
  for (const [index, tool] of (body.tools ?? []).entries()) {
    if (!/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name)) {
      return invalid(
        `tools.${index}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`,
      );
    }
    if (!isRecord(tool.input_schema) || tool.input_schema.type !== "object") {
      return invalid(`tools.${index}.custom.input_schema.type: Input should be 'object'`);
    }
  }

  // Prompt caching: at most four breakpoints in all, each of type "ephemeral".
  const cached = [
    ...(Array.isArray(body.system) ? body.system : []),
    ...body.messages.flatMap((message) =>
      typeof message.content === "string" ? [] : message.content,
    ),
  ].filter((block) => block.cache_control !== undefined);
  if (cached.length > 4)
    return invalid(
      `A maximum of 4 blocks with cache_control may be provided. Found ${cached.length}.`,
    );
  for (const block of cached) {
    const control = block.cache_control;
    if (!isRecord(control) || control.type !== "ephemeral")
      return invalid("cache_control.type: Input should be 'ephemeral'");
  }

  const messages = body.messages;
  let previousToolUses = new Set<string>();
  for (const [index, message] of messages.entries()) {
    if (message.role !== "user" && message.role !== "assistant") {
      return invalid(`messages.${index}.role: Input should be 'user' or 'assistant'`);
    }
    if (index === 0 && message.role !== "user") {
      return invalid('messages: first message must use the "user" role');
    }
    const previous = messages[index - 1];
    if (previous !== undefined && previous.role === message.role) {
      return invalid(
        `messages: roles must alternate between "user" and "assistant", but found multiple "${message.role}" roles in a row`,
      );
    }
    const blocks = blocksOf(message.content);
    const isFinalAssistant = index === messages.length - 1 && message.role === "assistant";
    if (blocks.length === 0 && !isFinalAssistant) {
      return invalid(
        `messages.${index}: all messages must have non-empty content except for the optional final assistant message`,
      );
    }
    const toolUses = new Set<string>();
    let answered = 0;
    let pastResults = false;
    for (const [blockIndex, block] of blocks.entries()) {
      const path = `messages.${index}.content.${blockIndex}`;
      switch (block.type) {
        case "text":
          if (typeof block.text !== "string" || block.text === "") {
            return invalid("messages: text content blocks must be non-empty");
          }
          pastResults = true;
          break;
        case "image": {
          const problem = checkImage(block, path);
          if (problem !== undefined) return problem;
          pastResults = true;
          break;
        }
        case "tool_use": {
          if (message.role !== "assistant") {
            return invalid(`${path}: tool_use blocks are only allowed in assistant messages`);
          }
          const id = typeof block.id === "string" ? block.id : "";
          if (!anthropicToolIdPattern.test(id)) {
            return invalid(`${path}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`);
          }
          toolUses.add(id);
          break;
        }
        case "tool_result": {
          const id = typeof block.tool_use_id === "string" ? block.tool_use_id : "";
          if (!anthropicToolIdPattern.test(id)) {
            return invalid(
              `${path}.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'`,
            );
          }
          if (message.role !== "user" || !previousToolUses.has(id)) {
            return invalid(
              `${path}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
            );
          }
          if (!pastResults) answered++;
          if (Array.isArray(block.content)) {
            for (const [partIndex, part] of (block.content as AnthropicContentBlock[]).entries()) {
              if (part.type === "image") {
                const problem = checkImage(part, `${path}.tool_result.content.${partIndex}`);
                if (problem !== undefined) return problem;
              }
            }
          }
          break;
        }
        default:
          pastResults = true;
          break;
      }
    }
    // Every tool_use of the previous message is answered, by tool_result blocks that come first.
    if (previousToolUses.size > 0) {
      const results = new Set(
        blocks
          .slice(0, answered)
          .map((block) => (typeof block.tool_use_id === "string" ? block.tool_use_id : "")),
      );
      const missing = [...previousToolUses].filter((id) => !results.has(id));
      if (missing.length > 0) {
        return invalid(
          `messages.${index - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
    }
    previousToolUses = toolUses;
  }
  return undefined;
}

function stopReasonOf(reply: FakeCompletionReply): string {
  switch (finishReasonOf(reply)) {
    case "tool_calls":
      return "tool_use";
    case "length":
      return "max_tokens";
    case "content_filter":
      return "refusal";
    default:
      return "end_turn";
  }
}

function toolUseId(call: FakeToolCall, requestIndex: number, callIndex: number): string {
  return call.id ?? `toolu_fake${requestIndex}x${callIndex}`;
}

function parsedInput(call: FakeToolCall): unknown {
  try {
    return JSON.parse(argumentsText(call)) as unknown;
  } catch {
    return {};
  }
}

async function writeStream(
  response: ServerResponse,
  reply: FakeCompletionReply,
  body: FakeAnthropicBody,
  requestIndex: number,
): Promise<void> {
  const send = createChunkWriter(response, reply.chunkDelayMs);
  const event = (name: string, data: Record<string, unknown>): Promise<void> =>
    send(`event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`);
  const usage = usageOf(reply);

  await event("message_start", {
    message: {
      id: `msg_fake${requestIndex}`,
      type: "message",
      role: "assistant",
      model: body.model ?? "claude-fake",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: usage.promptTokens, output_tokens: 1 },
    },
  });
  let index = 0;
  const pingOnce = async (): Promise<void> => {
    if (index === 0) await send(`event: ping\ndata: ${JSON.stringify({ type: "ping" })}\n\n`); // FA1
  };
  const textChunks = reply.textChunks ?? [];
  if (textChunks.length > 0) {
    await event("content_block_start", { index, content_block: { type: "text", text: "" } });
    await pingOnce();
    for (const text of textChunks) {
      await event("content_block_delta", { index, delta: { type: "text_delta", text } });
    }
    await event("content_block_stop", { index });
    index++;
  }
  for (const [callIndex, call] of (reply.toolCalls ?? []).entries()) {
    await event("content_block_start", {
      index,
      content_block: {
        type: "tool_use",
        id: toolUseId(call, requestIndex, callIndex),
        name: call.name,
        input: {},
      },
    });
    await pingOnce();
    // FA1: Anthropic opens every tool input with an empty fragment.
    for (const partial of ["", ...splitInto(argumentsText(call), 3)]) {
      await event("content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: partial },
      });
    }
    await event("content_block_stop", { index });
    index++;
  }
  await event("message_delta", {
    delta: { stop_reason: stopReasonOf(reply), stop_sequence: null },
    usage: { output_tokens: usage.completionTokens },
  });
  await event("message_stop", {});
  response.end();
}

function writeJson(
  response: ServerResponse,
  reply: FakeCompletionReply,
  body: FakeAnthropicBody,
  requestIndex: number,
): void {
  const text = (reply.textChunks ?? []).join("");
  const usage = usageOf(reply);
  response.writeHead(200, { "content-type": "application/json" });
  response.end(
    JSON.stringify({
      id: `msg_fake${requestIndex}`,
      type: "message",
      role: "assistant",
      model: body.model ?? "claude-fake",
      content: [
        ...(text === "" ? [] : [{ type: "text", text }]),
        ...(reply.toolCalls ?? []).map((call, callIndex) => ({
          type: "tool_use",
          id: toolUseId(call, requestIndex, callIndex),
          name: call.name,
          input: parsedInput(call),
        })),
      ],
      stop_reason: stopReasonOf(reply),
      stop_sequence: null,
      usage: { input_tokens: usage.promptTokens, output_tokens: usage.completionTokens },
    }),
  );
}

/** Starts a fake Anthropic Messages API on 127.0.0.1 with a random free port. */
export async function startFakeAnthropicServer(
  handler: FakeAnthropicHandler,
  options: FakeAnthropicServerOptions = {},
): Promise<FakeAnthropicServer> {
  return startFakeProviderServer<FakeAnthropicBody>(
    {
      check: (request) => checkMessagesRequest(request, options.apiKey),
      writeError: writeAnthropicError,
      async writeCompletion(response, reply, request, index) {
        const body = request.body ?? {};
        if (body.stream === true) await writeStream(response, reply, body, index);
        else writeJson(response, reply, body, index);
      },
    },
    handler,
  );
}
