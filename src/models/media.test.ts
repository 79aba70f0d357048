import { describe, expect, test } from "vitest";
import { describeMedia, droppedMediaNote, modelAcceptsImages } from "./media.ts";

describe("modelAcceptsImages", () => {
  test.each([
    ["openai", "gpt-4.1-mini", true],
    ["openai", "gpt-4o", true],
    ["openai", "gpt-5", true],
    ["openai", "gpt-3.5-turbo", false],
    ["openai", "gpt-4", false],
    ["openai", "o3-mini", false],
    ["anthropic", "claude-sonnet-4-5", true],
    ["anthropic", "claude-3-haiku-20240307", true],
    ["anthropic", "claude-2.1", false],
    ["xai", "grok-4", true],
    ["xai", "grok-4-fast-reasoning", true],
    ["xai", "grok-2-vision-1212", true],
    ["xai", "grok-3", false],
    ["xai", "grok-code-fast-1", false],
    ["openai-compatible", "llama3.2:3b", false],
    ["openai-compatible", "qwen2.5:7b", false],
    ["openai-compatible", "qwen2.5vl:7b", true],
    ["openai-compatible", "Qwen/Qwen2.5-VL-7B-Instruct", true],
    ["openai-compatible", "llava:13b", true],
    ["openai-compatible", "gemma3:4b", true],
    ["openai-compatible", "llama3.2-vision", true],
  ] as const)("%s:%s → %s", (provider, model, expected) => {
    expect(modelAcceptsImages(provider, model)).toBe(expected);
  });
});

describe("describeMedia and droppedMediaNote", () => {
  const png = { type: "image", mimeType: "image/png", data: "A".repeat(4 * 3000) } as const;
  const jpeg = { type: "image", mimeType: "image/jpeg", data: "AAA=" } as const;

  test("say how many images, of which type and size", () => {
    expect(describeMedia([png])).toBe("1 image (image/png, 9 KB)");
    expect(describeMedia([png, jpeg])).toBe("2 images (image/png, 9 KB; image/jpeg, 2 B)");
  });

  test("the note says why the images are not shown", () => {
    expect(droppedMediaNote([jpeg], "no-image-input")).toBe(
      "[The tool also returned 1 image (image/jpeg, 2 B); this model does not accept images, so they are not shown.]",
    );
    expect(droppedMediaNote([jpeg], "error-result")).toBe(
      "[The tool also returned 1 image (image/jpeg, 2 B); images are not sent with a failed tool result.]",
    );
  });
});
