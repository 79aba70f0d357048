/** The helper seams (hooks.ts): which tools a conversation is offered and may run (HLP2, HLP3). */
import { describe, expect, it } from "vitest";
import type { HelperRecord } from "../store/index.ts";
import type { ToolRouter } from "../tools/index.ts";
import { createHelperLookup, mayUse, withHelperTools } from "./hooks.ts";

const settings = { maxDepth: 1, maxRunning: 4 };
const record = (overrides: Partial<HelperRecord>): HelperRecord => ({
  id: "hlp_1",
  accountId: "acct_1",
  conversationId: "conv_hlp_1",
  parentConversationId: "conv_1",
  botId: "bot_1",
  depth: 1,
  task: "t",
  instructions: null,
  tools: null,
  model: null,
  status: "running",
  latestOutput: null,
  createdAt: 0,
  updatedAt: 0,
  ...overrides,
});

const names = ["shell", "read", "start_helper", "check_helper", "message_helper", "stop_helper"];
function fakeRouter(ran: string[]): ToolRouter {
  return {
    specs: async () => names.map((name) => ({ name, description: name, inputSchema: {} })),
    execute: async (name) => {
      ran.push(name);
      return { output: "ran", isError: false };
    },
    endTurn: async () => undefined,
  };
}
const turn = (conversationId: string) => ({
  accountId: "acct_1",
  botId: "bot_1",
  conversationId,
  turnId: "t1",
});

describe("helper tools seam", () => {
  it("HLP2, HLP3: a person's conversation has everything; a helper only its tools, never the helper tools at the depth limit", async () => {
    expect(names.filter((name) => mayUse(undefined, name, settings))).toEqual(names);
    expect(names.filter((name) => mayUse(record({}), name, settings))).toEqual(["shell", "read"]);
    expect(names.filter((name) => mayUse(record({ tools: ["read"] }), name, settings))).toEqual([
      "read",
    ]);
    // Deeper nesting allowed: a depth-1 helper may start helpers, if it was given them.
    const deep = { maxDepth: 2, maxRunning: 4 };
    expect(mayUse(record({}), "start_helper", deep)).toBe(true);
    expect(mayUse(record({ tools: ["read"] }), "start_helper", deep)).toBe(false);
    // Helpers off: nobody is offered them.
    expect(mayUse(undefined, "start_helper", { maxDepth: 0, maxRunning: 4 })).toBe(false);
  });

  it("the wrapper filters specs and refuses a call to a tool the helper was not given, without running it", async () => {
    const rows = new Map([["conv_hlp_1", record({ tools: ["read"] })]]);
    const lookup = createHelperLookup({ helperOfConversation: async (id) => rows.get(id) });
    const ran: string[] = [];
    const router = withHelperTools(fakeRouter(ran), lookup, settings);
    expect((await router.specs(turn("conv_hlp_1"))).map((spec) => spec.name)).toEqual(["read"]);
    expect((await router.specs(turn("conv_1"))).map((spec) => spec.name)).toEqual(names);
    const request = {
      ...turn("conv_hlp_1"),
      callId: "c1",
      durable: undefined as never,
      signal: new AbortController().signal,
    };
    const refused = await router.execute("shell", {}, request);
    expect(refused).toMatchObject({ isError: true, details: { code: "tool_not_given" } });
    expect(await router.execute("read", {}, request)).toMatchObject({ isError: false });
    expect(ran).toEqual(["read"]);
  });

  it("HLP7: lookups are cached, for helpers and for other conversations alike", async () => {
    let reads = 0;
    const lookup = createHelperLookup({
      helperOfConversation: async (id) => {
        reads++;
        return id === "conv_hlp_1" ? record({}) : undefined;
      },
    });
    for (let index = 0; index < 3; index++) {
      expect((await lookup("conv_hlp_1"))?.id).toBe("hlp_1");
      expect(await lookup("conv_1")).toBeUndefined();
    }
    expect(reads).toBe(2);
  });
});
