import { describe, expect, test } from "vitest";
import { toAiSdkMessages, toAiSdkTools } from "./ai-sdk-messages.ts";
import { providerSafeCallId } from "./call-ids.ts";
import type { ModelMessage } from "./types.ts";

const image = { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" } as const;

/** Two reads, the first returning an image, then a message sent while they ran. */
const withImage: ModelMessage[] = [
  { role: "user", text: "look" },
  {
    role: "assistant",
    text: "",
    toolCalls: [
      { id: "call_1", name: "read", input: { path: "a.png" } },
      { id: "call_2", name: "read", input: { path: "b.txt" } },
    ],
  },
  { role: "tool", callId: "call_1", name: "read", output: "a.png", isError: false, media: [image] },
  { role: "tool", callId: "call_2", name: "read", output: "bee", isError: false },
  { role: "user", text: "also this" },
];

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

  test("an empty reply (no text, no tool calls) is left out, since Anthropic rejects empty messages", () => {
    expect(
      toAiSdkMessages([
        { role: "user", text: "one" },
        { role: "assistant", text: "", toolCalls: [] },
        { role: "user", text: "two" },
      ]),
    ).toEqual([
      { role: "user", content: "one" },
      { role: "user", content: "two" },
    ]);
  });
});

describe("toAiSdkMessages: provider-safe call ids", () => {
  test("a colon id is mapped to the same safe id in the tool call and in its result", () => {
    const journalId = "inv_abc:turn:0:0:0";
    const converted = toAiSdkMessages([
      { role: "user", text: "go" },
      { role: "assistant", text: "", toolCalls: [{ id: journalId, name: "shell", input: {} }] },
      { role: "tool", callId: journalId, name: "shell", output: "ok", isError: false },
    ]);
    expect(converted[1]).toMatchObject({
      content: [{ type: "tool-call", toolCallId: providerSafeCallId(journalId) }],
    });
    expect(converted[2]).toMatchObject({
      content: [{ type: "tool-result", toolCallId: providerSafeCallId(journalId) }],
    });
  });
});

describe("toAiSdkMessages: images in tool results", () => {
  test("tool-result mode puts the image inside the tool result, after its text", () => {
    const converted = toAiSdkMessages(withImage, { media: "tool-result" });
    expect(converted[2]).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "call_1",
          toolName: "read",
          output: {
            type: "content",
            value: [
              { type: "text", text: "a.png" },
              { type: "file", mediaType: "image/png", data: { type: "data", data: image.data } },
            ],
          },
        },
        {
          type: "tool-result",
          toolCallId: "call_2",
          toolName: "read",
          output: { type: "text", value: "bee" },
        },
      ],
    });
    expect(converted.map((message) => message.role)).toEqual(["user", "assistant", "tool", "user"]);
  });

  test("user-message mode sends the image in a user message after all the tool results, before later messages", () => {
    const converted = toAiSdkMessages(withImage, { media: "user-message" });
    expect(converted.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "user",
      "user",
    ]);
    expect(converted[2]).toMatchObject({
      content: [
        {
          toolCallId: "call_1",
          output: {
            type: "text",
            value:
              "a.png\n[The tool also returned 1 image (image/png, 8 B); shown in the next message.]",
          },
        },
        { toolCallId: "call_2", output: { type: "text", value: "bee" } },
      ],
    });
    expect(converted[3]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "Image returned by the read tool (call call_1):" },
        { type: "file", mediaType: "image/png", data: { type: "data", data: image.data } },
      ],
    });
    expect(converted[4]).toEqual({ role: "user", content: "also this" });
  });

  test("drop mode (no image input) leaves a note in the result's text", () => {
    const converted = toAiSdkMessages(withImage);
    expect(converted[2]).toMatchObject({
      content: [
        {
          output: {
            type: "text",
            value:
              "a.png\n[The tool also returned 1 image (image/png, 8 B); this model does not accept images, so they are not shown.]",
          },
        },
        { output: { type: "text", value: "bee" } },
      ],
    });
    expect(JSON.stringify(converted)).not.toContain(image.data);
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

describe("images a person attached", () => {
  const message: ModelMessage = {
    role: "user",
    text: "what is this?",
    media: [{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }],
  };
  test("go as file parts of the user message to a model that takes images", () => {
    expect(toAiSdkMessages([message], { media: "user-message" })).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "what is this?" },
          { type: "file", mediaType: "image/png", data: { type: "data", data: "iVBORw0KGgo=" } },
        ],
      },
    ]);
  });
  test("are named in a note for a model without image input (MED1)", () => {
    expect(toAiSdkMessages([message], { media: "drop" })).toEqual([
      {
        role: "user",
        content:
          "what is this?\n[The message also attached 1 image (image/png, 8 B); this model does not accept images, so they are not shown (their files are on the computer).]",
      },
    ]);
  });
});
