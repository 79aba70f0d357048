/**
 * Options every durable object of Roost shares (the conversation loop, the computer's control
 * plane, and the objects later issues add). They live here, with the engine, so that objects
 * never import each other for them.
 */

/**
 * How Restate retries an invocation whose service endpoint failed or vanished (a server killed
 * mid-turn): quickly at first, never more than 2 s apart, practically forever.
 */
export const durableObjectRetryPolicy = {
  initialInterval: 100,
  maxInterval: 2000,
  exponentiationFactor: 2,
  onMaxAttempts: "pause",
  maxAttempts: 100_000,
} as const;
