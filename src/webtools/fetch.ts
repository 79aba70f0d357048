/**
 * Fetching a URL from the server on a computer's behalf (`web_fetch`), under the same egress
 * policy the computer's proxy applies (src/egress, docs/egress.md), without waking the computer.
 *
 * Invariants:
 *   WF1 every hop (the URL and each redirect) is checked like the proxy checks a request: the
 *       name against the account's policy before it is resolved (checkName, P7), then EVERY
 *       address it resolves to (checkAddress: host, loopback, link-local, private ranges the
 *       operator did not open, Roost's own ports). One refused address refuses the request.
 *   WF2 the connection goes to an address that was checked, never to a second lookup of the
 *       name (no DNS rebinding between check and connect); TLS still verifies the name.
 *   WF3 redirects are followed at most `maxRedirects` times, each one checked again (WF1); a
 *       redirect to another scheme than http(s) is refused.
 *   WF4 a response body is read up to `maxBytes` and the connection closed there (`truncated`);
 *       the whole fetch, redirects included, has one deadline (`timeoutMs`), and a body that
 *       stalls past it fails with a timeout, never hangs.
 *   WF5 only http and https URLs without a user name or password are fetched.
 *   WF6 every hop, refused or allowed, is reported once to `onHop` when it ends, in the egress
 *       proxy's log entry shape (method `WEB_FETCH`), so the computer's egress log shows them.
 */
import { lookup } from "node:dns/promises";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { domainToASCII } from "node:url";
import {
  checkAddress,
  checkName,
  normalizeIp,
  type CompiledPolicy,
  type DestinationContext,
  type EgressLogEntry,
  type EgressRefusalCode,
} from "../egress/index.ts";

/** One hop of a fetch as the egress log records it (WF6); the caller adds the computer. */
export type WebFetchHop = Omit<EgressLogEntry, "computerId">;

export interface WebFetcherOptions {
  /** The host's addresses, the operator's private ranges and Roost's ports (egress P3, P4). */
  destination: DestinationContext;
  /** Name → addresses. @default dns lookup, all addresses */
  resolve?: (hostname: string) => Promise<string[]>;
  /** Opens a TCP connection to a checked address (WF2). @default node:net connect */
  connect?: (address: string, port: number) => Socket;
  /** Bytes of a response body kept at most (WF4). @default 5_000_000 */
  maxBytes?: number;
  /** One deadline for the whole fetch, redirects included (WF4). @default 20_000 */
  timeoutMs?: number;
  /** @default 5 */
  maxRedirects?: number;
  /** @default "Roost-WebFetch/1" */
  userAgent?: string;
}

export interface FetchedPage {
  /** The URL that answered, after redirects. */
  url: string;
  status: number;
  /** The Content-Type header ("" when none). */
  contentType: string;
  body: Buffer;
  /** The body was longer than `maxBytes` and was cut there (WF4). */
  truncated: boolean;
  redirects: number;
}

/** Why a fetch did not happen or did not finish; `message` is for the model, as it is. */
export class WebFetchError extends Error {
  readonly kind: "refused" | "invalid" | "timeout" | "failed";
  /** For a refusal: the egress denial's code and the refused address, if it was one. */
  readonly code: EgressRefusalCode | undefined;
  readonly address: string | undefined;
  constructor(
    kind: WebFetchError["kind"],
    message: string,
    refusal: { code?: EgressRefusalCode; address?: string } = {},
  ) {
    super(message);
    this.kind = kind;
    this.code = refusal.code;
    this.address = refusal.address;
  }
}

export interface WebFetcher {
  /** WF1–WF5 under `policy`; throws WebFetchError. */
  fetch(
    url: string,
    options: {
      policy: CompiledPolicy;
      signal?: AbortSignal;
      accept?: string;
      /** WF6: told of each hop when it ends; a throwing hook is ignored. */
      onHop?: (hop: WebFetchHop) => void;
    },
  ): Promise<FetchedPage>;
}

const maxUrlLength = 4000;

export function createWebFetcher(options: WebFetcherOptions): WebFetcher {
  const resolve =
    options.resolve ??
    (async (hostname: string) =>
      (await lookup(hostname, { all: true, order: "verbatim" })).map((entry) => entry.address));
  const connect = options.connect ?? ((address: string, port: number) => netConnect(port, address));
  const maxBytes = options.maxBytes ?? 5_000_000;
  const timeoutMs = options.timeoutMs ?? 20_000;
  const maxRedirects = options.maxRedirects ?? 5;
  const userAgent = options.userAgent ?? "Roost-WebFetch/1";

  /** WF1: the checked addresses of one hop, or a refusal. */
  async function checkedAddresses(
    policy: CompiledPolicy,
    host: string,
    port: number,
  ): Promise<string[]> {
    const target = { host, port };
    const verdict = checkName(policy, target);
    if (!verdict.allowed)
      throw new WebFetchError("refused", verdict.denial.message, { code: verdict.denial.code });
    const literal = normalizeIp(host);
    let addresses: string[];
    if (literal !== undefined) addresses = [literal];
    else {
      try {
        addresses = [
          ...new Set((await resolve(host)).map((address) => normalizeIp(address) ?? address)),
        ];
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        throw new WebFetchError(
          "failed",
          `Could not resolve ${host} (${typeof code === "string" ? code : String(error)}).`,
        );
      }
      if (addresses.length === 0) throw new WebFetchError("failed", `${host} has no addresses.`);
    }
    for (const address of addresses) {
      const denial = checkAddress(policy, target, address, verdict.byName, options.destination);
      if (denial !== undefined)
        throw new WebFetchError("refused", denial.message, { code: denial.code, address }); // WF1
    }
    return addresses;
  }

  function requestOnce(
    url: URL,
    host: string,
    port: number,
    address: string,
    signal: AbortSignal,
    accept: string,
  ): Promise<{ response: IncomingMessage; destroy: () => void }> {
    return new Promise((settle, reject) => {
      const secure = url.protocol === "https:";
      const outgoing = (secure ? https : http).request({
        method: "GET",
        host,
        port,
        path: `${url.pathname}${url.search}`,
        headers: {
          "user-agent": userAgent,
          accept,
          "accept-encoding": "identity",
        },
        signal,
        // WF2: the socket goes to the checked address; TLS still verifies the name.
        createConnection: () => {
          const socket = connect(address, port);
          return secure
            ? tlsConnect({
                socket,
                // SNI carries names only; an address is still verified against the certificate.
                ...(normalizeIp(host) === undefined ? { servername: host } : { host }),
              })
            : socket;
        },
      });
      outgoing.on("response", (response) =>
        settle({ response, destroy: () => outgoing.destroy() }),
      );
      outgoing.on("error", reject);
      outgoing.end();
    });
  }

  async function readCapped(
    response: IncomingMessage,
    destroy: () => void,
  ): Promise<{ body: Buffer; truncated: boolean }> {
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    try {
      for await (const chunk of response as AsyncIterable<Buffer>) {
        const room = maxBytes - size;
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room));
          size += room;
          truncated = true;
          break; // WF4: stop reading, close the connection
        }
        chunks.push(chunk);
        size += chunk.length;
      }
    } finally {
      if (truncated) destroy();
    }
    return { body: Buffer.concat(chunks, size), truncated };
  }

  return {
    async fetch(text, { policy, signal, accept = "text/html,text/plain,*/*;q=0.8", onHop }) {
      const deadline = AbortSignal.timeout(timeoutMs);
      const combined = signal === undefined ? deadline : AbortSignal.any([signal, deadline]);
      let url = parseFetchUrl(text);
      // The hop in progress, for its log entry (WF6).
      let hop = {
        host: "",
        port: 0,
        started: Date.now(),
        address: undefined as string | undefined,
        reported: false,
      };
      const report = (entry: Omit<WebFetchHop, "method" | "host" | "port" | "durationMs">) => {
        if (hop.reported || hop.host === "") return; // WF6: once per hop
        hop.reported = true;
        try {
          onHop?.({
            method: "WEB_FETCH",
            host: hop.host,
            port: hop.port,
            ...(hop.address === undefined ? {} : { resolvedAddress: hop.address }),
            ...entry,
            durationMs: Date.now() - hop.started,
          });
        } catch {
          // WF6: a failing hook never affects the fetch.
        }
      };
      try {
        for (let redirects = 0; ; redirects += 1) {
          const host = hostOf(url);
          const port = portOf(url);
          hop = { host, port, started: Date.now(), address: undefined, reported: false };
          const addresses = await checkedAddresses(policy, host, port);
          const { value: answer, address } = await firstAnswer(addresses, (candidate) =>
            requestOnce(url, host, port, candidate, combined, accept),
          );
          hop.address = address;
          const { response, destroy } = answer;
          const status = response.statusCode ?? 0;
          const location = response.headers.location;
          if (status >= 300 && status < 400 && location !== undefined) {
            response.resume();
            destroy();
            report({ decision: "allowed", status, bytesUp: 0, bytesDown: 0 });
            if (redirects >= maxRedirects)
              throw new WebFetchError(
                "failed",
                `${text} redirected more than ${maxRedirects} times; giving up.`,
              );
            let next: URL;
            try {
              next = new URL(location, url);
            } catch {
              throw new WebFetchError("failed", `${url.href} redirected to an invalid URL.`);
            }
            url = parseFetchUrl(next.href, "redirected to"); // WF3, WF5
            continue;
          }
          const { body, truncated } = await readCapped(response, destroy);
          report({
            decision: "allowed",
            status,
            bytesUp: 0,
            bytesDown: body.length,
            ...(truncated ? { reason: `body cut at ${maxBytes} bytes` } : {}),
          });
          return {
            url: url.href,
            status,
            contentType: String(response.headers["content-type"] ?? ""),
            body,
            truncated,
            redirects,
          };
        }
      } catch (error) {
        const failure = fetchFailure(error, url, deadline.aborted, signal?.aborted === true);
        if (failure.kind === "refused") {
          if (failure.address !== undefined) hop.address = failure.address;
          report({
            decision: "denied",
            status: 403,
            bytesUp: 0,
            bytesDown: 0,
            reason: failure.message,
            ...(failure.code === undefined ? {} : { code: failure.code }),
          });
        } else if (failure.kind !== "invalid")
          report({
            decision: "allowed",
            status: failure.kind === "timeout" ? 504 : 502,
            bytesUp: 0,
            bytesDown: 0,
            reason: failure.message,
            code: "upstream-failed",
          });
        throw failure;
      }
    },
  };

  function fetchFailure(
    error: unknown,
    url: URL,
    timedOut: boolean,
    stopped: boolean,
  ): WebFetchError {
    if (error instanceof WebFetchError) return error;
    if (timedOut)
      return new WebFetchError(
        "timeout",
        `${url.href} did not answer in full within ${timeoutMs / 1000} s (the fetch gives up there).`,
      ); // WF4
    if (stopped) return new WebFetchError("failed", "The fetch was stopped.");
    const code = (error as { code?: unknown }).code;
    return new WebFetchError(
      "failed",
      `Could not fetch ${url.href}: ${typeof code === "string" ? code : (error as Error).message}.`,
    );
  }
}

/** Try each checked address in turn until one answers (WF2: addresses, never the name). */
async function firstAnswer<T>(
  addresses: readonly string[],
  attempt: (address: string) => Promise<T>,
): Promise<{ value: T; address: string }> {
  let lastError: unknown;
  for (const address of addresses) {
    try {
      return { value: await attempt(address), address };
    } catch (error) {
      lastError = error;
      const code = (error as { code?: unknown }).code;
      // Only a refused or unreachable address is worth trying the next one for.
      if (code !== "ECONNREFUSED" && code !== "EHOSTUNREACH" && code !== "ENETUNREACH") break;
    }
  }
  throw lastError;
}

/** WF5: an absolute http(s) URL without credentials, or a WebFetchError saying what is wrong. */
export function parseFetchUrl(text: string, what = "the URL is"): URL {
  if (text.length > maxUrlLength)
    throw new WebFetchError("invalid", `URLs are at most ${maxUrlLength} characters.`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new WebFetchError(
      "invalid",
      `${JSON.stringify(text.slice(0, 200))} is not an absolute URL; give one such as https://example.com/page.`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new WebFetchError(
      "invalid",
      `${what === "the URL is" ? "Only" : `The page ${what} ${url.protocol}; only`} http and https URLs can be fetched.`,
    );
  if (url.username !== "" || url.password !== "")
    throw new WebFetchError(
      "invalid",
      "URLs with a user name or password are not fetched; store credentials as secrets instead.",
    );
  url.hash = "";
  return url;
}

function hostOf(url: URL): string {
  const host = url.hostname.toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) return host.slice(1, -1);
  const ascii = domainToASCII(host);
  return (ascii === "" ? host : ascii).replace(/\.$/, "");
}

function portOf(url: URL): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "https:" ? 443 : 80;
}
