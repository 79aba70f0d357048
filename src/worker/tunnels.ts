/**
 * The worker's end of the tunnels (protocol/tunnels.ts, docs/worker-protocol.md §14): a
 * `tunnel_open` becomes a TCP connection to the port on this computer's loopback, made by the
 * worker itself, as the computer's user, inside its network namespace; bytes then move in
 * `tunnel_data` frames within the credit each side grants.
 *
 * Invariants:
 *   TUN1 The worker connects only to loopback (127.0.0.1, then ::1) and only to the port the
 *        frame names; nothing in a frame can name another host.
 *   TUN2 Bytes read from a connection are sent only within the gateway's credit; beyond it the
 *        socket is paused (TCP pushes back on the server inside), so at most one read's worth
 *        (the socket's chunk) waits per tunnel.
 *   TUN3 Credit is granted back only for bytes the socket has accepted (its write callback), so
 *        the gateway can never make the worker hold more than the window it granted; data
 *        beyond it closes that tunnel.
 *   TUN4 Every tunnel ends: on close from either side, a socket error, or the connection to the
 *        gateway ending (closeAll), and its socket is destroyed with it.
 */
import net from "node:net";
import { decodeChunk, tunnelLimits } from "../protocol/index.ts";
import type {
  TunnelCloseFrame,
  TunnelDataFrame,
  TunnelOpenFrame,
  TunnelRefusalCode,
  TunnelStreamFrame,
  WorkerFrame,
} from "../protocol/index.ts";

export interface TunnelEndpointOptions {
  /** Sends a frame if connected; returns false when it could not. */
  send(frame: WorkerFrame): boolean;
  log?: (line: string) => void;
  /** Tunnels open at once on this worker. @default 256 */
  maxTunnels?: number;
  /** Bytes the gateway may send per tunnel before this worker grants more. @default 256 KiB */
  windowBytes?: number;
  /** Time to connect to the port. @default 10_000 */
  connectTimeoutMs?: number;
  /** Loopback addresses tried in order (TUN1). @default ["127.0.0.1", "::1"] */
  hosts?: readonly string[];
}

export interface TunnelEndpoint {
  handleOpen(frame: TunnelOpenFrame): void;
  handleFrame(frame: TunnelStreamFrame): void;
  /** Ends every tunnel (the connection to the gateway is gone). */
  closeAll(): void;
  /** Tunnels open or opening now. */
  size(): number;
}

interface WorkerTunnel {
  id: string;
  socket: net.Socket | undefined;
  state: "connecting" | "open" | "closed";
  /** Bytes this worker may still send (granted by the gateway). */
  sendCredit: number;
  /** Read from the socket, waiting for credit (TUN2). */
  pending: Buffer[];
  /** Bytes the gateway may still send before this worker grants more (TUN3). */
  receiveAllowance: number;
  /** Written to the socket and not yet granted back. */
  consumed: number;
  socketEnded: boolean;
  /** The socket closed cleanly; the tunnel closes once what waits for credit went out. */
  socketClosed: boolean;
  endSent: boolean;
}

/** Connection errors that mean "nothing listens at this address": try the next one. */
const tryNext = new Set(["ECONNREFUSED", "EADDRNOTAVAIL", "ENETUNREACH", "EAFNOSUPPORT"]);

export function createTunnelEndpoint(options: TunnelEndpointOptions): TunnelEndpoint {
  const log = options.log ?? (() => undefined);
  const maxTunnels = options.maxTunnels ?? 256;
  const windowBytes = options.windowBytes ?? 256 * 1024;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const hosts = options.hosts ?? ["127.0.0.1", "::1"];
  const chunkBytes = tunnelLimits.chunkBytes;
  const tunnels = new Map<string, WorkerTunnel>();

  const refuse = (tunnelId: string, code: TunnelRefusalCode, message: string) => {
    options.send({ type: "tunnel_refused", tunnelId, code, message });
  };

  function close(tunnel: WorkerTunnel, reason: string | undefined, tell: boolean): void {
    if (tunnel.state === "closed") return;
    tunnel.state = "closed";
    tunnels.delete(tunnel.id);
    tunnel.pending = [];
    tunnel.socket?.destroy(); // TUN4
    if (tell) {
      const frame: TunnelCloseFrame = { type: "tunnel_close", tunnelId: tunnel.id };
      if (reason !== undefined) frame.reason = reason.slice(0, 1024);
      options.send(frame);
    }
  }

  /** Sends what waits within the credit; resumes reading once nothing waits (TUN2). */
  function flush(tunnel: WorkerTunnel): void {
    while (tunnel.pending.length > 0 && tunnel.sendCredit > 0 && tunnel.state === "open") {
      const head = tunnel.pending[0]!;
      const size = Math.min(head.length, tunnel.sendCredit, chunkBytes);
      const piece = head.subarray(0, size);
      if (size === head.length) tunnel.pending.shift();
      else tunnel.pending[0] = head.subarray(size);
      tunnel.sendCredit -= size;
      options.send({ type: "tunnel_data", tunnelId: tunnel.id, data: piece.toString("base64") });
    }
    if (tunnel.pending.length > 0 || tunnel.state !== "open") return;
    if (tunnel.socketEnded) {
      if (!tunnel.endSent) {
        tunnel.endSent = true;
        options.send({ type: "tunnel_end", tunnelId: tunnel.id });
      }
      if (tunnel.socketClosed) close(tunnel, "closed", true);
    } else tunnel.socket?.resume();
  }

  function connected(tunnel: WorkerTunnel, socket: net.Socket): void {
    tunnel.socket = socket;
    tunnel.state = "open";
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      tunnel.pending.push(chunk);
      flush(tunnel);
      if (tunnel.pending.length > 0) socket.pause(); // TUN2
    });
    socket.on("end", () => {
      tunnel.socketEnded = true;
      flush(tunnel);
    });
    socket.on("error", (error: NodeJS.ErrnoException) =>
      close(
        tunnel,
        `the connection inside the computer failed: ${error.code ?? error.message}`,
        true,
      ),
    );
    socket.on("close", (hadError) => {
      if (hadError || !tunnel.socketEnded) return close(tunnel, "the connection was reset", true);
      // Bytes still waiting for credit go first, then the end, then the close.
      tunnel.socketClosed = true;
      flush(tunnel);
    });
    options.send({ type: "tunnel_opened", tunnelId: tunnel.id, window: windowBytes });
  }

  function connect(tunnel: WorkerTunnel, port: number, hostIndex: number): void {
    const host = hosts[hostIndex]!;
    // allowHalfOpen: the server's FIN and ours travel separately (tunnel_end).
    const socket = net.connect({ host, port, allowHalfOpen: true }); // TUN1
    tunnel.socket = socket;
    const timer = setTimeout(() => {
      socket.destroy();
      if (tunnel.state !== "connecting") return;
      tunnel.state = "closed";
      tunnels.delete(tunnel.id);
      refuse(
        tunnel.id,
        "timeout",
        `connecting to port ${port} took longer than ${connectTimeoutMs} ms`,
      );
    }, connectTimeoutMs);
    const onError = (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      if (tunnel.state !== "connecting") return;
      if (tryNext.has(error.code ?? "") && hostIndex + 1 < hosts.length) {
        connect(tunnel, port, hostIndex + 1);
        return;
      }
      tunnel.state = "closed";
      tunnels.delete(tunnel.id);
      if (tryNext.has(error.code ?? ""))
        refuse(
          tunnel.id,
          "connection_refused",
          `nothing listens on port ${port} (${hosts.join(", ")})`,
        );
      else
        refuse(
          tunnel.id,
          "failed",
          `connecting to port ${port} failed: ${error.code ?? error.message}`,
        );
    };
    socket.once("error", onError);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.off("error", onError);
      if (tunnel.state !== "connecting") {
        socket.destroy(); // closed by the gateway while connecting
        return;
      }
      connected(tunnel, socket);
    });
  }

  function onData(tunnel: WorkerTunnel, frame: TunnelDataFrame): void {
    const bytes = decodeChunk(frame.data);
    if (bytes === undefined) return close(tunnel, "tunnel_data is not canonical base64", true);
    if (tunnel.state !== "open" || bytes.length > tunnel.receiveAllowance)
      return close(tunnel, "the gateway sent more than the window this worker granted", true); // TUN3
    tunnel.receiveAllowance -= bytes.length;
    tunnel.socket?.write(bytes, (error) => {
      if (error !== undefined && error !== null) return;
      if (tunnel.state !== "open") return;
      tunnel.consumed += bytes.length;
      // Grant in batches; what stays below the threshold leaves the gateway ≥ 3/4 of its window.
      if (tunnel.consumed >= windowBytes / 4) {
        options.send({ type: "tunnel_credit", tunnelId: tunnel.id, bytes: tunnel.consumed });
        tunnel.receiveAllowance += tunnel.consumed;
        tunnel.consumed = 0;
      }
    });
  }

  return {
    handleOpen(frame) {
      if (tunnels.has(frame.tunnelId))
        return refuse(frame.tunnelId, "invalid", `tunnel id ${frame.tunnelId} is in use`);
      if (tunnels.size >= maxTunnels)
        return refuse(
          frame.tunnelId,
          "too_many_tunnels",
          `this worker holds ${tunnels.size} tunnels, its limit; close some first`,
        );
      const tunnel: WorkerTunnel = {
        id: frame.tunnelId,
        socket: undefined,
        state: "connecting",
        sendCredit: frame.window,
        pending: [],
        receiveAllowance: windowBytes,
        consumed: 0,
        socketEnded: false,
        socketClosed: false,
        endSent: false,
      };
      tunnels.set(tunnel.id, tunnel);
      connect(tunnel, frame.port, 0);
    },

    handleFrame(frame) {
      const tunnel = tunnels.get(frame.tunnelId);
      if (tunnel === undefined) return; // closed already: frames in flight are dropped
      switch (frame.type) {
        case "tunnel_data":
          return onData(tunnel, frame);
        case "tunnel_credit":
          tunnel.sendCredit = Math.min(
            tunnel.sendCredit + frame.bytes,
            tunnelLimits.maxWindowBytes,
          );
          return flush(tunnel);
        case "tunnel_end":
          if (tunnel.state === "open") tunnel.socket?.end();
          return;
        case "tunnel_close":
          return close(tunnel, undefined, false);
        default:
          assertNever(frame);
      }
    },

    closeAll() {
      const open = [...tunnels.values()];
      if (open.length > 0)
        log(`worker: closing ${open.length} tunnel(s): the gateway connection ended`);
      for (const tunnel of open) close(tunnel, undefined, false);
    },

    size: () => tunnels.size,
  };
}

function assertNever(value: never): never {
  throw new Error(`unexpected tunnel frame ${JSON.stringify(value)}`);
}
