/**
 * Images in tool results: which models accept them, and the note a model without image input
 * gets instead.
 *
 * Invariants:
 * MED1 A model never loses track of an image silently: when a tool's images are not sent, the
 *      tool result says how many there were, of what type and size, and why they are not shown.
 */
import type { ModelProvider } from "./providers.ts";
import type { MediaPart } from "./types.ts";

/**
 * The first line of a message with uploads (loop/context.ts HIS6): the files' paths on the
 * computer. The demo model reads it.
 */
export const attachedFilesPrefix = "[Attached files, copied into the computer: ";

/** Models known to take text only, per provider; every other hosted model accepts images. */
const textOnlyHostedModels: Record<Exclude<ModelProvider, "openai-compatible" | "xai">, RegExp> = {
  openai: /^(gpt-3\.5|gpt-4(-\d{4})?$|gpt-4-32k|o1-mini|o1-preview|o3-mini|davinci|babbage)/i,
  anthropic: /^claude-(2|instant)/i,
};

/** xAI: only the vision models and Grok 4 (and later) read images; grok-3 and grok-code do not. */
const xaiImageModels = /^grok-([4-9]|\d{2,})|vision/i;

/**
 * Local models that read images, by the names Ollama, vLLM and llama.cpp use for them. Anything
 * else on an OpenAI-compatible server is taken to be text-only (most local models are), unless
 * configured otherwise.
 */
const localImageModels =
  /vision|[-_.:]vl\b|vl[-_.:]|llava|pixtral|gemma-?3|minicpm-?v|moondream|internvl|llama-?4|mistral-small-?3\.[12]|qwen\d(\.\d)?-?vl|glm-?4(\.\d)?v/i;

/** Whether `provider:model` accepts images in its input, by what is known about the model. */
export function modelAcceptsImages(provider: ModelProvider, model: string): boolean {
  switch (provider) {
    case "openai":
    case "anthropic":
      return !textOnlyHostedModels[provider].test(model);
    case "xai":
      return xaiImageModels.test(model);
    case "openai-compatible":
      return localImageModels.test(model);
  }
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** Decoded size of base64 data, without decoding it. */
function base64Bytes(data: string): number {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** `1 image (image/png, 12 KB)` or `2 images (image/png 12 KB, image/jpeg 40 KB)`. */
export function describeMedia(media: readonly MediaPart[]): string {
  const count = media.length === 1 ? "1 image" : `${media.length} images`;
  const parts = media.map((part) => `${part.mimeType}, ${formatBytes(base64Bytes(part.data))}`);
  return `${count} (${parts.join("; ")})`;
}

/** The note that stands in for images a model is not sent (MED1). */
export function droppedMediaNote(
  media: readonly MediaPart[],
  reason: "no-image-input" | "error-result" | "attached",
): string {
  if (reason === "attached")
    return `[The message also attached ${describeMedia(media)}; this model does not accept images, so they are not shown (their files are on the computer).]`;
  const why =
    reason === "no-image-input"
      ? "this model does not accept images, so they are not shown"
      : "images are not sent with a failed tool result";
  return `[The tool also returned ${describeMedia(media)}; ${why}.]`;
}
