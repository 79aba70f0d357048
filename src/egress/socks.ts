/**
 * SOCKS5 (RFC 1928) as the egress proxy speaks it on a computer's SOCKS socket: the
 * "no authentication" method only, the CONNECT command only (BIND and UDP ASSOCIATE are answered
 * "command not supported"), and IPv4, IPv6 and domain-name destinations. Names are resolved by
 * the proxy, never by the computer (the `socks5h` behaviour), and judged like every other request.
 *
 * Invariants:
 *   SOX1 Nothing but the method selection is sent before the whole request has arrived, and
 *        nothing reaches a destination before the proxy's checks passed (E3).
 *   SOX2 Every handshake ends with exactly one reply, or with the socket closed when the client
 *        is not speaking SOCKS5 at all.
 */
import type { Socket } from "node:net";

/** The REP field of a reply (RFC 1928 §6). */
export const socksReply = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowed: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  ttlExpired: 0x06,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;

export type SocksReplyCode = (typeof socksReply)[keyof typeof socksReply];

const version = 0x05;
const noAuthentication = 0x00;
const noAcceptableMethod = 0xff;
const connectCommand = 0x01;
const commandNames: Record<number, string> = { 1: "CONNECT", 2: "BIND", 3: "UDP ASSOCIATE" };

/** A destination as the client wrote it: an address literal (canonical later) or a name. */
export interface SocksDestination {
  host: string;
  port: number;
}

export type SocksHandshake =
  | { ok: true; destination: SocksDestination; head: Buffer }
  | {
      ok: false;
      /** The reply to send, or undefined when the socket was already answered or is not SOCKS5. */
      reply: SocksReplyCode | undefined;
      message: string;
      destination?: SocksDestination;
    };

/** The reply frame; the bound address is always 0.0.0.0:0 (clients do not use it for CONNECT). */
export function encodeSocksReply(code: SocksReplyCode): Buffer {
  return Buffer.from([version, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]);
}

function formatIpv6(bytes: Buffer): string {
  const groups: string[] = [];
  for (let index = 0; index < 16; index += 2) groups.push(bytes.readUInt16BE(index).toString(16));
  return groups.join(":");
}

type Parsed<T> = { value: T; used: number } | "incomplete" | { error: SocksHandshake };

function parseRequest(buffer: Buffer): Parsed<{ command: number; destination: SocksDestination }> {
  if (buffer.length < 4) return "incomplete";
  const fail = (reply: SocksReplyCode, message: string): { error: SocksHandshake } => ({
    error: { ok: false, reply, message },
  });
  if (buffer[0] !== version) return fail(socksReply.generalFailure, "not a SOCKS5 request");
  const command = buffer[1]!;
  const addressType = buffer[3]!;
  let host: string;
  let end: number;
  if (addressType === 0x01) {
    end = 4 + 4;
    if (buffer.length < end + 2) return "incomplete";
    host = [...buffer.subarray(4, end)].join(".");
  } else if (addressType === 0x04) {
    end = 4 + 16;
    if (buffer.length < end + 2) return "incomplete";
    host = formatIpv6(buffer.subarray(4, end));
  } else if (addressType === 0x03) {
    if (buffer.length < 5) return "incomplete";
    const length = buffer[4]!;
    end = 5 + length;
    if (buffer.length < end + 2) return "incomplete";
    host = buffer.subarray(5, end).toString("latin1");
    if (length === 0) return fail(socksReply.hostUnreachable, "an empty destination name");
  } else {
    return fail(
      socksReply.addressTypeNotSupported,
      `address type ${addressType} is not supported (use IPv4, IPv6 or a domain name)`,
    );
  }
  const port = buffer.readUInt16BE(end);
  return { value: { command, destination: { host, port } }, used: end + 2 };
}

/**
 * Runs the server side of the handshake on `socket` up to the CONNECT request (SOX1); the caller
 * sends the final reply. Rejects never; a client that goes away resolves as a failure.
 */
export function readSocksHandshake(socket: Socket): Promise<SocksHandshake> {
  return new Promise((resolve) => {
    let buffer = Buffer.alloc(0);
    let stage: "greeting" | "request" = "greeting";
    let settled = false;
    const finish = (result: SocksHandshake): void => {
      if (settled) return;
      settled = true;
      socket.off("data", onData);
      socket.off("close", onClose);
      resolve(result);
    };
    const onClose = (): void =>
      finish({ ok: false, reply: undefined, message: "the client went away" });
    const onData = (chunk: Buffer): void => {
      buffer = Buffer.concat([buffer, chunk]);
      if (buffer.length > 1024) {
        finish({ ok: false, reply: undefined, message: "handshake too long" });
        return;
      }
      if (stage === "greeting") {
        if (buffer.length < 2) return;
        if (buffer[0] !== version) {
          finish({ ok: false, reply: undefined, message: "not SOCKS version 5" }); // SOX2
          return;
        }
        const count = buffer[1]!;
        if (buffer.length < 2 + count) return;
        const methods = buffer.subarray(2, 2 + count);
        buffer = buffer.subarray(2 + count);
        if (!methods.includes(noAuthentication)) {
          socket.write(Buffer.from([version, noAcceptableMethod]));
          finish({
            ok: false,
            reply: undefined,
            message: "the client offers no method without authentication",
          });
          return;
        }
        socket.write(Buffer.from([version, noAuthentication]));
        stage = "request";
      }
      const parsed = parseRequest(buffer);
      if (parsed === "incomplete") return;
      if ("error" in parsed) {
        finish(parsed.error);
        return;
      }
      const { command, destination } = parsed.value;
      if (command !== connectCommand) {
        finish({
          ok: false,
          reply: socksReply.commandNotSupported,
          message: `the ${commandNames[command] ?? `command ${command}`} command is not supported; only CONNECT is`,
          destination,
        });
        return;
      }
      finish({ ok: true, destination, head: buffer.subarray(parsed.used) });
    };
    socket.on("data", onData);
    socket.on("close", onClose);
  });
}
