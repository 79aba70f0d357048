/**
 * The `conversation` virtual object, keyed by conversation id: Restate runs one `run` at a time
 * per key, which is what makes "one turn at a time per conversation" true. Messages reach a
 * running loop through the store (takes at step boundaries) and wake a waiting one through its
 * awakeable (engine/restate-durable.ts); a `run` is queued for every new message as well, so a loop
 * that is just exiting never strands one.
 */
import * as restate from "@restatedev/restate-sdk";
import { createRestateDurable, durableObjectRetryPolicy } from "../engine/index.ts";
import { runConversation, type LoopDependencies } from "./conversation-loop.ts";

export const conversationObjectName = "conversation";

export function createConversationObject(deps: LoopDependencies) {
  return restate.object({
    name: conversationObjectName,
    handlers: {
      run: async (ctx: restate.ObjectContext): Promise<{ turns: number }> =>
        runConversation(createRestateDurable(ctx), deps, ctx.key),
    },
    options: {
      // A dead service endpoint (server killed) is retried until it comes back. §12
      retryPolicy: durableObjectRetryPolicy,
      // Model calls and tool calls may run for minutes without journal progress.
      inactivityTimeout: 15 * 60_000,
      abortTimeout: 60 * 60_000,
    },
  });
}

export type ConversationObject = ReturnType<typeof createConversationObject>;
