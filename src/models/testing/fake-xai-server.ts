/**
 * A small real HTTP server on 127.0.0.1 that speaks xAI's Responses API (`POST /v1/responses`),
 * which `@ai-sdk/xai` v5 uses for every language model, streamed or not.
 *
 * Invariants:
 * FX1 Streams are Responses API events in their real order: `response.created`,
 *     `response.in_progress`, then per output item `response.output_item.added`, its deltas
 *     (`response.output_text.delta` inside `content_part.added`/`done`, or
 *     `response.function_call_arguments.delta` then `.done`) and `response.output_item.done`, and
 *     last `response.completed` with the whole response and its usage.
 * FX2 Requests are checked as xAI checks them and refused with its status and body
 *     (`{ code, error }`), see `checkResponsesRequest` (FAKE2): `Authorization: Bearer` (401 when
 *     missing; 400 for a wrong key, as xAI does); `model` and `input`; every
 *     `function_call_output` answers a `function_call` earlier in the input and every
 *     `function_call` is answered (the Responses API's pairing rule); images as
 *     `data:image/…;base64,` URLs whose bytes are that image type.
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

/** The fields of a Responses API request body that tests usually look at. */
export interface FakeResponsesBody {
  model?: string;
  stream?: boolean;
  input?: Array<Record<string, unknown>>;
  tools?: Array<{ type: string; name: string; description?: string; parameters?: unknown }>;
  [key: string]: unknown;
}

export type FakeXaiRequest = FakeProviderRequest<FakeResponsesBody>;
export type FakeXaiHandler = FakeHandler<FakeResponsesBody>;
export type FakeXaiServer = FakeProviderServer<FakeResponsesBody>;

/** Options for `startFakeXaiServer`. */
export interface FakeXaiServerOptions {
  /** The only bearer key accepted; any non-empty key when unset. */
  apiKey?: string;
}

const invalidArgument = "Client specified an invalid argument";

const statusCodes: Record<number, string> = {
  400: invalidArgument,
  401: "Unauthenticated",
  403: "The caller does not have permission to execute the specified operation",
  404: "Some requested entity was not found",
  422: "Unprocessable Entity",
  429: "Some resource has been exhausted",
  500: "Internal error",
  503: "The service is currently unavailable",
};

function writeXaiError(response: ServerResponse, reply: FakeErrorReply): void {
  response.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
  response.end(
    JSON.stringify({
      code: reply.errorType ?? statusCodes[reply.status] ?? `HTTP ${reply.status}`,
      error: reply.message ?? statusCodes[reply.status] ?? `HTTP ${reply.status}`,
    }),
  );
}

function invalid(message: string): FakeErrorReply {
  return { type: "error", status: 400, message, errorType: invalidArgument };
}

function checkParts(parts: unknown, path: string): FakeErrorReply | undefined {
  if (!Array.isArray(parts)) return undefined;
  for (const [index, part] of (parts as unknown[]).entries()) {
    if (isRecord(part) && part.type === "input_image") {
      if (!dataUrlImageMatches(part.image_url)) {
        return invalid(
          `${path}[${index}].image_url: unsupported or malformed image: expected a data URL of a png, jpeg, gif or webp image`,
        );
      }
    }
  }
  return undefined;
}

/** Checks a Responses API request the way xAI does (FX2). */
export function checkResponsesRequest(
  request: FakeXaiRequest,
  apiKey: string | undefined,
): FakeErrorReply | undefined {
  if (request.method !== "POST" || request.path !== "/v1/responses") {
    return {
      type: "error",
      status: 404,
      message: `No route for ${request.method} ${request.path}`,
    };
  }
  const authorization = request.headers.authorization;
  const key = authorization?.startsWith("Bearer ") ? authorization.slice(7) : "";
  if (key === "") {
    return {
      type: "error",
      status: 401,
      message:
        "No authorization header provided. Supply an Authorization: Bearer <XAI_API_KEY> header.",
    };
  }
  if (apiKey !== undefined && key !== apiKey) {
    return invalid(
      `Incorrect API key provided: ${key.slice(0, 2)}***${key.slice(-2)}. You can obtain an API key from https://console.x.ai.`,
    );
  }
  const body = request.body;
  if (body === undefined) return invalid("Failed to parse the request body as JSON");
  if (typeof body.model !== "string" || body.model === "") return invalid("model: field required");
  if (!Array.isArray(body.input) || body.input.length === 0)
    return invalid("input: field required");

  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const [index, item] of body.input.entries()) {
    const problem =
      checkParts(item.content, `input[${index}].content`) ??
      checkParts(item.output, `input[${index}].output`);
    if (problem !== undefined) return problem;
    if (item.type === "function_call" && typeof item.call_id === "string") calls.add(item.call_id);
    if (item.type === "function_call_output") {
      const callId = typeof item.call_id === "string" ? item.call_id : "";
      if (!calls.has(callId)) {
        return invalid(`No tool call found for function call output with call_id ${callId}.`);
      }
      answered.add(callId);
    }
  }
  const unanswered = [...calls].filter((id) => !answered.has(id));
  if (unanswered.length > 0)
    return invalid(`No tool output found for function call ${unanswered[0]}.`);
  return undefined;
}

function callIdOf(call: FakeToolCall, requestIndex: number, callIndex: number): string {
  return call.id ?? `call_fake${requestIndex}x${callIndex}`;
}

/** The response's output items, complete. */
function outputItems(
  reply: FakeCompletionReply,
  requestIndex: number,
): Array<Record<string, unknown>> {
  const text = (reply.textChunks ?? []).join("");
  return [
    ...(reply.textChunks === undefined || reply.textChunks.length === 0
      ? []
      : [
          {
            type: "message",
            id: `msg_fake${requestIndex}`,
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text, annotations: [] }],
          },
        ]),
    ...(reply.toolCalls ?? []).map((call, callIndex) => ({
      type: "function_call",
      id: `fc_fake${requestIndex}x${callIndex}`,
      call_id: callIdOf(call, requestIndex, callIndex),
      name: call.name,
      arguments: argumentsText(call),
      status: "completed",
    })),
  ];
}

function responseObject(
  reply: FakeCompletionReply,
  body: FakeResponsesBody,
  requestIndex: number,
  status: "in_progress" | "completed" | "incomplete",
): Record<string, unknown> {
  const usage = usageOf(reply);
  return {
    id: `resp_fake${requestIndex}`,
    object: "response",
    created_at: 1_700_000_000,
    model: body.model ?? "grok-fake",
    status,
    output: status === "in_progress" ? [] : outputItems(reply, requestIndex),
    ...(status === "in_progress"
      ? {}
      : {
          usage: {
            input_tokens: usage.promptTokens,
            output_tokens: usage.completionTokens,
            total_tokens: usage.promptTokens + usage.completionTokens,
          },
        }),
    ...(status === "incomplete" ? { incomplete_details: { reason: "max_output_tokens" } } : {}),
  };
}

async function writeStream(
  response: ServerResponse,
  reply: FakeCompletionReply,
  body: FakeResponsesBody,
  requestIndex: number,
): Promise<void> {
  const send = createChunkWriter(response, reply.chunkDelayMs);
  let sequence = 0;
  const event = (type: string, data: Record<string, unknown>): Promise<void> =>
    send(
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`,
    );

  const inProgress = responseObject(reply, body, requestIndex, "in_progress");
  await event("response.created", { response: inProgress });
  await event("response.in_progress", { response: inProgress });
  const items = outputItems(reply, requestIndex);
  for (const [outputIndex, item] of items.entries()) {
    if (item.type === "message") {
      const itemId = String(item.id);
      await event("response.output_item.added", {
        output_index: outputIndex,
        item: { ...item, status: "in_progress", content: [] },
      });
      const emptyPart = { type: "output_text", text: "", annotations: [] };
      await event("response.content_part.added", {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        part: emptyPart,
      });
      for (const delta of reply.textChunks ?? []) {
        await event("response.output_text.delta", {
          item_id: itemId,
          output_index: outputIndex,
          content_index: 0,
          delta,
        });
      }
      const text = (reply.textChunks ?? []).join("");
      await event("response.output_text.done", {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        text,
      });
      await event("response.content_part.done", {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        part: { ...emptyPart, text },
      });
    } else {
      const itemId = String(item.id);
      const argumentsJson = String(item.arguments);
      await event("response.output_item.added", {
        output_index: outputIndex,
        item: { ...item, arguments: "", status: "in_progress" },
      });
      for (const delta of splitInto(argumentsJson, 3)) {
        await event("response.function_call_arguments.delta", {
          item_id: itemId,
          output_index: outputIndex,
          delta,
        });
      }
      await event("response.function_call_arguments.done", {
        item_id: itemId,
        output_index: outputIndex,
        arguments: argumentsJson,
      });
    }
    await event("response.output_item.done", { output_index: outputIndex, item });
  }
  if (finishReasonOf(reply) === "length") {
    await event("response.incomplete", {
      response: responseObject(reply, body, requestIndex, "incomplete"),
    });
  } else {
    await event("response.completed", {
      response: responseObject(reply, body, requestIndex, "completed"),
    });
  }
  response.end();
}

/** Starts a fake xAI Responses API on 127.0.0.1 with a random free port. */
export async function startFakeXaiServer(
  handler: FakeXaiHandler,
  options: FakeXaiServerOptions = {},
): Promise<FakeXaiServer> {
  return startFakeProviderServer<FakeResponsesBody>(
    {
      check: (request) => checkResponsesRequest(request, options.apiKey),
      writeError: writeXaiError,
      async writeCompletion(response, reply, request, index) {
        const body = request.body ?? {};
        if (body.stream === true) {
          await writeStream(response, reply, body, index);
          return;
        }
        const status = finishReasonOf(reply) === "length" ? "incomplete" : "completed";
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify(responseObject(reply, body, index, status)));
      },
    },
    handler,
  );
}
