/**
 * The retry loop around one model call: exponential backoff with jitter, honoring the server's
 * own wait hint, giving up with a `ModelError` that says what to do.
 *
 * Invariants:
 * R1 A cancelled call (the caller's signal aborted) is never retried or re-labelled: the abort
 *    reason is thrown as is, also while waiting between attempts.
 * R2 A server-requested wait is honored exactly; one longer than `maxDelayMs` ends the retries at
 *    once (sleeping for minutes inside a turn helps nobody).
 * R3 The error thrown after the last attempt is terminal (no `retryAfterMs`): the loop above
 *    must not retry it again.
 */
import { setTimeout as delay } from "node:timers/promises";
import { ModelError } from "../errors/index.ts";
import {
  classifyProviderError,
  describeProviderFailure,
  isContextOverflowFailure,
} from "./provider-failure.ts";
import type { ProviderFailureContext } from "./provider-failure.ts";

/** How often and how patiently to retry a model call. */
export interface RetryOptions {
  /** Attempts including the first. @default 4 */
  maxAttempts?: number;
  /** Wait before the second attempt; doubles each time. @default 1000 */
  initialDelayMs?: number;
  /** Longest wait between attempts, also the longest server-requested wait honored. @default 60000 */
  maxDelayMs?: number;
}

/** Waits `milliseconds`, rejecting with the signal's reason if it aborts. Injectable for tests. */
export type Sleep = (milliseconds: number, signal?: AbortSignal) => Promise<void>;

/** The default `Sleep`: a real timer. */
export const realSleep: Sleep = async (milliseconds, signal) => {
  await delay(milliseconds, undefined, signal === undefined ? undefined : { signal });
};

/** Default retry settings. */
export const defaultRetryOptions: Required<RetryOptions> = {
  maxAttempts: 4,
  initialDelayMs: 1000,
  maxDelayMs: 60_000,
};

/**
 * Backoff before attempt `failedAttempts + 1`: `initialDelayMs * 2^(failedAttempts-1)`, capped,
 * with "equal jitter" (between half and all of it) so many bots do not retry in lockstep.
 */
export function backoffDelayMs(
  failedAttempts: number,
  options: Required<RetryOptions>,
  random: () => number,
): number {
  const exponential = Math.min(
    options.maxDelayMs,
    options.initialDelayMs * 2 ** Math.max(0, failedAttempts - 1),
  );
  return Math.round(exponential / 2 + random() * (exponential / 2));
}

/** Everything `retryModelCall` needs besides the operation. */
export interface RetryModelCallOptions {
  retry?: RetryOptions | undefined;
  sleep?: Sleep | undefined;
  /** Source of jitter in [0, 1). @default Math.random */
  random?: (() => number) | undefined;
  signal?: AbortSignal | undefined;
  /** Where the call goes, for the final error message. */
  context: Omit<ProviderFailureContext, "attempts" | "waitRefusedMs">;
  /** Told before each wait for another attempt. */
  onRetry?: ((info: { attempt: number; delayMs: number }) => void) | undefined;
}

/** Runs `operation` until it succeeds, fails terminally, or runs out of attempts. */
export async function retryModelCall<T>(
  operation: (attempt: number) => Promise<T>,
  options: RetryModelCallOptions,
): Promise<T> {
  const retry = { ...defaultRetryOptions, ...options.retry };
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  const maxAttempts = Math.max(1, Math.floor(retry.maxAttempts));

  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted(); // R1
    try {
      return await operation(attempt);
    } catch (error) {
      options.signal?.throwIfAborted(); // R1: the abort reason, as is
      const providerFailure = classifyProviderError(error);
      const serverWaitMs = providerFailure.retryAfterMs;
      const waitRefused = serverWaitMs !== undefined && serverWaitMs > retry.maxDelayMs; // R2
      if (!providerFailure.retryable || attempt >= maxAttempts || waitRefused) {
        const context = {
          ...options.context,
          attempts: attempt,
          ...(waitRefused ? { waitRefusedMs: serverWaitMs } : {}),
        };
        // R3: no retryAfterMs.
        throw new ModelError(describeProviderFailure(providerFailure, context), {
          cause: error,
          details: {
            provider: context.provider,
            model: context.model,
            kind: providerFailure.kind,
            attempts: attempt,
            // The loop compacts the conversation and tries once more (memory issue).
            ...(isContextOverflowFailure(providerFailure) ? { contextOverflow: true } : {}),
            ...(providerFailure.status === undefined ? {} : { status: providerFailure.status }),
          },
        });
      }
      const delayMs = serverWaitMs ?? backoffDelayMs(attempt, retry, random);
      try {
        options.onRetry?.({ attempt, delayMs });
      } catch {
        // a live view's trouble must not fail the call
      }
      try {
        await sleep(delayMs, options.signal); // R2
      } catch (sleepError) {
        options.signal?.throwIfAborted(); // R1
        throw sleepError;
      }
    }
  }
}
