/**
 * Screens: one virtual display (Xvfb) per bot on a computer, each served by a VNC server on the
 * computer's loopback (docs/live-view.md). The worker operations the server calls to list them,
 * to tell the worker who controls one, and to read a fresh snapshot after a person hands back.
 *
 * Calls like `ports.list` (not model tools, no done-log). The worker does not decide leases: the
 * server does, and tells the worker with `screens.control` whenever one starts, is renewed or
 * ends. While a controller's `until` is in the future, the bot's `browser` and `computer` calls
 * on that screen answer the tool error "A person is using this screen. ..." (code "busy").
 *
 * Unknown fields are stripped, as for the other frames.
 */
import { z } from "zod";

export const screenOperationNames = [
  "screens.list",
  "screens.control",
  "screens.snapshot",
] as const;
export type ScreenOperationName = (typeof screenOperationNames)[number];

export function isScreenOperationName(value: string): value is ScreenOperationName {
  return (screenOperationNames as readonly string[]).includes(value);
}

/** A screen's id: short and stable, `s-<botId>`. */
export const screenIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,100}$/, "a screen id: 1 to 100 of [A-Za-z0-9_-], e.g. s-bot_1");

/** Who holds a screen's control lease, as the worker knows it; null when nobody does. */
export const screenControllerSchema = z
  .object({
    accountId: z.string().min(1).max(100),
    /** Epoch ms; the lease is over from then on, even if no `screens.control` says so. */
    until: z.number().int().nonnegative(),
  })
  .nullable();

export const screenSchema = z.object({
  id: screenIdSchema,
  botId: z.string().min(1).max(100),
  width: z.number().int().positive().max(16_384),
  height: z.number().int().positive().max(16_384),
  /** A bot's `browser` or `computer` call is running on it. */
  busy: z.boolean(),
  /** The VNC server's port on the computer's loopback. */
  vncPort: z.number().int().min(1).max(65_535),
  controller: screenControllerSchema,
});

export const screensListInputSchema = z.object({});
export const screensListOutputSchema = z.object({ screens: z.array(screenSchema).max(64) });

export const screensControlInputSchema = z.object({
  screenId: screenIdSchema,
  controller: screenControllerSchema,
});
export const screensControlOutputSchema = z.object({ ok: z.literal(true) });

export const screensSnapshotInputSchema = z.object({ screenId: screenIdSchema });
/** The same text a `browser` `snapshot` returns. */
export const screensSnapshotOutputSchema = z.union([
  z.string(),
  z.object({ text: z.string() }).loose(),
]);

export type Screen = z.infer<typeof screenSchema>;
export type ScreenController = z.infer<typeof screenControllerSchema>;
export type ScreensListOutput = z.infer<typeof screensListOutputSchema>;
export type ScreensControlInput = z.infer<typeof screensControlInputSchema>;
