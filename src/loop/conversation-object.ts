/**
 * The `conversation` virtual object, keyed by conversation id: Restate runs one `run` at a time
 * per key, which is what makes "one turn at a time per conversation" true.
 *
 *   run     exclusive: the loop (conversation-loop.ts)
 *   notify  shared: a message was stored. Wakes a loop that waits for follow-ups, and always
 *           queues a `run` too, so a message that lands while a loop is exiting is never missed.
 */
import * as restate from "@restatedev/restate-sdk";
import { runConversation, type LoopDependencies } from "./conversation-loop.ts";
import { createRestateDurable, waiterStateKey, type Waiter } from "./restate-durable.ts";

export const conversationObjectName = "conversation";

export function createConversationObject(deps: LoopDependencies) {
  return restate.object({
    name: conversationObjectName,
    handlers: {
      run: async (ctx: restate.ObjectContext): Promise<{ turns: number }> =>
        runConversation(createRestateDurable(ctx), deps, ctx.key),
      notify: restate.handlers.object.shared(async (ctx: restate.ObjectSharedContext): Promise<void> => {
        const waiter = await ctx.get<Waiter>(waiterStateKey);
        if (waiter !== null) ctx.invocation(waiter.invocationId as restate.InvocationId).signal<boolean>(waiter.signal).resolve(true);
        ctx.genericSend({
          service: conversationObjectName,
          method: "run",
          key: ctx.key,
          parameter: null,
          inputSerde: restate.serde.json,
        });
      }),
    },
    options: {
      // A dead service endpoint (server killed) is retried until it comes back. §12
      retryPolicy: { initialInterval: 100, maxInterval: 2000, exponentiationFactor: 2, onMaxAttempts: "pause", maxAttempts: 100_000 },
      // Model calls and tool calls may run for minutes without journal progress.
      inactivityTimeout: 15 * 60_000,
      abortTimeout: 60 * 60_000,
    },
  });
}

export type ConversationObject = ReturnType<typeof createConversationObject>;
