/**
 * The fetch HTTP MCP servers are reached with, from the Roost server (docs/mcp.md "Egress").
 *
 * Invariants:
 *   MCPF1 a request goes out only if the account's egress policy (its computer's network policy,
 *         docs/egress.md) allows the destination, name and every resolved address, exactly as the
 *         egress proxy decides (checkDestination): loopback, link-local (169.254.169.254), the
 *         host's own addresses and Roost's own ports are refused whatever the policy says, and
 *         private ranges only where the operator opened them (ROOST_EGRESS_ALLOW_PRIVATE).
 *   MCPF2 the connection goes to the address that was checked, never to a second lookup (a name
 *         that rebinds between the check and the connection reaches nothing refused).
 *   MCPF3 no redirect is followed by this fetch (the SDK sees the 3xx and, by its same-origin
 *         rule, may ask again: through this fetch, so checked again).
 *   MCPF4 a response body is at most `maxResponseBytes` (default 8 MiB); a longer one fails.
 */
import { lookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { connect as netConnect, type Socket } from "node:net";
import { Readable } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import {
  checkDestination,
  normalizeIp,
  type CompiledPolicy,
  type DestinationContext,
} from "../egress/index.ts";

export interface GuardedFetchOptions {
  /** The account's egress policy, compiled (read per request: a changed policy applies at once). */
  policy: () => Promise<CompiledPolicy>;
  destination: DestinationContext;
  /** Name → addresses. @default dns lookup, all addresses */
  resolve?: (hostname: string) => Promise<string[]>;
  /** Opens a TCP connection to a checked address (MCPF2). @default node:net connect */
  connect?: (address: string, port: number) => Socket;
  /** MCPF4 @default 8 MiB */
  maxResponseBytes?: number;
}

/** The refusal of an egress check, as a fetch failure the SDK passes on. */
export class EgressRefusedError extends Error {
  override readonly name = "EgressRefusedError";
}

const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");
const portOf = (url: URL) =>
  url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);

/** A fetch for the MCP SDK's transport (MCPF1–MCPF4). */
export function createGuardedFetch(options: GuardedFetchOptions) {
  const resolve =
    options.resolve ??
    (async (hostname: string) =>
      (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address));
  const connect = options.connect ?? ((address: string, port: number) => netConnect(port, address));
  const maxBytes = options.maxResponseBytes ?? 8 * 1024 * 1024;

  /** MCPF1: the address to connect to, or throws EgressRefusedError. */
  async function checked(url: URL): Promise<string> {
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new EgressRefusedError(`${url.protocol} is not http or https`);
    const host = hostOf(url);
    const port = portOf(url);
    const literal = normalizeIp(host);
    const addresses =
      literal === undefined
        ? (await resolve(host)).map((address) => normalizeIp(address) ?? address)
        : [literal];
    if (addresses.length === 0) throw new EgressRefusedError(`${host} has no addresses`);
    const denial = checkDestination(
      await options.policy(),
      { host: literal ?? host.toLowerCase(), port },
      addresses,
      options.destination,
    );
    if (denial !== undefined) throw new EgressRefusedError(denial.message);
    return addresses[0]!;
  }

  return async function guardedFetch(
    input: string | URL | Request,
    init: RequestInit = {},
  ): Promise<Response> {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const address = await checked(url); // MCPF1
    const headers = new Headers(init.headers);
    const body =
      init.body === undefined || init.body === null
        ? undefined
        : typeof init.body === "string"
          ? Buffer.from(init.body)
          : Buffer.from(await new Response(init.body).arrayBuffer());
    if (body !== undefined) headers.set("content-length", String(body.length));
    const secure = url.protocol === "https:";
    const host = hostOf(url);
    const port = portOf(url);
    return new Promise<Response>((settle, fail) => {
      const outgoing = (secure ? https : http).request(
        {
          method: init.method ?? "GET",
          host,
          port,
          path: `${url.pathname}${url.search}`,
          headers: Object.fromEntries(headers),
          signal: init.signal ?? undefined,
          // MCPF2: the socket goes to the checked address; TLS still verifies the name.
          createConnection: () => {
            const socket = connect(address, port);
            return secure ? tlsConnect({ socket, servername: host }) : socket;
          },
        },
        (response) => {
          const status = response.statusCode ?? 502;
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            if (value === undefined) continue;
            for (const each of Array.isArray(value) ? value : [value])
              responseHeaders.append(name, each);
          }
          let seen = 0;
          response.on("data", (chunk: Buffer) => {
            seen += chunk.length;
            if (seen > maxBytes)
              response.destroy(new Error(`the response is over ${maxBytes} bytes`)); // MCPF4
          });
          const nullBody = [101, 204, 205, 304].includes(status) || init.method === "HEAD";
          if (nullBody) response.resume();
          settle(
            new Response(
              nullBody ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>),
              { status, statusText: response.statusMessage ?? "", headers: responseHeaders },
            ),
          ); // MCPF3: a 3xx is returned as it is
        },
      );
      outgoing.on("error", fail);
      outgoing.end(body);
    });
  };
}
