/** The demo model's policy commands (demo-policy.ts) through the demo model itself. */
import { describe, expect, it } from "vitest";
import { createDemoModel } from "./demo.ts";
import type { InferRequest } from "./types.ts";

const tools = ["shell", "draft"].map((name) => ({ name, description: name, inputSchema: {} }));

async function decide(text: string, offered = tools) {
  const request: InferRequest = { system: "", messages: [{ role: "user", text }], tools: offered };
  return createDemoModel().infer(request);
}

describe("demo model: policy commands", () => {
  it("because <reason>: <command> makes the command's call with the reason as the model's text", async () => {
    const result = await decide("because the disk is full: $ rm -rf ~/old-builds");
    expect(result.text).toBe("the disk is full");
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ name: "shell", input: { command: "rm -rf ~/old-builds" } }),
    ]);
    // Deterministic (D1): the same message gives the same call id.
    expect((await decide("because the disk is full: $ rm -rf ~/old-builds")).toolCalls[0]?.id).toBe(
      result.toolCalls[0]?.id,
    );
  });

  it("call <tool> <json> calls an offered tool with that input; anything else is not a call", async () => {
    expect(
      (await decide('call draft {"kind":"email","to":"a@example.com","text":"hi"}')).toolCalls[0],
    ).toMatchObject({ name: "draft", input: { kind: "email", to: "a@example.com", text: "hi" } });
    expect((await decide('call memory {"action":"add"}')).toolCalls).toEqual([]); // D2: not offered
    expect((await decide("call draft {not json}")).toolCalls).toEqual([]);
    expect((await decide("call draft [1,2]")).toolCalls).toEqual([]);
  });
});
