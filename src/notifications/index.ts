/**
 * notifications/: telling an account's owner what needs them (issue 11 §3, docs/results.md).
 * Other modules depend only on the `Notifier` interface; `createNotifier` is the real one (the
 * store, the account's live stream, and the owner's webhook through a durable delivery).
 */
export type { NotificationInput, NotificationKind, Notifier } from "./types.ts";
export {
  createNotifier,
  notificationLimits,
  type NotificationDeliveryRequest,
  type NotifierDependencies,
} from "./service.ts";
export { notificationView } from "./views.ts";
export {
  createOwnerWebhookObject,
  deliverNotification,
  deliveryKey,
  ownerWebhookObjectName,
  type DeliveryDependencies,
  type DeliveryResult,
} from "./delivery.ts";
export {
  createOwnerWebhookClient,
  refusalOf,
  signature,
  type OwnerWebhookClient,
  type OwnerWebhookClientOptions,
  type WebhookOutcome,
  type WebhookPost,
} from "./webhook.ts";
