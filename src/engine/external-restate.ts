/**
 * An external Restate (a cluster, or a server someone else runs): Roost only checks that it is
 * healthy and never manages its process, so close() does nothing to it.
 */
import { EngineUnavailableError } from "./errors.ts";
import { waitUntilHealthy } from "./health.ts";
import type { RestateEngine } from "./types.ts";

/** Options of {@link connectExternalRestate}. */
export interface ExternalRestateOptions {
  /** Ingress base URL, e.g. `http://restate.internal:8080`. */
  ingressUrl: string;
  /** Admin API base URL, e.g. `http://restate.internal:9070`. */
  adminUrl: string;
  /** How long to wait for it to become healthy. @default 30 s */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Waits until the external Restate answers healthy; same interface as the embedded engine, no process. */
export async function connectExternalRestate(
  options: ExternalRestateOptions,
): Promise<RestateEngine> {
  const urls = { ingressUrl: trimSlash(options.ingressUrl), adminUrl: trimSlash(options.adminUrl) };
  const timeoutMs = options.timeoutMs ?? 30_000;
  const result = await waitUntilHealthy(urls, {
    timeoutMs,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  options.signal?.throwIfAborted();
  if (!result.ready) {
    throw new EngineUnavailableError(
      `engine: external Restate is not reachable: ${result.reason}. ` +
        `Check the ingress URL (${urls.ingressUrl}) and admin URL (${urls.adminUrl}), or unset them to use the embedded engine`,
      { retryAfterMs: 1_000 },
    );
  }
  const close = async (): Promise<void> => undefined;
  return { ...urls, close, [Symbol.asyncDispose]: close };
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, "");
}
