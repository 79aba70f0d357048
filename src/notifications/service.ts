/**
 * The `Notifier` (types.ts): stores a notification for the owner, tells the account's live
 * stream, and queues a delivery to the owner's webhook when they set one (delivery.ts).
 *
 * Invariants:
 *   NOT1 idempotent by id (store RES3): a replayed step that notifies again stores nothing new,
 *        sends no second live event and queues no second delivery (the engine runs one delivery
 *        per id: the send's idempotency key).
 *   NOT2 notifying never waits for the owner's endpoint: the delivery is a durable job of its own
 *        (retried with backoff there), so a slow or failing webhook never holds up a turn.
 *   NOT3 a notification's title and body are cut to their limits, never refused: the caller is a
 *        module telling the owner something, and losing it would be worse.
 */
import type { EventHub } from "../events/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import type { Store } from "../store/index.ts";
import type { NotificationInput, Notifier } from "./types.ts";
import { notificationView } from "./views.ts";

export const notificationLimits = { titleChars: 200, bodyChars: 2000, idChars: 300 } as const;

/** A delivery of one notification to the owner's webhook, queued in the durable engine. */
export interface NotificationDeliveryRequest {
  accountId: string;
  notificationId: string;
}

export interface NotifierDependencies {
  store: Store;
  events: EventHub;
  /**
   * Queue the webhook delivery durably (idempotent per notification, NOT1); absent: no webhook
   * deliveries. Wired to the `owner-webhook` object through Restate's ingress.
   */
  queueDelivery?: (request: NotificationDeliveryRequest) => Promise<void>;
  /** @default silent */
  logger?: Logger;
}

const cut = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;

/** The real Notifier: hand it to the routines and budget modules. */
export function createNotifier(deps: NotifierDependencies): Notifier {
  const logger = deps.logger ?? silentLogger;
  return {
    async notify(input: NotificationInput) {
      if (input.id.length === 0 || input.id.length > notificationLimits.idChars)
        throw new Error(`a notification id is 1–${notificationLimits.idChars} characters`);
      const { notification, created } = await deps.store.putNotification({
        id: input.id,
        accountId: input.accountId,
        kind: input.kind,
        title: cut(input.title, notificationLimits.titleChars), // NOT3
        body: cut(input.body ?? "", notificationLimits.bodyChars),
        botId: input.botId ?? null,
        conversationId: input.conversationId ?? null,
        subjectId: input.subjectId ?? null,
      });
      if (created)
        deps.events.publishAccount({
          type: "notification",
          accountId: input.accountId,
          notification: { ...notificationView(notification) },
        });
      if (deps.queueDelivery === undefined) return;
      const webhook = await deps.store.getOwnerWebhook(input.accountId, "notifications");
      if (webhook === undefined) return;
      // NOT1: queued again on a replay; the engine keeps one per id. NOT2: not awaited for long.
      await deps
        .queueDelivery({ accountId: input.accountId, notificationId: input.id })
        .catch((error: unknown) =>
          logger.warn("could not queue a webhook delivery of a notification", {
            accountId: input.accountId,
            notificationId: input.id,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
    },
  };
}
