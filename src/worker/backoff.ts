/**
 * Reconnect delays: jittered exponential backoff whose attempt counter resets only after a
 * connection stayed up for a minimum time. Resetting on every successful handshake would let a
 * gateway that accepts and then drops the worker (bad token rotation, a crash loop) be hammered
 * at the initial delay forever.
 */

export interface BackoffOptions {
  /** @default 500 */
  initialDelayMs?: number;
  /** @default 30_000 */
  maxDelayMs?: number;
  /** @default 2 */
  factor?: number;
  /** A connection up at least this long resets the attempt counter. @default 10_000 */
  minUptimeMs?: number;
  /** @default Date.now */
  now?: () => number;
  /** Returns a number in [0, 1). @default Math.random */
  random?: () => number;
}

export interface Backoff {
  /** Call when a connection is established (after the handshake). */
  connected(): void;
  /** Call when a connection attempt fails or a connection ends; returns how long to wait. */
  nextDelayMs(): number;
  /** Failed attempts since the last reset. */
  readonly attempt: number;
}

export function createBackoff(options: BackoffOptions = {}): Backoff {
  const initialDelayMs = options.initialDelayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  const factor = options.factor ?? 2;
  const minUptimeMs = options.minUptimeMs ?? 10_000;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;

  let attempt = 0;
  let connectedAt: number | undefined;

  return {
    get attempt() {
      return attempt;
    },
    connected() {
      connectedAt = now();
    },
    nextDelayMs() {
      if (connectedAt !== undefined && now() - connectedAt >= minUptimeMs) attempt = 0;
      connectedAt = undefined;
      const ceiling = Math.min(maxDelayMs, initialDelayMs * factor ** attempt);
      attempt += 1;
      // "Equal jitter": at least half the ceiling, so a crowd of workers spreads out but none
      // retries immediately.
      return Math.round(ceiling / 2 + random() * (ceiling / 2));
    },
  };
}
