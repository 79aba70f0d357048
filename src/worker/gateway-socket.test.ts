import { createHash } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { GatewaySocket } from "./gateway-socket.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The `ws` package's server: the gateway's own implementation. */
async function wsServer(
  onConnection: (socket: WebSocket, headers: Record<string, unknown>) => void,
) {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/v1/gateway" });
  server.on("connection", (socket, request) => onConnection(socket, request.headers));
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  for (const client of server.clients) cleanups.push(() => client.terminate());
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/gateway`;
}

/** A raw TCP server that answers the handshake as told, then runs `then` on the socket. */
async function rawServer(
  answer: (key: string) => string,
  then: (socket: Socket, received: Buffer[]) => void = () => undefined,
) {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    const received: Buffer[] = [];
    let handshaken = false;
    let head = "";
    socket.on("data", (chunk: Buffer) => {
      if (handshaken) {
        received.push(chunk);
        return;
      }
      head += chunk.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      handshaken = true;
      const key = /sec-websocket-key: (\S+)/i.exec(head)?.[1] ?? "";
      socket.write(answer(key));
      then(socket, received);
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/gateway`;
}

const accept = (key: string) =>
  createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
const switching = (key: string) =>
  `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept(key)}\r\n\r\n`;

/** An unmasked server frame. */
function frame(opcode: number, payload: Buffer, options: { fin?: boolean; first?: number } = {}) {
  const length = payload.length;
  const header =
    length < 126
      ? Buffer.from([0, length])
      : length < 65_536
        ? Buffer.from([0, 126, length >> 8, length & 0xff])
        : Buffer.concat([Buffer.from([0, 127]), bigLength(length)]);
  header[0] = options.first ?? (options.fin === false ? 0 : 0x80) | opcode;
  return Buffer.concat([header, payload]);
}
function bigLength(length: number | bigint): Buffer {
  const buffer = Buffer.alloc(8);
  buffer.writeBigUInt64BE(BigInt(length));
  return buffer;
}

function open(url: string, maxPayload = 1024 * 1024) {
  const socket = new GatewaySocket(url, {
    headers: { authorization: "Bearer t" },
    maxPayload,
    handshakeTimeoutMs: 2000,
  });
  cleanups.push(() => socket.terminate());
  const events: { errors: string[]; messages: string[]; close?: { code: number; reason: string } } =
    { errors: [], messages: [] };
  socket.on("error", (error) => events.errors.push(error.message));
  socket.on("message", (data) => events.messages.push(data.toString("utf8")));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once("close", (code, reason) => {
      events.close = { code, reason: reason.toString() };
      resolve(events.close);
    }),
  );
  const opened = new Promise<void>((resolve) => socket.once("open", () => resolve()));
  return { socket, events, closed, opened };
}

/** The first frame a raw server received from the client, unmasked; and whether it was masked. */
function clientFrame(received: Buffer[]) {
  const data = Buffer.concat(received);
  const masked = (data[1]! & 0x80) !== 0;
  let length = data[1]! & 0x7f;
  let offset = 2;
  if (length === 126) {
    length = data.readUInt16BE(2);
    offset = 4;
  }
  const mask = data.subarray(offset, offset + 4);
  const payload = Buffer.from(data.subarray(offset + 4, offset + 4 + length));
  for (let index = 0; index < payload.length; index += 1) payload[index]! ^= mask[index & 3]!;
  return { opcode: data[0]! & 0x0f, masked, payload };
}

const until = async (check: () => boolean) => {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe("the worker's WebSocket client against ws's server", () => {
  it("sends its headers, exchanges text both ways (also large and fragmented), and answers pings", async () => {
    let server: WebSocket | undefined;
    const heard: string[] = [];
    let authorization: unknown;
    let ponged = false;
    const url = await wsServer((socket, headers) => {
      server = socket;
      authorization = headers.authorization;
      socket.on("message", (data) => heard.push((data as Buffer).toString("utf8")));
      socket.on("pong", () => (ponged = true));
    });
    const client = open(url, 4 * 1024 * 1024);
    await client.opened;
    expect(client.socket.readyState).toBe(GatewaySocket.OPEN);
    await until(() => server !== undefined);
    expect(authorization).toBe("Bearer t");
    const big = "é".repeat(300_000); // 600 KB of two-byte UTF-8
    client.socket.send("hello");
    client.socket.send(big);
    server!.send("welcome");
    server!.send("part one, ", { fin: false });
    server!.send("part two", { fin: true });
    server!.send(big);
    server!.ping("are you there");
    await until(() => heard.length === 2 && client.events.messages.length === 3 && ponged);
    expect(heard).toEqual(["hello", big]);
    expect(client.events.messages).toEqual(["welcome", "part one, part two", big]);
  });

  it("a close from either side ends with one close event carrying the code and reason", async () => {
    let server: WebSocket | undefined;
    let serverClose: { code: number; reason: string } | undefined;
    const url = await wsServer((socket) => {
      server = socket;
      socket.on("close", (code, reason) => (serverClose = { code, reason: reason.toString() }));
    });
    const first = open(url);
    await first.opened;
    await until(() => server !== undefined);
    server!.close(4001, "go away");
    expect(await first.closed).toEqual({ code: 4001, reason: "go away" });
    expect(first.socket.readyState).toBe(GatewaySocket.CLOSED);

    server = undefined;
    const second = open(url);
    await second.opened;
    await until(() => server !== undefined);
    second.socket.close(1001, "worker shutting down");
    expect((await second.closed).code).toBe(1001);
    await until(() => serverClose !== undefined);
    expect(serverClose).toEqual({ code: 1001, reason: "worker shutting down" });
  });

  it("a connection dropped without a close frame reports 1006; terminate closes at once", async () => {
    let server: WebSocket | undefined;
    const url = await wsServer((socket) => (server = socket));
    const dropped = open(url);
    await dropped.opened;
    await until(() => server !== undefined);
    server!.terminate();
    expect((await dropped.closed).code).toBe(1006);
    const ended = open(url);
    await ended.opened;
    ended.socket.terminate();
    expect((await ended.closed).code).toBe(1006);
  });
});

describe("the worker's WebSocket client refuses what a gateway must not send (attack)", () => {
  it("a 401 is an error naming the status, then close 1006", async () => {
    const url = await rawServer(() => "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n");
    const client = open(url);
    expect((await client.closed).code).toBe(1006);
    expect(client.events.errors).toEqual(["Unexpected server response: 401"]);
  });

  it("a 101 with the wrong Sec-WebSocket-Accept, or an extension nobody asked for, is refused", async () => {
    const wrong = open(
      await rawServer(
        () =>
          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: bm90IHRoZSBvbmU=\r\n\r\n",
      ),
    );
    expect((await wrong.closed).code).toBe(1006);
    expect(wrong.events.errors).toEqual(["Invalid Sec-WebSocket-Accept header"]);
    const extension = open(
      await rawServer((key) =>
        switching(key).replace(
          "\r\n\r\n",
          "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
        ),
      ),
    );
    await extension.closed;
    expect(extension.events.errors[0]).toMatch(/Extensions/);
  });

  it("no answer to the handshake in time closes the connection", async () => {
    const held = new Set<Socket>();
    const server = createServer((socket) => {
      held.add(socket.on("error", () => undefined)); // never answers
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of held) socket.destroy();
          server.close(() => resolve());
        }),
    );
    const client = new GatewaySocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`, {
      maxPayload: 1024,
      handshakeTimeoutMs: 100,
    });
    const errors: string[] = [];
    client.on("error", (error) => errors.push(error.message));
    const code = await new Promise<number>((resolve) => client.once("close", resolve));
    expect(code).toBe(1006);
    expect(errors).toEqual(["Opening handshake has timed out"]);
  });

  const bad: [string, (socket: Socket) => void, number, RegExp][] = [
    [
      "a masked frame",
      (socket) => socket.write(Buffer.from([0x81, 0x82, 1, 2, 3, 4, 0x69 ^ 1, 0x69 ^ 2])),
      1002,
      /masked/,
    ],
    [
      "reserved bits",
      (socket) => socket.write(frame(1, Buffer.from("x"), { first: 0xc1 })),
      1002,
      /reserved/,
    ],
    ["an unknown opcode", (socket) => socket.write(frame(3, Buffer.from("x"))), 1002, /opcode 3/],
    [
      "a control frame over 125 bytes",
      (socket) => socket.write(frame(9, Buffer.alloc(126))),
      1002,
      /control frame/,
    ],
    [
      "a fragmented ping",
      (socket) => socket.write(frame(9, Buffer.from("x"), { fin: false })),
      1002,
      /control frame/,
    ],
    [
      "a continuation outside a message",
      (socket) => socket.write(frame(0, Buffer.from("x"))),
      1002,
      /continuation/,
    ],
    [
      "text that is not UTF-8",
      (socket) => socket.write(frame(1, Buffer.from([0xff, 0xfe]))),
      1007,
      /UTF-8/,
    ],
    [
      "a frame claiming 2^63 bytes (nothing is allocated for it)",
      (socket) =>
        socket.write(Buffer.concat([Buffer.from([0x81, 127]), bigLength(2n ** 63n - 1n)])),
      1009,
      /length/,
    ],
    [
      "a message over the limit, refused from its header",
      (socket) =>
        socket.write(Buffer.concat([Buffer.from([0x81, 127]), bigLength(64 * 1024 * 1024)])),
      1009,
      /Max payload/,
    ],
    [
      "a fragmented message whose parts add up to over the limit",
      (socket) => {
        socket.write(frame(1, Buffer.alloc(600, 0x61), { fin: false }));
        socket.write(frame(0, Buffer.alloc(600, 0x61)));
      },
      1009,
      /Max payload/,
    ],
  ];
  for (const [name, send, code, message] of bad) {
    it(`${name}: an error, a close frame with ${code}, and nothing delivered`, async () => {
      let received: Buffer[] = [];
      const url = await rawServer(switching, (socket, got) => {
        received = got;
        send(socket);
      });
      const client = open(url, 1000);
      const closed = await client.closed;
      expect(closed.code).toBe(code);
      expect(client.events.errors[0]).toMatch(message);
      expect(client.events.messages).toEqual([]);
      await until(() => received.length > 0);
      const sent = clientFrame(received);
      expect(sent.masked).toBe(true);
      expect(sent.opcode).toBe(8);
      expect(sent.payload.readUInt16BE(0)).toBe(code);
    });
  }

  it("every frame it sends is masked, with a different mask each time", async () => {
    let received: Buffer[] = [];
    const url = await rawServer(switching, (_socket, got) => (received = got));
    const client = open(url);
    await client.opened;
    client.socket.send("one");
    client.socket.send("one");
    await until(() => Buffer.concat(received).length >= 2 * (2 + 4 + 3));
    const data = Buffer.concat(received);
    expect(data[1]! & 0x80).toBe(0x80);
    expect(data[9 + 1]! & 0x80).toBe(0x80);
    expect(data.subarray(2, 6).equals(data.subarray(11, 15))).toBe(false);
    expect(clientFrame([data]).payload.toString()).toBe("one");
  });

  it("a large message trickling in a few bytes at a time arrives whole", async () => {
    const payload = Buffer.alloc(512 * 1024, 0x62);
    const url = await rawServer(switching, (socket) => {
      const data = frame(1, payload);
      let at = 0;
      const next = () => {
        if (at >= data.length) return;
        socket.write(data.subarray(at, at + 997), next);
        at += 997;
      };
      next();
    });
    const client = open(url, 1024 * 1024);
    await until(() => client.events.messages.length === 1);
    expect(client.events.messages[0]).toBe(payload.toString());
  });
});
