/**
 * What every fake model provider shares: a small real HTTP server on 127.0.0.1, the replies a
 * test scripts, and the request log. Each provider's file (fake-openai-server.ts,
 * fake-anthropic-server.ts, fake-xai-server.ts) adds its wire format and the checks its real API
 * makes.
 *
 * Invariants:
 * FAKE1 Every request is recorded (parsed body and headers) before anything else happens, so tests
 *       can count attempts even when the reply is an error, a hang-up or a rejection.
 * FAKE2 A request the real API would refuse is answered with that API's status and error body, and
 *       the handler never sees it: a bug in what Roost sends fails the way it fails in production.
 *       The refusal is kept on the request (`rejected`) for the test to read.
 */
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One request as a fake server received it. */
export interface FakeProviderRequest<Body = Record<string, unknown>> {
  method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The parsed JSON body (`undefined` when the body was empty or not JSON). */
  body: Body | undefined;
  /** Set when the fake refused the request the way the real API would (FAKE2). */
  rejected?: FakeErrorReply | undefined;
}

/** A tool call the fake model makes. */
export interface FakeToolCall {
  /** @default a provider-style id (`call_<n>`, `toolu_…`) */
  id?: string;
  name: string;
  /** The arguments, as an object (serialized for you) or as the raw JSON string to send. */
  arguments: Record<string, unknown> | string;
}

/** A successful completion: text and/or tool calls, streamed in pieces when the client streams. */
export interface FakeCompletionReply {
  type: "completion";
  /** The reply text, sent as one delta per element. @default [] */
  textChunks?: readonly string[];
  toolCalls?: readonly FakeToolCall[];
  /** @default { promptTokens: 10, completionTokens: 5 }; `cachedTokens`: of the prompt, read from cache */
  usage?: { promptTokens: number; completionTokens: number; cachedTokens?: number };
  /** In OpenAI's words; each fake maps it to its own. @default "tool_calls" with tool calls, else "stop" */
  finishReason?: "stop" | "tool_calls" | "length" | "content_filter";
  /** Pause between streamed chunks, to let tests act mid-stream. @default 0 */
  chunkDelayMs?: number;
}

/** An HTTP error, sent in the provider's own error shape. */
export interface FakeErrorReply {
  type: "error";
  status: number;
  headers?: Record<string, string>;
  /** @default a message derived from the status */
  message?: string;
  /** The provider's error type (`invalid_request_error`, ...). @default derived from the status */
  errorType?: string;
  /** OpenAI's `param` (the field at fault). @default null */
  param?: string | null;
  /** OpenAI's `code` (`string_above_max_length`, ...). @default null */
  code?: string | null;
}

/** Close the connection without answering (the client sees a network error). */
export interface FakeHangUpReply {
  type: "hang-up";
}

export type FakeReply = FakeCompletionReply | FakeErrorReply | FakeHangUpReply;

/** Decides the reply to one request; `index` counts requests from 0. May be async to delay. */
export type FakeHandler<Body = Record<string, unknown>> = (
  request: FakeProviderRequest<Body>,
  index: number,
) => FakeReply | Promise<FakeReply>;

/** A running fake server. */
export interface FakeProviderServer<Body = Record<string, unknown>> {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:40123/v1`. */
  baseUrl: string;
  /** Every request received so far, in order (FAKE1). */
  requests: Array<FakeProviderRequest<Body>>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** How one provider's API speaks: its checks, its error shape and its success replies. */
export interface FakeWireFormat<Body> {
  /** Answers a request that is no completion (e.g. `GET /v1/models`); true when it did. */
  answer?(request: FakeProviderRequest<Body>, response: ServerResponse): boolean;
  /** The error the real API answers this request with, or `undefined` if it accepts it (FAKE2). */
  check(request: FakeProviderRequest<Body>): FakeErrorReply | undefined;
  writeError(response: ServerResponse, reply: FakeErrorReply): void;
  writeCompletion(
    response: ServerResponse,
    reply: FakeCompletionReply,
    request: FakeProviderRequest<Body>,
    index: number,
  ): Promise<void>;
}

/** Shorthand for a text completion reply split into the given pieces. */
export function fakeTextReply(...textChunks: string[]): FakeCompletionReply {
  return { type: "completion", textChunks };
}

/** Starts a fake provider on 127.0.0.1 with a random free port. */
export async function startFakeProviderServer<Body>(
  wire: FakeWireFormat<Body>,
  handler: FakeHandler<Body>,
): Promise<FakeProviderServer<Body>> {
  const requests: Array<FakeProviderRequest<Body>> = [];
  const sockets = new Set<Socket>();

  const server = createServer((incoming, response) => {
    void handleRequest(incoming, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { "content-type": "application/json" });
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
    const request = await readRequest<Body>(incoming);
    const index = requests.length;
    requests.push(request); // FAKE1
    if (wire.answer?.(request, response) === true) return;
    const rejection = wire.check(request);
    if (rejection !== undefined) {
      request.rejected = rejection; // FAKE2
      wire.writeError(response, rejection);
      return;
    }
    const reply = await handler(request, index);
    switch (reply.type) {
      case "hang-up":
        incoming.socket.destroy();
        return;
      case "error":
        wire.writeError(response, reply);
        return;
      case "completion":
        await wire.writeCompletion(response, reply, request, index);
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

async function readRequest<Body>(incoming: IncomingMessage): Promise<FakeProviderRequest<Body>> {
  const pieces: Buffer[] = [];
  for await (const piece of incoming) pieces.push(piece as Buffer);
  const text = Buffer.concat(pieces).toString("utf8");
  let body: Body | undefined;
  try {
    body = text === "" ? undefined : (JSON.parse(text) as Body);
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

/** Writes SSE text, pausing `chunkDelayMs` after each piece; stops quietly once the client left. */
export function createChunkWriter(
  response: ServerResponse,
  chunkDelayMs: number | undefined,
): (text: string) => Promise<void> {
  response.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  return async (text) => {
    if (response.destroyed) return;
    response.write(text);
    if ((chunkDelayMs ?? 0) > 0) await new Promise((resolve) => setTimeout(resolve, chunkDelayMs));
  };
}

/** Splits a string into about `parts` pieces (at least one), so tool arguments arrive in fragments. */
export function splitInto(text: string, parts: number): string[] {
  if (text.length === 0) return [""];
  const size = Math.max(1, Math.ceil(text.length / parts));
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size)
    pieces.push(text.slice(start, start + size));
  return pieces;
}

/** The arguments of a scripted tool call as the JSON text a provider sends. */
export function argumentsText(call: FakeToolCall): string {
  return typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
}

/** The scripted usage, or the default. */
export function usageOf(reply: FakeCompletionReply): {
  promptTokens: number;
  completionTokens: number;
  cachedTokens?: number;
} {
  return reply.usage ?? { promptTokens: 10, completionTokens: 5 };
}

/** The scripted finish reason in OpenAI's words, or the default. */
export function finishReasonOf(reply: FakeCompletionReply): string {
  return reply.finishReason ?? ((reply.toolCalls?.length ?? 0) > 0 ? "tool_calls" : "stop");
}

/** Whether a value is a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The image formats every provider accepts, by the magic bytes at the start of their data. */
const imageSignatures: Record<string, number[]> = {
  "image/png": [0x89, 0x50, 0x4e, 0x47],
  "image/jpeg": [0xff, 0xd8, 0xff],
  "image/gif": [0x47, 0x49, 0x46, 0x38],
  "image/webp": [0x52, 0x49, 0x46, 0x46],
};

/** Supported image media types, in the order providers list them. */
export const supportedImageTypes = Object.keys(imageSignatures);

/** Whether base64 `data` decodes to an image of `mediaType` (providers check the bytes, not the label). */
export function imageMatches(mediaType: string, data: string): boolean {
  const signature = imageSignatures[mediaType];
  if (signature === undefined || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return false;
  const bytes = Buffer.from(data.slice(0, 16), "base64");
  return signature.every((byte, index) => bytes[index] === byte);
}

/** Whether `url` is a `data:<type>;base64,` URL whose bytes are an image of that type. */
export function dataUrlImageMatches(url: unknown): boolean {
  const match = typeof url === "string" ? /^data:([^;,]+);base64,(.*)$/s.exec(url) : null;
  return match !== null && imageMatches(match[1] ?? "", match[2] ?? "");
}
