/**
 * The seam through which the vault (src/vault/) looks inside some of a computer's requests. The
 * proxy asks `interceptionFor` once per plain request and once per CONNECT, after the policy
 * checks passed (E3); `undefined` means "not a host of the vault's": the request is forwarded
 * and a tunnel is tunnelled untouched, exactly as without a vault (E9).
 */
import type { SecureContext } from "node:tls";
import type { Transform } from "node:stream";
import type { EgressTarget } from "./policy.ts";

/** What the proxy does for one request or TLS session to a host the vault brokers secrets for. */
export interface EgressInterception {
  /** The TLS server side shown to the computer: a certificate for the host from its own CA. */
  serverContext(): SecureContext;
  /** The headers to send upstream, from those the proxy would send (placeholders swapped). */
  requestHeaders(rawHeaders: readonly string[], method: string): string[];
  /**
   * Whether the request body is rewritten too; when true the proxy buffers it (at most
   * `maxBodyBytes`) and sends `requestBody(body)` with a fresh Content-Length.
   */
  readonly swapsBody: boolean;
  requestBody(body: Buffer, method: string): Buffer;
  /** The response headers to show the computer (values redacted). */
  responseHeaders(rawHeaders: readonly string[]): string[];
  /** A fresh transform for one response body (redaction across chunk boundaries). */
  responseBody(): Transform;
}

/** Consulted by the proxy for every plain request and every CONNECT (E9). */
export interface EgressInterceptor {
  interceptionFor(
    computerId: string,
    target: EgressTarget,
  ): Promise<EgressInterception | undefined>;
  /** Certificates (PEM) trusted for upstreams besides Node's bundled roots. @default none */
  readonly upstreamCa?: readonly string[];
  /** Largest request body swapped in memory. @default 1_048_576 */
  readonly maxBodyBytes?: number;
}
