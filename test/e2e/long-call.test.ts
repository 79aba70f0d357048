/**
 * A tool call longer than the durable engine's default inactivity limits (Restate: 1 minute):
 * a real 3-minute shell command, requested by a model over the real provider wire format.
 * It takes three minutes on purpose: the issue asks for this exact case.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

const command = "sleep 180; echo finished-after-3-minutes";

describe("a 3-minute tool call", () => {
  let dataDir: string;
  let roost: RoostProcess;
  let fake: FakeOpenAiServer;

  beforeAll(async () => {
    fake = await startFakeOpenAiServer((request) => {
      const body = request.body as { messages: { role: string }[] };
      const sawToolResult = body.messages.some((message) => message.role === "tool");
      return sawToolResult
        ? { type: "completion", textChunks: ["The command finished."] }
        : {
            type: "completion",
            toolCalls: [{ name: "shell", arguments: { command, timeoutSeconds: 300 } }],
          };
    });
    dataDir = mkdtempSync(join(tmpdir(), "roost-long-call-"));
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
        ROOST_COMPUTER_PROVIDER: testComputerProvider,
      },
    });
    await roost.start();
  });
  afterAll(async () => {
    await roost?.stop();
    await fake?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("completes once, and the turn replies after it", async () => {
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("patient");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "run the long job");
    const steps = await api.waitForSteps(conversation.id, "reply", 1, 280_000);
    const tool = steps.find((step) => step.kind === "tool")!;
    expect(tool.payload.details).toMatchObject({
      exitCode: 0,
      stdout: "finished-after-3-minutes\n",
      timedOut: false,
    });
    expect(Number(tool.payload.durationMs)).toBeGreaterThanOrEqual(180_000);
    expect(steps.filter((step) => step.kind === "tool")).toHaveLength(1);
    expect(steps.at(-1)!.payload.text).toBe("The command finished.");
  }, 300_000);
});
