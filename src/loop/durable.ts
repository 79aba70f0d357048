/**
 * What the conversation loop needs from a durable engine. The loop only decides; everything it
 * does to the outside world goes through `step`, whose result is journaled. Restate implements
 * this in restate-durable.ts; memory-durable.ts runs the same loop in tests without an engine.
 */

export interface StepOptions {
  /** Attempts before the step fails for good (with a terminal error). @default 3 */
  maxAttempts?: number;
}

export interface DurableContext {
  /** Stable across retries and replays of the same invocation. */
  readonly invocationId: string;
  /** Run `action` once and journal its result; on replay the journaled result is returned. */
  step<T>(name: string, action: () => Promise<T>, options?: StepOptions): Promise<T>;
  /**
   * Announce that the loop now waits for new messages, then call `check` (a journaled step is
   * expected inside it) and, if it found nothing, wait until a message is signalled or
   * `timeoutMs` passes. Returns whether the loop was woken by a message.
   */
  waitForMessage<T>(timeoutMs: number, check: () => Promise<T[]>): Promise<T[] | "timeout">;
}

/** Thrown by `step` when its action failed `maxAttempts` times. */
export class StepFailedError extends Error {
  override readonly name = "StepFailedError";
  readonly stepName: string;
  constructor(stepName: string, message: string) {
    super(`${stepName}: ${message}`);
    this.stepName = stepName;
  }
}
