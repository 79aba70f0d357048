/**
 * The vault: the egress proxy's interceptor (src/egress/intercept.ts) for brokered secrets. For
 * a request or CONNECT to a host one of the computer's brokered secrets lists, it presents a
 * certificate from the computer's own CA (authority.ts), swaps the placeholders in and redacts
 * the values out (broker.ts). For every other host it declines, and the proxy tunnels untouched.
 *
 * Invariants:
 *   VLT4 A host is intercepted only while the computer has a brokered secret for it (read per
 *      request or CONNECT: a secret removed is not swapped on the next one); a host without one
 *      is never intercepted, so its TLS reaches the computer end to end.
 *   VLT5 Every swap is reported once per request and secret (`onSwap`: name, host, port,
 *      method, where, time; never the value), before the request is sent.
 *   VLT6 A failing `onSwap` or `redact` hook never lets a value through: `onSwap` errors are
 *      logged, `redact` errors fail the request.
 */
import type { Transform } from "node:stream";
import type { EgressInterception, EgressInterceptor, EgressTarget } from "../egress/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import type { VaultAuthority } from "./authority.ts";
import {
  createRedactingStream,
  hostAllowed,
  redactionPatterns,
  redactText,
  swapHeaders,
  swapPlaceholders,
  type BrokeredSecrets,
} from "./broker.ts";

/** One swap of a placeholder for its value (VLT5). */
export interface VaultSwap {
  computerId: string;
  /** The secret's account, when the source gave one. */
  accountId?: string;
  name: string;
  host: string;
  port: number;
  method: string;
  where: "header" | "body";
  at: Date;
}

export interface VaultOptions {
  secrets: BrokeredSecrets;
  authority: VaultAuthority;
  /** The secrets redactor, applied to response headers after the vault's own patterns. @default none */
  redact?: (text: string) => string;
  /** Called once per request and swapped secret (VLT5). */
  onSwap?: (swap: VaultSwap) => void | Promise<void>;
  /** Certificates (PEM) trusted for upstreams besides Node's roots (ROOST_VAULT_UPSTREAM_CA_FILE). */
  upstreamCa?: readonly string[];
  /** @default 1_048_576 */
  maxBodyBytes?: number;
  now?: () => Date;
  /** @default silent */
  logger?: Logger;
}

/** Create the vault; pass it to the egress proxy as `intercept`. */
export function createVault(options: VaultOptions): EgressInterceptor {
  const now = options.now ?? (() => new Date());
  const logger = (options.logger ?? silentLogger).child({ component: "vault" });

  function report(swap: VaultSwap): void {
    try {
      const result = options.onSwap?.(swap);
      if (result instanceof Promise)
        result.catch((error: unknown) => logger.warn("vault swap audit failed", { error }));
    } catch (error) {
      logger.warn("vault swap audit failed", { error }); // VLT6
    }
  }

  return {
    ...(options.upstreamCa === undefined ? {} : { upstreamCa: options.upstreamCa }),
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    async interceptionFor(computerId: string, target: EgressTarget) {
      const all = await options.secrets.forComputer(computerId);
      const forHost = all.filter((secret) => hostAllowed(secret.hosts, target.host));
      if (forHost.length === 0) return undefined; // VLT4
      const context = await options.authority.serverContext(computerId, target.host);
      const headerValues = new Map(forHost.map((secret) => [secret.name, secret.value]));
      const bodyValues = new Map(
        forHost.filter((secret) => secret.body === true).map((s) => [s.name, s.value]),
      );
      // Every brokered value of the computer, not only this host's: redaction costs little.
      const patterns = redactionPatterns(all.map((secret) => secret.value));
      const accounts = new Map(forHost.map((secret) => [secret.name, secret.accountId]));
      const reportAll = (used: Set<string>, method: string, where: VaultSwap["where"]) => {
        for (const name of used) {
          const accountId = accounts.get(name);
          report({
            computerId,
            ...(accountId === undefined ? {} : { accountId }),
            name,
            host: target.host,
            port: target.port,
            method,
            where,
            at: now(),
          });
        }
      };
      const interception: EgressInterception = {
        serverContext: () => context,
        swapsBody: bodyValues.size > 0,
        requestHeaders(rawHeaders, method) {
          const used = new Set<string>();
          const swapped = swapHeaders(rawHeaders, headerValues, used);
          reportAll(used, method, "header"); // VLT5
          return swapped;
        },
        requestBody(body, method) {
          const used = new Set<string>();
          const text = body.toString("utf8");
          const swapped = swapPlaceholders(text, bodyValues, used);
          reportAll(used, method, "body");
          return used.size === 0 ? body : Buffer.from(swapped, "utf8");
        },
        responseHeaders(rawHeaders) {
          return rawHeaders.map((entry, index) =>
            index % 2 === 0 ? entry : redactText(entry, patterns, options.redact),
          );
        },
        responseBody(): Transform {
          return createRedactingStream(patterns); // VLT3
        },
      };
      return interception;
    },
  };
}
