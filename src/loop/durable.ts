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
   * Wait for new messages: create a durable promise, call `check(waiterId)` (a journaled step
   * that takes the inbox and records `waiterId` where message writers see it), and if that found
   * nothing, wait until someone resolves the promise (`resolveWaiter`) or `timeoutMs` passes.
   * Returns the messages found, or "timeout".
   */
  waitForMessage<T>(
    timeoutMs: number,
    check: (waiterId: string) => Promise<T[]>,
  ): Promise<T[] | "timeout">;
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
