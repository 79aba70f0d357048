/**
 * Posting to an endpoint of the owner's own (their notifications webhook, or the webhook their
 * drafts are sent through). The URL is the owner's, but the request leaves from a Roost host, so
 * it gets the egress proxy's address rules (src/egress, docs/egress.md), as if the owner's
 * computer had the policy `allow-all`.
 *
 * Invariants:
 *   OWH1 a URL is checked twice: when it is set (scheme, no credentials, a literal address of a
 *        refused class) and at every delivery, after the name is resolved by us. Loopback,
 *        link-local, the host's own addresses, private ranges the operator did not open
 *        (ROOST_EGRESS_ALLOW_PRIVATE) and Roost's own ports on them are refused exactly as the
 *        egress proxy refuses them (checkDestination).
 *   OWH2 the connection goes to the address that was checked, never to a second lookup, so a name
 *        that rebinds between the check and the connection cannot reach a refused address.
 *   OWH3 no redirect is followed (a 3xx is a failed delivery): a redirect could point anywhere.
 *   OWH4 every delivery is signed: `x-roost-signature: sha256=<HMAC-SHA256(secret, body)>`, with
 *        the delivery's id in `x-roost-delivery` (the same for each retry of one delivery).
 */
import { createHmac } from "node:crypto";
import { lookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { InvalidRequestError } from "../errors/index.ts";
import {
  classifyAddress,
  normalizeIp,
  parseIp,
  rangeContains,
  unreachableClasses,
  type DestinationContext,
} from "../egress/index.ts";

export interface OwnerWebhookClientOptions {
  /** The host's addresses, the operator's private ranges and Roost's ports (egress P3, P4). */
  destination: DestinationContext;
  /** Name → addresses. @default dns lookup, all addresses */
  resolve?: (hostname: string) => Promise<string[]>;
  /** Opens a TCP connection to a checked address (OWH2). @default node:net connect */
  connect?: (address: string, port: number) => Socket;
  /** @default 10000 */
  timeoutMs?: number;
}

export interface WebhookPost {
  url: string;
  secret: string;
  deliveryId: string;
  body: unknown;
}

export type WebhookOutcome =
  | { ok: true; status: number }
  /** `retryable`: the endpoint may take it later (5xx, 429, a network error, a timeout). */
  | { ok: false; retryable: boolean; status?: number; error: string };

export interface OwnerWebhookClient {
  /** OWH1 at set time: throws InvalidRequestError saying what is wrong with the URL. */
  checkUrl(url: string, field?: string): URL;
  /** OWH1–OWH4; never throws for the endpoint's failures. */
  post(request: WebhookPost): Promise<WebhookOutcome>;
}

const maxUrlLength = 2000;

/**
 * OWH1: why Roost will not post to `address`:`port`, or undefined. The egress proxy's rules
 * (policy.ts P3, P4) for a destination the owner named by its address.
 */
export function refusalOf(
  address: string,
  port: number,
  context: DestinationContext,
): string | undefined {
  const ip = parseIp(address);
  if (ip === undefined) return `${address} is not a valid address`;
  const addressClass = classifyAddress(address);
  if (
    addressClass === "loopback" ||
    addressClass === "unspecified" ||
    context.isHostAddress(address)
  )
    return `${address} is an address of the Roost host itself, which Roost never posts to`;
  if (unreachableClasses.has(addressClass))
    return `${address} is a ${addressClass} address, which Roost never posts to`;
  if (addressClass !== "public" && context.isPlatformPort(port))
    return `port ${port} of ${address} is one of Roost's own ports, which Roost never posts to`;
  if (addressClass === "public") return undefined;
  if (
    (addressClass === "private" || addressClass === "cgnat") &&
    context.allowPrivate.some((range) => rangeContains(range, ip))
  )
    return undefined;
  return `${address} is a ${addressClass} address; Roost posts to private addresses only in ranges the operator opened (ROOST_EGRESS_ALLOW_PRIVATE)`;
}

export function signature(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

export function createOwnerWebhookClient(options: OwnerWebhookClientOptions): OwnerWebhookClient {
  const resolve =
    options.resolve ??
    (async (hostname: string) =>
      (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address));
  const connect = options.connect ?? ((address: string, port: number) => netConnect(port, address));
  const timeoutMs = options.timeoutMs ?? 10_000;

  function checkUrl(text: string, field = "url"): URL {
    const refuse = (message: string) =>
      new InvalidRequestError(`field "${field}": ${message}`, {
        issues: [{ path: field, message }],
      });
    if (text.length > maxUrlLength) throw refuse(`a URL is at most ${maxUrlLength} characters`);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw refuse("must be an absolute http(s) URL, e.g. https://example.com/roost-hook");
    }
    if (url.protocol !== "https:" && url.protocol !== "http:")
      throw refuse(`must be an http or https URL (got ${url.protocol})`);
    if (url.username !== "" || url.password !== "")
      throw refuse("must not carry a user name or password; deliveries are signed instead");
    if (url.hash !== "") throw refuse("must not have a #fragment");
    const host = hostOf(url);
    if (host === "localhost" || host.endsWith(".localhost"))
      throw refuse("points at this server itself (localhost), which Roost never posts to");
    const literal = normalizeIp(host);
    if (literal !== undefined) {
      const refusal = refusalOf(literal, portOf(url), options.destination);
      if (refusal !== undefined) throw refuse(refusal);
    }
    return url;
  }

  async function post(request: WebhookPost): Promise<WebhookOutcome> {
    let url: URL;
    try {
      url = checkUrl(request.url);
    } catch (error) {
      return { ok: false, retryable: false, error: (error as Error).message };
    }
    const host = hostOf(url);
    const port = portOf(url);
    const literal = normalizeIp(host);
    let addresses: string[];
    try {
      addresses =
        literal === undefined
          ? (await resolve(host)).map((address) => normalizeIp(address) ?? address)
          : [literal];
    } catch (error) {
      return {
        ok: false,
        retryable: true,
        error: `could not resolve ${host}: ${(error as Error).message}`,
      };
    }
    const address = addresses[0];
    if (address === undefined)
      return { ok: false, retryable: true, error: `${host} has no addresses` };
    // OWH1: every address the name has must be allowed, as the proxy checks them.
    for (const candidate of addresses) {
      const refusal = refusalOf(candidate, port, options.destination);
      if (refusal !== undefined)
        return {
          ok: false,
          retryable: false,
          error: literal === undefined ? `${host} resolves to ${refusal}` : refusal,
        };
    }
    const body = JSON.stringify(request.body);
    const headers = {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      "user-agent": "Roost-Webhook/1",
      "x-roost-delivery": request.deliveryId,
      "x-roost-signature": signature(request.secret, body), // OWH4
    };
    return new Promise<WebhookOutcome>((settle) => {
      const secure = url.protocol === "https:";
      const outgoing = (secure ? https : http).request(
        {
          method: "POST",
          host,
          port,
          path: `${url.pathname}${url.search}`,
          headers,
          timeout: timeoutMs,
          // OWH2: the socket goes to the checked address; TLS still verifies the name.
          createConnection: () => {
            const socket = connect(address, port);
            return secure ? tlsConnect({ socket, servername: host }) : socket;
          },
        },
        (response) => {
          response.resume();
          const status = response.statusCode ?? 0;
          response.on("end", () => {
            if (status >= 200 && status < 300) settle({ ok: true, status });
            else
              settle({
                ok: false,
                status,
                // OWH3: a redirect is the endpoint's mistake; retrying would not change it.
                retryable: status === 429 || status >= 500 || status === 408,
                error: `the endpoint answered ${status}${status >= 300 && status < 400 ? " (redirects are not followed)" : ""}`,
              });
          });
          response.on("error", (error) =>
            settle({ ok: false, retryable: true, status, error: error.message }),
          );
        },
      );
      outgoing.on("timeout", () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      outgoing.on("error", (error) =>
        settle({ ok: false, retryable: true, error: `could not post: ${error.message}` }),
      );
      outgoing.end(body);
    });
  }

  return { checkUrl, post };
}

function hostOf(url: URL): string {
  const host = url.hostname.toLowerCase();
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

function portOf(url: URL): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "https:" ? 443 : 80;
}
