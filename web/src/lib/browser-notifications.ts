/**
 * Browser notifications (the Notification API) for the owner's notifications, shown only after
 * the owner turned them on with a click (browsers refuse prompts nobody asked for) and only when
 * the page is not already showing that conversation.
 */
import type { Notification as RoostNotification } from "../api/types.ts";

export type BrowserPermission = NotificationPermission | "unsupported";

export function browserPermission(): BrowserPermission {
  return typeof Notification === "undefined" ? "unsupported" : Notification.permission;
}

/** Asks the browser; call it from a click. */
export async function requestBrowserPermission(): Promise<BrowserPermission> {
  if (typeof Notification === "undefined") return "unsupported";
  return Notification.requestPermission();
}

/** Shows `notification` unless the page is visible, focused and on its conversation. */
export function showBrowserNotification(
  notification: RoostNotification,
  openConversationId: string | undefined,
  open: (conversationId: string) => void,
): boolean {
  if (browserPermission() !== "granted") return false;
  const watching =
    document.visibilityState === "visible" &&
    document.hasFocus() &&
    notification.conversationId !== null &&
    notification.conversationId === openConversationId;
  if (watching) return false;
  const shown = new Notification(notification.title, {
    body: notification.body,
    tag: notification.id,
  });
  shown.onclick = () => {
    window.focus();
    if (notification.conversationId !== null) open(notification.conversationId);
    shown.close();
  };
  return true;
}
