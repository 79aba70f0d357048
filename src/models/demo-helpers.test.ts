/** The demo model's helper commands (demo-helpers.ts) through the demo model itself. */
import { describe, expect, it } from "vitest";
import { createDemoModel } from "./demo.ts";
import type { InferRequest } from "./types.ts";

const toolsNamed = (...names: string[]) =>
  names.map((name) => ({ name, description: name, inputSchema: {} }));
const helperTools = toolsNamed("start_helper", "check_helper", "message_helper", "stop_helper");

async function decide(text: string, offered = helperTools) {
  const request: InferRequest = { system: "", messages: [{ role: "user", text }], tools: offered };
  return createDemoModel().infer(request);
}

describe("demo model: helper commands", () => {
  it("helper <task> starts one; helpers a | b starts several in one model call, with distinct ids", async () => {
    expect((await decide("helper count the files")).toolCalls).toMatchObject([
      { name: "start_helper", input: { task: "count the files" } },
    ]);
    const many = await decide("helpers $ ls | $ df -h | hi");
    expect(many.toolCalls.map((call) => call.input)).toEqual([
      { task: "$ ls" },
      { task: "$ df -h" },
      { task: "hi" },
    ]);
    expect(new Set(many.toolCalls.map((call) => call.id)).size).toBe(3);
  });

  it("check, message and stop a helper by id", async () => {
    expect((await decide("check helper hlp_1")).toolCalls[0]).toMatchObject({
      name: "check_helper",
      input: { id: "hlp_1" },
    });
    expect((await decide("message helper hlp_1: and then?")).toolCalls[0]).toMatchObject({
      name: "message_helper",
      input: { id: "hlp_1", text: "and then?" },
    });
    expect((await decide("stop helper hlp_1")).toolCalls[0]).toMatchObject({
      name: "stop_helper",
      input: { id: "hlp_1" },
    });
  });

  it("a helper reads its task's commands after the task line; not offered, the commands are echoed (D2)", async () => {
    const inHelper = await decide(
      "[Task for helper hlp_1 from the conversation that started it; not typed by a person]\n$ ls",
      toolsNamed("shell"),
    );
    expect(inHelper.toolCalls[0]).toMatchObject({ name: "shell", input: { command: "ls" } });
    const notOffered = await decide("helper hi", toolsNamed("shell"));
    expect(notOffered.toolCalls).toEqual([]);
    expect(notOffered.text).toContain("You said");
  });
});
