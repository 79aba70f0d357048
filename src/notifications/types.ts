/**
 * What other modules need to tell an account's owner something (a missed routine run, a budget
 * reached, a bot that finished or needs input). The notifications module implements it; callers
 * in durable code call it from inside a journaled step.
 */

import type { Api } from "../protocol/index.ts";

/** Why the owner is told (the wire type, protocol/api.ts). */
export type NotificationKind = Api.NotificationKind;

export interface NotificationInput {
  /**
   * Deterministic per event (e.g. `missed:<routineId>:<scheduledAt>`): notifying twice with the
   * same id stores one notification, so a replayed step may notify again.
   */
  id: string;
  accountId: string;
  kind: NotificationKind;
  /** One line, for the sidebar and the browser notification. */
  title: string;
  /** @default "" */
  body?: string;
  botId?: string;
  conversationId?: string;
  /** A routine, a draft or a run it is about. */
  subjectId?: string;
}

export interface Notifier {
  /** Stores the notification (idempotent by id) and tells the owner's clients and webhook. */
  notify(notification: NotificationInput): Promise<void>;
}
