/**
 * Values shared by the server and the web app about results (issue 11 §2–§3): which
 * notifications ask something of the owner, and the draft kinds.
 */
import type { DraftKind, NotificationKind } from "./api.ts";

/** Notifications shown as "Needs attention"; the others (a bot finished) are "Unread activity". */
export const attentionKinds: readonly NotificationKind[] = [
  "needs_input",
  "draft",
  "missed_run",
  "budget_reached",
  "routines_paused",
  "approval",
  "secret_request",
];

export const draftKinds: readonly DraftKind[] = ["email", "slack", "message"];

export function needsAttention(kind: NotificationKind): boolean {
  return attentionKinds.includes(kind);
}
