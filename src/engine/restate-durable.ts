/**
 * The durable context on Restate: steps are `ctx.run` journal entries, calls and sends are
 * Restate's own journaled invocations, external promises are awakeables, sleeps and timeouts are
 * Restate timers. Error mapping (DUR1, DUR2): a retryable RoostError becomes a `RetryableError`
 * that Restate retries with backoff and no cap; a terminal one a `TerminalError`; anything else is
 * retried a few times inside the attempt, then becomes terminal.
 */
import * as restate from "@restatedev/restate-sdk";
import { isRoostError } from "../errors/index.ts";
import type { DurableContext, ExternalPromise, ObjectTarget, StepOptions } from "./durable.ts";
import { CallFailedError, StepFailedError } from "./durable.ts";

/** Backoff of infrastructure retries: quick at first, then every few seconds, forever (DUR1). */
const infrastructureRetry = {
  initialRetryInterval: 200,
  maxRetryInterval: 5000,
  retryIntervalFactor: 2,
} as const;

/** Runs `action`, retrying unclassified errors locally; classifies what escapes for Restate. */
export async function classifiedAttempt<T>(
  action: (signal: AbortSignal) => Promise<T>,
  signal: AbortSignal,
  maxAttempts: number,
): Promise<T> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    try {
      return await action(signal);
    } catch (error) {
      if (error instanceof restate.TerminalError) throw error;
      if (isRoostError(error)) {
        if (error.retryable) {
          // DUR1: Restate retries this run with backoff, without a cap.
          throw restate.RetryableError.from(error, {
            retryAfter: Math.min(error.retryAfterMs ?? 1000, 5000),
          });
        }
        throw new restate.TerminalError(error.message); // DUR2
      }
      lastError = error;
      if (signal.aborted) break;
    }
  }
  const message = lastError instanceof Error ? lastError.message : String(lastError);
  throw new restate.TerminalError(message); // DUR2
}

export function createRestateDurable(ctx: restate.ObjectContext): DurableContext {
  return {
    invocationId: ctx.request().id,

    async step<T>(
      name: string,
      action: (signal: AbortSignal) => Promise<T>,
      options: StepOptions = {},
    ) {
      const signal = ctx.request().attemptCompletedSignal;
      try {
        return await ctx.run(
          name,
          () => classifiedAttempt(action, signal, options.maxAttempts ?? 3),
          infrastructureRetry,
        );
      } catch (error) {
        if (error instanceof restate.TerminalError) throw new StepFailedError(name, error.message);
        throw error;
      }
    },

    now: () => ctx.date.now(),

    sleep: (ms) => ctx.sleep(ms),

    awaitExternal<T>(): ExternalPromise<T> {
      const { id, promise } = ctx.awakeable<T>();
      return {
        id,
        async wait(timeoutMs) {
          try {
            const value = await (timeoutMs === undefined ? promise : promise.orTimeout(timeoutMs));
            return { value };
          } catch (error) {
            if (error instanceof restate.TimeoutError) return "timeout";
            throw error;
          }
        },
      };
    },

    async call<O>(target: ObjectTarget, input: unknown): Promise<O> {
      try {
        return await ctx.genericCall<unknown, O>({
          service: target.object,
          method: target.handler,
          key: target.key,
          parameter: input,
          inputSerde: restate.serde.json,
          outputSerde: restate.serde.json as restate.Serde<O>,
        });
      } catch (error) {
        // The callee failed for good: its message is for the caller (e.g. "could not wake").
        if (error instanceof restate.TerminalError)
          throw new CallFailedError(target, error.message);
        throw error;
      }
    },

    send(target: ObjectTarget, input: unknown, options = {}) {
      ctx.genericSend({
        service: target.object,
        method: target.handler,
        key: target.key,
        parameter: input,
        inputSerde: restate.serde.json,
        ...(options.delayMs === undefined ? {} : { delay: options.delayMs }),
        ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
      });
    },
  };
}
