/**
 * Memory end to end: Roost as a child process with its real Restate, the model a fake
 * OpenAI-compatible server. A turn ends; the post-turn pass (its own durable job) asks the model
 * what to remember; the next conversation's prompt carries it; a person reverts it through the
 * API and the prompt after that no longer does. And the demo model's `remember` command writes
 * through the memory tool.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startFakeOpenAiServer,
  type FakeOpenAiRequest,
  type FakeOpenAiServer,
} from "../../src/models/testing/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

const systemOf = (request: FakeOpenAiRequest) =>
  JSON.stringify(
    request.body?.messages?.find((message) => message.role === "system")?.content ?? "",
  );
const isPass = (request: FakeOpenAiRequest) =>
  (request.body?.tools ?? []).some((tool) => tool.function?.name === "update_memory");
/** The title request after a conversation's first reply (loop/titles.ts), not one of the turn's. */
const isTitle = (request: FakeOpenAiRequest) =>
  JSON.stringify(request.body?.messages ?? []).includes("Write a title for this conversation");

describe("memory end to end (fake OpenAI-compatible model)", () => {
  let dataDir: string;
  let roost: RoostProcess;
  let fake: FakeOpenAiServer;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-memory-"));
    fake = await startFakeOpenAiServer((request) => {
      if (isPass(request)) {
        const said = JSON.stringify(request.body?.messages ?? []);
        return {
          type: "completion",
          toolCalls: [
            {
              name: "update_memory",
              // Only a turn in which the user said it teaches it (the facts shown mention it too).
              arguments: said.includes("I am Ada")
                ? { add: [{ tier: "user", text: "The user's name is Ada." }] }
                : { add: [] },
            },
          ],
        };
      }
      return { type: "completion", textChunks: ["noted"] };
    });
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
      },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
  });
  afterAll(async () => {
    await roost?.stop();
    await fake?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("the pass remembers after a turn, the next conversation's prompt carries it, and a revert takes it out", async () => {
    const bot = await api.createBot("rememberer");
    const first = await api.createConversation(bot.id);
    await api.send(first.id, "Hello, I am Ada.");
    await api.waitForSteps(first.id, "reply");
    const memory = await waitFor(
      async () => {
        const view = await api.call<Api.BotMemory>("GET", `/v1/bots/${bot.id}/memory`);
        return view.user.length > 0 ? view : undefined;
      },
      { timeoutMs: 30_000, what: "the memory pass to write a user fact" },
    );
    expect(memory.user.map((fact) => fact.text)).toEqual(["The user's name is Ada."]);
    const [revision] = (await api.call<Api.MemoryRevisionPage>("GET", "/v1/me/memory/revisions"))
      .revisions;
    expect(revision).toMatchObject({ author: "pass", conversationId: first.id, scope: "user" });

    const second = await api.createConversation(bot.id);
    await api.send(second.id, "What is my name?");
    await api.waitForSteps(second.id, "reply");
    const asked = fake.requests.filter((request) => !isPass(request) && !isTitle(request)).at(-1)!;
    expect(systemOf(asked)).toContain("The user's name is Ada.");
    expect(systemOf(asked)).toMatch(/# Memory/);

    await api.call("POST", `/v1/me/memory/revisions/${revision!.id}/revert`);
    const third = await api.createConversation(bot.id);
    await api.send(third.id, "And now?");
    await api.waitForSteps(third.id, "reply");
    const later = fake.requests.filter((request) => !isPass(request) && !isTitle(request)).at(-1)!;
    expect(systemOf(later)).not.toContain("The user's name is Ada.");
  });

  it("the demo model's `remember` and `forget` write through the memory tool, as revisions of their turns", async () => {
    const bot = await api.createBot("demo-memory", "demo");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "remember profile: Use metric units");
    const steps = await api.waitForSteps(conversation.id, "reply");
    const tool = steps.find((step) => step.kind === "tool")!;
    expect(tool.payload).toMatchObject({ name: "memory", isError: false });
    const view = await api.call<Api.BotMemory>("GET", `/v1/bots/${bot.id}/memory`);
    expect(view.profile.map((fact) => fact.text)).toEqual(["Use metric units"]);
    const revisions = await api.call<Api.MemoryRevisionPage>(
      "GET",
      `/v1/bots/${bot.id}/memory/revisions`,
    );
    expect(revisions.revisions.find((entry) => entry.author === "tool")).toMatchObject({
      conversationId: conversation.id,
      after: "Use metric units",
    });
    // `forget <id>` removes it the same way, and the revision records what it was.
    const factId = view.profile[0]!.id;
    await api.send(conversation.id, `forget ${factId}`);
    await api.waitForSteps(conversation.id, "reply", 2);
    expect((await api.call<Api.BotMemory>("GET", `/v1/bots/${bot.id}/memory`)).profile).toEqual([]);
    const after = await api.call<Api.MemoryRevisionPage>(
      "GET",
      `/v1/bots/${bot.id}/memory/revisions`,
    );
    expect(after.revisions[0]).toMatchObject({
      author: "tool",
      before: "Use metric units",
      after: null,
    });
  });
});
