/** Test support: a Notifier that keeps what it is told (idempotent by id, like the real one). */
import type { NotificationInput, Notifier } from "../types.ts";

export function createRecordingNotifier(): Notifier & { readonly told: NotificationInput[] } {
  const told: NotificationInput[] = [];
  return {
    told,
    async notify(input) {
      if (!told.some((seen) => seen.id === input.id && seen.accountId === input.accountId))
        told.push(input);
    },
  };
}
