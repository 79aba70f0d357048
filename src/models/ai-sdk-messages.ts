/**
 * Converts Roost's conversation and tool specs to the AI SDK's prompt shapes.
 *
 * Invariants:
 * M1 Tools carry no `execute`: the SDK only reports the model's tool calls, and Roost's loop runs
 *    them as journaled steps.
 * M2 Consecutive tool results become one tool message, since providers expect all results of one
 *    assistant turn together.
 * M3 Tool call ids are provider-safe (CID2): unsafe ids are mapped the same way in the assistant's
 *    tool call and in its result.
 * M4 Images in tool results reach the model the way its API takes them (`tool-result`: inside the
 *    tool result, for Anthropic and xAI; `user-message`: in a user message right after the tool
 *    results, for Chat Completions, whose tool messages hold text only), or are replaced by a note
 *    (MED1) for models without image input and for failed results.
 * M5 An assistant message with neither text nor tool calls is left out: it tells the model nothing,
 *    and Anthropic rejects a request with an empty message in it (so one empty reply would
 *    otherwise fail every later call of the conversation).
 */
import { jsonSchema } from "ai";
import type {
  FilePart,
  JSONSchema7,
  ModelMessage as AiSdkModelMessage,
  TextPart,
  ToolContent,
  ToolResultPart,
  ToolSet,
} from "ai";
import { createCallIdMapper } from "./call-ids.ts";
import { describeMedia, droppedMediaNote } from "./media.ts";
import type { MediaPart, ModelMessage, ToolSpec } from "./types.ts";

/** How a provider takes images that tools return (M4). */
export type ToolMediaMode = "tool-result" | "user-message" | "drop";

/** Options for `toAiSdkMessages`. */
export interface AiSdkMessageOptions {
  /** @default "drop" */
  media?: ToolMediaMode | undefined;
}

type ToolMessage = Extract<ModelMessage, { role: "tool" }>;

/** File parts with tagged base64 data: the one shape both user content and tool results take. */
function fileParts(
  media: readonly MediaPart[],
): Array<FilePart & { data: { type: "data"; data: string } }> {
  return media.map((part) => ({
    type: "file",
    mediaType: part.mimeType,
    data: { type: "data", data: part.data },
  }));
}

function withNote(text: string, note: string): string {
  return text === "" ? note : `${text}\n${note}`;
}

/** The tool result's output, and the images to send after it in a user message (M4). */
function toolOutput(
  message: ToolMessage,
  mode: ToolMediaMode,
): { output: ToolResultPart["output"]; followUp: MediaPart[] } {
  const media = message.media ?? [];
  if (media.length === 0) {
    return {
      output: message.isError
        ? { type: "error-text", value: message.output }
        : { type: "text", value: message.output },
      followUp: [],
    };
  }
  if (message.isError) {
    return {
      output: {
        type: "error-text",
        value: withNote(message.output, droppedMediaNote(media, "error-result")),
      },
      followUp: [],
    };
  }
  switch (mode) {
    case "drop":
      return {
        output: {
          type: "text",
          value: withNote(message.output, droppedMediaNote(media, "no-image-input")),
        },
        followUp: [],
      };
    case "user-message":
      return {
        output: {
          type: "text",
          value: withNote(
            message.output,
            `[The tool also returned ${describeMedia(media)}; shown in the next message.]`,
          ),
        },
        followUp: media,
      };
    case "tool-result":
      return {
        output: {
          type: "content",
          value: [
            ...(message.output === "" ? [] : [{ type: "text" as const, text: message.output }]),
            ...fileParts(media),
          ],
        },
        followUp: [],
      };
  }
}

function allCallIds(messages: readonly ModelMessage[]): string[] {
  const ids: string[] = [];
  for (const message of messages) {
    if (message.role === "assistant") ids.push(...message.toolCalls.map((call) => call.id));
    else if (message.role === "tool") ids.push(message.callId);
  }
  return ids;
}

/** Roost messages as AI SDK messages (the system prompt goes separately, as `instructions`). */
export function toAiSdkMessages(
  messages: readonly ModelMessage[],
  options: AiSdkMessageOptions = {},
): AiSdkModelMessage[] {
  const mode = options.media ?? "drop";
  const safeId = createCallIdMapper(allCallIds(messages)); // M3
  const converted: AiSdkModelMessage[] = [];
  // Images from the current run of tool results, sent once the run ends (M2, M4).
  let pendingImages: Array<{ message: ToolMessage; media: MediaPart[] }> = [];
  const flushImages = (): void => {
    if (pendingImages.length === 0) return;
    const content: Array<TextPart | FilePart> = [];
    for (const { message, media } of pendingImages) {
      content.push({
        type: "text",
        text: `${media.length === 1 ? "Image" : "Images"} returned by the ${message.name} tool (call ${safeId(message.callId)}):`,
      });
      content.push(...fileParts(media));
    }
    converted.push({ role: "user", content });
    pendingImages = [];
  };

  for (const message of messages) {
    if (message.role !== "tool") flushImages();
    switch (message.role) {
      case "user": {
        const media = message.media ?? [];
        if (media.length === 0) converted.push({ role: "user", content: message.text });
        else if (mode === "drop")
          converted.push({
            role: "user",
            content: withNote(message.text, droppedMediaNote(media, "attached")),
          }); // MED1
        else
          converted.push({
            role: "user",
            content: [
              ...(message.text === "" ? [] : [{ type: "text" as const, text: message.text }]),
              ...fileParts(media),
            ],
          });
        break;
      }
      case "assistant": {
        const content = [
          ...(message.text === "" ? [] : [{ type: "text" as const, text: message.text }]),
          ...message.toolCalls.map((call) => ({
            type: "tool-call" as const,
            toolCallId: safeId(call.id),
            toolName: call.name,
            input: call.input,
          })),
        ];
        // An empty reply carries nothing, and Anthropic rejects empty messages (M5).
        if (content.length > 0) converted.push({ role: "assistant", content });
        break;
      }
      case "tool": {
        const { output, followUp } = toolOutput(message, mode);
        const result: ToolContent[number] = {
          type: "tool-result",
          toolCallId: safeId(message.callId),
          toolName: message.name,
          output,
        };
        if (followUp.length > 0) pendingImages.push({ message, media: followUp });
        const previous = converted[converted.length - 1];
        if (previous?.role === "tool")
          previous.content.push(result); // M2
        else converted.push({ role: "tool", content: [result] });
        break;
      }
    }
  }
  flushImages();
  return converted;
}

/** Tool specs as an AI SDK tool set without `execute` functions (M1). */
export function toAiSdkTools(tools: readonly ToolSpec[]): ToolSet {
  const toolSet: ToolSet = {};
  for (const spec of tools) {
    toolSet[spec.name] = {
      description: spec.description,
      inputSchema: jsonSchema(spec.inputSchema as JSONSchema7),
    };
  }
  return toolSet;
}
