import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { defineToolSource, serverTool } from "./define.ts";
import { createToolRouter, type RedactionHook } from "./router.ts";

const turn = { accountId: "a", botId: "b", conversationId: "c", turnId: "t" };

function echoSource(runs: string[] = []) {
  return defineToolSource("echo", [
    serverTool({
      name: "echo",
      description: "Say it back.",
      input: z.object({ text: z.string().describe("What to say back") }),
      run: async ({ text }) => {
        runs.push(text);
        return { output: `echo: ${text}`, isError: false, details: { text } };
      },
    }),
  ]);
}

const request = (durable = createMemoryDurable()) => ({
  ...turn,
  callId: "call_1",
  durable,
  signal: new AbortController().signal,
});

describe("tool router", () => {
  it("composes sources and refuses a tool name offered twice (TOOL1)", async () => {
    const router = createToolRouter({ sources: [echoSource()] });
    expect((await router.specs(turn)).map((spec) => spec.name)).toEqual(["echo"]);
    const clash = createToolRouter({ sources: [echoSource(), echoSource()] });
    await expect(clash.specs(turn)).rejects.toThrow(/offered by both/);
  });

  it("refuses a source whose spec is over 4,000 characters (TOOL4)", async () => {
    const router = createToolRouter({
      sources: [
        defineToolSource("big", [
          serverTool({
            name: "big",
            description: "x".repeat(4000),
            input: z.object({}),
            run: async () => ({ output: "", isError: false }),
          }),
        ]),
      ],
    });
    await expect(router.specs(turn)).rejects.toThrow(/over the 4000 limit/);
  });

  it("passes every call through the policy hook: deny never runs the tool (TOOL2)", async () => {
    const runs: string[] = [];
    const router = createToolRouter({
      sources: [echoSource(runs)],
      policy: async (call) =>
        (call.input as { text: string }).text === "rm -rf /"
          ? { decision: "deny", reason: "destructive" }
          : { decision: "allow" },
    });
    const denied = await router.execute("echo", { text: "rm -rf /" }, request());
    expect(denied).toMatchObject({ isError: true, output: "Not allowed: destructive" });
    const allowed = await router.execute("echo", { text: "hi" }, request());
    expect(allowed.output).toBe("echo: hi");
    expect(runs).toEqual(["hi"]);
  });

  it("sends an `ask` to the ask hook, runs only what it allows, and journals the verdict", async () => {
    const runs: string[] = [];
    const asked: string[] = [];
    const router = createToolRouter({
      sources: [echoSource(runs)],
      policy: async () => ({ decision: "ask", reason: "shell needs approval" }),
      ask: async (call) => {
        asked.push(call.reason);
        return (call.input as { text: string }).text === "ok"
          ? { decision: "allow" }
          : { decision: "deny", reason: "the owner said no" };
      },
    });
    expect((await router.execute("echo", { text: "ok" }, request())).output).toBe("echo: ok");
    expect(await router.execute("echo", { text: "no" }, request())).toMatchObject({
      isError: true,
      output: "Not approved: the owner said no",
    });
    expect(runs).toEqual(["ok"]);
    expect(asked).toEqual(["shell needs approval", "shell needs approval"]);

    // Without an ask hook (no approvals configured), an `ask` is a denial that says why.
    const unanswered = createToolRouter({
      sources: [echoSource()],
      policy: async () => ({ decision: "ask", reason: "needs approval" }),
    });
    expect((await unanswered.execute("echo", { text: "x" }, request())).output).toMatch(
      /needs approval/,
    );
  });

  it("redacts every result before it is journaled or returned (TOOL3)", async () => {
    const redact: RedactionHook = (value) =>
      JSON.parse(JSON.stringify(value).replaceAll("hunter2", "[REDACTED]")) as typeof value;
    const router = createToolRouter({ sources: [echoSource()], redact });
    const durable = createMemoryDurable();
    const result = await router.execute(
      "echo",
      { text: "the password is hunter2" },
      request(durable),
    );
    expect(result.output).toBe("echo: the password is [REDACTED]");
    expect(JSON.stringify(durable.journal)).not.toContain("hunter2");
  });

  it("an interrupted turn starts no more server tools, and says so", async () => {
    const runs: string[] = [];
    const router = createToolRouter({ sources: [echoSource(runs)] });
    const interrupt = new AbortController();
    interrupt.abort();
    const result = await router.execute(
      "echo",
      { text: "late" },
      {
        ...request(),
        signal: interrupt.signal,
      },
    );
    expect(result).toMatchObject({ isError: true, details: { interrupted: true } });
    expect(runs).toEqual([]);
  });

  it("answers an unknown tool without running anything", async () => {
    const router = createToolRouter({ sources: [echoSource()] });
    expect((await router.execute("nope", {}, request())).output).toContain("no tool named");
  });
});
