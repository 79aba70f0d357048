/**
 * The `browser` and `computer` tools (issue 13 §1, docs/browser.md): a real Chromium on the bot's
 * own screen inside the computer, driven over CDP, and the rest of that screen's desktop driven
 * with mouse and keyboard events. Schemas shared by the server (the model-facing spec), the
 * gateway and the worker.
 *
 * `record` is set by the server from the bot's settings and is not part of the model's spec
 * (browserModelInputSchema omits it).
 */
import { z } from "zod";

/** Limits every worker applies to these tools (part of the protocol). */
export const browserLimits = {
  /** Bytes of snapshot or extracted text a result carries; longer text keeps head and tail. */
  textBytes: 30_000,
  /** Largest screenshot returned (PNG or JPEG bytes before base64). */
  screenshotBytes: 5 * 1024 * 1024,
  /** Longest `wait`. */
  waitMaxSeconds: 60,
  /** Frames a recording keeps at most (a few per second). */
  recordingMaxFrames: 600,
  /** Bytes of frames a recording keeps at most. */
  recordingMaxBytes: 40 * 1024 * 1024,
  /** Downloads a result lists at most. */
  downloadsListed: 200,
} as const;

/** The exact answer when the bot cannot get a screen: every one is taken, or its own is busy. */
export const screensInUseMessage =
  "All screens on the shared computer are in use. Try again in a moment.";

/** The exact start of the answer while a person controls the bot's screen. */
export const personOnScreenMessage =
  "A person is using this screen. Wait for them to hand it back (you will be told), then try again.";

const ref = z
  .string()
  .regex(/^[a-z]?[0-9a-z]{1,32}$/i, "a ref from the latest snapshot, like e12 or f1e3")
  .describe("An element ref from the latest snapshot, e.g. e12.");

/** http(s) only: javascript:, file:, data: and chrome: URLs are refused (docs/browser.md). */
const webUrl = z
  .string()
  .min(1)
  .max(8192)
  .refine((text) => {
    try {
      const url = new URL(text);
      return url.protocol === "http:" || url.protocol === "https:";
    } catch {
      return false;
    }
  }, "an http:// or https:// URL (other schemes such as javascript:, file: or data: are not allowed)")
  .describe("An http:// or https:// URL.");

export const browserActions = [
  "navigate",
  "snapshot",
  "click",
  "type",
  "press",
  "hover",
  "select",
  "scroll",
  "back",
  "forward",
  "tabs",
  "screenshot",
  "extract",
  "wait",
  "downloads",
] as const;
export type BrowserAction = (typeof browserActions)[number];

export const browserInputSchema = z.object({
  action: z
    .enum(browserActions)
    .describe(
      "navigate {url}; snapshot; click {ref}; type {ref, text, submit?}; press {key}; hover {ref}; select {ref, values}; scroll {ref? | deltaY}; back; forward; tabs {tab: list|open|switch|close, index?, url?}; screenshot; extract {ref?, format}; wait {text? | ref?, timeoutSeconds?}; downloads.",
    ),
  url: webUrl.optional(),
  ref: ref.optional(),
  text: z.string().max(100_000).describe("Text to type, or text to wait for.").optional(),
  submit: z.boolean().describe("Press Enter after typing.").optional(),
  key: z
    .string()
    .min(1)
    .max(64)
    .describe("A key or chord, e.g. Enter, Escape, ArrowDown, Control+A.")
    .optional(),
  values: z.array(z.string().max(1000)).max(100).describe("Options to select.").optional(),
  deltaY: z
    .number()
    .int()
    .min(-100_000)
    .max(100_000)
    .describe("Pixels to scroll down (negative: up).")
    .optional(),
  tab: z
    .enum(["list", "open", "switch", "close"])
    .describe("tabs: list (default), open (url?), switch or close (index).")
    .optional(),
  index: z
    .number()
    .int()
    .nonnegative()
    .max(1000)
    .describe("Tab index (from tabs list).")
    .optional(),
  format: z.enum(["text", "html"]).describe("extract: text (default) or html.").optional(),
  timeoutSeconds: z
    .number()
    .positive()
    .max(browserLimits.waitMaxSeconds)
    .describe(`wait: at most this long (default 10, at most ${browserLimits.waitMaxSeconds}).`)
    .optional(),
  /** Set by the server from the bot's settings, never by the model: record frames of this call. */
  record: z.boolean().describe("Set by the server: record frames of this call.").optional(),
});

/** What the model is offered (the server sets `record`). */
export const browserModelInputSchema = browserInputSchema.omit({ record: true });

export const downloadedFileSchema = z.object({
  /** Absolute path inside the computer, always under /workspace/downloads. */
  path: z.string(),
  name: z.string(),
  size: z.number().int().nonnegative(),
});

export const screenImageSchema = z.object({
  mimeType: z.enum(["image/png", "image/jpeg"]),
  /** Base64 of the image. */
  data: z.string(),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
});

export const browserOutputSchema = z.object({
  action: z.enum(browserActions),
  /** The current tab's URL and title after the action. */
  url: z.string(),
  title: z.string(),
  /** The snapshot (after navigate and actions), the extracted text, or a short note. */
  text: z.string(),
  /** True when `text` was cut to browserLimits.textBytes (head and tail kept). */
  truncated: z.boolean(),
  tabs: z
    .array(
      z.object({
        index: z.number().int(),
        url: z.string(),
        title: z.string(),
        current: z.boolean(),
      }),
    )
    .optional(),
  image: screenImageSchema.optional(),
  /** Files downloaded during this call (the `downloads` action lists all of them). */
  downloads: z.array(downloadedFileSchema),
  /** Set when the call was recorded (`record: true`). */
  recording: z.object({ path: z.string(), frames: z.number().int().nonnegative() }).optional(),
});

// ── computer (the desktop of the bot's screen) ──────────────────────────────────────────────────

export const desktopActions = [
  "screenshot",
  "move",
  "click",
  "drag",
  "type",
  "key",
  "scroll",
] as const;

const coordinate = z.number().int().min(0).max(16_384);

export const desktopInputSchema = z.object({
  action: z
    .enum(desktopActions)
    .describe(
      "screenshot; move {x, y}; click {x, y, button?, double?}; drag {x, y, toX, toY}; type {text}; key {key}; scroll {x?, y?, direction, amount?}.",
    ),
  x: coordinate.describe("Screen x in pixels.").optional(),
  y: coordinate.describe("Screen y in pixels.").optional(),
  toX: coordinate.describe("drag: end x.").optional(),
  toY: coordinate.describe("drag: end y.").optional(),
  button: z
    .enum(["left", "middle", "right"])
    .describe("click: the button (default left).")
    .optional(),
  double: z.boolean().describe("click: a double click.").optional(),
  text: z.string().min(1).max(10_000).describe("type: the text to type.").optional(),
  key: z
    .string()
    .regex(/^[A-Za-z0-9_+]{1,64}$/, "an X key name or chord such as Return, ctrl+l, alt+Tab")
    .describe("X key name or chord, e.g. Return, ctrl+l.")
    .optional(),
  direction: z.enum(["up", "down", "left", "right"]).describe("scroll: which way.").optional(),
  amount: z.number().int().positive().max(50).describe("Scroll clicks (default 3).").optional(),
});

export const desktopOutputSchema = z.object({
  action: z.enum(desktopActions),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  text: z.string(),
  image: screenImageSchema.optional(),
});

export type BrowserInput = z.output<typeof browserInputSchema>;
export type BrowserOutput = z.output<typeof browserOutputSchema>;
export type DesktopInput = z.output<typeof desktopInputSchema>;
export type DesktopOutput = z.output<typeof desktopOutputSchema>;
export type DownloadedFile = z.output<typeof downloadedFileSchema>;
export type ScreenImage = z.output<typeof screenImageSchema>;
