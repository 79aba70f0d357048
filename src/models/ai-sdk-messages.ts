/**
 * Converts Roost's conversation and tool specs to the AI SDK's prompt shapes.
 *
 * Invariants:
 * M1 Tools carry no `execute`: the SDK only reports the model's tool calls, and Roost's loop runs
 *    them as journaled steps.
 * M2 Consecutive tool results become one tool message, since providers expect all results of one
 *    assistant turn together.
 */
import { jsonSchema } from "ai";
import type { JSONSchema7, ModelMessage as AiSdkModelMessage, ToolContent, ToolSet } from "ai";
import type { ModelMessage, ToolSpec } from "./types.ts";

/** Roost messages as AI SDK messages (the system prompt goes separately, as `instructions`). */
export function toAiSdkMessages(messages: readonly ModelMessage[]): AiSdkModelMessage[] {
  const converted: AiSdkModelMessage[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "user":
        converted.push({ role: "user", content: message.text });
        break;
      case "assistant": {
        const content = [
          ...(message.text === "" ? [] : [{ type: "text" as const, text: message.text }]),
          ...message.toolCalls.map((call) => ({
            type: "tool-call" as const,
            toolCallId: call.id,
            toolName: call.name,
            input: call.input,
          })),
        ];
        converted.push({ role: "assistant", content: content.length === 0 ? "" : content });
        break;
      }
      case "tool": {
        const result: ToolContent[number] = {
          type: "tool-result",
          toolCallId: message.callId,
          toolName: message.name,
          output: message.isError
            ? { type: "error-text", value: message.output }
            : { type: "text", value: message.output },
        };
        const previous = converted[converted.length - 1];
        if (previous?.role === "tool")
          previous.content.push(result); // M2
        else converted.push({ role: "tool", content: [result] });
        break;
      }
    }
  }
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
