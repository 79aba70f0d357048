/**
 * kill -9 between the approval and the tool result (issue 12 §1): the whole platform (Roost and
 * its restate-server) is SIGKILLed while a call waits for approval, and again right after the
 * owner approves it. After each restart the turn goes on from its journal: it never asks again
 * and never runs the call twice (APR1, APR2, APR6). The model is a fake OpenAI-compatible server
 * in this process, which counts its requests.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, killPlatform, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

describe("faults: a call waiting for approval", () => {
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

  it("kill -9 while waiting and again between the approval and the tool result: asked once, run once", async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-approval-fault-"));
    fake = await startFakeOpenAiServer((_request, index) =>
      index === 0
        ? {
            type: "completion",
            toolCalls: [
              { name: "memory", arguments: { action: "add", tier: "note", text: "approved once" } },
            ],
          }
        : { type: "completion", textChunks: ["done after the approval"] },
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
    const bot = await api.createBot("careful");
    await api.call("PUT", `/v1/bots/${bot.id}/tool-policy`, {
      rules: [{ tool: "memory", decision: "ask" }],
    });
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "note something, then answer");
    await api.waitForSteps(conversation.id, "approval");
    expect(fake.requests).toHaveLength(1);

    // Dead while waiting: after the restart it still waits (no timer in a process fired).
    await killPlatform(roost);
    await roost.start();
    const pending = await api.call<Api.ApprovalList>("GET", "/v1/approvals?state=pending");
    expect(pending.approvals).toHaveLength(1);
    const id = pending.approvals[0]!.id;

    // Dead right after the approval: before, or while, the turn picks it up and runs the tool.
    await api.call("POST", `/v1/approvals/${id}`, { decision: "approve" });
    await killPlatform(roost);
    await roost.start();

    const steps = await api.waitForSteps(conversation.id, "reply", 1, 60_000);
    expect(steps.map((step) => step.kind)).toEqual([
      "message",
      "model",
      "approval",
      "approval",
      "tool",
      "reply",
    ]);
    expect(new Set(steps.slice(1).map((step) => step.turnId)).size).toBe(1);
    expect(steps.at(-1)!.payload.text).toBe("done after the approval");
    // Asked once, decided once, run once; the model was asked twice in all.
    const all = await api.call<Api.ApprovalList>("GET", "/v1/approvals");
    expect(all.approvals.map((approval) => approval.state)).toEqual(["approved"]);
    expect(fake.requests).toHaveLength(2);
    const memory = await api.call<{ note: { text: string }[] }>("GET", `/v1/bots/${bot.id}/memory`);
    expect(memory.note.filter((fact) => fact.text === "approved once")).toHaveLength(1);
    await waitFor(
      async () =>
        (await api.call<{ state: string }>("GET", `/v1/conversations/${conversation.id}`)).state ===
        "idle",
    );
  });
});
