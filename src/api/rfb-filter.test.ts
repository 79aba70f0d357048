import { describe, expect, it } from "vitest";
import { createRfbFilter, RfbProtocolError } from "./rfb-filter.ts";

const handshake = Buffer.concat([Buffer.from("RFB 003.008\n"), Buffer.from([1]), Buffer.from([0])]);
const pointer = (x: number, y: number, buttons = 0) => {
  const message = Buffer.alloc(6);
  message[0] = 5;
  message[1] = buttons;
  message.writeUInt16BE(x, 2);
  message.writeUInt16BE(y, 4);
  return message;
};
const key = (down: boolean, keysym: number) => {
  const message = Buffer.alloc(8);
  message[0] = 4;
  message[1] = down ? 1 : 0;
  message.writeUInt32BE(keysym, 4);
  return message;
};
const updateRequest = () => Buffer.from([3, 1, 0, 0, 0, 0, 0, 10, 0, 10]);
const cutText = (text: string) => {
  const head = Buffer.alloc(8);
  head[0] = 6;
  head.writeInt32BE(Buffer.byteLength(text), 4);
  return Buffer.concat([head, Buffer.from(text)]);
};
const setEncodings = (encodings: number[]) => {
  const message = Buffer.alloc(4 + 4 * encodings.length);
  message[0] = 2;
  message.writeUInt16BE(encodings.length, 2);
  encodings.forEach((encoding, index) => message.writeInt32BE(encoding, 4 + 4 * index));
  return message;
};

describe("the RFB filter of the live view", () => {
  it("RFB1: a view-only viewer's input is dropped whole; everything else goes through in order", () => {
    const filter = createRfbFilter({ canControl: () => false });
    const stream = Buffer.concat([
      handshake,
      setEncodings([0, 1, -223]),
      pointer(100, 100, 1),
      updateRequest(),
      key(true, 0x61),
      cutText("secret"),
      updateRequest(),
    ]);
    // Byte by byte, so every message is split at every place.
    const out = Buffer.concat([...stream].map((byte) => filter.push(Buffer.from([byte]))));
    expect(out).toEqual(
      Buffer.concat([
        Buffer.from("RFB 003.008\n"),
        Buffer.from([1, 1]),
        setEncodings([0, 1, -223]),
        updateRequest(),
        updateRequest(),
      ]),
    );
    expect(filter.counts).toEqual({ forwarded: 3, dropped: 3 });
  });

  it("RFB1: the controller's input goes through, and the lease is asked for each message", () => {
    let control = true;
    const filter = createRfbFilter({ canControl: () => control });
    filter.push(handshake);
    expect(filter.push(pointer(5, 6))).toEqual(pointer(5, 6));
    control = false;
    expect(filter.push(Buffer.concat([key(true, 0x62), updateRequest()]))).toEqual(updateRequest());
  });

  it("RFB3: a ClientInit asking for an exclusive session is made shared", () => {
    const filter = createRfbFilter({ canControl: () => false });
    const out = filter.push(Buffer.concat([Buffer.from("RFB 003.008\n"), Buffer.from([1, 0])]));
    expect(out.at(-1)).toBe(1);
  });

  it("RFB2: an unknown message type, another version or security type end the stream", () => {
    const unknown = createRfbFilter({ canControl: () => true });
    unknown.push(handshake);
    expect(() => unknown.push(Buffer.from([99, 0, 0]))).toThrow(/message type 99/);
    expect(() =>
      createRfbFilter({ canControl: () => true }).push(Buffer.from("RFB 003.003\n")),
    ).toThrow(RfbProtocolError);
    expect(() =>
      createRfbFilter({ canControl: () => true }).push(
        Buffer.concat([Buffer.from("RFB 003.008\n"), Buffer.from([2])]),
      ),
    ).toThrow(/security type 2/);
  });

  it("RFB4: a flood of messages, a huge clipboard or encodings list end the stream", () => {
    const now = 1_000;
    const flood = createRfbFilter({ canControl: () => false, clock: () => now });
    flood.push(handshake);
    expect(() => flood.push(Buffer.concat(Array.from({ length: 700 }, updateRequest)))).toThrow(
      /too fast/,
    );
    let later = 0;
    const steady = createRfbFilter({ canControl: () => false, clock: () => later });
    steady.push(handshake);
    for (let second = 0; second < 5; second += 1) {
      later = second * 1000;
      steady.push(Buffer.concat(Array.from({ length: 290 }, updateRequest)));
    }
    const paste = createRfbFilter({ canControl: () => true, maxCutTextBytes: 1024 });
    paste.push(handshake);
    expect(() => paste.push(cutText("x".repeat(2048)).subarray(0, 8))).toThrow(/clipboard/);
    const encodings = createRfbFilter({ canControl: () => true });
    encodings.push(handshake);
    expect(() => encodings.push(Buffer.from([2, 0, 0xff, 0xff]))).toThrow(/encodings/);
  });
});
