/**
 * The API's limits (docs/api.md#rate-limits): a token bucket of requests per API token, and a
 * count of open event streams per account. Both live in this process's memory: with several
 * server nodes, each node counts on its own (a client spread over N nodes gets up to N times the
 * limit), which is enough to stop a runaway script or a flood; a shared counter can replace this
 * module without touching the routes.
 *
 * Invariants:
 *   API3 a request over its token's rate, or an event stream over its account's limit, is
 *        answered 429 rate_limited with `retry-after` before it does anything; a stream's slot
 *        is given back exactly once, when the stream ends however it ends.
 */
import { RoostError } from "../errors/index.ts";

export interface ApiLimits {
  /** Requests per minute per API token (the bucket's refill rate); 0 turns the limit off. @default 3000 */
  requestsPerMinute: number;
  /** Requests a token may make at once before the rate applies (the bucket's size). @default 300 */
  requestBurst: number;
  /** Event streams (`GET /v1/conversations/{id}/events`) an account may hold open at once. @default 20 */
  eventStreamsPerAccount: number;
}

export const defaultApiLimits: ApiLimits = {
  requestsPerMinute: 3000,
  requestBurst: 300,
  eventStreamsPerAccount: 20,
};

/** How long a client is told to wait for a stream slot: streams end when clients close them. */
const streamRetryAfterMs = 10_000;
/** Above this many buckets, full ones (idle tokens) are dropped; they would start full anyway. */
const pruneAbove = 10_000;

export interface RequestLimiter {
  /** API3: takes one request from `key`'s bucket, or throws rate_limited saying when to retry. */
  take(key: string): void;
  forget(key: string): void;
}

export function createRequestLimiter(limits: ApiLimits, clock: () => number): RequestLimiter {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const perMs = limits.requestsPerMinute / 60_000;
  const refill = (bucket: { tokens: number; at: number }, now: number) => {
    bucket.tokens = Math.min(limits.requestBurst, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
  };
  const prune = (now: number) => {
    for (const [key, bucket] of buckets) {
      refill(bucket, now);
      if (bucket.tokens >= limits.requestBurst) buckets.delete(key);
    }
  };
  return {
    take(key) {
      if (limits.requestsPerMinute === 0) return;
      const now = clock();
      let bucket = buckets.get(key);
      if (bucket === undefined) {
        if (buckets.size >= pruneAbove) prune(now);
        bucket = { tokens: limits.requestBurst, at: now };
        buckets.set(key, bucket);
      }
      refill(bucket, now);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return;
      }
      const waitMs = Math.ceil((1 - bucket.tokens) / perMs);
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      throw new RoostError(
        "rate_limited",
        `too many requests with this API token (at most ${limits.requestsPerMinute} a minute, in bursts of up to ${limits.requestBurst}); retry in ${seconds} s`,
        { retryAfterMs: waitMs, details: { retryAfterSeconds: seconds } },
      );
    },
    forget(key) {
      buckets.delete(key);
    },
  };
}

export interface StreamLimiter {
  /** API3: a slot for one more stream of `key`, or throws rate_limited; the release is idempotent. */
  acquire(key: string): () => void;
  open(key: string): number;
}

export function createStreamLimiter(limits: ApiLimits): StreamLimiter {
  const counts = new Map<string, number>();
  return {
    acquire(key) {
      const count = counts.get(key) ?? 0;
      if (count >= limits.eventStreamsPerAccount) {
        throw new RoostError(
          "rate_limited",
          `this account already has ${count} open event streams, the most allowed (each open conversation in a browser tab or \`roost chat\` holds one); close one, then retry`,
          {
            retryAfterMs: streamRetryAfterMs,
            details: { retryAfterSeconds: streamRetryAfterMs / 1000, openStreams: count },
          },
        );
      }
      counts.set(key, count + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (counts.get(key) ?? 1) - 1;
        if (left <= 0) counts.delete(key);
        else counts.set(key, left);
      };
    },
    open: (key) => counts.get(key) ?? 0,
  };
}
