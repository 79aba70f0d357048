/**
 * Helper start to its first model call (issue 15 §1, docs/helpers.md): a Roost child process
 * with its embedded Restate and a fake OpenAI-compatible model on 127.0.0.1. Each sample: the
 * parent's model answers a start_helper call; the time runs from that answer leaving the fake to
 * the helper's first model request reaching it (the tool step, the helper's conversation and
 * task message, its loop's start and its prompt). A second figure: to the helper's result stored
 * in the parent (the helper answers at once).
 *   node bench/helpers.ts [samples=30]
 */
import {
  startFakeOpenAiServer,
  type FakeOpenAiReply,
  type FakeOpenAiRequest,
} from "../src/models/testing/index.ts";
import type { Api } from "../src/protocol/index.ts";
import { waitFor } from "../test/support/wait.ts";
import { startBenchRoost, summarize } from "./support.ts";

const samples = Number(process.argv[2] ?? 30);
let startedAt = 0;
const firstCall: number[] = [];
const fake = await startFakeOpenAiServer((request: FakeOpenAiRequest): FakeOpenAiReply => {
  const messages = request.body?.messages ?? [];
  const system = JSON.stringify(messages.filter((message) => message.role === "system"));
  if (system.includes("# You are a helper")) {
    const users = messages.filter((message) => message.role === "user").length;
    if (users === 1 && messages.at(-1)?.role === "user")
      firstCall.push(performance.now() - startedAt);
    return { type: "completion", textChunks: ["done"] };
  }
  const last = messages.at(-1);
  if (last?.role === "user" && JSON.stringify(last.content).includes("go ")) {
    startedAt = performance.now();
    return {
      type: "completion",
      toolCalls: [{ name: "start_helper", arguments: { task: "answer at once" } }],
    };
  }
  return { type: "completion", textChunks: ["ok"] };
});
const { roost, api } = await startBenchRoost({
  ROOST_MODEL: "openai-compatible:fake-model",
  ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
  ROOST_MEMORY_PASS: "off",
  ROOST_FOLLOW_UP_WINDOW_MS: "60000",
});
try {
  const bot = await api.createBot("bench");
  const toResult: number[] = [];
  for (let index = 0; index < samples + 3; index++) {
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, `go ${index}`);
    await waitFor(
      async () =>
        (await api.steps(conversation.id)).some(
          (step) =>
            step.kind === "message" &&
            (step.payload as unknown as Api.MessagePayload).source?.kind === "helper",
        ),
      { intervalMs: 25, timeoutMs: 30_000, what: "the helper's result" },
    );
    if (index >= 3) toResult.push(performance.now() - startedAt);
  }
  console.log(
    summarize(
      "helper start → its first model call (start_helper answered → request)",
      firstCall.slice(3),
    ),
  );
  console.log(
    summarize("helper start → its result stored in the parent (polled every 25 ms)", toResult),
  );
} finally {
  await roost.stop();
  await fake.close();
}
