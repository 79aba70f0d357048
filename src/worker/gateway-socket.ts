/**
 * The worker's WebSocket client (RFC 6455), for its one connection to the gateway: text frames,
 * no extensions. It replaces the `ws` package in the worker, which loaded Node's HTTP, HTTPS, TLS
 * and zlib modules at start: ~4 MiB of a computer's memory and ~25 ms of each wake (decision
 * 0021, fifth pass). The gateway's side is still `ws`.
 *
 * Invariants:
 *   GS1 The handshake is accepted only as a `101` whose `Sec-WebSocket-Accept` is the one our key
 *       asks for, with `Upgrade: websocket`; any other answer is an error naming the status
 *       (`Unexpected server response: 401`), and the connection closes with 1006.
 *   GS2 What the gateway sends is checked before it is used: no reserved bits (no extension was
 *       agreed), no mask, a known opcode, control frames whole and ≤ 125 bytes, continuations only
 *       inside a fragmented message, and a message of at most `maxPayload` bytes counted before
 *       it is buffered (1009). Text must be UTF-8 (1007). A breach closes with 1002 and the reason.
 *   GS3 Every frame the worker sends is masked with fresh random bytes (RFC 6455 §5.3).
 *   GS4 `close` ends with one `close` event: after the gateway's close frame, on the socket's
 *       end, or 30 s after our close frame (then the socket is destroyed); `terminate` destroys
 *       at once. `close` reports the gateway's code and reason (1005 without a code, 1006 when the
 *       connection ended without a close frame).
 */
import { EventEmitter } from "node:events";
import { isUtf8 } from "node:buffer";
import { connect as netConnect, isIP, type Socket } from "node:net";
import { randomBytes, randomFill, sha1 } from "./light-crypto.ts";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/** How long a closing connection waits for the gateway's close frame before it is destroyed. */
const closeTimeoutMs = 30_000;
const maxHandshakeBytes = 16 * 1024;

export const ReadyState = { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 } as const;

export interface GatewaySocketOptions {
  headers?: Record<string, string>;
  /** GS2: the largest message accepted, in bytes. */
  maxPayload: number;
  handshakeTimeoutMs: number;
  /** An open connection to use (a proxy's tunnel, paused); otherwise one is made from the URL. */
  connection?: Socket;
}

export interface GatewaySocketEvents {
  open: [];
  message: [data: Buffer, isBinary: boolean];
  error: [error: Error];
  close: [code: number, reason: Buffer];
}

/** Where a `ws:`, `wss:` or `ws+unix:` URL leads: the connection to make and the request line. */
export function gatewayTarget(url: URL): {
  connect: () => Socket;
  host: string;
  path: string;
} {
  if (url.protocol === "ws+unix:") {
    // ws's form: ws+unix:///path/to/socket:/request/path
    const colon = url.pathname.indexOf(":");
    const socketPath = colon === -1 ? url.pathname : url.pathname.slice(0, colon);
    const path = colon === -1 ? "/" : url.pathname.slice(colon + 1) || "/";
    return {
      connect: () => netConnect({ path: socketPath }),
      host: "localhost",
      path: `${path}${url.search}`,
    };
  }
  if (url.protocol !== "ws:" && url.protocol !== "wss:")
    throw new Error(`the gateway URL must be ws://, wss:// or ws+unix:// (got ${url.protocol}//)`);
  const secure = url.protocol === "wss:";
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(url.port || (secure ? 443 : 80));
  return {
    connect: () => {
      if (!secure) return netConnect({ host, port });
      // Loaded only for a wss:// gateway: a computer's worker never needs TLS.
      const tls = process.getBuiltinModule("node:tls");
      return tls.connect({ host, port, ...(isIP(host) === 0 ? { servername: host } : {}) });
    },
    host: url.host,
    path: `${url.pathname || "/"}${url.search}`,
  };
}

export class GatewaySocket extends EventEmitter<GatewaySocketEvents> {
  static readonly CONNECTING = ReadyState.CONNECTING;
  static readonly OPEN = ReadyState.OPEN;
  static readonly CLOSING = ReadyState.CLOSING;
  static readonly CLOSED = ReadyState.CLOSED;

  readyState: number = ReadyState.CONNECTING;
  readonly #socket: Socket;
  readonly #maxPayload: number;
  readonly #key = randomBytes(16).toString("base64");
  #handshakeTimer: NodeJS.Timeout | undefined;
  #closeTimer: NodeJS.Timeout | undefined;
  #buffered: Buffer[] = [];
  #bufferedBytes = 0;
  /** Bytes the next frame needs before it is worth looking at the buffer again. */
  #needed = 0;
  /** False once a close frame came or the gateway broke the protocol: the rest is ignored. */
  #reading = true;
  /** Fragments of the message being received, and its opcode. */
  #fragments: Buffer[] = [];
  #fragmentBytes = 0;
  #fragmentOpcode = 0;
  #closeCode = 1006;
  #closeReason: Buffer = Buffer.alloc(0);
  #closeSent = false;
  #emittedClose = false;
  /** Random bytes for masks (GS3), taken 4 at a time. */
  #maskPool = Buffer.alloc(0);
  #maskOffset = 0;

  constructor(url: string, options: GatewaySocketOptions) {
    super();
    const target = gatewayTarget(new URL(url));
    this.#maxPayload = options.maxPayload;
    this.#socket = options.connection ?? target.connect();
    const socket = this.#socket;
    socket.setNoDelay?.(true);
    this.#handshakeTimer = setTimeout(
      () => this.#fail(new Error("Opening handshake has timed out")),
      options.handshakeTimeoutMs,
    );
    const request = [
      `GET ${target.path} HTTP/1.1`,
      `Host: ${target.host}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${this.#key}`,
      "Sec-WebSocket-Version: 13",
      ...Object.entries(options.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
    ];
    socket.on("error", (error) => this.#fail(error));
    socket.on("close", () => this.#finish());
    socket.on("data", (chunk: Buffer) => this.#receive(chunk));
    // A given connection is open already (and paused); a new one is written to once it is.
    socket.write(`${request.join("\r\n")}\r\n\r\n`);
    if (options.connection !== undefined) socket.resume();
  }

  send(text: string): void {
    if (this.readyState !== ReadyState.OPEN) return;
    this.#write(0x1, Buffer.from(text, "utf8"));
  }

  close(code = 1000, reason = ""): void {
    if (this.readyState === ReadyState.CLOSED) return;
    if (this.readyState === ReadyState.CONNECTING) {
      this.terminate();
      return;
    }
    this.readyState = ReadyState.CLOSING;
    this.#sendClose(code, reason);
    this.#closeTimer ??= setTimeout(() => this.#socket.destroy(), closeTimeoutMs); // GS4
  }

  terminate(): void {
    if (this.readyState === ReadyState.CLOSED) return;
    this.readyState = ReadyState.CLOSING;
    this.#socket.destroy();
  }

  #sendClose(code: number, reason: string): void {
    if (this.#closeSent) return;
    this.#closeSent = true;
    const text = Buffer.from(reason, "utf8").subarray(0, 123);
    const payload = Buffer.alloc(2 + text.length);
    payload.writeUInt16BE(code, 0);
    text.copy(payload, 2);
    this.#write(0x8, payload);
  }

  #write(opcode: number, payload: Buffer): void {
    const length = payload.length;
    const headerLength = length < 126 ? 6 : length < 65_536 ? 8 : 14;
    const frame = Buffer.allocUnsafe(headerLength + length);
    frame[0] = 0x80 | opcode;
    if (length < 126) frame[1] = 0x80 | length;
    else if (length < 65_536) {
      frame[1] = 0x80 | 126;
      frame.writeUInt16BE(length, 2);
    } else {
      frame[1] = 0x80 | 127;
      frame.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
      frame.writeUInt32BE(length >>> 0, 6);
    }
    const mask = this.#mask(); // GS3
    const at = headerLength - 4;
    mask.copy(frame, at);
    for (let index = 0; index < length; index += 1)
      frame[headerLength + index] = payload[index]! ^ mask[index & 3]!;
    this.#socket.write(frame);
  }

  #mask(): Buffer {
    if (this.#maskOffset + 4 > this.#maskPool.length) {
      this.#maskPool = randomFill(Buffer.allocUnsafe(4096));
      this.#maskOffset = 0;
    }
    const mask = this.#maskPool.subarray(this.#maskOffset, this.#maskOffset + 4);
    this.#maskOffset += 4;
    return mask;
  }

  #receive(chunk: Buffer): void {
    if (!this.#reading) return;
    this.#buffered.push(chunk);
    this.#bufferedBytes += chunk.length;
    if (this.#bufferedBytes < this.#needed) return; // a large frame still arriving: no copies
    if (this.readyState === ReadyState.CONNECTING) {
      if (!this.#handshake()) return;
    }
    this.#frames();
  }

  /** GS1: true once the 101 is read and checked (what follows it stays buffered). */
  #handshake(): boolean {
    const data = this.#take();
    const end = data.indexOf("\r\n\r\n");
    if (end === -1) {
      if (data.length > maxHandshakeBytes)
        this.#fail(new Error("the gateway's handshake answer is too long"));
      else this.#keep(data);
      return false;
    }
    const lines = data.subarray(0, end).toString("latin1").split("\r\n");
    const status = /^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? "")?.[1];
    if (status !== "101") {
      this.#fail(new Error(`Unexpected server response: ${status ?? lines[0]?.slice(0, 80)}`));
      return false;
    }
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon > 0)
        headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const accept = sha1(`${this.#key}${GUID}`).toString("base64");
    if ((headers.get("upgrade") ?? "").toLowerCase() !== "websocket") {
      this.#fail(new Error("Invalid Upgrade header"));
      return false;
    }
    if (headers.get("sec-websocket-accept") !== accept) {
      this.#fail(new Error("Invalid Sec-WebSocket-Accept header"));
      return false;
    }
    if (headers.has("sec-websocket-extensions")) {
      this.#fail(
        new Error("Server sent a Sec-WebSocket-Extensions header but no extension was requested"),
      );
      return false;
    }
    clearTimeout(this.#handshakeTimer);
    this.#keep(data.subarray(end + 4));
    this.readyState = ReadyState.OPEN;
    this.emit("open");
    return this.readyState === ReadyState.OPEN;
  }

  #take(): Buffer {
    const data =
      this.#buffered.length === 1
        ? this.#buffered[0]!
        : Buffer.concat(this.#buffered, this.#bufferedBytes);
    this.#buffered = [];
    this.#bufferedBytes = 0;
    return data;
  }

  #keep(rest: Buffer, needed = 0): void {
    this.#needed = needed;
    if (rest.length === 0) return;
    this.#buffered = [rest];
    this.#bufferedBytes = rest.length;
  }

  /** GS2: every whole frame in the buffer, in order. */
  #frames(): void {
    while (this.#bufferedBytes >= 2 && this.#reading) {
      const data = this.#take();
      const first = data[0]!;
      const second = data[1]!;
      const fin = (first & 0x80) !== 0;
      const opcode = first & 0x0f;
      if ((first & 0x70) !== 0) return this.#protocolError("reserved bits set", 1002);
      if ((second & 0x80) !== 0)
        return this.#protocolError("a masked frame from the gateway", 1002);
      let length = second & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (data.length < 4) return this.#keep(data, 4);
        length = data.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (data.length < 10) return this.#keep(data, 10);
        const high = data.readUInt32BE(2);
        if (high > 0x1fffff) return this.#protocolError("a frame length over 2^53", 1009);
        length = high * 2 ** 32 + data.readUInt32BE(6);
        offset = 10;
      }
      const control = opcode >= 0x8;
      if (control && (length > 125 || !fin))
        return this.#protocolError("a control frame fragmented or over 125 bytes", 1002);
      if (!control && length + this.#fragmentBytes > this.#maxPayload)
        return this.#protocolError("Max payload size exceeded", 1009);
      if (data.length < offset + length) return this.#keep(data, offset + length);
      const payload = data.subarray(offset, offset + length);
      this.#keep(data.subarray(offset + length));
      if (!this.#frame(fin, opcode, payload)) return;
    }
  }

  /** One frame; false when the connection is failing. */
  #frame(fin: boolean, opcode: number, payload: Buffer): boolean {
    switch (opcode) {
      case 0x0:
      case 0x1:
      case 0x2: {
        if ((opcode === 0x0) !== (this.#fragmentOpcode !== 0)) {
          this.#protocolError(
            opcode === 0x0
              ? "a continuation frame outside a message"
              : "a new message inside a fragmented one",
            1002,
          );
          return false;
        }
        if (opcode !== 0x0) this.#fragmentOpcode = opcode;
        this.#fragments.push(payload);
        this.#fragmentBytes += payload.length;
        if (!fin) return true;
        const message =
          this.#fragments.length === 1
            ? this.#fragments[0]!
            : Buffer.concat(this.#fragments, this.#fragmentBytes);
        const binary = this.#fragmentOpcode === 0x2;
        this.#fragments = [];
        this.#fragmentBytes = 0;
        this.#fragmentOpcode = 0;
        if (!binary && !isUtf8(message)) {
          this.#protocolError("a text message that is not UTF-8", 1007);
          return false;
        }
        if (this.readyState === ReadyState.OPEN) this.emit("message", message, binary);
        return true;
      }
      case 0x8: {
        if (payload.length === 1) {
          this.#protocolError("a close frame of one byte", 1002);
          return false;
        }
        this.#reading = false;
        this.#closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
        this.#closeReason = Buffer.from(payload.subarray(2));
        if (this.readyState === ReadyState.OPEN) this.readyState = ReadyState.CLOSING;
        this.#sendClose(payload.length >= 2 ? this.#closeCode : 1000, "");
        this.#socket.end();
        this.#closeTimer ??= setTimeout(() => this.#socket.destroy(), closeTimeoutMs);
        return false;
      }
      case 0x9:
        if (this.readyState === ReadyState.OPEN) this.#write(0xa, Buffer.from(payload));
        return true;
      case 0xa:
        return true;
      default:
        this.#protocolError(`an unknown opcode ${opcode}`, 1002);
        return false;
    }
  }

  /** GS2: the gateway broke the protocol: say so, close with `code`, and stop reading. */
  #protocolError(message: string, code: number): void {
    this.#reading = false;
    this.#buffered = [];
    this.#bufferedBytes = 0;
    this.emit("error", new Error(`Invalid WebSocket frame: ${message}`));
    this.#closeCode = code;
    this.readyState = ReadyState.CLOSING;
    this.#sendClose(code, message);
    this.#socket.end();
    this.#closeTimer ??= setTimeout(() => this.#socket.destroy(), closeTimeoutMs);
  }

  #fail(error: Error): void {
    if (this.readyState === ReadyState.CLOSED) return;
    clearTimeout(this.#handshakeTimer);
    const wasConnecting = this.readyState === ReadyState.CONNECTING;
    this.readyState = ReadyState.CLOSING;
    this.#socket.destroy();
    if (wasConnecting || this.listenerCount("error") > 0) this.emit("error", error);
  }

  /** GS4: the socket is gone; one `close` event. */
  #finish(): void {
    if (this.#emittedClose) return;
    this.#emittedClose = true;
    clearTimeout(this.#handshakeTimer);
    clearTimeout(this.#closeTimer);
    this.readyState = ReadyState.CLOSED;
    this.emit("close", this.#closeCode, this.#closeReason);
  }
}
