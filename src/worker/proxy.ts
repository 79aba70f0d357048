/**
 * The worker's way out through an HTTP proxy (a self-hosted machine behind a corporate proxy):
 * an HTTP `CONNECT` tunnel to the gateway's host and port, over which the WebSocket runs (and,
 * for `wss://`, TLS with the gateway itself).
 *
 * Invariants:
 *   PX1 The proxy is chosen from the environment as curl does: `https_proxy`/`HTTPS_PROXY` for a
 *       `wss://` gateway, `http_proxy`/`HTTP_PROXY` for `ws://` (lower case first), and
 *       `no_proxy`/`NO_PROXY` exempts the gateway's host. A unix-socket gateway never uses one.
 *   PX2 TLS for `wss://` is end to end: the proxy carries ciphertext, and the certificate is checked
 *       against the gateway's name, never the proxy's.
 *   PX3 A proxy's credentials (`http://user:password@proxy:3128`) go only to the proxy, in
 *       `Proxy-Authorization`, and never into a log line (`describeProxy`).
 */
import { BlockList, connect as netConnect, isIP, type Socket } from "node:net";

/** The environment's proxy for `target` (a `ws:`, `wss:` or `ws+unix:` URL), or undefined (PX1). */
export function proxyFor(
  target: URL,
  env: Readonly<Record<string, string | undefined>>,
): URL | undefined {
  if (target.protocol !== "ws:" && target.protocol !== "wss:") return undefined;
  const secure = target.protocol === "wss:";
  const raw = secure
    ? (nonEmpty(env.https_proxy) ?? nonEmpty(env.HTTPS_PROXY))
    : (nonEmpty(env.http_proxy) ?? nonEmpty(env.HTTP_PROXY));
  if (raw === undefined) return undefined;
  if (bypassesProxy(target, nonEmpty(env.no_proxy) ?? nonEmpty(env.NO_PROXY) ?? ""))
    return undefined;
  return parseProxyUrl(raw, secure ? "HTTPS_PROXY" : "HTTP_PROXY");
}

/** An `http://` or `https://` proxy URL; a bare `host:port` means `http://host:port`, as for curl. */
export function parseProxyUrl(raw: string, variable: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new ProxyConfigError(`${variable} is not a URL (expected http://host:port)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ProxyConfigError(
      `${variable} must be an http:// or https:// proxy (got ${url.protocol}//); SOCKS proxies are not supported`,
    );
  }
  return url;
}

export class ProxyConfigError extends Error {
  override readonly name = "ProxyConfigError";
}

/**
 * `NO_PROXY`: comma- or space-separated entries; `*` matches everything; a name matches itself
 * and its subdomains (a leading `.` or `*.` is the same); an IP address or CIDR range matches
 * addresses; `:port` restricts an entry to that port.
 */
export function bypassesProxy(target: URL, noProxy: string): boolean {
  const host = unbracket(target.hostname).toLowerCase();
  const port = Number(target.port || (target.protocol === "wss:" ? 443 : 80));
  for (const rawEntry of noProxy.split(/[\s,]+/)) {
    let entry = rawEntry.trim().toLowerCase();
    if (entry === "") continue;
    if (entry === "*") return true;
    let entryPort: number | undefined;
    const portMatch = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry);
    if (portMatch !== null) {
      entry = portMatch[1] ?? entry;
      entryPort = Number(portMatch[2]);
    }
    if (entryPort !== undefined && entryPort !== port) continue;
    entry = unbracket(entry);
    if (entry.includes("/")) {
      if (inCidr(host, entry)) return true;
      continue;
    }
    if (isIP(entry) !== 0) {
      if (isIP(host) !== 0 && sameAddress(host, entry)) return true;
      continue;
    }
    const name = entry.replace(/^\*?\./, "");
    if (host === name || host.endsWith(`.${name}`)) return true;
  }
  return false;
}

/** The proxy without its credentials (PX3), for log lines. */
export function describeProxy(proxy: URL): string {
  return `${proxy.protocol}//${proxy.host}`;
}

/**
 * Opens a tunnel through `proxy` to `host:port` and resolves with the socket, paused, once the
 * proxy answered 2xx; the caller resumes it when it speaks its protocol over it. Rejects with the proxy's status line
 * (and nothing of its body) when it refuses, or on `timeoutMs`.
 */
export function connectThroughProxy(
  proxy: URL,
  target: { host: string; port: number },
  options: { timeoutMs: number },
): Promise<Socket> {
  const proxyHost = unbracket(proxy.hostname);
  const proxyPort = Number(proxy.port || (proxy.protocol === "https:" ? 443 : 80));
  const authority = `${isIP(target.host) === 6 ? `[${target.host}]` : target.host}:${target.port}`;
  return new Promise<Socket>((resolve, reject) => {
    const socket: Socket =
      proxy.protocol === "https:"
        ? tlsConnect()({
            host: proxyHost,
            port: proxyPort,
            ...(isIP(proxyHost) === 0 ? { servername: proxyHost } : {}),
          })
        : netConnect({ host: proxyHost, port: proxyPort });
    let settled = false;
    let received = Buffer.alloc(0);
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      reject(new Error(`proxy ${describeProxy(proxy)}: ${message}`));
    };
    const timer = setTimeout(
      () => fail(`no answer to CONNECT ${authority} within ${options.timeoutMs} ms`),
      options.timeoutMs,
    );
    socket.once("error", (error) => fail(error.message));
    socket.once("close", () => fail(`closed the connection during CONNECT ${authority}`));
    socket.once(proxy.protocol === "https:" ? "secureConnect" : "connect", () => {
      const headers = [`CONNECT ${authority} HTTP/1.1`, `Host: ${authority}`];
      if (proxy.username !== "" || proxy.password !== "") {
        const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
        headers.push(`Proxy-Authorization: Basic ${Buffer.from(credentials).toString("base64")}`); // PX3
      }
      socket.write(`${headers.join("\r\n")}\r\n\r\n`);
    });
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf("\r\n\r\n");
      if (end === -1) {
        if (received.length > 16_384) fail("sent an over-long answer to CONNECT");
        return;
      }
      socket.off("data", onData);
      const statusLine = received.subarray(0, received.indexOf("\r\n")).toString("latin1");
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
      if (status === undefined || !status.startsWith("2")) {
        fail(`refused CONNECT ${authority}: ${statusLine.slice(0, 200)}`);
        return;
      }
      settled = true;
      clearTimeout(timer);
      socket.removeAllListeners("error");
      socket.removeAllListeners("close");
      socket.pause();
      const rest = received.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve(socket);
    };
    socket.on("data", onData);
  });
}

/** PX2: TLS with the gateway over the tunnel, checked against the gateway's own name. */
export function secureOverTunnel(tunnel: Socket, host: string): Socket {
  const secure = tlsConnect()({
    socket: tunnel,
    ...(isIP(host) === 0 ? { servername: host } : {}),
    host,
  });
  tunnel.resume();
  return secure;
}

/** TLS loads only for an https proxy or a wss gateway: a computer's worker never needs it. */
const tlsConnect = () => process.getBuiltinModule("node:tls").connect;

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

function unbracket(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

function sameAddress(a: string, b: string): boolean {
  const list = new BlockList();
  list.addAddress(b, isIP(b) === 6 ? "ipv6" : "ipv4");
  return list.check(a, isIP(a) === 6 ? "ipv6" : "ipv4");
}

function inCidr(host: string, cidr: string): boolean {
  const [network, bits] = cidr.split("/");
  const family = isIP(network ?? "");
  if (family === 0 || isIP(host) !== family || bits === undefined || !/^\d+$/.test(bits))
    return false;
  const list = new BlockList();
  try {
    list.addSubnet(network ?? "", Number(bits), family === 6 ? "ipv6" : "ipv4");
  } catch {
    return false;
  }
  return list.check(host, family === 6 ? "ipv6" : "ipv4");
}
