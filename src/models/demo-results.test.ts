/** The demo model's results commands (demo-results.ts) through the demo model itself. */
import { describe, expect, it } from "vitest";
import { createDemoModel } from "./demo.ts";
import type { InferRequest } from "./types.ts";

const tools = ["message_bot", "draft", "no_reply"].map((name) => ({
  name,
  description: name,
  inputSchema: {},
}));

async function decide(text: string, offered = tools) {
  const request: InferRequest = { system: "", messages: [{ role: "user", text }], tools: offered };
  return createDemoModel().infer(request);
}

describe("demo model: results commands", () => {
  it("tell <bot>: <text> calls message_bot, after a source line of a bot's message too", async () => {
    expect((await decide("tell beta: tell alpha: hi")).toolCalls[0]).toMatchObject({
      name: "message_bot",
      input: { to: "beta", text: "tell alpha: hi" },
    });
    const forwarded = await decide(
      "[Message from another bot (bot_1), hop 1; not typed by a person]\ntell alpha: hi",
    );
    expect(forwarded.toolCalls[0]).toMatchObject({
      name: "message_bot",
      input: { to: "alpha", text: "hi" },
    });
  });

  it("draft <kind> <to> [/ subject]: <text> calls draft", async () => {
    expect(
      (await decide("draft email ada@example.com / Lunch: Dear Ada, Friday?")).toolCalls[0],
    ).toMatchObject({
      name: "draft",
      input: { kind: "email", to: "ada@example.com", subject: "Lunch", text: "Dear Ada, Friday?" },
    });
    expect((await decide("draft message Ada Lovelace: see you")).toolCalls[0]?.input).toEqual({
      kind: "message",
      to: "Ada Lovelace",
      text: "see you",
    });
    expect((await decide("draft slack #general: standup")).toolCalls[0]?.input).toEqual({
      kind: "slack",
      to: "#general",
      text: "standup",
    });
  });

  it("no reply [reason] calls no_reply", async () => {
    expect((await decide("no reply")).toolCalls[0]).toMatchObject({
      name: "no_reply",
      input: { reason: "nothing to add" },
    });
    expect((await decide("no_reply all quiet")).toolCalls[0]?.input).toEqual({
      reason: "all quiet",
    });
  });

  it("D2: a command whose tool is not offered is answered in text", async () => {
    const result = await decide("tell beta: hi", []);
    expect(result.toolCalls).toEqual([]);
    expect(result.text).toContain("You said");
  });
});
