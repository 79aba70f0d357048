/**
 * A small real HTTP proxy on 127.0.0.1 that speaks `CONNECT` as corporate proxies do (RFC 9110
 * §9.3.6): it answers `407` without the right `Proxy-Authorization` when it has credentials,
 * `403` for a target it does not allow, `405` for anything but CONNECT, and otherwise opens the
 * TCP connection and relays bytes both ways. It records what it saw, so tests can show that the
 * worker's connection really went through it.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import type { Duplex } from "node:stream";

export interface ConnectProxy {
  readonly url: string;
  readonly port: number;
  /** Every CONNECT target that was tunnelled (`host:port`). */
  readonly tunnels: string[];
  /** Every request refused, with the status it got. */
  readonly refused: { target: string; status: number }[];
  close(): Promise<void>;
}

export async function startConnectProxy(
  options: {
    /** `user:password` the proxy demands. */
    credentials?: string;
    /** Targets (`host:port`) it tunnels to; everything else gets 403. @default any */
    allow?: (target: string) => boolean;
  } = {},
): Promise<ConnectProxy> {
  const tunnels: string[] = [];
  const refused: { target: string; status: number }[] = [];
  const open = new Set<Socket | Duplex>();
  const server: Server = createServer((request, response) => {
    refused.push({ target: request.url ?? "", status: 405 });
    response.writeHead(405, { "content-type": "text/plain" }).end("this proxy only tunnels\n");
  });
  server.on("connect", (request: IncomingMessage, client: Duplex, head: Buffer) => {
    open.add(client);
    client.on("close", () => open.delete(client));
    client.on("error", () => undefined);
    const target = request.url ?? "";
    const refuse = (status: number, text: string, extra = "") => {
      refused.push({ target, status });
      client.end(`HTTP/1.1 ${status} ${text}\r\n${extra}Content-Length: 0\r\n\r\n`);
    };
    if (options.credentials !== undefined) {
      const expected = `Basic ${Buffer.from(options.credentials).toString("base64")}`;
      if (request.headers["proxy-authorization"] !== expected)
        return refuse(
          407,
          "Proxy Authentication Required",
          'Proxy-Authenticate: Basic realm="test"\r\n',
        );
    }
    const match = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(target);
    if (match === null) return refuse(400, "Bad Request");
    if (options.allow !== undefined && !options.allow(target)) return refuse(403, "Forbidden");
    const host = (match[1] ?? "").replace(/^\[(.*)\]$/, "$1");
    const upstream = connect({ host, port: Number(match[2]) });
    open.add(upstream);
    upstream.on("close", () => open.delete(upstream));
    upstream.once("error", () => {
      if (!client.writableEnded) refuse(502, "Bad Gateway");
      client.destroy();
    });
    upstream.once("connect", () => {
      tunnels.push(target);
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    tunnels,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
