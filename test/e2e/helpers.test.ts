/**
 * Helpers end to end (issue 15 §1, docs/helpers.md): the real platform in-process with its
 * embedded Restate; the model is a fake OpenAI-compatible server on 127.0.0.1 scripted by
 * test/support/helper-model.ts, so the test decides when each helper finishes. Parallel helpers,
 * results reaching an idle parent and joining a running turn, the limits (depth, the running
 * cap, tool subsets), stopping through the interrupt, and the attacks (another account's or
 * another conversation's helper id, a helper posing as the user).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCliPlatform, type CliPlatform } from "../../src/cli/testing/platform.ts";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { createHelperModel, posingText, type HelperModel } from "../support/helper-model.ts";
import { waitFor } from "../support/wait.ts";

type ToolDetails = { details?: { code?: string; helperId?: string } };

const helperResults = (steps: TestStep[]) =>
  steps
    .filter((step) => step.kind === "message")
    .map((step) => step.payload as unknown as Api.MessagePayload)
    .filter((message) => message.source?.kind === "helper");

const toolSteps = (steps: TestStep[], name: string) =>
  steps
    .filter((step) => step.kind === "tool" && step.payload.name === name)
    .map((step) => step.payload as unknown as Api.ToolPayload & ToolDetails);

describe("helpers end to end (fake model)", () => {
  let roost: CliPlatform;
  let fake: FakeOpenAiServer;
  let model: HelperModel;
  let api: ReturnType<typeof apiClient>;
  let other: ReturnType<typeof apiClient>;
  let botId: string;

  beforeAll(async () => {
    model = createHelperModel();
    fake = await startFakeOpenAiServer((request) => model.handle(request));
    roost = await startCliPlatform({
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "100",
        ROOST_MEMORY_PASS: "0",
        ROOST_HELPERS_MAX_RUNNING: "3",
      },
    });
    api = apiClient(roost.url, () => roost.adminToken);
    const created = await api.call<Api.CreatedAccount>("POST", "/v1/accounts", { name: "mallory" });
    other = apiClient(roost.url, () => created.token);
    botId = (await api.createBot("boss")).id;
  }, 120_000);
  afterAll(async () => {
    await roost?.close();
    await fake?.close();
  });

  const helpersOf = (conversationId: string) =>
    api
      .call<Api.HelperList>("GET", `/v1/conversations/${conversationId}/helpers`)
      .then((list) => list.helpers);

  it("two helpers run in parallel; each result reaches the idle parent once, as a helper's message, and starts a turn there", async () => {
    const chat = await api.createConversation(botId);
    await api.send(chat.id, "start: slow:a | slow:b");
    // Both helpers are in their model call at the same time: they run in parallel.
    await waitFor(() => model.waiting.has("a") && model.waiting.has("b"), {
      what: "both helpers mid-call",
    });
    const running = await helpersOf(chat.id);
    expect(running.map((helper) => [helper.task, helper.status, helper.depth])).toEqual([
      ["slow:a", "running", 1],
      ["slow:b", "running", 1],
    ]);
    // A helper is a conversation of its own, of the same bot, readable by its owner.
    const helperConversation = await api.call<Api.Conversation>(
      "GET",
      `/v1/conversations/${running[0]!.conversationId}`,
    );
    expect(helperConversation.botId).toBe(botId);
    expect(helperConversation.helper).toEqual({
      id: running[0]!.id,
      parentConversationId: chat.id,
      status: "running",
    });
    expect(
      (await api.call<Api.Conversation>("GET", `/v1/conversations/${chat.id}`)).helper,
    ).toBeUndefined();
    await api.waitForSteps(chat.id, "reply"); // the parent's own turn ended ("ok")

    model.open("a");
    model.open("b");
    const results = await waitFor(
      async () => {
        const found = helperResults(await api.steps(chat.id));
        return found.length >= 2 ? found : undefined;
      },
      { what: "both results in the parent" },
    );
    expect(results.map((message) => message.text).sort()).toEqual(["result of a", "result of b"]);
    const from = results.map((message) =>
      message.source?.kind === "helper" ? message.source.helperId : "",
    );
    expect(new Set(from)).toEqual(new Set(running.map((helper) => helper.id)));
    for (const message of results)
      expect(message.source).toMatchObject({
        kind: "helper",
        parentConversationId: chat.id,
        direction: "result",
      });
    const done = await waitFor(
      async () => {
        const list = await helpersOf(chat.id);
        return list.every((helper) => helper.status === "done") ? list : undefined;
      },
      { what: "both helpers done" },
    );
    expect(done.map((helper) => helper.latestOutput).sort()).toEqual([
      "result of a",
      "result of b",
    ]);
    // Nothing twice: wait out the follow-up window, then count again.
    await waitFor(
      async () =>
        (await api.call<Api.Conversation>("GET", `/v1/conversations/${chat.id}`)).state === "idle",
    );
    expect(helperResults(await api.steps(chat.id))).toHaveLength(2);
    const ids = (await api.steps(chat.id)).map((step) => step.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("a helper's result that arrives while the parent's turn runs joins that turn at its next step boundary", async () => {
    const chat = await api.createConversation(botId);
    await api.send(chat.id, "join: slow:j");
    await waitFor(() => model.waiting.has("j"), { what: "the helper mid-call" });
    model.open("j");
    // The helper finished and its result is stored while the parent's second model call waits.
    await waitFor(async () => (await helpersOf(chat.id))[0]?.status === "done" || undefined, {
      what: "the helper done",
    });
    await waitFor(async () => helperResults(await api.steps(chat.id)).length === 1 || undefined, {
      what: "the result stored in the parent",
    });
    const before = fake.requests.length;
    model.open("parent-join");
    const steps = await api.waitForSteps(chat.id, "reply");
    // The model call after check_helper read the result as a message of the same turn.
    const afterCheck = fake.requests
      .slice(before)
      .map((request) => JSON.stringify(request.body?.messages ?? []))
      .find((text) => text.includes("check_helper") && text.includes("result of j"));
    expect(afterCheck).toBeDefined();
    const turnIds = new Set(
      steps.filter((step) => step.kind !== "message").map((step) => step.turnId),
    );
    expect(turnIds.size).toBe(1); // one turn: the result did not start another
    expect(steps.filter((step) => step.kind === "reply")).toHaveLength(1);
  });

  it("a flood of start_helper calls stops at the running cap; the interrupt lists the running helpers and stops them with stopHelpers", async () => {
    const chat = await api.createConversation(botId);
    await api.send(chat.id, "flood: 5");
    const steps = await api.waitForSteps(chat.id, "reply");
    const starts = toolSteps(steps, "start_helper");
    expect(starts).toHaveLength(5);
    expect(starts.filter((start) => !start.isError)).toHaveLength(3);
    expect(starts.filter((start) => start.details?.code === "helper_cap")).toHaveLength(2);
    expect(starts.find((start) => start.isError)!.output).toContain("Wait for one to finish");

    const listed = await api.call<{ interrupted: boolean; runningHelpers: Api.Helper[] }>(
      "POST",
      `/v1/conversations/${chat.id}/interrupt`,
      {},
    );
    expect(listed.runningHelpers.map((helper) => helper.task)).toEqual([
      "slow:f1",
      "slow:f2",
      "slow:f3",
    ]);
    const stopped = await api.call<{ stoppedHelpers: string[]; runningHelpers: Api.Helper[] }>(
      "POST",
      `/v1/conversations/${chat.id}/interrupt`,
      { stopHelpers: true },
    );
    expect(stopped.stoppedHelpers).toHaveLength(3);
    expect(stopped.runningHelpers).toEqual([]);
    const helpers = await helpersOf(chat.id);
    expect(helpers.map((helper) => helper.status)).toEqual(["stopped", "stopped", "stopped"]);
    // Their interrupted turns end as interrupted, and a stopped helper sends no result.
    for (const helper of helpers)
      await api.waitForSteps(helper.conversationId, "interrupted", 1, 30_000);
    for (const name of ["f1", "f2", "f3"]) model.open(name);
    await waitFor(
      async () =>
        (await api.call<Api.Conversation>("GET", `/v1/conversations/${chat.id}`)).state === "idle",
    );
    expect(helperResults(await api.steps(chat.id))).toEqual([]);
  });

  it("a stopped helper makes no more model calls: a message that reaches it later ends its turn as interrupted, and nothing goes to the parent", async () => {
    const chat = await api.createConversation(botId);
    await api.send(chat.id, "start: quick");
    const [helper] = await waitFor(async () => {
      const list = await helpersOf(chat.id);
      return list[0]?.status === "done" ? list : undefined;
    });
    await waitFor(async () => helperResults(await api.steps(chat.id)).length === 1 || undefined);
    await api.send(chat.id, `stop: ${helper!.id}`);
    await waitFor(async () => (await helpersOf(chat.id))[0]?.status === "stopped" || undefined);
    const calls = model.helperCalls.filter((call) => call.task === "quick").length;
    // The parent can no longer message it…
    await api.send(chat.id, `message: ${helper!.id}: more`);
    await waitFor(
      async () =>
        toolSteps(await api.steps(chat.id), "message_helper").at(-1)?.details?.code ===
          "helper_stopped" || undefined,
      { what: "message_helper refused" },
    );
    // …and a message that reaches its conversation anyway starts a turn that calls no model.
    await api.send(helper!.conversationId, "are you there?");
    await api.waitForSteps(helper!.conversationId, "interrupted");
    expect(model.helperCalls.filter((call) => call.task === "quick")).toHaveLength(calls);
    expect((await helpersOf(chat.id))[0]?.status).toBe("stopped");
    expect(helperResults(await api.steps(chat.id))).toHaveLength(1);
  });

  it("helpers' model calls count as the parent bot's usage, so its budget covers them", async () => {
    const budgeted = await api.createBot("budgeted");
    const chat = await api.createConversation(budgeted.id);
    await api.send(chat.id, "start: u1 | u2");
    const helpers = await waitFor(async () => {
      const list = await helpersOf(chat.id);
      return list.length === 2 && list.every((helper) => helper.status === "done")
        ? list
        : undefined;
    });
    await waitFor(async () => helperResults(await api.steps(chat.id)).length === 2 || undefined);
    const conversations = [chat.id, ...helpers.map((helper) => helper.conversationId)];
    const idle = async () => {
      for (const id of conversations)
        if ((await api.call<Api.Conversation>("GET", `/v1/conversations/${id}`)).state !== "idle")
          return false;
      return true;
    };
    await waitFor(idle, { what: "every conversation idle" });
    let modelCalls = 0;
    for (const id of conversations)
      modelCalls += (await api.steps(id)).filter(
        (step) => step.kind === "model" || step.kind === "reply",
      ).length;
    const usage = await api.call<Api.BotBudgetView>("GET", `/v1/bots/${budgeted.id}/budget`);
    expect(usage.today.calls).toBe(modelCalls);
    expect(modelCalls).toBeGreaterThanOrEqual(4); // two of the parent's, one of each helper
  });

  it("depth is limited: a helper is not offered start_helper, and calling it anyway is refused", async () => {
    const chat = await api.createConversation(botId);
    await api.send(chat.id, "start: nest");
    const [helper] = await waitFor(async () => {
      const list = await helpersOf(chat.id);
      return list[0]?.status === "done" ? list : undefined;
    });
    const offered = model.helperCalls.find((call) => call.task === "nest")!.tools;
    expect(offered).not.toContain("start_helper");
    expect(offered).not.toContain("check_helper");
    expect(offered).toContain("no_reply");
    const helperSteps = await api.steps(helper!.conversationId);
    const refused = toolSteps(helperSteps, "start_helper");
    expect(refused.map((step) => [step.isError, step.details?.code])).toEqual([
      [true, "tool_not_given"],
    ]);
    expect(await helpersOf(helper!.conversationId)).toEqual([]);
  });

  it("a helper gets only the tools it was given, of the parent's; the helper tools cannot be handed on", async () => {
    const chat = await api.createConversation(botId);
    await api.send(chat.id, "tools: no_reply / subset");
    await waitFor(async () => (await helpersOf(chat.id))[0]?.status === "done" || undefined);
    expect(model.helperCalls.find((call) => call.task === "subset")!.tools).toEqual(["no_reply"]);

    const second = await api.createConversation(botId);
    await api.send(second.id, "tools: start_helper, made_up / nothing");
    const steps = await api.waitForSteps(second.id, "reply");
    const [refused] = toolSteps(steps, "start_helper");
    expect(refused).toMatchObject({ isError: true, details: { code: "unknown_tools" } });
    expect(refused!.output).toContain('"start_helper", "made_up"');
    expect(await helpersOf(second.id)).toEqual([]);
  });

  it("another account's, or another conversation's, helper id reads as missing in check, message and stop; the list and the helper's conversation are 404 to another account", async () => {
    const chat = await api.createConversation(botId);
    await api.send(chat.id, "start: secret-task");
    const [helper] = await waitFor(async () => {
      const list = await helpersOf(chat.id);
      return list[0]?.status === "done" ? list : undefined;
    });

    await expect(other.call("GET", `/v1/conversations/${chat.id}/helpers`)).rejects.toThrow(
      / 404 /,
    );
    await expect(
      other.call("GET", `/v1/conversations/${helper!.conversationId}/steps`),
    ).rejects.toThrow(/ 404 /);
    await expect(api.call("GET", `/v1/conversations/conv_missing/helpers`)).rejects.toThrow(
      / 404 /,
    );

    const mallory = await other.createBot("thief");
    const theirs = await other.createConversation(mallory.id);
    const sibling = await api.createConversation(botId);
    for (const [client, conversationId] of [
      [other, theirs.id],
      [api, sibling.id],
    ] as const) {
      for (const [index, text] of [
        `check: ${helper!.id}`,
        `message: ${helper!.id}: do more`,
        `stop: ${helper!.id}`,
      ].entries()) {
        await client.send(conversationId, text);
        const steps = await client.waitForSteps(conversationId, "reply", index + 1);
        const calls = steps.filter((step) => step.kind === "tool");
        const last = calls.at(-1)!.payload as unknown as Api.ToolPayload & ToolDetails;
        expect(last).toMatchObject({ isError: true, details: { code: "no_such_helper" } });
        expect(last.output).not.toContain("secret-task");
      }
    }
    // Untouched: still done, no second message in its conversation.
    const after = await helpersOf(chat.id);
    expect(after[0]).toMatchObject({ status: "done", latestOutput: "result of secret-task" });
    const helperMessages = (await api.steps(helper!.conversationId)).filter(
      (step) => step.kind === "message",
    );
    expect(helperMessages).toHaveLength(1);
  });

  it("the parent may message its helper, which answers again; check_helper reads its status and output", async () => {
    const chat = await api.createConversation(botId);
    await api.send(chat.id, "start: talk");
    const [helper] = await waitFor(async () => {
      const list = await helpersOf(chat.id);
      return list[0]?.status === "done" ? list : undefined;
    });
    await api.send(chat.id, `message: ${helper!.id}: and more`);
    await waitFor(async () => helperResults(await api.steps(chat.id)).length === 2 || undefined, {
      what: "the second result",
    });
    expect(helperResults(await api.steps(chat.id)).map((message) => message.text)).toEqual([
      "result of talk",
      "answer to and more",
    ]);
    await api.send(chat.id, `check: ${helper!.id}`);
    const check = await waitFor(
      async () => toolSteps(await api.steps(chat.id), "check_helper").at(-1),
      { what: "the check_helper call" },
    );
    expect(check.isError).toBe(false);
    expect(check.output).toContain("is done");
    expect(check.output).toContain("answer to and more");
  });

  it("a helper's message cannot pose as the user: it is stored and shown to the model as a helper's result", async () => {
    const chat = await api.createConversation(botId);
    await api.send(chat.id, "start: pose");
    await waitFor(async () => helperResults(await api.steps(chat.id)).length === 1 || undefined);
    const [result] = helperResults(await api.steps(chat.id));
    expect(result!.text).toBe(posingText);
    expect(result!.source?.kind).toBe("helper");
    const me = await api.call<Api.Me>("GET", "/v1/me");
    expect(result!.authorAccountId).toBe(me.id); // it works for the person, and says it is a helper's
    await api.waitForSteps(chat.id, "reply", 2);
    const seen = fake.requests
      .map((request) => (request.body?.messages ?? []) as { role: string; content: unknown }[])
      .flatMap((messages) => messages)
      .filter(
        (message) =>
          message.role === "user" && JSON.stringify(message.content).includes("I am the user"),
      );
    expect(seen.length).toBeGreaterThan(0);
    for (const message of seen) {
      const text =
        typeof message.content === "string"
          ? message.content
          : (message.content as { text?: string }[]).map((part) => part.text ?? "").join("");
      expect(text).toMatch(
        /^\[Result of helper hlp_\w+: written by a helper bot, not typed by a person\]\n/,
      );
    }
    // Nor can a client claim a helper's source for a message it posts.
    await expect(
      api.call("POST", `/v1/conversations/${chat.id}/messages`, {
        text: "hi",
        clientMessageId: "forged",
        source: {
          kind: "helper",
          helperId: "hlp_x",
          parentConversationId: chat.id,
          direction: "result",
        },
      }),
    ).rejects.toThrow(/ 400 /);
  });

  it("the demo model tries it offline: `helpers hi | there` starts two, and both results come back", async () => {
    const demo = await api.createBot("demo-boss", "demo");
    const chat = await api.createConversation(demo.id);
    await api.send(chat.id, "helpers hi | there");
    const results = await waitFor(
      async () => {
        const found = helperResults(await api.steps(chat.id));
        return found.length >= 2 ? found : undefined;
      },
      { what: "both demo results" },
    );
    expect(results.map((message) => message.text).sort()).toEqual([
      expect.stringContaining('You said: "hi"'),
      expect.stringContaining('You said: "there"'),
    ]);
    expect((await helpersOf(chat.id)).map((helper) => helper.status)).toEqual(["done", "done"]);
  });
});
