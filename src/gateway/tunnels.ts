/**
 * The gateway's end of the tunnels (protocol/tunnels.ts, docs/worker-protocol.md §14): a tunnel
 * to a port inside a computer, opened by that computer's worker over its own connection, is a
 * Duplex stream here (`TunnelStream`), so node's HTTP client can speak through it
 * (`http.request({ createConnection })`) and a WebSocket can be piped into it.
 *
 * Invariants:
 *   GT1 A tunnel is opened only on the computer's own current connection, and a frame acts only
 *       on the tunnels of the connection it arrived on: a worker can neither see nor feed another
 *       computer's tunnels (G1).
 *   GT2 Bytes are sent only within the credit the worker granted; a writer waits (its write
 *       callback is held) until more arrives, so node's stream backpressure reaches the client.
 *   GT3 Credit is granted back only for bytes the reader took (pushed while it asked for more),
 *       so a fast server inside a computer can never make the gateway hold more than the window
 *       (plus the stream's high-water mark and one chunk) per tunnel; data beyond the window
 *       closes the tunnel.
 *   GT4 Limits: `maxTunnelsPerComputer` open or opening tunnels per computer and `maxTunnels` in
 *       all; beyond them `open` fails at once with `rate_limited`, and nothing is sent.
 *   GT5 Every tunnel ends: on close or end from both sides, on its connection closing, after
 *       `idleTimeoutMs` without data either way, when opening takes longer than `openTimeoutMs`,
 *       or when its stream is destroyed; each end is reported once (`tunnel_closed`).
 */
import { Duplex } from "node:stream";
import { RoostError } from "../errors/index.ts";
import { decodeChunk, tunnelLimits, tunnelRefusalCodes } from "../protocol/index.ts";
import type {
  GatewayFrame,
  TunnelCloseFrame,
  TunnelOpenedFrame,
  TunnelRefusedFrame,
  TunnelStreamFrame,
} from "../protocol/index.ts";

/** What a tunnel needs of the connection it rides: its computer and a way to send. */
export interface TunnelLink {
  readonly computerId: string;
  send(frame: GatewayFrame): void;
}

export interface TunnelOptions {
  /** Tunnels open or opening at once per computer (GT4). @default 32 */
  maxTunnelsPerComputer?: number;
  /** Tunnels open or opening at once on this gateway (GT4). @default 1024 */
  maxTunnels?: number;
  /** Bytes a worker may send per tunnel before the gateway grants more (GT3). @default 256 KiB */
  windowBytes?: number;
  /** Time for the worker to answer `tunnel_open`. @default 10_000 */
  openTimeoutMs?: number;
  /** A tunnel with no data either way for this long is closed (GT5). @default 300_000 */
  idleTimeoutMs?: number;
}

export type TunnelEvent =
  | {
      type: "tunnel_refused";
      computerId: string;
      tunnelId: string | undefined;
      port: number;
      code: string;
      message: string;
    }
  | {
      type: "tunnel_closed";
      computerId: string;
      tunnelId: string;
      port: number;
      reason: string;
      bytesIn: number;
      bytesOut: number;
      /** Most bytes this gateway held for the tunnel at once (its queue and the stream's buffer). */
      peakBufferedBytes: number;
    };

export interface TunnelHub {
  /** Opens a tunnel to `port` on the link's computer; resolves once the worker has connected. */
  open(link: TunnelLink, port: number, signal?: AbortSignal): Promise<TunnelStream>;
  handleOpened(link: TunnelLink, frame: TunnelOpenedFrame | TunnelRefusedFrame): void;
  handleFrame(link: TunnelLink, frame: TunnelStreamFrame): void;
  /** The link's connection is gone: every tunnel on it ends (GT5). */
  linkClosed(link: TunnelLink, reason: string): void;
  /** Tunnels open or opening for the computer. */
  count(computerId: string): number;
  closeAll(reason: string): void;
}

interface Opening {
  resolve(stream: TunnelStream): void;
  reject(error: Error): void;
}

/**
 * One tunnel, as a Duplex: what is written goes to the server inside the computer, what it sends
 * is read. Ends of the two directions travel separately (`allowHalfOpen`).
 */
export class TunnelStream extends Duplex {
  readonly computerId: string;
  readonly tunnelId: string;
  readonly port: number;
  /** @internal state shared with the hub */
  sendCredit = 0;
  /** @internal whether the worker answered `tunnel_opened` */
  opened = false;
  private readonly link: TunnelLink;
  private readonly windowBytes: number;
  private readonly onActivity: () => void;
  private readonly onGone: (stream: TunnelStream, reason: string) => void;
  private receiveAllowance: number;
  private granted = 0;
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private wantsData = false;
  private peerEnded = false;
  private closedByPeer: string | undefined;
  private waitingWrite: { chunk: Buffer; callback: (error?: Error | null) => void } | undefined;
  private goneReason: string | undefined;
  bytesIn = 0;
  bytesOut = 0;
  peakBufferedBytes = 0;

  constructor(options: {
    link: TunnelLink;
    tunnelId: string;
    port: number;
    windowBytes: number;
    onActivity: () => void;
    onGone: (stream: TunnelStream, reason: string) => void;
  }) {
    super({
      allowHalfOpen: true,
      readableHighWaterMark: tunnelLimits.chunkBytes,
      writableHighWaterMark: tunnelLimits.chunkBytes,
    });
    this.link = options.link;
    this.computerId = options.link.computerId;
    this.tunnelId = options.tunnelId;
    this.port = options.port;
    this.windowBytes = options.windowBytes;
    this.receiveAllowance = options.windowBytes;
    this.onActivity = options.onActivity;
    this.onGone = options.onGone;
  }

  // node's HTTP client calls these on its socket; a tunnel has no such knobs.
  setTimeout(_ms: number, _callback?: () => void): this {
    return this;
  }
  setNoDelay(_noDelay?: boolean): this {
    return this;
  }
  setKeepAlive(_enable?: boolean, _delayMs?: number): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }

  override _write(
    chunk: Buffer,
    _encoding: BufferEncoding,
    callback: (error?: Error | null) => void,
  ): void {
    this.waitingWrite = { chunk, callback };
    this.pump();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.link.send({ type: "tunnel_end", tunnelId: this.tunnelId });
    callback();
  }

  override _read(): void {
    this.wantsData = true;
    this.drain();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.closedByPeer === undefined) {
      const frame: TunnelCloseFrame = { type: "tunnel_close", tunnelId: this.tunnelId };
      if (error !== null) frame.reason = error.message.slice(0, 1024);
      this.link.send(frame);
    }
    const waiting = this.waitingWrite;
    this.waitingWrite = undefined;
    this.queue = [];
    this.queuedBytes = 0;
    this.onGone(this, this.goneReason ?? this.closedByPeer ?? error?.message ?? "closed");
    waiting?.callback(error ?? new Error("the tunnel closed"));
    callback(error);
  }

  /** @internal GT2: sends the waiting write within the credit. */
  pump(): void {
    const waiting = this.waitingWrite;
    if (waiting === undefined) return;
    while (waiting.chunk.length > 0 && this.sendCredit > 0) {
      const size = Math.min(waiting.chunk.length, this.sendCredit, tunnelLimits.chunkBytes);
      this.link.send({
        type: "tunnel_data",
        tunnelId: this.tunnelId,
        data: waiting.chunk.subarray(0, size).toString("base64"),
      });
      waiting.chunk = waiting.chunk.subarray(size);
      this.sendCredit -= size;
      this.bytesOut += size;
      this.onActivity();
    }
    if (waiting.chunk.length > 0) return; // GT2: the callback waits for credit
    this.waitingWrite = undefined;
    waiting.callback();
  }

  /** @internal */
  receive(frame: TunnelStreamFrame): void {
    switch (frame.type) {
      case "tunnel_data": {
        const bytes = decodeChunk(frame.data);
        if (bytes === undefined) return this.fail("the worker sent tunnel_data that is not base64");
        if (this.peerEnded || bytes.length > this.receiveAllowance)
          return this.fail("the worker sent more than the window the gateway granted"); // GT3
        this.receiveAllowance -= bytes.length;
        this.bytesIn += bytes.length;
        this.onActivity();
        this.queue.push(bytes);
        this.queuedBytes += bytes.length;
        this.peakBufferedBytes = Math.max(
          this.peakBufferedBytes,
          this.queuedBytes + this.readableLength,
        );
        this.drain();
        return;
      }
      case "tunnel_credit":
        this.sendCredit = Math.min(this.sendCredit + frame.bytes, tunnelLimits.maxWindowBytes);
        this.pump();
        return;
      case "tunnel_end":
        this.peerEnded = true;
        this.drain();
        return;
      case "tunnel_close":
        this.peerClosed(frame.reason ?? "closed by the computer");
        return;
      default:
        assertNever(frame);
    }
  }

  /** @internal the peer is gone (its close frame, or the connection). */
  peerClosed(reason: string): void {
    if (this.destroyed) return;
    this.closedByPeer = reason;
    // A tunnel whose two directions had ended is simply finished; otherwise the reader or the
    // writer learns that it was cut off.
    if (this.readableEnded && this.writableFinished) this.destroy();
    else if (this.peerEnded && this.writableFinished) {
      // Everything arrived; let the reader take it before the stream goes.
      this.once("end", () => this.destroy());
      this.drain();
    } else this.destroy(new Error(`the tunnel to port ${this.port} was closed: ${reason}`));
  }

  /** @internal closes the tunnel for a reason of this gateway's (a limit, a bad frame). */
  fail(reason: string): void {
    this.goneReason = reason;
    this.destroy(new Error(reason));
  }

  /** GT3: hands queued bytes to the reader while it asks, and grants back what it took. */
  private drain(): void {
    while (this.wantsData && this.queue.length > 0) {
      const chunk = this.queue.shift()!;
      this.queuedBytes -= chunk.length;
      this.granted += chunk.length;
      this.wantsData = this.push(chunk);
    }
    if (
      this.granted >= this.windowBytes / 4 &&
      !this.destroyed &&
      this.closedByPeer === undefined
    ) {
      this.link.send({ type: "tunnel_credit", tunnelId: this.tunnelId, bytes: this.granted });
      this.receiveAllowance += this.granted;
      this.granted = 0;
    }
    if (this.peerEnded && this.queue.length === 0 && this.wantsData && !this.readableEnded)
      this.push(null);
  }
}

export function createTunnelHub(
  options: TunnelOptions & { onEvent?: (event: TunnelEvent) => void } = {},
): TunnelHub {
  const maxPerComputer = options.maxTunnelsPerComputer ?? 32;
  const maxTunnels = options.maxTunnels ?? 1024;
  const windowBytes = options.windowBytes ?? 256 * 1024;
  const openTimeoutMs = options.openTimeoutMs ?? 10_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 300_000;
  const emit = (event: TunnelEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // An observer's bug must not break the tunnels.
    }
  };
  /** Per link: its tunnels by id (GT1). */
  const byLink = new Map<TunnelLink, Map<string, TunnelStream>>();
  const openings = new Map<TunnelStream, Opening>();
  const perComputer = new Map<string, number>();
  let total = 0;
  let counter = 0;

  const adjust = (computerId: string, delta: number) => {
    const next = (perComputer.get(computerId) ?? 0) + delta;
    if (next <= 0) perComputer.delete(computerId);
    else perComputer.set(computerId, next);
    total += delta;
  };

  function refusal(computerId: string, port: number, frame: TunnelRefusedFrame): RoostError {
    const code = (tunnelRefusalCodes as readonly string[]).includes(frame.code)
      ? frame.code
      : "failed";
    const details = { computerId, port, reason: code };
    switch (code) {
      case "connection_refused":
        return new RoostError(
          "not_found",
          `nothing listens on port ${port} in the computer (start a server there on 127.0.0.1:${port} or 0.0.0.0:${port})`,
          { details },
        );
      case "timeout":
        return new RoostError(
          "timeout",
          `port ${port} in the computer did not accept the connection in time`,
          {
            details,
            retryAfterMs: 1000,
          },
        );
      case "too_many_tunnels":
        return new RoostError(
          "rate_limited",
          `the computer's worker has too many connections open: ${frame.message}`,
          {
            details,
            retryAfterMs: 1000,
          },
        );
      default:
        return new RoostError(
          "computer_unavailable",
          `the computer could not connect to port ${port}: ${frame.message}`,
          {
            details,
          },
        );
    }
  }

  return {
    open(link, port, signal) {
      const { computerId } = link;
      // GT4: refused at once, nothing sent.
      const limited = (message: string, details: Record<string, unknown>) => {
        emit({
          type: "tunnel_refused",
          computerId,
          tunnelId: undefined,
          port,
          code: "limit",
          message,
        });
        return Promise.reject(
          new RoostError("rate_limited", message, { details, retryAfterMs: 1000 }),
        );
      };
      if ((perComputer.get(computerId) ?? 0) >= maxPerComputer)
        return limited(
          `computer ${computerId} has ${maxPerComputer} preview connections open, its limit; close some (pages, WebSockets, event streams) and try again`,
          { computerId, port, limit: maxPerComputer },
        );
      if (total >= maxTunnels)
        return limited(
          `this server has ${maxTunnels} preview connections open, its limit; try again shortly`,
          { limit: maxTunnels },
        );
      if (signal?.aborted === true) return Promise.reject(abortError(signal));
      const tunnelId = `t${(++counter).toString(36)}`;
      let idleTimer: NodeJS.Timeout | undefined;
      const touch = () => {
        clearTimeout(idleTimer);
        idleTimer = setTimeout(
          () => stream.fail(`no data either way for ${idleTimeoutMs} ms`),
          idleTimeoutMs,
        ); // GT5
        idleTimer.unref();
      };
      const stream: TunnelStream = new TunnelStream({
        link,
        tunnelId,
        port,
        windowBytes,
        onActivity: touch,
        onGone: (gone, reason) => {
          clearTimeout(idleTimer);
          const tunnels = byLink.get(link);
          if (tunnels?.get(tunnelId) !== gone) return;
          tunnels.delete(tunnelId);
          if (tunnels.size === 0) byLink.delete(link);
          adjust(computerId, -1);
          const opening = openings.get(gone);
          if (opening !== undefined) {
            openings.delete(gone);
            opening.reject(
              new RoostError(
                "computer_unavailable",
                `the tunnel to port ${port} closed while opening: ${reason}`,
                {
                  details: { computerId, port },
                  retryAfterMs: 1000,
                },
              ),
            );
            return;
          }
          if (!gone.opened) return; // refused: reported as such
          emit({
            type: "tunnel_closed",
            computerId,
            tunnelId,
            port,
            reason,
            bytesIn: gone.bytesIn,
            bytesOut: gone.bytesOut,
            peakBufferedBytes: gone.peakBufferedBytes,
          });
        },
      });
      stream.on("error", () => undefined); // whoever uses the stream listens; it must not crash us
      let tunnels = byLink.get(link);
      if (tunnels === undefined) {
        tunnels = new Map();
        byLink.set(link, tunnels);
      }
      tunnels.set(tunnelId, stream);
      adjust(computerId, 1);
      return new Promise<TunnelStream>((resolve, reject) => {
        const timer = setTimeout(
          () => stream.fail(`the computer did not answer within ${openTimeoutMs} ms`),
          openTimeoutMs,
        ); // GT5
        const onAbort = () => stream.fail("the request was aborted");
        signal?.addEventListener("abort", onAbort, { once: true });
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
        };
        openings.set(stream, {
          resolve: (opened) => {
            done();
            touch();
            resolve(opened);
          },
          reject: (error) => {
            done();
            reject(error);
          },
        });
        link.send({ type: "tunnel_open", tunnelId, port, window: windowBytes }); // GT1
      });
    },

    handleOpened(link, frame) {
      const stream = byLink.get(link)?.get(frame.tunnelId); // GT1
      if (stream === undefined) return;
      const opening = openings.get(stream);
      if (opening === undefined) {
        stream.fail(`the worker answered ${frame.type} twice`);
        return;
      }
      if (frame.type === "tunnel_opened") {
        openings.delete(stream);
        stream.opened = true;
        stream.sendCredit = frame.window;
        opening.resolve(stream);
        return;
      }
      const error = refusal(link.computerId, stream.port, frame);
      emit({
        type: "tunnel_refused",
        computerId: link.computerId,
        tunnelId: frame.tunnelId,
        port: stream.port,
        code: frame.code,
        message: frame.message,
      });
      openings.delete(stream);
      opening.reject(error);
      stream.peerClosed(`refused: ${frame.code}`);
    },

    handleFrame(link, frame) {
      const stream = byLink.get(link)?.get(frame.tunnelId); // GT1
      if (stream === undefined || openings.has(stream)) {
        // Closed already (frames in flight), or data before `tunnel_opened`: the latter is the
        // worker's bug, and the tunnel is closed for it.
        if (stream !== undefined) stream.fail(`the worker sent ${frame.type} before tunnel_opened`);
        return;
      }
      stream.receive(frame);
    },

    linkClosed(link, reason) {
      for (const stream of [...(byLink.get(link)?.values() ?? [])]) stream.peerClosed(reason); // GT5
    },

    count: (computerId) => perComputer.get(computerId) ?? 0,

    closeAll(reason) {
      for (const link of [...byLink.keys()]) {
        for (const stream of [...(byLink.get(link)?.values() ?? [])]) stream.fail(reason);
      }
    },
  };
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error
    ? signal.reason
    : new DOMException("the request was aborted", "AbortError");
}

function assertNever(value: never): never {
  throw new Error(`unexpected tunnel frame ${JSON.stringify(value)}`);
}
