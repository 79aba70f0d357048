/**
 * The loop's durable context on Restate: steps are `ctx.run` journal entries; the follow-up wait
 * is a named signal on the running invocation that the `notify` handler resolves.
 */
import * as restate from "@restatedev/restate-sdk";
import type { DurableContext, StepOptions } from "./durable.ts";
import { StepFailedError } from "./durable.ts";

/** Kept in the virtual object's state while the loop waits, so `notify` can find it. */
export interface Waiter {
  invocationId: string;
  signal: string;
}

export const waiterStateKey = "waiter";

export function createRestateDurable(ctx: restate.ObjectContext): DurableContext {
  const invocationId = ctx.request().id;
  let waits = 0;
  return {
    invocationId,
    async step<T>(name: string, action: () => Promise<T>, options: StepOptions = {}): Promise<T> {
      try {
        return await ctx.run(name, action, {
          maxRetryAttempts: options.maxAttempts ?? 3,
          initialRetryInterval: 100,
          maxRetryInterval: 2000,
        });
      } catch (error) {
        if (error instanceof restate.TerminalError) throw new StepFailedError(name, error.message);
        throw error;
      }
    },
    async waitForMessage<T>(timeoutMs: number, check: () => Promise<T[]>) {
      const waiter: Waiter = { invocationId, signal: `message-${waits++}` };
      ctx.set(waiterStateKey, waiter);
      // Checking after announcing the waiter closes the race with a message stored just before.
      const found = await check();
      if (found.length > 0) {
        ctx.clear(waiterStateKey);
        return found;
      }
      try {
        await ctx.signal<boolean>(waiter.signal).orTimeout(timeoutMs);
      } catch (error) {
        if (error instanceof restate.TimeoutError) {
          ctx.clear(waiterStateKey);
          return "timeout" as const;
        }
        throw error;
      }
      ctx.clear(waiterStateKey);
      return check();
    },
  };
}
