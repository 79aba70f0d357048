/**
 * `GET /auth/local`: the embedded single-user install signs the browser in without ceremony by
 * handing it the local admin token. docs/decisions/0004-web-local-sign-in.md explains why this is
 * safe enough, and what it must never be allowed to do.
 *
 * Invariants:
 *   SIGN1 off unless the server was started with it switched on (embedded mode only).
 *   SIGN2 only a TCP peer on a loopback address (127.0.0.0/8, ::1, ::ffff:127.x) gets an answer.
 *   SIGN3 a request that went through a proxy (any forwarding header) is refused: behind a reverse
 *      proxy on the same host every peer looks like loopback.
 *   SIGN4 the Host header must name a loopback host (defeats DNS rebinding: a page on evil.example
 *      whose name resolves to 127.0.0.1 sends `Host: evil.example`).
 *   SIGN5 a cross-site browser request is refused (Origin / Sec-Fetch-Site), and the answer carries
 *      no CORS headers, so no other site's script can read it.
 *   SIGN6 the token is never cached (`no-store`).
 *   SIGN7 a connection opened by the egress proxy (on a computer's behalf) is refused, even with
 *      a loopback peer and no forwarding header (a CONNECT tunnel carries none): with
 *      socket-only sandboxes the proxy is the only way a computer's traffic reaches a host port.
 */
import type { Context } from "hono";
import { getConnInfo } from "@hono/node-server/conninfo";
import { readFile } from "node:fs/promises";

export interface LocalSignInOptions {
  /** File holding the local admin token (`$ROOST_DATA_DIR/admin-token`). */
  tokenFile: string;
  /** SIGN7: whether the peer `address:port` is a connection the egress proxy opened. @default never */
  isProxyConnection?: (address: string, port: number) => boolean;
}

/** SIGN2: loopback peers only. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const plain = address.startsWith("::ffff:") ? address.slice("::ffff:".length) : address;
  return plain === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(plain);
}

/** SIGN4: `localhost`, `*.localhost`, 127.x.y.z or [::1], with any port. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const name = host.toLowerCase().replace(/:\d+$/, "");
  return (
    name === "localhost" ||
    name.endsWith(".localhost") ||
    name === "[::1]" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)
  );
}

const forwardingHeaders = ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip", "via"];

function remotePeer(context: Context): { address?: string; port?: number } {
  try {
    return getConnInfo(context).remote;
  } catch {
    return {}; // not served by @hono/node-server: no way to know, so no.
  }
}

/** Why the request may not sign in locally, or undefined when it may. */
export function localSignInRefusal(
  context: Context,
  options: Pick<LocalSignInOptions, "isProxyConnection"> = {},
): string | undefined {
  const peer = remotePeer(context);
  if (!isLoopbackAddress(peer.address))
    return "local sign-in only answers requests from this computer"; // SIGN2
  if (
    peer.address !== undefined &&
    peer.port !== undefined &&
    options.isProxyConnection?.(peer.address, peer.port) === true
  )
    return "local sign-in does not answer connections made by the egress proxy (a computer's traffic)"; // SIGN7
  if (forwardingHeaders.some((name) => context.req.header(name) !== undefined))
    return "local sign-in does not answer proxied requests"; // SIGN3
  const host = context.req.header("host");
  if (!isLoopbackHost(host))
    return "local sign-in needs the page opened as http://localhost or http://127.0.0.1"; // SIGN4
  // SIGN5
  const site = context.req.header("sec-fetch-site");
  if (site !== undefined && site !== "same-origin" && site !== "none")
    return "local sign-in refuses cross-site requests";
  const origin = context.req.header("origin");
  if (origin !== undefined) {
    let originHost: string;
    try {
      originHost = new URL(origin).host;
    } catch {
      return "local sign-in refuses cross-site requests";
    }
    if (originHost.toLowerCase() !== host?.toLowerCase())
      return "local sign-in refuses cross-site requests";
  }
  return undefined;
}

export function createLocalSignInHandler(options: LocalSignInOptions | undefined) {
  return async (context: Context) => {
    context.header("cache-control", "no-store"); // SIGN6
    context.header("x-content-type-options", "nosniff");
    if (options === undefined) {
      // SIGN1
      return context.json(
        {
          error: {
            code: "not_found",
            message:
              "local sign-in is off on this server; sign in with an API token (roost token create)",
          },
        },
        404,
      );
    }
    const refusal = localSignInRefusal(context, options);
    if (refusal !== undefined) {
      return context.json(
        { error: { code: "forbidden", message: `${refusal}; sign in with an API token instead` } },
        403,
      );
    }
    const token = (await readFile(options.tokenFile, "utf8").catch(() => "")).trim();
    if (token === "") {
      return context.json(
        {
          error: {
            code: "unavailable",
            message: `no admin token in ${options.tokenFile}; restart roost to write a new one`,
          },
        },
        503,
      );
    }
    return context.json({ token });
  };
}
