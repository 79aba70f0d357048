/**
 * Handing conversations to their loops through Restate's ingress.
 *
 *   kick   after a message is stored: resolve the loop's follow-up awakeable when one waits (the
 *          store returned it with the message, S6), and queue a `run` (idempotent per message)
 *          for when no loop is running.
 *   sweep  a safety net for kicks that failed (engine down, process killed between storing and
 *          kicking): every conversation with a waiting message gets a `run`, idempotent per
 *          oldest waiting message, so repeated sweeps queue at most one run per message.
 */
import { RoostError } from "../errors/index.ts";
import { conversationObjectName } from "../loop/index.ts";
import type { Store } from "../store/index.ts";

export interface Kicker {
  kick(conversationId: string, messageId: string, waiter: string | null): Promise<void>;
  sweep(): Promise<number>;
}

export function createKicker(ingressUrl: () => string, store: Store): Kicker {
  async function post(path: string, idempotencyKey: string | undefined, body: string) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    let response: Response;
    try {
      response = await fetch(`${ingressUrl()}${path}`, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(5000),
      });
    } catch (error) {
      throw new RoostError(
        "unavailable",
        `the durable engine did not take the message (${(error as Error).message})`,
        {
          retryAfterMs: 1000,
        },
      );
    }
    const text = await response.text();
    return { status: response.status, text };
  }

  async function queueRun(conversationId: string, idempotencyKey: string) {
    const result = await post(
      `/${conversationObjectName}/${encodeURIComponent(conversationId)}/run/send`,
      idempotencyKey,
      "null",
    );
    if (result.status >= 300) {
      throw new RoostError(
        "unavailable",
        `the durable engine answered ${result.status}: ${result.text}`,
        { retryAfterMs: 1000 },
      );
    }
  }

  return {
    async kick(conversationId, messageId, waiter) {
      if (waiter !== null) {
        // A stale waiter (its loop already gone) answers 4xx; the queued run covers that case.
        await post(`/restate/awakeables/${encodeURIComponent(waiter)}/resolve`, undefined, "true");
      }
      await queueRun(conversationId, `message:${messageId}`);
    },
    async sweep() {
      const waiting = await store.listWaitingConversations();
      await Promise.all(
        waiting.map(({ conversationId, oldestMessageId }) =>
          queueRun(conversationId, `sweep:${oldestMessageId}`),
        ),
      );
      return waiting.length;
    },
  };
}
