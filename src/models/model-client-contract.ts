/**
 * The contract every `ModelClient` keeps, as a shared Vitest suite (run by
 * model-client-contract.test.ts for the demo, scripted and AI SDK clients). A client under test
 * must follow the demo model's command language for these prompts: `$ <command>` with a `shell`
 * tool offered calls it; after a tool result it answers with text quoting the output; anything
 * else gets a text reply quoting the message.
 */
import { describe, expect, test } from "vitest";
import type { InferRequest, ModelClient, ToolSpec } from "./types.ts";

/** A 1×1 PNG. */
const onePixelPng =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/** A client to test and how to clean up after it. */
export interface ModelClientSubject {
  client: ModelClient;
  close?: () => Promise<void>;
}

const shellTool: ToolSpec = {
  name: "shell",
  description: "Run a shell command.",
  inputSchema: {
    type: "object",
    properties: { command: { type: "string" } },
    required: ["command"],
  },
};

/** Registers the contract suite for one client implementation. */
export function describeModelClientContract(
  name: string,
  createSubject: () => Promise<ModelClientSubject>,
): void {
  async function withClient(run: (client: ModelClient) => Promise<void>): Promise<void> {
    const subject = await createSubject();
    try {
      await run(subject.client);
    } finally {
      await subject.close?.();
    }
  }

  describe(`ModelClient contract: ${name}`, () => {
    test("a plain message gets a streamed text reply whose deltas add up to the text", async () => {
      await withClient(async (client) => {
        const deltas: string[] = [];
        const request: InferRequest = {
          system: "Answer briefly.",
          messages: [{ role: "user", text: "hello there" }],
          tools: [],
          onTextDelta: (delta) => deltas.push(delta),
        };
        const result = await client.infer(request);
        expect(result.text).toContain("hello there");
        expect(deltas.length).toBeGreaterThan(1);
        expect(deltas.join("")).toBe(result.text);
        expect(result.toolCalls).toEqual([]);
        expect(result.finishReason).toBe("stop");
        expect(result.model).toBe(client.id);
        expect(Number.isInteger(result.usage.inputTokens) && result.usage.inputTokens >= 0).toBe(
          true,
        );
        expect(Number.isInteger(result.usage.outputTokens) && result.usage.outputTokens >= 0).toBe(
          true,
        );
      });
    });

    test("an offered tool is called with parsed input", async () => {
      await withClient(async (client) => {
        const result = await client.infer({
          system: "",
          messages: [{ role: "user", text: "$ echo hello" }],
          tools: [shellTool],
        });
        expect(result.toolCalls).toHaveLength(1);
        expect(result.toolCalls[0]?.name).toBe("shell");
        expect(result.toolCalls[0]?.input).toEqual({ command: "echo hello" });
        expect(result.toolCalls[0]?.id).toMatch(/\S/);
        expect(result.finishReason).toBe("tool-calls");
      });
    });

    test("a tool result is answered in text", async () => {
      await withClient(async (client) => {
        const result = await client.infer({
          system: "",
          tools: [shellTool],
          messages: [
            { role: "user", text: "$ echo hello" },
            {
              role: "assistant",
              text: "",
              toolCalls: [{ id: "call_1", name: "shell", input: { command: "echo hello" } }],
            },
            {
              role: "tool",
              callId: "call_1",
              name: "shell",
              output: "hello-from-tool",
              isError: false,
            },
          ],
        });
        expect(result.toolCalls).toEqual([]);
        expect(result.text).toContain("hello-from-tool");
      });
    });

    test("a tool result carrying an image is answered in text, whether or not the model reads images", async () => {
      await withClient(async (client) => {
        expect(typeof (client.acceptsImages ?? false)).toBe("boolean");
        const result = await client.infer({
          system: "",
          tools: [shellTool],
          messages: [
            { role: "user", text: "$ screenshot" },
            {
              role: "assistant",
              text: "",
              toolCalls: [{ id: "call_1", name: "shell", input: { command: "screenshot" } }],
            },
            {
              role: "tool",
              callId: "call_1",
              name: "shell",
              output: "saved-screenshot",
              isError: false,
              media: [{ type: "image", mimeType: "image/png", data: onePixelPng }],
            },
          ],
        });
        expect(result.toolCalls).toEqual([]);
        expect(result.text).toContain("saved-screenshot");
      });
    });

    test("an aborted signal rejects with its reason", async () => {
      await withClient(async (client) => {
        const controller = new AbortController();
        const reason = new Error("turn cancelled");
        controller.abort(reason);
        await expect(
          client.infer({
            system: "",
            messages: [{ role: "user", text: "hi" }],
            tools: [],
            signal: controller.signal,
          }),
        ).rejects.toBe(reason);
      });
    });
  });
}
