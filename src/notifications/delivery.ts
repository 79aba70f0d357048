/**
 * The `owner-webhook` virtual object: one durable delivery of a notification to the owner's
 * webhook, keyed by `<accountId>:<notificationId>`. Each attempt is a journaled step; between
 * attempts a durable sleep that doubles (ROOST_OWNER_WEBHOOK_RETRY_MS, at most 10 min), so a delivery
 * survives a restart of the whole platform and no process keeps a timer (NOT2).
 *
 * Invariants:
 *   OWD1 a delivery that succeeded is never posted again: the attempt's outcome is journaled, so
 *        a replay after a crash goes on from it. (A crash while the endpoint answers may repeat
 *        that one post; the `x-roost-delivery` header lets the endpoint drop the repeat.)
 *   OWD2 the webhook and the notification are read at each attempt: a webhook removed or changed
 *        meanwhile is honoured, and a removed one ends the delivery.
 *   OWD3 an endpoint's refusal that retrying cannot change (4xx, a refused address) ends the
 *        delivery at once; the outcome is logged, never shown to the bot.
 */
import * as restate from "@restatedev/restate-sdk";
import {
  createRestateDurable,
  durableObjectRetryPolicy,
  type DurableContext,
} from "../engine/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Store } from "../store/index.ts";
import type { NotificationDeliveryRequest } from "./service.ts";
import { notificationView } from "./views.ts";
import type { OwnerWebhookClient, WebhookOutcome } from "./webhook.ts";

export const ownerWebhookObjectName = "owner-webhook";
const maxBackoffMs = 10 * 60_000;

export interface DeliveryDependencies {
  store: Store;
  webhooks: OwnerWebhookClient;
  /** @default 6 */
  attempts: number;
  /** Wait before the first retry; doubles each time. @default 5000 */
  retryMs: number;
  logger?: Logger;
}

export type DeliveryResult =
  { delivered: true; attempts: number } | { delivered: false; attempts: number; reason: string };

export function deliveryKey(request: NotificationDeliveryRequest): string {
  return `${request.accountId}:${request.notificationId}`;
}

export async function deliverNotification(
  durable: DurableContext,
  deps: DeliveryDependencies,
  request: NotificationDeliveryRequest,
): Promise<DeliveryResult> {
  const logger = (deps.logger ?? silentLogger).child({
    accountId: request.accountId,
    notificationId: request.notificationId,
  });
  let last: WebhookOutcome | { ok: false; retryable: false; error: string } | undefined;
  for (let attempt = 1; attempt <= deps.attempts; attempt++) {
    last = await durable.step(`post:${attempt}`, async () => {
      // OWD2
      const webhook = await deps.store.getOwnerWebhook(request.accountId, "notifications");
      const stored = await deps.store.getNotification(request.accountId, request.notificationId);
      if (webhook === undefined || stored === undefined)
        return {
          ok: false as const,
          retryable: false as const,
          error: "the webhook or the notification is gone",
        };
      return deps.webhooks.post({
        url: webhook.url,
        secret: webhook.secret,
        deliveryId: deliveryKey(request),
        body: {
          type: "notification",
          notification: notificationView(stored),
        } satisfies Api.NotificationDelivery,
      });
    });
    if (last.ok) return { delivered: true, attempts: attempt }; // OWD1
    if (!last.retryable) break; // OWD3
    if (attempt < deps.attempts)
      await durable.sleep(Math.min(maxBackoffMs, deps.retryMs * 2 ** (attempt - 1)));
  }
  const reason = last === undefined || last.ok ? "no attempt was made" : last.error;
  logger.warn("gave up delivering a notification to the owner's webhook", { reason });
  return { delivered: false, attempts: deps.attempts, reason };
}

export function createOwnerWebhookObject(deps: DeliveryDependencies) {
  return restate.object({
    name: ownerWebhookObjectName,
    handlers: {
      deliver: async (ctx: restate.ObjectContext, request: NotificationDeliveryRequest) =>
        deliverNotification(createRestateDurable(ctx), deps, request),
    },
    options: { retryPolicy: durableObjectRetryPolicy, inactivityTimeout: 15 * 60_000 },
  });
}
