/**
 * Handing conversations to their loops through Restate's ingress.
 *
 *   kick   after a message is stored: `notify` (wakes a waiting loop and queues a run).
 *   sweep  a safety net for kicks that failed (engine down, process killed between storing and
 *          kicking): every conversation with a waiting message gets a `run`, idempotent per
 *          oldest waiting message, so repeated sweeps queue at most one run per message.
 */
import { RoostError } from "../errors/index.ts";
import { conversationObjectName } from "../loop/index.ts";
import type { Store } from "../store/index.ts";

export interface Kicker {
  kick(conversationId: string): Promise<void>;
  sweep(): Promise<number>;
}

export function createKicker(ingressUrl: () => string, store: Store): Kicker {
  async function send(conversationId: string, handler: "notify" | "run", idempotencyKey?: string) {
    const url = `${ingressUrl()}/${conversationObjectName}/${encodeURIComponent(conversationId)}/${handler}/send`;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    let response: Response;
    try {
      response = await fetch(url, { method: "POST", headers, body: "null", signal: AbortSignal.timeout(5000) });
    } catch (error) {
      throw new RoostError("unavailable", `the durable engine did not take the message (${(error as Error).message})`, {
        retryAfterMs: 1000,
      });
    }
    if (!response.ok) {
      throw new RoostError("unavailable", `the durable engine answered ${response.status}: ${await response.text()}`, {
        retryAfterMs: 1000,
      });
    }
    await response.body?.cancel();
  }

  return {
    kick: (conversationId) => send(conversationId, "notify"),
    async sweep() {
      const waiting = await store.listWaitingConversations();
      await Promise.all(
        waiting.map(({ conversationId, oldestMessageId }) => send(conversationId, "run", `sweep:${oldestMessageId}`)),
      );
      return waiting.length;
    },
  };
}
