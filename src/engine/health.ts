/**
 * Readiness of a Restate server, embedded or external: the admin API answers `GET /health` and the
 * ingress answers `GET /restate/health`, both with 2xx.
 */

/** Per-request timeout of one health probe. */
const probeTimeoutMs = 2_000;

/** The result of one probe of both endpoints; `problem` says what is not ready yet. */
export interface HealthProbe {
  healthy: boolean;
  problem: string | undefined;
}

/** Probes admin and ingress once. Never throws. */
export async function probeRestateHealth(
  urls: { ingressUrl: string; adminUrl: string },
  signal?: AbortSignal,
): Promise<HealthProbe> {
  const [admin, ingress] = await Promise.all([
    probe(`${urls.adminUrl}/health`, signal),
    probe(`${urls.ingressUrl}/restate/health`, signal),
  ]);
  const problems = [admin, ingress].filter((problem) => problem !== undefined);
  return {
    healthy: problems.length === 0,
    problem: problems.length === 0 ? undefined : problems.join("; "),
  };
}

async function probe(url: string, signal: AbortSignal | undefined): Promise<string | undefined> {
  const timeout = AbortSignal.timeout(probeTimeoutMs);
  try {
    const response = await fetch(url, {
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    await response.body?.cancel();
    return response.ok ? undefined : `GET ${url} answered ${response.status}`;
  } catch (error) {
    return `GET ${url} failed: ${describeFetchError(error)}`;
  }
}

/** Options of {@link waitUntilHealthy}. */
export interface WaitUntilHealthyOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Checked between probes; a string stops the wait with that reason (e.g. "the process exited"). */
  stopIf?: () => string | undefined;
}

/** The outcome of {@link waitUntilHealthy}: ready, or why not. */
export type WaitResult = { ready: true } | { ready: false; reason: string };

/** Probes until healthy, the timeout passes, `stopIf` reports a reason, or the signal aborts. */
export async function waitUntilHealthy(
  urls: { ingressUrl: string; adminUrl: string },
  options: WaitUntilHealthyOptions,
): Promise<WaitResult> {
  const deadline = Date.now() + options.timeoutMs;
  let delayMs = 20;
  let lastProblem = "no probe completed";
  for (;;) {
    if (options.signal?.aborted === true) return { ready: false, reason: "aborted" };
    const stop = options.stopIf?.();
    if (stop !== undefined) return { ready: false, reason: stop };
    const result = await probeRestateHealth(urls, options.signal);
    if (result.healthy) return { ready: true };
    lastProblem = result.problem ?? lastProblem;
    if (Date.now() >= deadline) {
      return {
        ready: false,
        reason: `not healthy after ${options.timeoutMs} ms (last probe: ${lastProblem})`,
      };
    }
    await sleep(delayMs, options.signal);
    delayMs = Math.min(delayMs * 2, 250);
  }
}

/** Flattens undici's "fetch failed" into its cause (ECONNREFUSED etc.). */
export function describeFetchError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause: unknown = error.cause;
  if (cause instanceof Error) {
    const code = "code" in cause && typeof cause.code === "string" ? `${cause.code}: ` : "";
    return `${code}${cause.message}`;
  }
  return error.message;
}

/** setTimeout as a promise that resolves early (without throwing) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
