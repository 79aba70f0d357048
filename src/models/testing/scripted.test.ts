import { describe, expect, test } from "vitest";
import { createScriptedModel } from "./scripted.ts";
import type { InferRequest } from "../types.ts";

function ask(text: string, extra: Partial<InferRequest> = {}): InferRequest {
  return { system: "", messages: [{ role: "user", text }], tools: [], ...extra };
}

describe("createScriptedModel", () => {
  test("plays an array script in order, filling in defaults", async () => {
    const model = createScriptedModel([
      { toolCalls: [{ id: "call-1", name: "shell", input: { command: "ls" } }] },
      { text: "Done.", usage: { inputTokens: 7, outputTokens: 1 } },
    ]);
    expect(await model.infer(ask("go"))).toEqual({
      text: "",
      toolCalls: [{ id: "call-1", name: "shell", input: { command: "ls" } }],
      usage: { inputTokens: 0, outputTokens: 0 },
      finishReason: "tool-calls",
      model: "scripted",
    });
    expect(await model.infer(ask("go on"))).toEqual({
      text: "Done.",
      toolCalls: [],
      usage: { inputTokens: 7, outputTokens: 1 },
      finishReason: "stop",
      model: "scripted",
    });
  });

  test("running past the end of the script fails loudly", async () => {
    const model = createScriptedModel([{ text: "only one" }]);
    await model.infer(ask("1"));
    await expect(model.infer(ask("2"))).rejects.toThrow(
      "no response scripted for call 2 (the script has 1)",
    );
  });

  test("records each request, copied at call time", async () => {
    const model = createScriptedModel(() => ({ text: "ok" }));
    const messages: InferRequest["messages"] = [{ role: "user", text: "first" }];
    await model.infer({ system: "s", messages, tools: [] });
    messages.push({ role: "user", text: "added later" });
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]?.messages).toEqual([{ role: "user", text: "first" }]);
  });

  test("a function script sees the request and the call index", async () => {
    const model = createScriptedModel(
      (request, callIndex) => ({
        text: `call ${callIndex}: ${request.messages.length} message(s)`,
      }),
      {
        id: "scripted:test",
      },
    );
    expect((await model.infer(ask("a"))).text).toBe("call 0: 1 message(s)");
    const second = await model.infer(ask("b"));
    expect(second.text).toBe("call 1: 1 message(s)");
    expect(second.model).toBe("scripted:test");
    expect(model.id).toBe("scripted:test");
  });

  test("streams text in word pieces", async () => {
    const deltas: string[] = [];
    await createScriptedModel([{ text: "one two three" }]).infer(
      ask("x", { onTextDelta: (delta) => deltas.push(delta) }),
    );
    expect(deltas).toEqual(["one", " two", " three"]);
  });

  test("a delayed step can be interrupted through the signal", async () => {
    let started: () => void = () => {};
    const stepStarted = new Promise<void>((resolve) => (started = resolve));
    const model = createScriptedModel([
      async () => {
        started();
        await new Promise(() => {}); // Never finishes on its own.
        return { text: "unreachable" };
      },
    ]);
    const controller = new AbortController();
    const reason = new Error("killed mid-inference");
    const pending = model.infer(ask("slow", { signal: controller.signal }));
    await stepStarted;
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  test("a step that throws fails the call", async () => {
    const model = createScriptedModel([
      () => {
        throw new Error("provider down");
      },
    ]);
    await expect(model.infer(ask("x"))).rejects.toThrow("provider down");
  });
});
