/** Reading a browser recording for the web app's player (attachments.tsx). */

/** A recording's frames: JSON lines of `{atMs, mimeType, data}` (docs/browser.md, recordings). */
export interface Frame {
  atMs: number;
  src: string;
}

export function parseRecording(text: string): Frame[] {
  const frames: Frame[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const frame = JSON.parse(line) as { atMs?: unknown; mimeType?: unknown; data?: unknown };
      if (
        typeof frame.atMs === "number" &&
        (frame.mimeType === "image/jpeg" || frame.mimeType === "image/png") &&
        typeof frame.data === "string" &&
        /^[A-Za-z0-9+/=]+$/.test(frame.data)
      )
        frames.push({ atMs: frame.atMs, src: `data:${frame.mimeType};base64,${frame.data}` });
    } catch {
      // a torn last line: the frames before it still play
    }
  }
  return frames;
}
