/**
 * Reads the conversation events stream (Server-Sent Events) over `fetch`, because `EventSource`
 * cannot send an `Authorization` header. One call reads one connection until it ends; the feed
 * (state/feed.ts) decides when to reconnect.
 */
import { ApiError, networkErrorMessage, toApiError } from "./client.ts";
import type { StreamEvent } from "./types.ts";

/** No bytes at all (not even the 15 s keepalive) for this long means the connection is dead. */
const silenceLimitMs = 40_000;

/** Splits SSE text into messages: `event:` and `data:` fields, comments, any line ending. */
export function createSseParser(onMessage: (event: string, data: string) => void) {
  let buffer = "";
  let event = "";
  let data: string[] = [];
  const line = (text: string) => {
    if (text === "") {
      if (data.length > 0) onMessage(event === "" ? "message" : event, data.join("\n"));
      event = "";
      data = [];
      return;
    }
    if (text.startsWith(":")) return;
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  };
  return (chunk: string) => {
    buffer += chunk;
    let match: RegExpExecArray | null;
    while ((match = /\r\n|\n|\r(?!$)/.exec(buffer)) !== null) {
      line(buffer.slice(0, match.index));
      buffer = buffer.slice(match.index + match[0].length);
    }
  };
}

function toStreamEvent(event: string, data: string): StreamEvent | undefined {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(data) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  switch (event) {
    case "hello":
    case "changed":
    case "delta":
    case "turn":
    case "computer":
    case "tool-output":
    case "renamed":
      return { ...parsed, type: event } as StreamEvent;
    default:
      return undefined; // newer servers may send more kinds; ignore what we do not know
  }
}

/**
 * Reads one connection of the events stream, handing each event to `onEvent` (which may return a
 * promise: the next event waits for it, so events are applied strictly in order). Resolves when
 * the server ends the stream; rejects with an ApiError when it cannot connect or the connection
 * breaks, and with the abort reason when `signal` aborts.
 */
export async function readEventStream(
  url: string,
  authorization: string,
  onEvent: (event: StreamEvent) => void | Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  const silence = new AbortController();
  const combined = AbortSignal.any([signal, silence.signal]);
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { authorization, accept: "text/event-stream" },
      signal: combined,
      cache: "no-store",
    });
  } catch (error) {
    if (signal.aborted) throw error;
    throw new ApiError(0, "network", networkErrorMessage);
  }
  if (!response.ok || response.body === null) throw await toApiError(response);

  const pending: StreamEvent[] = [];
  let draining: Promise<void> = Promise.resolve();
  const parse = createSseParser((event, data) => {
    const parsed = toStreamEvent(event, data);
    if (parsed !== undefined) pending.push(parsed);
  });

  let timer = setTimeout(() => silence.abort(), silenceLimitMs);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      clearTimeout(timer);
      if (done) break;
      timer = setTimeout(() => silence.abort(), silenceLimitMs);
      parse(value);
      // Apply in order; a slow apply (a steps fetch) holds back later events, never reorders them.
      while (pending.length > 0) {
        const next = pending.shift() as StreamEvent;
        draining = draining.then(() => onEvent(next));
        await draining;
      }
    }
  } catch (error) {
    if (signal.aborted) throw error;
    if (error instanceof ApiError) throw error;
    throw new ApiError(
      0,
      "network",
      silence.signal.aborted
        ? "The live connection went quiet; reconnecting."
        : networkErrorMessage,
    );
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => undefined);
  }
}
