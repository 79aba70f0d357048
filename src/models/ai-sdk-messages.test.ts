import { describe, expect, test } from "vitest";
import { toAiSdkMessages, toAiSdkTools } from "./ai-sdk-messages.ts";

describe("toAiSdkMessages", () => {
  test("converts each role, merging consecutive tool results into one tool message", () => {
    const converted = toAiSdkMessages([
      { role: "user", text: "check both" },
      {
        role: "assistant",
        text: "Checking.",
        toolCalls: [
          { id: "call_1", name: "read", input: { path: "a.txt" } },
          { id: "call_2", name: "read", input: { path: "b.txt" } },
        ],
      },
      { role: "tool", callId: "call_1", name: "read", output: "alpha", isError: false },
      { role: "tool", callId: "call_2", name: "read", output: "no such file", isError: true },
      { role: "assistant", text: "One file is missing.", toolCalls: [] },
    ]);
    expect(converted).toEqual([
      { role: "user", content: "check both" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking." },
          { type: "tool-call", toolCallId: "call_1", toolName: "read", input: { path: "a.txt" } },
          { type: "tool-call", toolCallId: "call_2", toolName: "read", input: { path: "b.txt" } },
        ],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "call_1",
            toolName: "read",
            output: { type: "text", value: "alpha" },
          },
          {
            type: "tool-result",
            toolCallId: "call_2",
            toolName: "read",
            output: { type: "error-text", value: "no such file" },
          },
        ],
      },
      { role: "assistant", content: [{ type: "text", text: "One file is missing." }] },
    ]);
  });

  test("an assistant message with neither text nor tool calls becomes empty content", () => {
    expect(toAiSdkMessages([{ role: "assistant", text: "", toolCalls: [] }])).toEqual([
      { role: "assistant", content: "" },
    ]);
  });
});

describe("toAiSdkTools", () => {
  test("offers each tool with its description and JSON schema, and no execute function", () => {
    const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
    const tools = toAiSdkTools([
      { name: "read", description: "Read a file.", inputSchema: schema },
    ]);
    expect(Object.keys(tools)).toEqual(["read"]);
    expect(tools.read?.description).toBe("Read a file.");
    expect(tools.read?.execute).toBeUndefined();
  });
});
