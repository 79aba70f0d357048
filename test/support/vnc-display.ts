/**
 * A real virtual display for live-view tests and benches: Xvfb (it picks its own display number)
 * with x11vnc serving it on 127.0.0.1 exactly as a computer's screen does
 * (`-localhost -rfbport <port> -shared -forever -nopw`), an `xdotool` runner on it, and a small
 * RFB client speaking over a WebSocket.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import { promisify } from "node:util";
import type WebSocket from "ws";
import { waitFor } from "./wait.ts";

const run = promisify(execFile);

export interface VncDisplay {
  /** e.g. `:93` */
  display: string;
  vncPort: number;
  width: number;
  height: number;
  /** Runs xdotool on the display and answers its output. */
  xdotool(...args: string[]): Promise<string>;
  /** The pointer's position, from xdotool. */
  pointer(): Promise<{ x: number; y: number }>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  // x11vnc busy with a client can ignore SIGTERM for long: a test's teardown must not wait on it.
  const kill = setTimeout(() => child.kill("SIGKILL"), 3000);
  await exited;
  clearTimeout(kill);
}

export async function startVncDisplay(
  options: { width?: number; height?: number } = {},
): Promise<VncDisplay> {
  const width = options.width ?? 1280;
  const height = options.height ?? 800;
  const xvfb = spawn(
    "Xvfb",
    ["-displayfd", "3", "-screen", "0", `${width}x${height}x24`, "-nolisten", "tcp"],
    { stdio: ["ignore", "ignore", "pipe", "pipe"] },
  );
  let number = "";
  xvfb.stdio[3]!.on("data", (chunk: Buffer) => (number += chunk.toString()));
  await waitFor(() => number.includes("\n") || xvfb.exitCode !== null, {
    timeoutMs: 20_000,
    what: "Xvfb to pick a display",
  });
  if (xvfb.exitCode !== null) throw new Error(`Xvfb exited with ${xvfb.exitCode}`);
  const display = `:${number.trim()}`;
  const vncPort = await freePort();
  const vnc = spawn(
    "x11vnc",
    [
      "-display",
      display,
      "-localhost",
      "-rfbport",
      String(vncPort),
      "-shared",
      "-forever",
      "-nopw",
      "-quiet",
    ],
    { stdio: ["ignore", "ignore", "ignore"] },
  );
  try {
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          const socket = net.connect(vncPort, "127.0.0.1");
          socket.once("data", () => {
            socket.destroy();
            resolve(true);
          });
          socket.once("error", () => resolve(false));
        }),
      { timeoutMs: 20_000, what: "x11vnc to listen" },
    );
  } catch (error) {
    await stop(vnc);
    await stop(xvfb);
    throw error;
  }
  const xdotool = async (...args: string[]) =>
    (await run("xdotool", args, { env: { ...process.env, DISPLAY: display } })).stdout;
  return {
    display,
    vncPort,
    width,
    height,
    xdotool,
    async pointer() {
      const out = await xdotool("getmouselocation", "--shell");
      const x = /X=(\d+)/.exec(out)?.[1];
      const y = /Y=(\d+)/.exec(out)?.[1];
      return { x: Number(x), y: Number(y) };
    },
    async close() {
      await stop(vnc);
      await stop(xvfb);
    },
  };
}

/** An RFB 3.8 client over a WebSocket, reading what the server sends as one byte stream. */
export interface RfbClient {
  /** The next `count` bytes from the server. */
  read(count: number): Promise<Buffer>;
  send(bytes: Buffer): void;
  /** Version, None security, a shared ClientInit; answers the ServerInit's size. */
  handshake(): Promise<{ width: number; height: number }>;
  pointer(x: number, y: number, buttons?: number): void;
  key(down: boolean, keysym: number): void;
  updateRequest(incremental: boolean, width: number, height: number): void;
  /**
   * Reads server messages up to and including one whole FramebufferUpdate in Raw encoding (the
   * only one this client asks for). Once it arrives, the server has read every message sent
   * before the request it answers.
   */
  readUpdate(): Promise<{ rects: number }>;
  closed: Promise<{ code: number; reason: string }>;
}

export function rfbClient(ws: WebSocket): RfbClient {
  return rfbOver({
    onData: (listener) => ws.on("message", listener),
    onClose: (listener) => ws.once("close", (code, reason) => listener(code, reason.toString())),
    send: (bytes) => ws.send(bytes, { binary: true }),
  });
}

/** The same client straight over TCP to the VNC server (no tunnel), for comparisons. */
export function rfbSocketClient(socket: net.Socket): RfbClient {
  return rfbOver({
    onData: (listener) => socket.on("data", listener),
    onClose: (listener) => socket.once("close", () => listener(1006, "")),
    send: (bytes) => socket.write(bytes),
  });
}

function rfbOver(transport: {
  onData(listener: (data: Buffer) => void): void;
  onClose(listener: (code: number, reason: string) => void): void;
  send(bytes: Buffer): void;
}): RfbClient {
  let buffered = Buffer.alloc(0);
  let wake: (() => void) | undefined;
  transport.onData((data: Buffer) => {
    buffered = Buffer.concat([buffered, data]);
    wake?.();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    transport.onClose((code, reason) => {
      resolve({ code, reason });
      wake?.();
    }),
  );
  let ended: { code: number; reason: string } | undefined;
  void closed.then((how) => (ended = how));
  const read = async (count: number): Promise<Buffer> => {
    while (buffered.length < count) {
      if (ended !== undefined)
        throw new Error(
          `the server closed the stream (${ended.code} ${ended.reason}) with ${buffered.length} bytes unread`,
        );
      await new Promise<void>((resolve) => (wake = resolve));
    }
    const out = buffered.subarray(0, count);
    buffered = buffered.subarray(count);
    return out;
  };
  const send = (bytes: Buffer) => transport.send(bytes);
  let bytesPerPixel = 4;
  return {
    read,
    send,
    closed,
    async handshake() {
      const version = (await read(12)).toString("latin1");
      if (version !== "RFB 003.008\n") throw new Error(`unexpected banner ${version}`);
      send(Buffer.from("RFB 003.008\n"));
      const count = (await read(1))[0]!;
      const types = [...(await read(count))];
      if (!types.includes(1)) throw new Error(`no None security in ${types.join(",")}`);
      send(Buffer.from([1]));
      const result = (await read(4)).readUInt32BE(0);
      if (result !== 0) throw new Error(`security failed: ${result}`);
      send(Buffer.from([1]));
      const init = await read(24);
      bytesPerPixel = init[4]! / 8;
      await read(init.readUInt32BE(20)); // the desktop's name
      return { width: init.readUInt16BE(0), height: init.readUInt16BE(2) };
    },
    async readUpdate() {
      for (;;) {
        const type = (await read(1))[0]!;
        if (type === 0) {
          const head = await read(3);
          const rects = head.readUInt16BE(1);
          for (let index = 0; index < rects; index += 1) {
            const rect = await read(12);
            const encoding = rect.readInt32BE(8);
            if (encoding !== 0) throw new Error(`unexpected encoding ${encoding}`);
            await read(rect.readUInt16BE(4) * rect.readUInt16BE(6) * bytesPerPixel);
          }
          return { rects };
        } else if (type === 2)
          continue; // Bell
        else if (type === 3) {
          const head = await read(7);
          await read(head.readUInt32BE(3));
        } else throw new Error(`unexpected server message ${type}`);
      }
    },
    pointer(x, y, buttons = 0) {
      const message = Buffer.alloc(6);
      message[0] = 5;
      message[1] = buttons;
      message.writeUInt16BE(x, 2);
      message.writeUInt16BE(y, 4);
      send(message);
    },
    key(down, keysym) {
      const message = Buffer.alloc(8);
      message[0] = 4;
      message[1] = down ? 1 : 0;
      message.writeUInt32BE(keysym, 4);
      send(message);
    },
    updateRequest(incremental, width, height) {
      const message = Buffer.alloc(10);
      message[0] = 3;
      message[1] = incremental ? 1 : 0;
      message.writeUInt16BE(width, 6);
      message.writeUInt16BE(height, 8);
      send(message);
    },
  };
}

export { freePort };
