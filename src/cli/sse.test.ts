import { describe, expect, it } from "vitest";
import { createSseParser, readSse, type SseMessage } from "./sse.ts";

function parse(...chunks: string[]): SseMessage[] {
  const messages: SseMessage[] = [];
  const parser = createSseParser((message) => messages.push(message));
  for (const chunk of chunks) parser.push(chunk);
  parser.end();
  return messages;
}

const roostStream = [
  'event: hello\ndata: {"seq":0,"state":"idle"}\n\n',
  ": keepalive\n\n",
  'event: changed\ndata: {"seq":1}\n\n',
  'event: delta\ndata: {"turnId":"t","text":"Hi"}\n\n',
  'event: turn\ndata: {"state":"idle","turnId":"t"}\n\n',
].join("");

const expected: SseMessage[] = [
  { event: "hello", data: '{"seq":0,"state":"idle"}', id: undefined },
  { event: "changed", data: '{"seq":1}', id: undefined },
  { event: "delta", data: '{"turnId":"t","text":"Hi"}', id: undefined },
  { event: "turn", data: '{"state":"idle","turnId":"t"}', id: undefined },
];

describe("the SSE parser", () => {
  it("reads Roost's events and skips keepalive comments", () => {
    expect(parse(roostStream)).toEqual(expected);
  });

  it("gives the same messages however the stream is split into chunks", () => {
    for (let size = 1; size <= 7; size++) {
      const chunks: string[] = [];
      for (let index = 0; index < roostStream.length; index += size)
        chunks.push(roostStream.slice(index, index + size));
      expect(parse(...chunks)).toEqual(expected);
    }
  });

  it("accepts CRLF and CR line ends, also when a CRLF is split across chunks", () => {
    expect(parse("event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r")).toEqual([
      { event: "a", data: "1", id: undefined },
      { event: "b", data: "2", id: undefined },
    ]);
    // A CRLF split after its CR is one line end, not two (which would end the message early).
    expect(parse("data: x\r", "\ndata: y\r\n\r\n")).toEqual([
      { event: "message", data: "x\ny", id: undefined },
    ]);
    expect(parse("data: x\r", "\n", "\r", "\ndata: y\r\n\r\n")).toEqual([
      { event: "message", data: "x", id: undefined },
      { event: "message", data: "y", id: undefined },
    ]);
  });

  it("joins multi-line data, defaults the event to message, keeps the last id", () => {
    expect(parse("id: 7\ndata: one\ndata:two\ndata\n\n")).toEqual([
      { event: "message", data: "one\ntwo\n", id: "7" },
    ]);
  });

  it("strips only one space after the colon and ignores unknown fields and retry", () => {
    expect(parse("event:  spaced\nretry: 10\nfoo: bar\ndata:  two spaces\n\n")).toEqual([
      { event: " spaced", data: " two spaces", id: undefined },
    ]);
  });

  it("does not dispatch an event without data, nor one cut off by the end of the stream", () => {
    expect(parse("event: empty\n\n", "event: cut\ndata: half")).toEqual([]);
  });

  it("resets the event name after each message", () => {
    expect(parse("event: a\ndata: 1\n\ndata: 2\n\n").map((message) => message.event)).toEqual([
      "a",
      "message",
    ]);
  });

  it("skips a leading byte order mark", () => {
    expect(parse("\uFEFFdata: x\n\n")).toEqual([{ event: "message", data: "x", id: undefined }]);
  });
});

describe("readSse", () => {
  it("decodes UTF-8 split inside a character and yields messages as they complete", async () => {
    const bytes = new TextEncoder().encode("data: héllo ⚙\n\n");
    const split = [bytes.slice(0, 8), bytes.slice(8, 15), bytes.slice(15)];
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of split) controller.enqueue(chunk);
        controller.close();
      },
    });
    const messages: SseMessage[] = [];
    for await (const message of readSse(body)) messages.push(message);
    expect(messages).toEqual([{ event: "message", data: "héllo ⚙", id: undefined }]);
  });

  it("cancels the body when the reader stops early", async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("data: 1\n\ndata: 2\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const message of readSse(body)) {
      expect(message.data).toBe("1");
      break;
    }
    expect(cancelled).toBe(true);
  });
});
