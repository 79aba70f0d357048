/**
 * What Roost's durable code (the conversation loop, the objects later issues add) needs from
 * a durable engine. The code only decides; everything it does to the outside world goes through
 * `step`, whose result is journaled, or through the engine's own journaled primitives (calls and
 * sends between objects, durable waits, sleeps, the clock). Restate implements this in
 * restate-durable.ts; testing/memory-durable.ts runs the same code in tests, with a journal, so
 * replay can be tested without an engine.
 *
 * Invariants:
 *   DUR1 a step whose action throws a retryable RoostError (infrastructure: the store or the
 *        engine unavailable, a lock held) is retried with backoff for as long as it takes; it
 *        never turns into a failure of the step. An outage of minutes delays a turn, never fails it.
 *   DUR2 a step whose action throws a terminal RoostError fails at once (StepFailedError); an
 *        unclassified error (a bug, an unexpected exception) is retried `maxAttempts` times, then
 *        fails. A failed step is journaled as failed, so a replay fails it the same way.
 *   DUR3 `call`, `send` and `awaitExternal` are journaled by the engine: a replay neither repeats a
 *        call nor creates a second promise.
 */
import { RoostError } from "../errors/index.ts";

export interface StepOptions {
  /** Attempts at an unclassified error before the step fails for good. @default 3 */
  maxAttempts?: number;
}

/** A handler of another durable object (a virtual object, keyed). */
export interface ObjectTarget {
  /** The object's name, e.g. `computer`. */
  object: string;
  key: string;
  handler: string;
}

export interface SendOptions {
  /** Deliver after this long (a durable timer in the engine). */
  delayMs?: number;
  /** The engine runs a send with the same key once. */
  idempotencyKey?: string;
}

/** A promise that someone outside resolves by id (an approval, a follow-up message). */
export interface ExternalPromise<T> {
  /** Record this where the answerer will find it; resolve it with `resolveExternal` (the kicker). */
  readonly id: string;
  /** Waits for the answer; "timeout" when `timeoutMs` passes first (a durable timer). */
  wait(timeoutMs?: number): Promise<{ value: T } | "timeout">;
}

export interface DurableContext {
  /** Stable across retries and replays of the same invocation. */
  readonly invocationId: string;
  /**
   * Run `action` once and journal its result; on replay the journaled result is returned.
   * `signal` aborts when the engine gives up on this attempt (DUR1, DUR2).
   */
  step<T>(
    name: string,
    action: (signal: AbortSignal) => Promise<T>,
    options?: StepOptions,
  ): Promise<T>;
  /** The journaled clock (epoch ms): the same value on replay. */
  now(): Promise<number>;
  /** A durable sleep: no process keeps a timer. */
  sleep(ms: number): Promise<void>;
  /** A durable promise for an outside answer (DUR3). */
  awaitExternal<T>(): ExternalPromise<T>;
  /** Call a handler of another object and wait for its answer (DUR3). */
  call<O>(target: ObjectTarget, input: unknown): Promise<O>;
  /** Send to a handler of another object without waiting (DUR3). */
  send(target: ObjectTarget, input: unknown, options?: SendOptions): void;
}

/** Thrown by `call` when the called handler failed for good; its message is the callee's. */
export class CallFailedError extends RoostError {
  override readonly name = "CallFailedError";
  readonly target: ObjectTarget;
  constructor(target: ObjectTarget, message: string) {
    super("internal", message, { details: { ...target } });
    this.target = target;
  }
}

/** Thrown by `step` when its action failed for good (DUR2). */
export class StepFailedError extends RoostError {
  override readonly name = "StepFailedError";
  readonly stepName: string;
  constructor(stepName: string, message: string) {
    super("internal", `${stepName}: ${message}`, { details: { step: stepName } });
    this.stepName = stepName;
  }
}

/**
 * Wait for new messages without missing one (LOOP5): create a durable promise, run `check` (a
 * journaled step that takes the inbox and records the promise's id where message writers see
 * it), and when that found nothing, wait until the promise is resolved or `timeoutMs` passes.
 */
export async function waitForMessages<T>(
  durable: DurableContext,
  timeoutMs: number,
  check: (waiterId: string) => Promise<T[]>,
): Promise<T[] | "timeout"> {
  const waiter = durable.awaitExternal<boolean>();
  const found = await check(waiter.id);
  if (found.length > 0) return found;
  if ((await waiter.wait(timeoutMs)) === "timeout") return "timeout";
  return check(waiter.id);
}
