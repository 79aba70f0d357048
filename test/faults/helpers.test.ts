/**
 * Fault tests for helpers (issue 15 §1, docs/helpers.md), each named after its failure. Roost
 * runs as a child process with its embedded Restate; the model is a fake OpenAI-compatible
 * server in this process (test/support/helper-model.ts), so the test holds the helpers mid-turn.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { createHelperModel, type HelperModel } from "../support/helper-model.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

const helperResults = (steps: TestStep[]) =>
  steps
    .filter((step) => step.kind === "message")
    .map((step) => step.payload as unknown as Api.MessagePayload)
    .filter((message) => message.source?.kind === "helper");

describe("faults: helpers", () => {
  let dataDir: string;
  let roost: RoostProcess | undefined;
  let fake: FakeOpenAiServer | undefined;
  let model: HelperModel;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-fault-helpers-"));
    model = createHelperModel();
    fake = await startFakeOpenAiServer((request) => model.handle(request));
  });
  afterEach(async () => {
    await roost?.stop();
    await fake?.close();
    roost = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("server process SIGKILLed while two helpers and their parent are mid-turn: after restart both finish once, the parent's starts are not repeated, and it gets each result once", async () => {
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake!.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_MEMORY_PASS: "off",
      },
    });
    await roost.start();
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("boss");
    const chat = await api.createConversation(bot.id);
    await api.send(chat.id, "start-held: slow:a | slow:b");
    // Both helpers are in their first model call, and the parent mid-turn in its second.
    await waitFor(
      () => model.waiting.has("a") && model.waiting.has("b") && model.waiting.has("parent-held"),
      { what: "both helpers and the parent mid-call" },
    );
    await roost.kill("SIGKILL");
    // The calls the dead process made never get their answer; the next ones answer at once.
    model.open("a");
    model.open("b");
    model.open("parent-held");
    await roost.start();

    const results = await waitFor(
      async () => {
        const found = helperResults(await api.steps(chat.id));
        return found.length >= 2 ? found : undefined;
      },
      { timeoutMs: 60_000, what: "both results in the parent" },
    );
    expect(results.map((message) => message.text).sort()).toEqual(["result of a", "result of b"]);
    const helpers = (await api.call<Api.HelperList>("GET", `/v1/conversations/${chat.id}/helpers`))
      .helpers;
    expect(helpers.map((helper) => helper.status)).toEqual(["done", "done"]);
    // Let every loop settle, then count: nothing was made, stored or delivered twice.
    await waitFor(
      async () => {
        for (const id of [chat.id, ...helpers.map((helper) => helper.conversationId)])
          if ((await api.call<Api.Conversation>("GET", `/v1/conversations/${id}`)).state !== "idle")
            return false;
        return true;
      },
      { timeoutMs: 30_000, what: "every conversation idle" },
    );
    const parentSteps = await api.steps(chat.id);
    expect(helperResults(parentSteps)).toHaveLength(2);
    expect(parentSteps.filter((step) => step.kind === "tool")).toHaveLength(2);
    expect(helpers).toHaveLength(2); // start_helper's journaled step was not run again
    for (const helper of helpers) {
      const steps = await api.steps(helper.conversationId);
      expect(steps.map((step) => step.kind)).toEqual(["message", "reply"]);
      expect(new Set(steps.map((step) => step.id)).size).toBe(steps.length);
    }
    const ids = parentSteps.map((step) => step.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Each helper's model was asked once in each process (the first call died with it).
    for (const task of ["slow:a", "slow:b"])
      expect(model.helperCalls.filter((call) => call.task === task)).toHaveLength(2);
  });
});
