/**
 * Fault tests for results (issue 11 §2–§3), each named after its failure. Roost runs as a child
 * process with its embedded Restate; the model is a fake OpenAI-compatible server in this process.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  startFakeOpenAiServer,
  type FakeOpenAiReply,
  type FakeOpenAiRequest,
  type FakeOpenAiServer,
} from "../../src/models/testing/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

const said = (request: FakeOpenAiRequest) => JSON.stringify(request.body?.messages ?? []);
const afterTool = (request: FakeOpenAiRequest) =>
  (request.body?.messages ?? []).at(-1)?.role === "tool";

describe("faults: results", () => {
  let dataDir: string;
  let roost: RoostProcess | undefined;
  let fake: FakeOpenAiServer | undefined;
  let onInfer: (request: FakeOpenAiRequest) => Promise<FakeOpenAiReply> | FakeOpenAiReply;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-fault-results-"));
    fake = await startFakeOpenAiServer((request) => onInfer(request));
  });
  afterEach(async () => {
    await roost?.stop();
    await fake?.close();
    roost = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("server process SIGKILLed after message_bot sent, while the sender's turn goes on: after restart the message exists once and the turn completes", async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding = true;
    onInfer = async (request) => {
      // The receiver (its message is marked as another bot's) answers at once.
      if (said(request).includes("Message from another bot"))
        return { type: "completion", textChunks: ["got it"] };
      if (afterTool(request)) {
        if (holding) await held; // the sender's next call never finishes in the first process
        return { type: "completion", textChunks: ["sent to beta"] };
      }
      return {
        type: "completion",
        toolCalls: [
          { name: "message_bot", arguments: { to: "beta", text: "the report is ready" } },
        ],
      };
    };
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake!.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_MEMORY_PASS: "off",
        ROOST_MODEL_TITLES: "off", // nor the title request after the first reply
      },
    });
    await roost.start();
    const api = apiClient(roost.url, roost.token);
    const alpha = await api.createBot("alpha");
    const beta = await api.createBot("beta");
    const chat = await api.createConversation(alpha.id);
    await api.send(chat.id, "tell beta the report is ready");
    await waitFor(() => fake!.requests.some(afterTool), {
      what: "the sender's call after the tool",
    });
    await roost.kill("SIGKILL");
    holding = false;
    release();
    await roost.start();

    const steps = await api.waitForSteps(chat.id, "reply", 1, 60_000);
    const tools = steps.filter((step) => step.kind === "tool");
    expect(tools).toHaveLength(1);
    const { conversationId } = (tools[0]!.payload as unknown as Api.ToolPayload).details as {
      conversationId: string;
    };
    const thread = await api.waitForSteps(conversationId, "reply", 1, 60_000);
    const messages = thread.filter((step) => step.kind === "message");
    expect(messages).toHaveLength(1);
    expect((messages[0]!.payload as unknown as Api.MessagePayload).source).toEqual({
      kind: "bot",
      fromBotId: alpha.id,
      fromConversationId: chat.id,
      hop: 1,
    });
    const list = await api.call<Api.ConversationList>("GET", `/v1/conversations?botId=${beta.id}`);
    expect(list.conversations).toHaveLength(1);
    // The journaled tool call was not repeated: the model asked for it once.
    expect(
      fake!.requests.filter(
        (request) => !afterTool(request) && !said(request).includes("Message from another bot"),
      ),
    ).toHaveLength(1);
  }, 120_000);
});
