/** The wire view of a stored notification (protocol/api.ts), for the API, the stream and webhooks. */
import { needsAttention, type Api } from "../protocol/index.ts";
import type { StoredNotification } from "../store/index.ts";

const iso = (epochMs: number) => new Date(epochMs).toISOString();

export function notificationView(notification: StoredNotification): Api.Notification {
  return {
    id: notification.id,
    kind: notification.kind,
    title: notification.title,
    body: notification.body,
    botId: notification.botId,
    conversationId: notification.conversationId,
    subjectId: notification.subjectId,
    needsAttention: needsAttention(notification.kind),
    createdAt: iso(notification.createdAt),
    readAt: notification.readAt === null ? null : iso(notification.readAt),
  };
}
