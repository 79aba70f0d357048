/**
 * The owner's notifications in the sidebar (`GET /v1/notifications`): the unread count, and on
 * click the latest ones, each opening its conversation (and marking it read), with "Mark all read".
 * Follows the account's stream, so a new notification shows at once.
 */
import { Bell } from "lucide-react";
import { useCallback, useEffect, useState } from "react";
import type { NotificationList } from "../api/types.ts";
import { formatRelative } from "../lib/format.ts";
import { onLinkClick, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";

export function NotificationsMenu({ onNavigate }: { onNavigate(): void }) {
  const { api, accountEvents } = useSession();
  const [list, setList] = useState<NotificationList>();
  const [open, setOpen] = useState(false);

  const load = useCallback(() => {
    api
      .notifications()
      .then(setList)
      .catch(() => undefined); // a hint; the next event or click loads again
  }, [api]);
  useEffect(() => {
    load();
    return accountEvents.subscribe((event) => {
      if (event.type === "notification") load();
    });
  }, [load, accountEvents]);

  const markRead = (which: { ids: string[] } | { all: true }) =>
    void api
      .markNotificationsRead(which)
      .then(load)
      .catch(() => undefined);

  const unread = list?.unread ?? 0;
  return (
    <div className="notifications">
      <button
        type="button"
        className="nav-item nav-button"
        aria-expanded={open}
        onClick={() => {
          setOpen(!open);
          if (!open) load();
        }}
      >
        <Bell size={16} aria-hidden="true" />
        <span className="nav-label">Notifications</span>
        {unread > 0 && (
          <span className="attention-mark" aria-label={`${unread} unread`}>
            {unread}
          </span>
        )}
      </button>
      {open && (
        <div className="notifications-list" role="region" aria-label="Notifications">
          {list?.notifications.length === 0 && <p className="muted nav-note">Nothing yet.</p>}
          <ul className="nav-list">
            {list?.notifications.slice(0, 20).map((notification) => (
              <li key={notification.id} data-unread={notification.readAt === null}>
                <a
                  className="nav-item notification-item"
                  href={
                    notification.conversationId === null
                      ? "#"
                      : paths.conversation(notification.conversationId)
                  }
                  onClick={(event) => {
                    if (notification.readAt === null) markRead({ ids: [notification.id] });
                    if (notification.conversationId === null) event.preventDefault();
                    else
                      onLinkClick(
                        event,
                        paths.conversation(notification.conversationId),
                        onNavigate,
                      );
                  }}
                >
                  <span className="nav-label">
                    {notification.needsAttention && <span aria-label="needs attention">! </span>}
                    {notification.title}
                  </span>
                  <span className="nav-time">{formatRelative(notification.createdAt)}</span>
                </a>
              </li>
            ))}
          </ul>
          {unread > 0 && (
            <button
              type="button"
              className="button button-small"
              onClick={() => markRead({ all: true })}
            >
              Mark all read
            </button>
          )}
        </div>
      )}
    </div>
  );
}
