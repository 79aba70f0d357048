/**
 * The loop's durable context on Restate: steps are `ctx.run` journal entries; the follow-up wait
 * is an awakeable whose id the take step records in the store, where the API finds it when a
 * message arrives and resolves it through Restate's ingress (platform/kicker.ts).
 */
import * as restate from "@restatedev/restate-sdk";
import type { DurableContext, StepOptions } from "./durable.ts";
import { StepFailedError } from "./durable.ts";

export function createRestateDurable(ctx: restate.ObjectContext): DurableContext {
  return {
    invocationId: ctx.request().id,
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
    async waitForMessage<T>(timeoutMs: number, check: (waiterId: string) => Promise<T[]>) {
      const { id, promise } = ctx.awakeable<boolean>();
      const found = await check(id);
      if (found.length > 0) return found;
      try {
        await promise.orTimeout(timeoutMs);
      } catch (error) {
        if (error instanceof restate.TimeoutError) return "timeout" as const;
        throw error;
      }
      return check(id);
    },
  };
}
