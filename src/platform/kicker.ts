/**
 * Handing conversations to their loops through Restate's ingress, with the SDK's own client
 * (idempotent sends, awakeable resolution).
 *
 *   kick   after a message is stored: resolve the loop's follow-up awakeable when one waits (the
 *          store returned it with the message, S6), and queue a `run` (idempotent per message)
 *          for when no loop is running.
 *   sweep  a safety net for kicks that failed (engine down, process killed between storing and
 *          kicking): every conversation with a waiting message gets its recorded waiter resolved
 *          (KICK2) and a `run`, idempotent per oldest waiting message, so repeated sweeps queue at
 *          most one run per message.
 *   deliver a message no person typed (a routine's run, a webhook, another bot's): stored, told
 *          to live views, kicked; idempotent per `clientMessageId`, so a journaled step that
 *          delivers may run again.
 *
 * Invariants:
 *   KICK1 a queued run is idempotent: the same message never queues two runs.
 *   KICK2 a loop waiting for follow-ups is woken, not only queued behind: after a crash that lost
 *         the kick, the sweep resolves the waiter the store recorded, so the message is answered
 *         within a sweep interval instead of after the follow-up window.
 */
import * as clients from "@restatedev/restate-sdk-clients";
import { RoostError } from "../errors/index.ts";
import { conversationObjectName } from "../loop/index.ts";
import type { EventHub } from "../events/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import type { Message, Store } from "../store/index.ts";

export interface Kicker {
  kick(conversationId: string, messageId: string, waiter: string | null): Promise<void>;
  sweep(): Promise<number>;
  /** Stores a message and hands it to its loop; a failed kick is left to the sweep. */
  deliver(message: DeliveredMessage): Promise<{ message: Message; created: boolean }>;
  /** Resolves a durable promise a loop waits on (a parked turn's); one already answered is fine. */
  wake(waiterId: string, value?: unknown): Promise<void>;
}

export type DeliveredMessage = Parameters<Store["appendMessage"]>[0];

const requestTimeoutMs = 5000;

/** An ingress client on the engine's URL, connected on first use (the URL is known after start). */
export function lazyIngress(ingressUrl: () => string): () => clients.Ingress {
  let ingress: clients.Ingress | undefined;
  let connectedTo: string | undefined;
  return () => {
    const url = ingressUrl();
    if (ingress === undefined || connectedTo !== url) {
      ingress = clients.connect({ url });
      connectedTo = url;
    }
    return ingress;
  };
}

function unavailable(what: string, error: unknown): RoostError {
  return new RoostError(
    "unavailable",
    `the durable engine did not take ${what} (${error instanceof Error ? error.message : String(error)})`,
    { retryAfterMs: 1000, cause: error },
  );
}

export function createKicker(
  ingress: () => clients.Ingress,
  store: Store,
  events: EventHub,
  logger: Logger = silentLogger,
): Kicker {
  async function queueRun(conversationId: string, idempotencyKey: string) {
    try {
      await ingress().send({
        service: conversationObjectName,
        handler: "run",
        key: conversationId,
        parameter: null,
        opts: clients.SendOpts.from({
          idempotencyKey, // KICK1
          input: clients.serde.json,
          timeout: requestTimeoutMs,
        }),
      });
    } catch (error) {
      throw unavailable("the message", error);
    }
  }

  async function resolveWaiter(waiter: string, value: unknown = true) {
    try {
      await ingress().resolveAwakeable(waiter, value, clients.serde.json);
    } catch (error) {
      // A waiter whose loop already went on (or ended) is answered 4xx; the queued run covers it.
      if (error instanceof clients.HttpCallError && error.status < 500) return;
      throw unavailable("the wake-up", error);
    }
  }

  async function kick(conversationId: string, messageId: string, waiter: string | null) {
    if (waiter !== null) await resolveWaiter(waiter);
    await queueRun(conversationId, `message:${messageId}`);
  }

  return {
    kick,
    wake: resolveWaiter,
    async deliver(input) {
      const { message, created, waiter } = await store.appendMessage(input);
      if (created) {
        events.publish({ type: "changed", conversationId: input.conversationId, seq: message.seq });
        await kick(input.conversationId, message.id, waiter).catch((error: unknown) =>
          logger.warn("could not hand the conversation to its loop (the sweep will retry)", {
            conversationId: input.conversationId,
            messageId: message.id,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
      }
      return { message, created };
    },
    async sweep() {
      const waiting = await store.listWaitingConversations();
      await Promise.all(
        waiting.map(async ({ conversationId, oldestMessageId, waiter }) => {
          if (waiter !== null) await resolveWaiter(waiter); // KICK2
          await queueRun(conversationId, `sweep:${oldestMessageId}`);
        }),
      );
      return waiting.length;
    },
  };
}
