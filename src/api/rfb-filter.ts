/**
 * The client-to-server half of an RFB (VNC) stream, parsed message by message so that the
 * server, not the page, decides what a viewer may send to a screen (docs/live-view.md).
 *
 * Invariants:
 *   RFB1 Input (KeyEvent, PointerEvent, ClientCutText, SetDesktopSize, QEMU key events) reaches
 *        the screen only while `canControl()` says this viewer holds the control lease, checked
 *        for each message when it is complete; otherwise it is dropped, whole.
 *   RFB2 Only what the filter can measure is forwarded: RFB 3.7 or 3.8, the "None" security
 *        type (the tunnel is the authentication), then known message types. Anything else ends
 *        the stream: an unknown message's length cannot be known, so nothing after it could be
 *        told apart from input.
 *   RFB3 The ClientInit always asks for a shared session, so a viewer can never disconnect the
 *        others (or the bot's own use of the display).
 *   RFB4 Floods end the stream: more than `maxMessagesPerSecond` on average (with a burst of
 *        twice that), a clipboard text larger than `maxCutTextBytes`, a SetEncodings list longer
 *        than 1024.
 */

/** Why a stream was ended; its message says what the client sent. */
export class RfbProtocolError extends Error {
  override readonly name = "RfbProtocolError";
}

export interface RfbFilterOptions {
  /** RFB1: whether this viewer holds the control lease right now. */
  canControl(): boolean;
  /** @default 256 KiB */
  maxCutTextBytes?: number;
  /** @default 300 */
  maxMessagesPerSecond?: number;
  clock?: () => number;
}

export interface RfbFilter {
  /** The bytes of `chunk` (with what was held back before) to forward, in order. Throws RfbProtocolError. */
  push(chunk: Buffer): Buffer;
  /** Counts so far, for tests and logs. */
  readonly counts: { forwarded: number; dropped: number };
}

export const rfbMessageTypes = {
  setPixelFormat: 0,
  setEncodings: 2,
  framebufferUpdateRequest: 3,
  keyEvent: 4,
  pointerEvent: 5,
  clientCutText: 6,
  enableContinuousUpdates: 150,
  clientFence: 248,
  setDesktopSize: 251,
  qemuClientMessage: 255,
} as const;

type Phase = "version" | "security" | "init" | "messages";

/** The length of the message at the head of `bytes`, or undefined when more bytes are needed. */
function messageLength(bytes: Buffer, maxCutTextBytes: number): number | undefined {
  const type = bytes[0]!;
  const need = (count: number) => (bytes.length >= count ? count : undefined);
  switch (type) {
    case rfbMessageTypes.setPixelFormat:
      return need(20);
    case rfbMessageTypes.setEncodings: {
      if (bytes.length < 4) return undefined;
      const count = bytes.readUInt16BE(2);
      if (count > 1024)
        throw new RfbProtocolError(`SetEncodings lists ${count} encodings; at most 1024`); // RFB4
      return need(4 + 4 * count);
    }
    case rfbMessageTypes.framebufferUpdateRequest:
      return need(10);
    case rfbMessageTypes.keyEvent:
      return need(8);
    case rfbMessageTypes.pointerEvent:
      return need(6);
    case rfbMessageTypes.clientCutText: {
      if (bytes.length < 8) return undefined;
      // A negative length is the extended clipboard's (its size is the absolute value).
      const size = Math.abs(bytes.readInt32BE(4));
      if (size > maxCutTextBytes)
        throw new RfbProtocolError(
          `a clipboard text of ${size} bytes; at most ${maxCutTextBytes} may be pasted`,
        ); // RFB4
      return need(8 + size);
    }
    case rfbMessageTypes.enableContinuousUpdates:
      return need(10);
    case rfbMessageTypes.clientFence: {
      if (bytes.length < 9) return undefined;
      const size = bytes[8]!;
      if (size > 64) throw new RfbProtocolError(`a fence of ${size} bytes; at most 64`);
      return need(9 + size);
    }
    case rfbMessageTypes.setDesktopSize: {
      if (bytes.length < 8) return undefined;
      return need(8 + 16 * bytes[6]!);
    }
    case rfbMessageTypes.qemuClientMessage: {
      if (bytes.length < 2) return undefined;
      if (bytes[1] !== 0)
        throw new RfbProtocolError(`QEMU client message of subtype ${bytes[1]} is not supported`);
      return need(12);
    }
    default:
      throw new RfbProtocolError(
        `message type ${type} is not one this live view forwards (its length is unknown)`,
      ); // RFB2
  }
}

const inputTypes = new Set<number>([
  rfbMessageTypes.keyEvent,
  rfbMessageTypes.pointerEvent,
  rfbMessageTypes.clientCutText,
  rfbMessageTypes.setDesktopSize,
  rfbMessageTypes.qemuClientMessage,
]);

export function createRfbFilter(options: RfbFilterOptions): RfbFilter {
  const maxCutTextBytes = options.maxCutTextBytes ?? 256 * 1024;
  const rate = options.maxMessagesPerSecond ?? 300;
  const clock = options.clock ?? Date.now;
  let phase: Phase = "version";
  let held: Buffer = Buffer.alloc(0);
  let tokens = rate * 2;
  let refilledAt = clock();
  const counts = { forwarded: 0, dropped: 0 };

  function spend(): void {
    const now = clock();
    tokens = Math.min(rate * 2, tokens + ((now - refilledAt) * rate) / 1000);
    refilledAt = now;
    if (tokens < 1)
      throw new RfbProtocolError(
        `more than ${rate} messages a second; the viewer is sending too fast`,
      ); // RFB4
    tokens -= 1;
  }

  return {
    counts,
    push(chunk) {
      held = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
      const out: Buffer[] = [];
      let offset = 0;
      for (;;) {
        const rest = held.subarray(offset);
        if (phase === "version") {
          if (rest.length < 12) break;
          const version = rest.subarray(0, 12).toString("latin1");
          if (version !== "RFB 003.008\n" && version !== "RFB 003.007\n")
            throw new RfbProtocolError(
              `the viewer asked for ${JSON.stringify(version)}; the live view speaks RFB 3.7 and 3.8`,
            ); // RFB2
          out.push(rest.subarray(0, 12));
          offset += 12;
          phase = "security";
        } else if (phase === "security") {
          if (rest.length < 1) break;
          if (rest[0] !== 1)
            throw new RfbProtocolError(
              `the viewer chose security type ${rest[0]}; the live view offers only None (1)`,
            ); // RFB2
          out.push(rest.subarray(0, 1));
          offset += 1;
          phase = "init";
        } else if (phase === "init") {
          if (rest.length < 1) break;
          out.push(Buffer.from([1])); // RFB3: shared, whatever was asked
          offset += 1;
          phase = "messages";
        } else {
          if (rest.length < 1) break;
          const length = messageLength(rest, maxCutTextBytes);
          if (length === undefined) break;
          spend();
          const message = rest.subarray(0, length);
          offset += length;
          if (inputTypes.has(message[0]!) && !options.canControl()) {
            counts.dropped += 1; // RFB1
            continue;
          }
          counts.forwarded += 1;
          out.push(message);
        }
      }
      held = offset >= held.length ? Buffer.alloc(0) : Buffer.from(held.subarray(offset));
      return out.length === 1 ? out[0]! : Buffer.concat(out);
    },
  };
}
