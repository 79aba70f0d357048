/**
 * A turn parked at a reached budget survives a kill -9 of the whole platform (Roost and its
 * restate-server): the park is a Restate awakeable and a Restate timer, nothing in a process.
 * After the restart, raising the budget lets the same turn go on; the model call and the tool
 * call made before the park are not made again. The model is a fake OpenAI-compatible server in
 * this process, which counts its requests.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, killPlatform, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

describe("faults: a turn parked at its budget", () => {
  let dataDir: string | undefined;
  let roost: RoostProcess | undefined;
  let fake: FakeOpenAiServer | undefined;
  afterEach(async () => {
    await roost?.stop();
    await fake?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    roost = undefined;
    fake = undefined;
    dataDir = undefined;
  });

  it("platform SIGKILLed while a turn is parked: after restart, a raise continues the same turn and repeats no call", async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-budget-fault-"));
    fake = await startFakeOpenAiServer((_request, index) =>
      index === 0
        ? {
            type: "completion",
            toolCalls: [
              { name: "memory", arguments: { action: "add", tier: "note", text: "parked once" } },
            ],
            usage: { promptTokens: 40, completionTokens: 10, cachedTokens: 30 },
          }
        : { type: "completion", textChunks: ["done after the raise"] },
    );
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_MEMORY_PASS: "off",
        ROOST_MODEL_TITLES: "off", // nor the title request after the first reply
      },
    });
    await roost.start();
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("capped");
    await api.call("PUT", `/v1/bots/${bot.id}/budget`, { tokensPerDay: 30 });
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "note something, then answer");

    const parked = await api.waitForSteps(conversation.id, "budget_reached");
    expect(parked.map((step) => step.kind)).toEqual(["message", "model", "tool", "budget_reached"]);
    expect(fake.requests).toHaveLength(1);

    // The whole platform dies at once: Roost and its engine.
    await killPlatform(roost);
    await roost.start();
    // Still parked after the restart: nothing timed out, nothing ran again.
    const view = await api.call<{ parkedTurns: number }>("GET", `/v1/bots/${bot.id}/budget`);
    expect(view.parkedTurns).toBe(1);
    expect(fake.requests).toHaveLength(1);

    await api.call("PUT", `/v1/bots/${bot.id}/budget`, { tokensPerDay: 100_000 });
    const steps = await api.waitForSteps(conversation.id, "reply", 1, 60_000);
    expect(steps.map((step) => step.kind)).toEqual([
      "message",
      "model",
      "tool",
      "budget_reached",
      "reply",
    ]);
    expect(new Set(steps.slice(1).map((step) => step.turnId)).size).toBe(1);
    expect(steps.at(-1)!.payload.text).toBe("done after the raise");
    // The model was asked twice in all: the call before the park was not made again.
    expect(fake.requests).toHaveLength(2);
    // Both calls are recorded once, the first with the cached tokens the provider reported.
    const usage = await api.call<{
      groups: { key: string; calls: number; cachedTokens: number }[];
    }>("GET", "/v1/usage?groupBy=bot");
    expect(usage.groups).toEqual([
      expect.objectContaining({ key: bot.id, calls: 2, cachedTokens: 30 }),
    ]);
    const memory = await api.call<{ note: { text: string }[] }>("GET", `/v1/bots/${bot.id}/memory`);
    expect(memory.note.filter((fact) => fact.text === "parked once")).toHaveLength(1);
    await waitFor(
      async () =>
        (await api.call<{ state: string }>("GET", `/v1/conversations/${conversation.id}`)).state ===
        "idle",
    );
  });
});
