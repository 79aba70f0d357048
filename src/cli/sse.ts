/**
 * A small Server-Sent Events reader (the parts of the WHATWG event-stream format Roost uses):
 * `event:` and `data:` fields, multi-line data, `id:`, comments (keepalives) and any of CRLF, CR
 * or LF as line ends, split anywhere across chunks.
 */

export interface SseMessage {
  /** The `event:` field; `message` when the server sent none. */
  event: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  /** The last `id:` field seen, if any. */
  id: string | undefined;
}

export interface SseParser {
  /** Feeds decoded text; complete messages are handed to the callback as they end. */
  push(text: string): void;
  /** The stream ended: a message not terminated by a blank line is dropped, as the format says. */
  end(): void;
}

export function createSseParser(onMessage: (message: SseMessage) => void): SseParser {
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  // A chunk that ended in "\r" may continue with the "\n" of the same CRLF.
  let skipLeadingLf = false;
  let started = false;

  const dispatch = () => {
    if (data.length > 0)
      onMessage({ event: event === "" ? "message" : event, data: data.join("\n"), id });
    event = "";
    data = [];
  };

  const line = (text: string) => {
    if (text === "") return dispatch();
    if (text.startsWith(":")) return; // comment, e.g. a keepalive
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        event = value;
        break;
      case "data":
        data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) id = value;
        break;
      default:
        // `retry` and unknown fields are ignored.
        break;
    }
  };

  return {
    push(text) {
      if (!started && text !== "") {
        started = true;
        if (text.startsWith("\uFEFF")) text = text.slice(1); // the format allows one leading BOM
      }
      if (skipLeadingLf && text.startsWith("\n")) text = text.slice(1);
      skipLeadingLf = false;
      buffer += text;
      for (;;) {
        const match = /\r\n|\r|\n/.exec(buffer);
        if (match === null) break;
        // A lone "\r" at the very end may be the first half of a CRLF split across chunks.
        if (match[0] === "\r" && match.index === buffer.length - 1) {
          line(buffer.slice(0, match.index));
          buffer = "";
          skipLeadingLf = true;
          break;
        }
        line(buffer.slice(0, match.index));
        buffer = buffer.slice(match.index + match[0].length);
      }
    },
    end() {
      buffer = "";
      event = "";
      data = [];
    },
  };
}

/** Reads an event-stream body to its end, yielding each message as soon as it is complete. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const pending: SseMessage[] = [];
  const parser = createSseParser((message) => pending.push(message));
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
      while (pending.length > 0) yield pending.shift() as SseMessage;
    }
    parser.push(decoder.decode());
    parser.end();
    while (pending.length > 0) yield pending.shift() as SseMessage;
  } finally {
    // Ends the HTTP request when the consumer stops early (break, return or a thrown error).
    await reader.cancel().catch(() => undefined);
  }
}
