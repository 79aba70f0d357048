/**
 * notifications/: telling an account's owner what needs them (issue 11 §3). Other modules depend
 * only on the `Notifier` interface.
 */
export type { NotificationInput, NotificationKind, Notifier } from "./types.ts";
