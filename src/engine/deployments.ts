/**
 * Registering Roost's service endpoint with Restate (admin API `POST /deployments`).
 *
 * Invariants:
 *   D1 registration is retried while the failure may be transient (network errors, 5xx: the admin
 *      API still starting, or the endpoint not reachable yet — restate reports failed discovery as
 *      500 `META0003`) until `timeoutMs`; a 4xx is the request's own fault and fails at once.
 *   D2 `force: true` (the default) replaces a deployment registered earlier at the same URI, so every
 *      start of Roost re-registers its endpoint. In-flight invocations pinned to it then continue
 *      against the new code at that URI (see docs/decisions/0001-restate-embedded.md). In scale
 *      mode every node registers the same URI, a balancer's (decision 0039): with the same code
 *      that keeps the deployment id, and invocations in flight finish (service-balancer.test.ts).
 */
import { EngineUnavailableError } from "./errors.ts";
import { describeFetchError, sleep } from "./health.ts";

/** Options of {@link registerDeployment}. */
export interface RegisterDeploymentOptions {
  /** Replace an existing deployment at the same URI (D2). @default true */
  force?: boolean;
  /** The endpoint speaks HTTP/1.1 (e.g. served by `http.createServer`), not h2c. @default false */
  useHttp11?: boolean;
  /** Headers restate adds to discovery and invocation requests to the endpoint. */
  additionalHeaders?: Record<string, string>;
  /** Give up after this long. @default 30 s */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What restate registered. */
export interface RegisteredDeployment {
  /** restate's deployment id (`dp_…`). */
  id: string;
  /** Names of the services the endpoint exposes. */
  services: string[];
}

/** Registers `serviceUrl` with the admin API at `adminUrl`, retrying transient failures (D1). */
export async function registerDeployment(
  adminUrl: string,
  serviceUrl: string,
  options: RegisterDeploymentOptions = {},
): Promise<RegisteredDeployment> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  const body = JSON.stringify({
    uri: serviceUrl,
    force: options.force ?? true, // D2
    use_http_11: options.useHttp11 ?? false,
    ...(options.additionalHeaders === undefined
      ? {}
      : { additional_headers: options.additionalHeaders }),
  });
  let delayMs = 50;
  for (let attempt = 1; ; attempt++) {
    let lastProblem: string;
    options.signal?.throwIfAborted();
    try {
      const response = await fetch(`${adminUrl}/deployments`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body,
        signal: combine(
          options.signal,
          AbortSignal.timeout(Math.max(1_000, Math.min(10_000, deadline - Date.now()))),
        ),
      });
      const text = await response.text();
      if (response.ok) return parseRegistration(text);
      lastProblem = `admin API answered ${response.status}: ${errorMessage(text)}`;
      if (
        response.status >= 400 &&
        response.status < 500 &&
        response.status !== 408 &&
        response.status !== 429
      ) {
        throw new EngineUnavailableError(
          `engine: registering ${serviceUrl} with ${adminUrl} was refused: ${lastProblem}`,
        ); // D1
      }
    } catch (error) {
      if (error instanceof EngineUnavailableError) throw error;
      options.signal?.throwIfAborted();
      lastProblem = `POST ${adminUrl}/deployments failed: ${describeFetchError(error)}`;
    }
    if (Date.now() >= deadline) {
      throw new EngineUnavailableError(
        `engine: could not register ${serviceUrl} with Restate at ${adminUrl} within ${timeoutMs} ms ` +
          `(${attempt} attempts; last: ${lastProblem}). Check that Restate is running and that it can reach ` +
          `${serviceUrl}${options.useHttp11 === true ? "" : " over HTTP/2 (h2c); for an HTTP/1.1 endpoint pass useHttp11"}`,
        { retryAfterMs: 1_000 },
      );
    }
    await sleep(Math.min(delayMs, Math.max(0, deadline - Date.now())), options.signal);
    delayMs = Math.min(delayMs * 2, 1_000);
  }
}

function parseRegistration(text: string): RegisteredDeployment {
  const value: unknown = JSON.parse(text);
  if (
    typeof value !== "object" ||
    value === null ||
    !("id" in value) ||
    typeof value.id !== "string"
  ) {
    throw new EngineUnavailableError(
      `engine: unexpected answer from POST /deployments: ${text.slice(0, 500)}`,
    );
  }
  const services =
    "services" in value && Array.isArray(value.services)
      ? value.services.flatMap((service: unknown) =>
          typeof service === "object" &&
          service !== null &&
          "name" in service &&
          typeof service.name === "string"
            ? [service.name]
            : [],
        )
      : [];
  return { id: value.id, services };
}

/** restate answers errors as `{"message": …}`; other answers are quoted as they are. */
function errorMessage(text: string): string {
  try {
    const value: unknown = JSON.parse(text);
    if (
      typeof value === "object" &&
      value !== null &&
      "message" in value &&
      typeof value.message === "string"
    ) {
      return value.message;
    }
  } catch {
    // not JSON
  }
  return text.slice(0, 500) || "(empty body)";
}

function combine(signal: AbortSignal | undefined, timeout: AbortSignal): AbortSignal {
  return signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
}
