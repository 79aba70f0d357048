/**
 * Test support for the egress proxy: a client that speaks to a computer's sockets the way the
 * computer's programs do through its forwarder (absolute-form requests, raw CONNECT, SOCKS5),
 * and small real servers to reach through it. Used by the egress tests; the local provider's
 * tests may use it too.
 */
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import {
  connect as netConnect,
  isIPv4,
  isIPv6,
  createServer as createNetServer,
  type Server,
  type Socket,
} from "node:net";

export interface ProxyResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** `GET <url>` (or another method) through a computer's HTTP proxy socket, as an HTTP client with HTTP_PROXY would. */
export function requestThroughProxy(
  socketPath: string,
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  } = {},
): Promise<ProxyResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        socketPath,
        method: options.method ?? "GET",
        path: url,
        headers: { host: new URL(url).host, ...options.headers },
        agent: false,
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

/** Send `CONNECT authority` to a computer's HTTP proxy socket and read the answer; on 200 the socket is the tunnel. */
export function connectThroughProxy(
  socketPath: string,
  authority: string,
  options: { extraHeaders?: string } = {},
): Promise<ConnectResult> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ path: socketPath });
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
export async function startEchoServer(host: string): Promise<{
  address: { host: string; port: number };
  connections: () => number;
  close(): Promise<void>;
}> {
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

export interface SocksResult {
  /** The REP field of the proxy's reply (0: succeeded); undefined when it closed without one. */
  reply: number | undefined;
  /** The method the proxy selected (0: no authentication, 255: none acceptable). */
  method: number | undefined;
  /** The tunnel after a successful reply. */
  socket: Socket;
}

/**
 * A SOCKS5 client on a computer's SOCKS socket: greets with `methods` (default: no
 * authentication), then sends `command` (1 CONNECT, 2 BIND, 3 UDP ASSOCIATE) for host:port,
 * as a domain name unless the host is an IPv4 or IPv6 literal (`addressType` overrides).
 */
export function socksRequest(
  socketPath: string,
  host: string,
  port: number,
  options: { command?: number; methods?: number[]; addressType?: 1 | 3 | 4 } = {},
): Promise<SocksResult> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ path: socketPath });
    let buffer = Buffer.alloc(0);
    let method: number | undefined;
    let settled = false;
    const finish = (reply: number | undefined): void => {
      if (settled) return;
      settled = true;
      socket.off("data", onData);
      resolve({ reply, method, socket });
    };
    const request = (): Buffer => {
      const type = options.addressType ?? (isIPv4(host) ? 1 : isIPv6(host) ? 4 : 3);
      let address: Buffer;
      if (type === 1) address = Buffer.from(host.split(".").map(Number));
      else if (type === 4) address = ipv6Bytes(host);
      else address = Buffer.concat([Buffer.from([host.length]), Buffer.from(host, "latin1")]);
      const portBytes = Buffer.alloc(2);
      portBytes.writeUInt16BE(port);
      return Buffer.concat([Buffer.from([5, options.command ?? 1, 0, type]), address, portBytes]);
    };
    const onData = (chunk: Buffer): void => {
      buffer = Buffer.concat([buffer, chunk]);
      if (method === undefined) {
        if (buffer.length < 2) return;
        method = buffer[1];
        buffer = buffer.subarray(2);
        if (method !== 0) return;
        socket.write(request());
      }
      if (buffer.length < 10) return;
      const reply = buffer[1];
      const rest = buffer.subarray(10);
      if (rest.length > 0) socket.unshift(rest);
      finish(reply);
    };
    socket.on("data", onData);
    socket.on("close", () => finish(undefined));
    socket.on("error", (error) => {
      if (!settled) reject(error);
    });
    socket.on("connect", () => {
      const methods = options.methods ?? [0];
      socket.write(Buffer.from([5, methods.length, ...methods]));
    });
  });
}

function ipv6Bytes(text: string): Buffer {
  const [head = "", tail = ""] = text.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === "" ? [] : tail.split(":");
  const groups = text.includes("::")
    ? [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right]
    : left;
  const bytes = Buffer.alloc(16);
  groups.forEach((group, index) => bytes.writeUInt16BE(parseInt(group, 16), index * 2));
  return bytes;
}
