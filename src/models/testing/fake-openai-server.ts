/**
 * A small real HTTP server on 127.0.0.1 that speaks the OpenAI `/v1/chat/completions` wire
 * format, for tests of anything that calls a model (no module mocks: the AI SDK's real HTTP
 * client talks to this over a real socket).
 *
 * Invariants:
 * F1 Streaming replies follow the real wire format: `data: {chat.completion.chunk}` SSE lines, tool
 *    call arguments split across chunks, a usage chunk only when the request asked for it with
 *    `stream_options.include_usage`, then `data: [DONE]`.
 * F2 Every request is recorded (parsed body and headers) before the handler runs, so tests can
 *    count attempts even when the reply is an error or a hang-up.
 */
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One request as the fake server received it. */
export interface FakeOpenAiRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The parsed JSON body (`undefined` when the body was empty or not JSON). */
  body: FakeChatCompletionBody | undefined;
}

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

/** A tool call the fake model makes. */
export interface FakeToolCall {
  /** @default `call_<n>` */
  id?: string;
  name: string;
  /** The arguments, as an object (serialized for you) or as the raw JSON string to send. */
  arguments: Record<string, unknown> | string;
}

/** A successful completion: text and/or tool calls, streamed in pieces when the client streams. */
export interface FakeCompletionReply {
  type: "completion";
  /** The reply text, sent as one delta per element. @default [] */
  textChunks?: string[];
  toolCalls?: FakeToolCall[];
  /** @default { promptTokens: 10, completionTokens: 5 } */
  usage?: { promptTokens: number; completionTokens: number };
  /** @default "tool_calls" when there are tool calls, else "stop" */
  finishReason?: "stop" | "tool_calls" | "length" | "content_filter";
  /** Pause between streamed chunks, to let tests act mid-stream. @default 0 */
  chunkDelayMs?: number;
}

/** An HTTP error with an OpenAI-shaped error body. */
export interface FakeErrorReply {
  type: "error";
  status: number;
  headers?: Record<string, string>;
  /** @default a message derived from the status */
  message?: string;
}

/** Close the connection without answering (the client sees a network error). */
export interface FakeHangUpReply {
  type: "hang-up";
}

export type FakeOpenAiReply = FakeCompletionReply | FakeErrorReply | FakeHangUpReply;

/** Decides the reply to one request; `index` counts requests from 0. May be async to delay. */
export type FakeOpenAiHandler = (
  request: FakeOpenAiRequest,
  index: number,
) => FakeOpenAiReply | Promise<FakeOpenAiReply>;

/** A running fake server. */
export interface FakeOpenAiServer {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:40123/v1`. */
  baseUrl: string;
  /** Every request received so far, in order. */
  requests: FakeOpenAiRequest[];
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Shorthand for a text completion reply split into the given pieces. */
export function fakeTextReply(...textChunks: string[]): FakeCompletionReply {
  return { type: "completion", textChunks };
}

/** Starts a fake OpenAI-compatible server on 127.0.0.1 with a random free port. */
export async function startFakeOpenAiServer(handler: FakeOpenAiHandler): Promise<FakeOpenAiServer> {
  const requests: FakeOpenAiRequest[] = [];
  const sockets = new Set<Socket>();

  const server = createServer((incoming, response) => {
    void handleRequest(incoming, response).catch((error: unknown) => {
      if (!response.headersSent) {
        response.writeHead(500, { "content-type": "application/json" });
      }
      response.end(
        JSON.stringify({ error: { message: `fake server handler failed: ${String(error)}` } }),
      );
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function handleRequest(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const request = await readRequest(incoming);
    const index = requests.length;
    requests.push(request); // F2
    const reply = await handler(request, index);
    switch (reply.type) {
      case "hang-up":
        incoming.socket.destroy();
        return;
      case "error":
        writeError(response, reply);
        return;
      case "completion":
        if (request.body?.stream === true) {
          await writeStream(response, reply, request.body);
        } else {
          writeJson(response, reply, request.body);
        }
        return;
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
    return closed;
  };

  return { baseUrl: `http://127.0.0.1:${port}/v1`, requests, close, [Symbol.asyncDispose]: close };
}

async function readRequest(incoming: IncomingMessage): Promise<FakeOpenAiRequest> {
  const pieces: Buffer[] = [];
  for await (const piece of incoming) pieces.push(piece as Buffer);
  const text = Buffer.concat(pieces).toString("utf8");
  let body: FakeChatCompletionBody | undefined;
  try {
    body = text === "" ? undefined : (JSON.parse(text) as FakeChatCompletionBody);
  } catch {
    body = undefined;
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (typeof value === "string") headers[name] = value;
    else if (Array.isArray(value)) headers[name] = value.join(", ");
  }
  const url = new URL(incoming.url ?? "/", "http://fake");
  return { method: incoming.method ?? "GET", path: url.pathname, headers, body };
}

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

function writeError(response: ServerResponse, reply: FakeErrorReply): void {
  const message = reply.message ?? statusMessages[reply.status] ?? `HTTP ${reply.status}`;
  response.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
  response.end(JSON.stringify({ error: { message, type: "fake_error", param: null, code: null } }));
}

function finishReasonOf(reply: FakeCompletionReply): string {
  return reply.finishReason ?? ((reply.toolCalls?.length ?? 0) > 0 ? "tool_calls" : "stop");
}

function argumentsText(call: FakeToolCall): string {
  return typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
}

function usageOf(reply: FakeCompletionReply): Record<string, number> {
  const usage = reply.usage ?? { promptTokens: 10, completionTokens: 5 };
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
}

function writeJson(
  response: ServerResponse,
  reply: FakeCompletionReply,
  body: FakeChatCompletionBody | undefined,
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
      model: body?.model ?? "fake-model",
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
      usage: usageOf(reply),
    }),
  );
}

/** Splits a string into about `parts` pieces (at least one), so tool arguments arrive in fragments. */
function splitInto(text: string, parts: number): string[] {
  if (text.length === 0) return [""];
  const size = Math.max(1, Math.ceil(text.length / parts));
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size)
    pieces.push(text.slice(start, start + size));
  return pieces;
}

async function writeStream(
  response: ServerResponse,
  reply: FakeCompletionReply,
  body: FakeChatCompletionBody,
): Promise<void> {
  response.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const model = body.model ?? "fake-model";
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
    `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 1_700_000_000, model, choices, ...extra })}\n\n`;
  const delta = (value: Record<string, unknown>, finishReason: string | null = null): string =>
    chunk([{ index: 0, delta: value, finish_reason: finishReason }]);
  const send = async (line: string): Promise<void> => {
    if (response.destroyed) return;
    response.write(line);
    if ((reply.chunkDelayMs ?? 0) > 0)
      await new Promise((resolve) => setTimeout(resolve, reply.chunkDelayMs));
  };

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
  if (body.stream_options?.include_usage === true) await send(chunk([], { usage: usageOf(reply) })); // F1
  await send("data: [DONE]\n\n");
  response.end();
}
