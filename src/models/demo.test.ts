import { describe, expect, test } from "vitest";
import { createDemoModel } from "./demo.ts";
import type { InferRequest, ModelMessage, ToolSpec } from "./types.ts";

function tool(name: string): ToolSpec {
  return { name, description: `${name} tool`, inputSchema: { type: "object" } };
}

const allTools = [tool("shell"), tool("read"), tool("write"), tool("list")];

function ask(
  text: string,
  tools: ToolSpec[] = allTools,
  earlier: ModelMessage[] = [],
): InferRequest {
  return { system: "You are a demo.", messages: [...earlier, { role: "user", text }], tools };
}

describe("createDemoModel", () => {
  const model = createDemoModel();

  test("is labelled as the demo, and reads no images", () => {
    expect(model.id).toBe("demo");
    expect(model.isDemo).toBe(true);
    expect(model.acceptsImages).toBe(false);
  });

  test("a tool result with an image: the answer says an image came back that it cannot look at", async () => {
    const result = await model.infer({
      system: "s",
      tools: allTools,
      messages: [
        { role: "user", text: "read shot.png" },
        {
          role: "assistant",
          text: "",
          toolCalls: [{ id: "demo_1", name: "read", input: { path: "shot.png" } }],
        },
        {
          role: "tool",
          callId: "demo_1",
          name: "read",
          output: "/workspace/shot.png: image/png, 8 bytes",
          isError: false,
          media: [{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }],
        },
      ],
    });
    expect(result.text).toContain("`read` returned:");
    expect(result.text).toContain(
      "It also returned 1 image (image/png, 8 B); the demo model cannot look at images.",
    );
  });

  test("`$ command` calls the shell tool when it is offered", async () => {
    const result = await model.infer(ask("$ ls -la /tmp"));
    expect(result.text).toBe("");
    expect(result.finishReason).toBe("tool-calls");
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]).toMatchObject({ name: "shell", input: { command: "ls -la /tmp" } });
    expect(result.toolCalls[0]?.id).toMatch(/^demo_[0-9a-f]{16}$/);
    expect(result.model).toBe("demo");
  });

  test("`$ command` without a shell tool says the bot has no computer", async () => {
    const result = await model.infer(ask("$ uptime", []));
    expect(result.text).toBe('[demo model] I can\'t run "uptime": this bot has no computer yet.');
    expect(result.toolCalls).toEqual([]);
    expect(result.finishReason).toBe("stop");
  });

  test("read, write and ls map to their tools", async () => {
    expect((await model.infer(ask("read notes/todo.md"))).toolCalls[0]).toMatchObject({
      name: "read",
      input: { path: "notes/todo.md" },
    });
    expect(
      (await model.infer(ask("write hello.txt Hello, world!\nSecond line"))).toolCalls[0],
    ).toMatchObject({
      name: "write",
      input: { path: "hello.txt", content: "Hello, world!\nSecond line" },
    });
    expect((await model.infer(ask("ls projects"))).toolCalls[0]).toMatchObject({
      name: "list",
      input: { path: "projects" },
    });
    expect((await model.infer(ask("ls"))).toolCalls[0]).toMatchObject({
      name: "list",
      input: { path: "." },
    });
  });

  test("browser, desktop and web commands map to their tools, and echo when not offered", async () => {
    const web = [tool("browser"), tool("computer"), tool("web_fetch"), tool("web_search")];
    const call = async (text: string, tools = web) =>
      (await model.infer(ask(text, tools))).toolCalls[0];
    expect(await call("browse http://127.0.0.1:8000/")).toMatchObject({
      name: "browser",
      input: { action: "navigate", url: "http://127.0.0.1:8000/" },
    });
    expect(await call("snapshot")).toMatchObject({
      name: "browser",
      input: { action: "snapshot" },
    });
    expect(await call("click e12")).toMatchObject({ input: { action: "click", ref: "e12" } });
    expect(await call("type e3 hello there")).toMatchObject({
      input: { action: "type", ref: "e3", text: "hello there" },
    });
    expect(await call("screenshot")).toMatchObject({ input: { action: "screenshot" } });
    expect(await call("desktop screenshot")).toMatchObject({
      name: "computer",
      input: { action: "screenshot" },
    });
    expect(await call("fetch https://example.com/a")).toMatchObject({
      name: "web_fetch",
      input: { url: "https://example.com/a" },
    });
    expect(await call("search durable execution")).toMatchObject({
      name: "web_search",
      input: { query: "durable execution" },
    });
    expect(await call("browse http://x", [tool("shell")])).toBeUndefined();
  });

  test("read, write and ls fall back to the labelled echo when their tool is not offered", async () => {
    const result = await model.infer(ask("read notes.md", [tool("shell")]));
    expect(result.toolCalls).toEqual([]);
    expect(result.text).toContain('[demo model] You said: "read notes.md".');
  });

  test("anything else gets a labelled echo that says how to configure a provider", async () => {
    const result = await model.infer(ask("What's the weather?", []));
    expect(result.text).toBe(
      '[demo model] You said: "What\'s the weather?". (No model provider is configured; set ROOST_MODEL — see docs/configuration.md.)',
    );
  });

  test("streams the reply in word-sized pieces that add up to the text", async () => {
    const deltas: string[] = [];
    const result = await model.infer({
      ...ask("hello there", []),
      onTextDelta: (delta) => deltas.push(delta),
    });
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join("")).toBe(result.text);
    expect(deltas[0]).toBe("[demo");
  });

  test("after a tool result, quotes the output in a fence with the exit status", async () => {
    const earlier: ModelMessage[] = [{ role: "user", text: "$ ls" }];
    const request: InferRequest = {
      system: "",
      tools: allTools,
      messages: [
        ...earlier,
        {
          role: "assistant",
          text: "",
          toolCalls: [{ id: "demo_1", name: "shell", input: { command: "ls" } }],
        },
        {
          role: "tool",
          callId: "demo_1",
          name: "shell",
          output: "a.txt\nb.txt\nexit status: 0\n",
          isError: false,
        },
      ],
    };
    const result = await model.infer(request);
    expect(result.text).toBe(
      "[demo model] `shell` returned:\n\n```\na.txt\nb.txt\nexit status: 0\n```\n\nExit status: 0.",
    );
    expect(result.toolCalls).toEqual([]);
  });

  test("a failed tool result is labelled as failed, and backticks in output lengthen the fence", async () => {
    const result = await model.infer({
      system: "",
      tools: allTools,
      messages: [
        { role: "user", text: "read x" },
        {
          role: "assistant",
          text: "",
          toolCalls: [{ id: "demo_1", name: "read", input: { path: "x" } }],
        },
        {
          role: "tool",
          callId: "demo_1",
          name: "read",
          output: "no such file: ```x```",
          isError: true,
        },
      ],
    });
    expect(result.text).toBe("[demo model] `read` failed:\n\n````\nno such file: ```x```\n````");
  });

  test("is deterministic: the same conversation gives the same call id and usage", async () => {
    const first = await model.infer(ask("$ whoami"));
    const second = await createDemoModel().infer(ask("$ whoami"));
    expect(second).toEqual(first);
    const later = await model.infer(ask("$ whoami", allTools, [{ role: "user", text: "hi" }]));
    expect(later.toolCalls[0]?.id).not.toBe(first.toolCalls[0]?.id);
  });

  test("counts usage in words", async () => {
    const result = await model.infer({
      system: "one two",
      messages: [{ role: "user", text: "three four five" }],
      tools: [],
    });
    expect(result.usage.inputTokens).toBe(5);
    expect(result.usage.outputTokens).toBe(result.text.split(/\s+/).length);
  });

  test("rejects when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort(new Error("cancelled"));
    await expect(model.infer({ ...ask("hi"), signal: controller.signal })).rejects.toThrow(
      "cancelled",
    );
  });

  test("a line `escalate <reason>` in a routine run's message calls escalate, only when it is offered (D2)", async () => {
    const text =
      "[Routine run run_1: sent by a schedule, not typed by a person]\ncheck the disk\nescalate the disk is full";
    const offered = await model.infer(ask(text, [...allTools, tool("escalate")]));
    expect(offered.toolCalls).toEqual([
      expect.objectContaining({ name: "escalate", input: { reason: "the disk is full" } }),
    ]);
    const notOffered = await model.infer(ask(text));
    expect(notOffered.toolCalls).toEqual([]);
    const quiet = await model.infer(
      ask("check the disk; nothing to escalate here", [...allTools, tool("escalate")]),
    );
    expect(quiet.toolCalls).toEqual([]);
  });

  test("a message with attached files: alone, it names their paths; with a command, it runs the command", async () => {
    const header =
      "[Attached files, copied into the computer: /workspace/attachments/c1/notes.txt (text/plain, 5 B)]";
    const alone = await model.infer(ask(header));
    expect(alone.text).toBe(
      "[demo model] You attached: /workspace/attachments/c1/notes.txt (text/plain, 5 B).",
    );
    const command = await model.infer(ask(`${header}\n$ cat /workspace/attachments/c1/notes.txt`));
    expect(command.toolCalls.map((call) => [call.name, call.input])).toEqual([
      ["shell", { command: "cat /workspace/attachments/c1/notes.txt" }],
    ]);
  });
});
