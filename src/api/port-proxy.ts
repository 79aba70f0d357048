/**
 * HTTP through a tunnel to a server inside a computer. Node's own HTTP client speaks to the
 * server, over the tunnel's Duplex (`http.request({ createConnection })`): it writes the request
 * and parses the answer (chunked bodies, HEAD, 1xx, upgrades), and its stream backpressure reaches
 * the tunnel's credit, so bodies of any size stream both ways without being held whole
 * (docs/decisions/0016-port-previews.md says why not raw byte piping).
 *
 * Invariants:
 *   PXY1 The server inside never sees the caller's Roost credentials: `Authorization` is removed
 *        on the API path (always Roost's) and, on a preview host, when it holds a Roost token;
 *        Roost's preview cookie is removed from `Cookie`.
 *   PXY2 Hop-by-hop headers (RFC 9110 §7.6.1, and those `Connection` names) do not cross in either
 *        direction, except `Upgrade`/`Connection: upgrade` of a WebSocket handshake; forwarding
 *        headers the client sent are replaced by Roost's own.
 *   PXY3 The server inside cannot set or overwrite Roost's preview cookie, nor a cookie for
 *        another host: `Set-Cookie` loses `Domain`, and on the API path its `Path` is moved under
 *        the preview's prefix.
 *   PXY4 Every answer served on Roost's own origin (the API path) carries
 *        `Content-Security-Policy: sandbox`, so even a document rendered there runs with an opaque
 *        origin, never Roost's.
 */
import http from "node:http";
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import type { Duplex } from "node:stream";
import { RoostError } from "../errors/index.ts";

export interface ProxyTarget {
  port: number;
  /** Path before the server's own path as the client sees it: `/v1/computers/me/ports/8000` on the API path, `` on a preview host. */
  prefix: string;
  /** Host the client addressed (the `Host` it sent). */
  publicHost: string;
  publicProtocol: "http" | "https";
  /** Name of Roost's preview cookie on a preview host; undefined on the API path. */
  sessionCookie: string | undefined;
}

const hopByHop = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
]);
const forwarding = new Set([
  "forwarded",
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-forwarded-port",
  "x-forwarded-prefix",
  "x-real-ip",
]);

/** The header names `Connection` lists (they are hop-by-hop too). */
function connectionTokens(value: string | null | undefined): Set<string> {
  return new Set(
    (value ?? "")
      .toLowerCase()
      .split(",")
      .map((token) => token.trim())
      .filter((token) => token !== ""),
  );
}

/** `Cookie` without Roost's own cookie (PXY1); undefined when nothing is left. */
export function withoutCookie(header: string, name: string): string | undefined {
  const kept = header
    .split(";")
    .map((part) => part.trim())
    .filter((part) => part !== "" && part.split("=", 1)[0]?.trim() !== name);
  return kept.length === 0 ? undefined : kept.join("; ");
}

/** The value of cookie `name`, every one of them (a page may have set a same-named one elsewhere). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (header === undefined) return [];
  return header
    .split(";")
    .map((part) => part.trim())
    .filter((part) => part.split("=", 1)[0]?.trim() === name)
    .map((part) => part.slice(part.indexOf("=") + 1).trim());
}

/** PXY1, PXY2: the request headers the server inside receives, as node's flat raw list. */
export function innerRequestHeaders(
  headers: Iterable<[string, string]>,
  target: ProxyTarget,
  options: { upgrade: boolean; remoteAddress: string | undefined },
): string[] {
  const list = [...headers];
  const connection = connectionTokens(
    list.find(([name]) => name.toLowerCase() === "connection")?.[1],
  );
  const out: string[] = [];
  for (const [rawName, value] of list) {
    const name = rawName.toLowerCase();
    if (name === "host" || forwarding.has(name) || name === "expect") continue;
    if (hopByHop.has(name) || connection.has(name)) continue; // PXY2
    if (name === "authorization") {
      // PXY1: the API path's Authorization is always Roost's; a preview host's is the app's own
      // unless it carries a Roost token.
      if (target.sessionCookie === undefined || /\broost_[A-Za-z0-9_-]{20,}/.test(value)) continue;
    }
    if (name === "cookie" && target.sessionCookie !== undefined) {
      const kept = withoutCookie(value, target.sessionCookie); // PXY1
      if (kept !== undefined) out.push(rawName, kept);
      continue;
    }
    out.push(rawName, value);
  }
  // Vite and other development servers accept only localhost as Host (DNS rebinding protection).
  out.push("Host", `localhost:${target.port}`);
  out.push("X-Forwarded-Host", target.publicHost, "X-Forwarded-Proto", target.publicProtocol);
  if (options.remoteAddress !== undefined) out.push("X-Forwarded-For", options.remoteAddress);
  if (target.prefix !== "") out.push("X-Forwarded-Prefix", target.prefix);
  if (options.upgrade) {
    const upgrade = list.find(([name]) => name.toLowerCase() === "upgrade")?.[1];
    if (upgrade !== undefined) out.push("Connection", "Upgrade", "Upgrade", upgrade);
  }
  return out;
}

/** PXY3: a `Set-Cookie` from the server inside, made safe for the host it will be set on. */
export function rewriteSetCookie(value: string, target: ProxyTarget): string | undefined {
  const [pair = "", ...attributes] = value.split(";");
  const name = pair.split("=", 1)[0]?.trim() ?? "";
  if (name === "" || (target.sessionCookie !== undefined && name === target.sessionCookie))
    return undefined;
  const kept: string[] = [pair.trim()];
  let path: string | undefined;
  for (const attribute of attributes) {
    const trimmed = attribute.trim();
    const key = trimmed.split("=", 1)[0]?.trim().toLowerCase();
    if (key === "domain") continue;
    if (key === "path") {
      path = trimmed.slice(trimmed.indexOf("=") + 1).trim();
      continue;
    }
    if (trimmed !== "") kept.push(trimmed);
  }
  const ownPath = path !== undefined && path.startsWith("/") ? path : "/";
  kept.push(`Path=${target.prefix === "" ? ownPath : `${target.prefix}${ownPath}`}`);
  return kept.join("; ");
}

/** A `Location` the server inside sent, as the client must follow it. */
export function rewriteLocation(value: string, target: ProxyTarget): string {
  const inner = new Set([
    `localhost:${target.port}`,
    `127.0.0.1:${target.port}`,
    `[::1]:${target.port}`,
  ]);
  let rest = value;
  const absolute = /^https?:\/\/([^/?#]+)(.*)$/i.exec(value);
  if (absolute !== null) {
    if (!inner.has(absolute[1]!.toLowerCase())) return value; // somewhere else entirely
    rest = absolute[2] === "" ? "/" : absolute[2]!;
  }
  return rest.startsWith("/") && !rest.startsWith("//") ? `${target.prefix}${rest}` : value;
}

/** PXY2, PXY3, PXY4: the response headers the client receives, from node's flat raw list. */
export function outerResponseHeaders(
  raw: string[],
  target: ProxyTarget,
  upgrade: boolean,
): [string, string][] {
  let connectionHeader: string | undefined;
  for (let index = 0; index + 1 < raw.length; index += 2)
    if (raw[index]!.toLowerCase() === "connection") connectionHeader = raw[index + 1];
  const connection = connectionTokens(connectionHeader);
  const out: [string, string][] = [];
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const rawName = raw[index]!;
    const value = raw[index + 1]!;
    const name = rawName.toLowerCase();
    if (upgrade && (name === "connection" || name === "upgrade")) {
      out.push([rawName, value]);
      continue;
    }
    if (hopByHop.has(name) || connection.has(name)) continue; // PXY2
    if (name === "set-cookie") {
      const rewritten = rewriteSetCookie(value, target); // PXY3
      if (rewritten !== undefined) out.push([rawName, rewritten]);
      continue;
    }
    if (name === "location" || name === "content-location") {
      out.push([rawName, rewriteLocation(value, target)]);
      continue;
    }
    out.push([rawName, value]);
  }
  if (target.sessionCookie === undefined)
    out.push(["Content-Security-Policy", "sandbox"], ["X-Content-Type-Options", "nosniff"]); // PXY4
  return out;
}

/** How the server inside failed to answer, as an API error. */
function badAnswer(port: number, error: unknown): RoostError {
  const code = (error as NodeJS.ErrnoException).code;
  const reason =
    code !== undefined && code.startsWith("HPE_")
      ? "it did not answer HTTP"
      : (error as Error).message;
  return new RoostError(
    "unavailable",
    `the server on port ${port} in the computer failed to answer: ${reason}`,
    {
      details: { port },
      cause: error,
    },
  );
}

/** Starts the request inside; resolves with node's answer (or the upgrade) once its head arrives. */
function send(
  stream: Duplex,
  method: string,
  path: string,
  headers: string[],
  body: Readable | undefined,
  port: number,
): Promise<
  | { kind: "response"; response: IncomingMessage }
  | { kind: "upgrade"; response: IncomingMessage; socket: Duplex; head: Buffer }
> {
  return new Promise((resolve, reject) => {
    const request = http.request({
      createConnection: () => stream,
      method,
      path,
      headers,
      setHost: false,
    });
    request.on("response", (response) => resolve({ kind: "response", response }));
    request.on("upgrade", (response, socket, head) =>
      resolve({ kind: "upgrade", response, socket: socket, head }),
    );
    request.on("error", (error) => {
      stream.destroy();
      reject(badAnswer(port, error));
    });
    if (body === undefined) request.end();
    else {
      body.on("error", (error) => request.destroy(error));
      body.pipe(request);
    }
  });
}

/**
 * A web stream over node's answer, read only as fast as the client takes it (one chunk per pull:
 * the HTTP client pauses the tunnel while its own buffer is full). When the answer is cut off
 * (the computer went to sleep, the server died), `cut` ends the client's connection without a
 * clean end, so a truncated body never looks complete; without it the stream errors.
 */
export function webBody(response: IncomingMessage, cut?: () => void): ReadableStream<Uint8Array> {
  let failed = false;
  let wake: (() => void) | undefined;
  const fire = () => {
    const waiting = wake;
    wake = undefined;
    waiting?.();
  };
  response.on("readable", fire);
  response.on("end", fire);
  response.on("error", () => {
    failed = true;
    fire();
  });
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          if (failed) {
            if (cut === undefined) controller.error(new Error("the server's answer was cut off"));
            else {
              cut();
              controller.close();
            }
            return;
          }
          const chunk = response.read() as Buffer | null;
          if (chunk !== null) {
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
            return;
          }
          if (response.readableEnded) {
            controller.close();
            return;
          }
          await new Promise<void>((resolve) => (wake = resolve));
        }
      },
      cancel() {
        response.destroy();
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * Sends `request` to the server inside through `stream` and answers with its response,
 * streaming both bodies. `path` is the server's own path and query.
 */
export async function proxyRequest(
  stream: Duplex,
  request: Request,
  path: string,
  target: ProxyTarget,
  remoteAddress: string | undefined,
  cut?: () => void,
): Promise<Response> {
  const method = request.method.toUpperCase();
  const headers = innerRequestHeaders(request.headers.entries(), target, {
    upgrade: false,
    remoteAddress,
  });
  const hasBody = request.body !== null && method !== "GET" && method !== "HEAD";
  const body = hasBody ? Readable.fromWeb(request.body as never) : undefined;
  const answer = await send(stream, method, path, headers, body, target.port);
  if (answer.kind === "upgrade") {
    // Only a request that asked to upgrade gets here with one; a plain request never does.
    answer.socket.destroy();
    throw new RoostError(
      "unavailable",
      `the server on port ${target.port} switched protocols unasked`,
    );
  }
  const { response } = answer;
  const status = response.statusCode ?? 502;
  const responseHeaders = new Headers();
  for (const [name, value] of outerResponseHeaders(response.rawHeaders, target, false))
    responseHeaders.append(name, value);
  if (status < 200 || status > 599) {
    response.destroy();
    throw new RoostError(
      "unavailable",
      `the server on port ${target.port} answered status ${status}`,
    );
  }
  const noBody = method === "HEAD" || status === 204 || status === 304;
  if (noBody) response.resume();
  return new Response(noBody ? null : webBody(response, cut), {
    status,
    statusText: response.statusMessage,
    headers: responseHeaders,
  });
}

/** Writes a complete HTTP/1.1 answer on a raw socket (an upgrade that did not happen). */
export function writeRawResponse(
  socket: Duplex,
  status: number,
  headers: [string, string][],
  body: string | Buffer,
): void {
  if (socket.destroyed) return;
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  const lines = [`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ""}`];
  for (const [name, value] of headers) lines.push(`${name}: ${value}`);
  lines.push(`Content-Length: ${bytes.length}`, "Connection: close", "", "");
  socket.end(Buffer.concat([Buffer.from(lines.join("\r\n")), bytes]));
}

/**
 * A WebSocket (or other) upgrade: the handshake goes to the server inside; if it switches
 * protocols, its 101 goes back to the client and the two sockets are piped into each other.
 */
export async function proxyUpgrade(
  stream: Duplex,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  path: string,
  target: ProxyTarget,
): Promise<void> {
  const pairs: [string, string][] = [];
  for (let index = 0; index + 1 < request.rawHeaders.length; index += 2)
    pairs.push([request.rawHeaders[index]!, request.rawHeaders[index + 1]!]);
  const headers = innerRequestHeaders(pairs, target, {
    upgrade: true,
    remoteAddress: request.socket.remoteAddress,
  });
  const answer = await send(stream, request.method ?? "GET", path, headers, undefined, target.port);
  if (answer.kind === "response") {
    // Refused the upgrade: its answer goes to the client as it is, then the connection closes.
    const { response } = answer;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response) {
      size += (chunk as Buffer).length;
      if (size > 1024 * 1024) break; // a refusal is short; do not hold more
      chunks.push(chunk as Buffer);
    }
    stream.destroy();
    const kept = outerResponseHeaders(response.rawHeaders, target, false).filter(
      ([name]) => name.toLowerCase() !== "content-length",
    );
    writeRawResponse(socket, response.statusCode ?? 502, kept, Buffer.concat(chunks));
    return;
  }
  const { response, socket: inner, head: innerHead } = answer;
  const lines = [`HTTP/1.1 101 ${response.statusMessage ?? "Switching Protocols"}`];
  for (const [name, value] of outerResponseHeaders(response.rawHeaders, target, true))
    if (
      name.toLowerCase() !== "content-security-policy" &&
      name.toLowerCase() !== "x-content-type-options"
    )
      lines.push(`${name}: ${value}`);
  lines.push("", "");
  socket.write(lines.join("\r\n"));
  if (innerHead.length > 0) socket.write(innerHead);
  if (head.length > 0) inner.write(head);
  const end = () => {
    socket.destroy();
    inner.destroy();
  };
  socket.on("error", end);
  inner.on("error", end);
  socket.on("close", end);
  inner.on("close", end);
  socket.pipe(inner);
  inner.pipe(socket);
}
