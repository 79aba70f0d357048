/** The recording player's reading of a recording (JSON lines of frames, docs/browser.md). */
import { describe, expect, it } from "vitest";
import { parseRecording } from "../../web/src/lib/recording.ts";

describe("parseRecording", () => {
  it("reads frames in order and skips a torn line or a frame that is not an image", () => {
    const text = [
      JSON.stringify({ atMs: 0, mimeType: "image/jpeg", data: "/9j/AA==" }),
      JSON.stringify({ atMs: 250, mimeType: "image/png", data: "iVBORw0KGgo=" }),
      JSON.stringify({ atMs: 500, mimeType: "text/html", data: "PHNjcmlwdD4=" }),
      JSON.stringify({ atMs: 750, mimeType: "image/jpeg", data: 'not base64 " onerror=x' }),
      '{"atMs": 1000, "mimeType": "image/jp',
    ].join("\n");
    expect(parseRecording(text)).toEqual([
      { atMs: 0, src: "data:image/jpeg;base64,/9j/AA==" },
      { atMs: 250, src: "data:image/png;base64,iVBORw0KGgo=" },
    ]);
    expect(parseRecording("")).toEqual([]);
  });
});
