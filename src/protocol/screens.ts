/**
 * Screens (issue 13 §1–§2, docs/browser.md): one virtual display per bot on the computer, with a
 * VNC server on the computer's loopback that the live view reaches through a tunnel (tunnels.ts).
 * These operations are calls like `ports.list` (not model tools, no done-log): the server lists
 * screens, tells the worker who controls one (the server decides leases), and asks for a fresh
 * browser snapshot when a person hands a screen back.
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

export const screenIdSchema = z
  .string()
  .regex(/^s-[A-Za-z0-9_-]{1,128}$/, 'a screen id as screens.list returns it ("s-<botId>")');

export const screenControllerSchema = z.object({
  accountId: z.string().min(1).max(128),
  /** ISO 8601; the lease ends then even if nobody says so. */
  until: z.string().datetime({ offset: true }),
});

export const screenSchema = z.object({
  id: screenIdSchema,
  botId: z.string(),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  /** A browser or computer call of the bot is running on it. */
  busy: z.boolean(),
  /** The VNC server's port on the computer's loopback (open a tunnel to it). */
  vncPort: z.number().int().min(1).max(65_535),
  controller: screenControllerSchema.nullable(),
});

export const screensListInputSchema = z.object({});
export const screensListOutputSchema = z.object({ screens: z.array(screenSchema) });

export const screensControlInputSchema = z.object({
  screenId: screenIdSchema,
  controller: screenControllerSchema.nullable(),
});
export const screensControlOutputSchema = z.object({ ok: z.literal(true) });

export const screensSnapshotInputSchema = z.object({ screenId: screenIdSchema });
/** The same text a `browser` `snapshot` returns. */
export const screensSnapshotOutputSchema = z.object({
  text: z.string(),
  url: z.string(),
  title: z.string(),
});

export type Screen = z.output<typeof screenSchema>;
export type ScreenController = z.output<typeof screenControllerSchema>;
export type ScreensListOutput = z.output<typeof screensListOutputSchema>;
export type ScreensControlInput = z.output<typeof screensControlInputSchema>;
export type ScreensSnapshotOutput = z.output<typeof screensSnapshotOutputSchema>;
