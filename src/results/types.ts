/** What results/ needs from the platform: Kicker.deliver's input (platform/kicker.ts). */
import type { Store } from "../store/index.ts";

/** A message a server-side sender stores and hands to its loop (idempotent per clientMessageId). */
export type DeliveredMessage = Parameters<Store["appendMessage"]>[0];
