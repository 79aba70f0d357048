/**
 * Test support for the egress proxy: a client that speaks to it the way a computer's programs do
 * (absolute-form requests and raw CONNECT), and small real servers to reach through it. Used by
 * the egress tests; the local provider's tests may use it too.
 */
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import {
  connect as netConnect,
  createServer as createNetServer,
  type Server,
  type Socket,
} from "node:net";
import type { EgressAddress } from "../proxy.ts";

export interface ProxyResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** `GET <url>` (or another method) through the proxy, as an HTTP client with HTTP_PROXY would. */
export function requestThroughProxy(
  proxy: EgressAddress,
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    localAddress?: string;
  } = {},
): Promise<ProxyResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: proxy.host,
        port: proxy.port,
        method: options.method ?? "GET",
        path: url,
        headers: { host: new URL(url).host, ...options.headers },
        agent: false,
        ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(options.body);
  });
}

export interface ConnectResult extends ProxyResponse {
  /** The tunnel (after a 200) or the closed socket (after a refusal). */
  socket: Socket;
}

/** Send `CONNECT authority` and read the proxy's answer; on 200 the socket is the tunnel. */
export function connectThroughProxy(
  proxy: EgressAddress,
  authority: string,
  options: { localAddress?: string; extraHeaders?: string } = {},
): Promise<ConnectResult> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({
      host: proxy.host,
      port: proxy.port,
      ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
    });
    let buffer = Buffer.alloc(0);
    let headEnd = -1;
    let settled = false;
    const settle = (): void => {
      if (settled || headEnd < 0) return;
      const head = buffer.subarray(0, headEnd).toString("latin1");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const status = Number(statusLine.split(" ")[1]);
      const headers: IncomingHttpHeaders = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon > 0)
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers["content-length"] ?? 0);
      const body = buffer.subarray(headEnd + 4);
      if (status !== 200 && body.length < length && !socket.readableEnded) return;
      settled = true;
      socket.off("data", onData);
      if (status === 200 && body.length > 0) socket.unshift(body);
      resolve({ status, headers, body: status === 200 ? "" : body.toString("utf8"), socket });
    };
    const onData = (chunk: Buffer): void => {
      buffer = Buffer.concat([buffer, chunk]);
      if (headEnd < 0) headEnd = buffer.indexOf("\r\n\r\n");
      settle();
    };
    socket.on("data", onData);
    socket.on("end", () => {
      settle();
      if (!settled) reject(new Error(`proxy closed the connection: ${buffer.toString("latin1")}`));
    });
    socket.on("error", (error) => {
      if (!settled) reject(error);
    });
    socket.on("connect", () => {
      socket.write(
        `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${options.extraHeaders ?? ""}\r\n`,
      );
    });
  });
}

/** Write `data` into a tunnel and read until `expected` bytes came back. */
export function exchange(socket: Socket, data: string, expected = data.length): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = "";
    const onData = (chunk: Buffer): void => {
      received += chunk.toString("utf8");
      if (received.length >= expected) {
        cleanup();
        resolve(received);
      }
    };
    const onClose = (): void => {
      cleanup();
      reject(new Error(`tunnel closed after ${JSON.stringify(received)}`));
    };
    const cleanup = (): void => {
      socket.off("data", onData);
      socket.off("close", onClose);
    };
    socket.on("data", onData);
    socket.on("close", onClose);
    socket.write(data);
  });
}

/** A TCP echo server on host:0 (the stand-in for a TLS server behind CONNECT). */
export async function startEchoServer(
  host: string,
): Promise<{ address: EgressAddress; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createNetServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const bound = server.address();
  const port = bound !== null && typeof bound === "object" ? bound.port : 0;
  return {
    address: { host, port },
    connections: () => connections,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
