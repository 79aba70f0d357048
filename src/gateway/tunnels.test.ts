/**
 * Tunnels through a real gateway to a real worker process, to real TCP servers on the worker's
 * loopback (the worker runs on this host, as with the `process` provider). A raw protocol client
 * plays the worker that breaks the rules.
 */
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { RoostError } from "../errors/index.ts";
import { closeCodes } from "../protocol/index.ts";
import type { TunnelEvent } from "./tunnels.ts";
import {
  makeComputerDirs,
  rawClient,
  spawnWorker,
  startTestGateway,
  waitFor,
  waitForWorkerProcess,
} from "./testing/index.ts";
import type { TestGateway } from "./testing/index.ts";

type Options = Parameters<typeof startTestGateway>[0];

/** A gateway with connected worker processes for the given computers. */
async function withWorkers(
  computers: string[],
  test: (gw: TestGateway) => Promise<void>,
  options: Options = {},
): Promise<void> {
  const gw = await startTestGateway(options);
  const started = computers.map((computerId) => {
    const dirs = makeComputerDirs();
    gw.tokens.set(`token-${computerId}`, computerId);
    return {
      computerId,
      dirs,
      worker: spawnWorker({ gatewayUrl: gw.url, token: `token-${computerId}`, dirs }),
    };
  });
  try {
    for (const { computerId, worker } of started)
      await waitForWorkerProcess(gw.gateway, computerId, worker);
    await test(gw);
  } finally {
    await Promise.all(started.map(({ worker }) => worker.stop()));
    await gw.close();
    for (const { dirs } of started) dirs.remove();
  }
}

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

async function closeServer(server: net.Server): Promise<void> {
  if ("closeAllConnections" in server) (server as http.Server).closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** An HTTP request to the server inside, spoken by node's client over the tunnel. */
function requestThrough(
  gw: TestGateway,
  computerId: string,
  port: number,
  options: { method?: string; path?: string; body?: Buffer } = {},
): Promise<http.IncomingMessage> {
  return gw.gateway.openTunnel(computerId, port).then(
    (stream) =>
      new Promise((resolve, reject) => {
        const request = http.request({
          createConnection: () => stream,
          method: options.method ?? "GET",
          path: options.path ?? "/",
          headers: { host: `localhost:${port}` },
        });
        request.on("response", resolve);
        request.on("error", reject);
        request.end(options.body);
      }),
  );
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The first tunnel_closed event, once it came. */
async function tunnelClosed(
  gw: TestGateway,
): Promise<Extract<TunnelEvent, { type: "tunnel_closed" }>> {
  const find = () =>
    gw.events.find(
      (event): event is Extract<TunnelEvent, { type: "tunnel_closed" }> =>
        event.type === "tunnel_closed",
    );
  await waitFor(() => find() !== undefined, { message: "the tunnel to close" });
  return find()!;
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("tunnels to ports inside a computer", () => {
  it("an HTTP request and its response travel through the tunnel, and the tunnel ends with them", async () => {
    const server = http.createServer((request, response) => {
      response.setHeader("content-type", "text/plain");
      response.end(`hello from ${request.method} ${request.url} host=${request.headers.host}`);
    });
    const port = await listen(server);
    try {
      await withWorkers(["cmp_a"], async (gw) => {
        const response = await requestThrough(gw, "cmp_a", port, { path: "/x?y=1" });
        expect(response.statusCode).toBe(200);
        expect((await readAll(response)).toString()).toBe(
          `hello from GET /x?y=1 host=localhost:${port}`,
        );
        await waitFor(() => gw.gateway.tunnelCount("cmp_a") === 0, {
          message: "the tunnel to end",
        });
        const closedEvent = gw.events.find((event) => event.type === "tunnel_closed");
        expect(closedEvent).toMatchObject({ computerId: "cmp_a", port, reason: "closed" });
      });
    } finally {
      await closeServer(server);
    }
  });

  it("nothing listening on the port: open is refused as not_found, and nothing stays open", async () => {
    const server = net.createServer();
    const port = await listen(server);
    await closeServer(server); // a port that was just free: nothing listens on it now
    await withWorkers(["cmp_a"], async (gw) => {
      const error = await gw.gateway.openTunnel("cmp_a", port).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(RoostError);
      expect(error).toMatchObject({
        code: "not_found",
        details: { reason: "connection_refused", port },
      });
      expect(gw.gateway.tunnelCount("cmp_a")).toBe(0);
    });
  });

  it("a fast server and a slow reader: 20 MB arrive whole and in order, and the gateway never holds more than the window", async () => {
    const body = randomBytes(20 * 1024 * 1024);
    const server = net.createServer((socket) => socket.end(body));
    const port = await listen(server);
    const windowBytes = 128 * 1024;
    try {
      await withWorkers(
        ["cmp_a"],
        async (gw) => {
          const stream = await gw.gateway.openTunnel("cmp_a", port);
          stream.end();
          const chunks: Buffer[] = [];
          // A reader that takes a chunk at a time, with pauses: the server is far faster.
          for await (const chunk of stream) {
            chunks.push(chunk as Buffer);
            if (chunks.length % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
          }
          const received = Buffer.concat(chunks);
          expect(received.length).toBe(body.length);
          expect(sha256(received)).toBe(sha256(body));
          const closedEvent = await tunnelClosed(gw);
          expect(closedEvent.bytesIn).toBe(body.length);
          // The window, plus what the stream's own buffer holds: its high-water mark (64 KiB) and
          // the one chunk (at most 64 KiB) that push() accepts beyond it.
          expect(closedEvent.peakBufferedBytes).toBeLessThanOrEqual(windowBytes + 128 * 1024);
        },
        { tunnels: { windowBytes } },
      );
    } finally {
      await closeServer(server);
    }
  });

  it("a stalled reader: the server inside is held back by TCP, not buffered at the gateway", async () => {
    let written = 0;
    let serverSocket: net.Socket | undefined;
    const server = net.createServer((socket) => {
      serverSocket = socket;
      socket.on("error", () => undefined); // reset when the test destroys the tunnel
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = () => {
        while (socket.write(chunk)) written += chunk.length;
        written += chunk.length;
        socket.once("drain", pump);
      };
      pump();
    });
    const port = await listen(server);
    const windowBytes = 128 * 1024;
    try {
      await withWorkers(
        ["cmp_a"],
        async (gw) => {
          const stream = await gw.gateway.openTunnel("cmp_a", port);
          stream.pause(); // nobody reads
          // The server writes until its socket's buffers and the tunnel's window are full.
          let last = -1;
          await waitFor(
            async () => {
              const settled = written === last && written > 0;
              last = written;
              await new Promise((resolve) => setTimeout(resolve, 200));
              return settled;
            },
            { timeoutMs: 20_000, message: "the server inside to be held back" },
          );
          stream.destroy();
          const closedEvent = await tunnelClosed(gw);
          expect(closedEvent.bytesIn).toBeLessThanOrEqual(windowBytes);
          expect(closedEvent.peakBufferedBytes).toBeLessThanOrEqual(windowBytes + 128 * 1024);
          // Far less than what a server writes when nothing holds it back.
          expect(written).toBeLessThan(32 * 1024 * 1024);
        },
        { tunnels: { windowBytes } },
      );
    } finally {
      serverSocket?.destroy();
      await closeServer(server);
    }
  });

  it("a 20 MB upload reaches a slow server inside whole and in order", async () => {
    const body = randomBytes(20 * 1024 * 1024);
    let received: Promise<Buffer> | undefined;
    // allowHalfOpen: the server answers after our end, on its still-open side.
    const server = net.createServer({ allowHalfOpen: true }, (socket) => {
      received = new Promise((resolve) => {
        const chunks: Buffer[] = [];
        socket.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          // A slow reader: it stops now and then, so the upload waits for credit.
          if (chunks.length % 8 === 0) {
            socket.pause();
            setTimeout(() => socket.resume(), 1);
          }
        });
        socket.on("end", () => {
          socket.end("done");
          resolve(Buffer.concat(chunks));
        });
      });
    });
    const port = await listen(server);
    try {
      await withWorkers(["cmp_a"], async (gw) => {
        const stream = await gw.gateway.openTunnel("cmp_a", port);
        const answer = readAll(stream);
        stream.end(body);
        expect((await answer).toString()).toBe("done"); // half-close: our end, then theirs
        const got = await received!;
        expect(got.length).toBe(body.length);
        expect(sha256(got)).toBe(sha256(body));
      });
    } finally {
      await closeServer(server);
    }
  });

  it("flood: beyond its tunnel limit a computer's tunnels are refused with rate_limited, and another computer's tunnel still opens", async () => {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.on("data", (data) => socket.write(data));
      socket.on("close", () => sockets.delete(socket));
    });
    const port = await listen(server);
    try {
      await withWorkers(
        ["cmp_a", "cmp_b"],
        async (gw) => {
          const open = await Promise.all(
            Array.from({ length: 4 }, () => gw.gateway.openTunnel("cmp_a", port)),
          );
          const refused = await gw.gateway
            .openTunnel("cmp_a", port)
            .catch((error: unknown) => error);
          expect(refused).toMatchObject({ code: "rate_limited" });
          expect((refused as Error).message).toMatch(/4 preview connections open, its limit/);
          const other = await gw.gateway.openTunnel("cmp_b", port);
          other.write("ping");
          const echo = await new Promise<Buffer>((resolve) => other.once("data", resolve));
          expect(echo.toString()).toBe("ping");
          other.destroy();
          open[0]!.destroy();
          await waitFor(() => gw.gateway.tunnelCount("cmp_a") === 3);
          const again = await gw.gateway.openTunnel("cmp_a", port);
          again.destroy();
          for (const stream of open) stream.destroy();
          await waitFor(() => gw.gateway.tunnelCount("cmp_a") === 0);
        },
        { tunnels: { maxTunnelsPerComputer: 4 } },
      );
    } finally {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    }
  });

  it("worker killed mid-stream: the tunnel ends with an error and nothing stays open", async () => {
    const server = net.createServer((socket) => socket.write("first"));
    const port = await listen(server);
    const gw = await startTestGateway();
    const dirs = makeComputerDirs();
    gw.tokens.set("token-a", "cmp_a");
    const worker = spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs });
    try {
      await waitForWorkerProcess(gw.gateway, "cmp_a", worker);
      const stream = await gw.gateway.openTunnel("cmp_a", port);
      const first = await new Promise<Buffer>((resolve) => stream.once("data", resolve));
      expect(first.toString()).toBe("first");
      const failed = new Promise<Error>((resolve) => stream.once("error", resolve));
      worker.child.kill("SIGKILL");
      expect((await failed).message).toMatch(/worker disconnected/);
      expect(gw.gateway.tunnelCount("cmp_a")).toBe(0);
    } finally {
      await worker.stop();
      await gw.close();
      dirs.remove();
      await closeServer(server);
    }
  });

  it("idle: a tunnel without data either way for the idle time is closed", async () => {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => sockets.add(socket));
    const port = await listen(server);
    try {
      await withWorkers(
        ["cmp_a"],
        async (gw) => {
          const stream = await gw.gateway.openTunnel("cmp_a", port);
          const failed = await new Promise<Error>((resolve) => stream.once("error", resolve));
          expect(failed.message).toMatch(/no data either way for 300 ms/);
          await waitFor(() => sockets.size === 1 && [...sockets][0]!.destroyed === false);
          // The worker closed its end inside the computer too.
          await waitFor(
            () => [...sockets].every((socket) => socket.readableEnded || socket.destroyed),
            {
              message: "the server's connection to close",
            },
          );
        },
        { tunnels: { idleTimeoutMs: 300 } },
      );
    } finally {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    }
  });

  it("a worker without the tunnel capability is never sent tunnel_open", async () => {
    const gw = await startTestGateway();
    gw.tokens.set("token-raw", "cmp_raw");
    const client = await rawClient(gw.url, "token-raw");
    try {
      client.hello({ capabilities: ["shell"] });
      await gw.gateway.waitForWorker("cmp_raw", 5_000);
      const error = await gw.gateway.openTunnel("cmp_raw", 8000).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: "computer_unavailable" });
      expect((error as Error).message).toMatch(/does not offer tunnels/);
      expect(
        client.received.some((frame) => (frame as { type: string }).type === "tunnel_open"),
      ).toBe(false);
    } finally {
      client.ws.close();
      await gw.close();
    }
  });

  it("a worker that sends more than the window it was granted: that tunnel is closed, the connection and its other tunnels stay", async () => {
    const gw = await startTestGateway({ tunnels: { windowBytes: 1024 } });
    gw.tokens.set("token-raw", "cmp_raw");
    const client = await rawClient(gw.url, "token-raw");
    const frames = () => client.received as { type: string; tunnelId?: string }[];
    try {
      client.hello({ capabilities: ["tunnel"] });
      await gw.gateway.waitForWorker("cmp_raw", 5_000);
      const opening = [
        gw.gateway.openTunnel("cmp_raw", 8000),
        gw.gateway.openTunnel("cmp_raw", 8001),
      ];
      await waitFor(() => frames().filter((frame) => frame.type === "tunnel_open").length === 2);
      const [first, second] = frames().filter((frame) => frame.type === "tunnel_open");
      for (const frame of [first!, second!])
        client.ws.send(
          JSON.stringify({ type: "tunnel_opened", tunnelId: frame.tunnelId, window: 1024 }),
        );
      const [flooded, kept] = await Promise.all(opening);
      const failed = new Promise<Error>((resolve) => flooded!.once("error", resolve));
      client.ws.send(
        JSON.stringify({
          type: "tunnel_data",
          tunnelId: first!.tunnelId,
          data: Buffer.alloc(2048, 7).toString("base64"),
        }),
      );
      expect((await failed).message).toMatch(/more than the window/);
      await waitFor(() =>
        frames().some(
          (frame) => frame.type === "tunnel_close" && frame.tunnelId === first!.tunnelId,
        ),
      );
      // The other tunnel still works.
      client.ws.send(
        JSON.stringify({
          type: "tunnel_data",
          tunnelId: second!.tunnelId,
          data: Buffer.from("ok").toString("base64"),
        }),
      );
      const data = await new Promise<Buffer>((resolve) => kept!.once("data", resolve));
      expect(data.toString()).toBe("ok");
      expect(gw.gateway.isConnected("cmp_raw")).toBe(true);
      kept!.destroy();
    } finally {
      client.ws.close();
      await gw.close();
    }
  });

  it("a malformed tunnel frame closes only the connection it arrived on (G2)", async () => {
    const gw = await startTestGateway();
    gw.tokens.set("token-raw", "cmp_raw");
    const client = await rawClient(gw.url, "token-raw");
    try {
      client.hello({ capabilities: ["tunnel"] });
      await gw.gateway.waitForWorker("cmp_raw", 5_000);
      client.ws.send(JSON.stringify({ type: "tunnel_data", tunnelId: "t1", data: "not base64!" }));
      const closed = await client.closed;
      expect(closed.code).toBe(closeCodes.protocolError);
      expect(closed.reason).toMatch(/invalid tunnel_data frame at data/);
    } finally {
      await gw.close();
    }
  });

  it("a worker's frames for a tunnel of another connection are ignored (GT1)", async () => {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.on("data", (data) => socket.write(data));
    });
    const port = await listen(server);
    try {
      await withWorkers(["cmp_a"], async (gw) => {
        gw.tokens.set("token-raw", "cmp_raw");
        const client = await rawClient(gw.url, "token-raw");
        try {
          client.hello({ capabilities: ["tunnel"] });
          await gw.gateway.waitForWorker("cmp_raw", 5_000);
          const stream = await gw.gateway.openTunnel("cmp_a", port);
          const received: Buffer[] = [];
          stream.on("data", (data: Buffer) => received.push(data));
          // cmp_a's first tunnel id is t1 on this gateway: the raw worker tries to feed and close it.
          client.ws.send(
            JSON.stringify({
              type: "tunnel_data",
              tunnelId: "t1",
              data: Buffer.from("evil").toString("base64"),
            }),
          );
          client.ws.send(JSON.stringify({ type: "tunnel_close", tunnelId: "t1" }));
          stream.write("mine");
          await waitFor(() => Buffer.concat(received).toString() === "mine");
          expect(stream.destroyed).toBe(false);
          stream.destroy();
        } finally {
          client.ws.close();
        }
      });
    } finally {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    }
  });
});
