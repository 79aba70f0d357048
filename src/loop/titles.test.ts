import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { createEventHub, type ConversationEvent } from "../events/index.ts";
import type { InferRequest, ModelClient } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter } from "../tools/index.ts";
import { runConversation } from "./conversation-loop.ts";
import { createTurnInterrupts } from "./interrupts.ts";
import {
  cleanTitle,
  createTitleHook,
  defaultConversationTitle,
  ruleTitle,
  titleFirstMessage,
} from "./titles.ts";

describe("title rules (TTL2)", () => {
  it("never keeps the shell prompt, quotes, markdown or a full stop", () => {
    expect(ruleTitle("$ ls -la /workspace")).toBe("Run ls -la /workspace");
    expect(ruleTitle("  \n**how** do I boil an egg?\nmore text")).toBe("How do I boil an egg?");
    expect(ruleTitle("")).toBe("New chat");
    expect(cleanTitle('"Boiling eggs."')).toBe("Boiling eggs");
    expect(cleanTitle("Title: Egg timing\nextra")).toBe("Egg timing");
  });
  it("cuts a long line at a word, within 60 characters", () => {
    const title = ruleTitle("please ".repeat(30));
    expect(title.length).toBeLessThanOrEqual(60);
    expect(title.endsWith("please…")).toBe(true);
  });
});

describe("titles of a conversation (TTL1, TTL3)", () => {
  let dir: string;
  let store: Store;
  let accountId: string;
  let botId: string;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-titles-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    accountId = (await store.createAccount({ name: "ada", isAdmin: false })).id;
    botId = (await store.createBot({ accountId, name: "Echo", instructions: "", model: "x:y" })).id;
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const model = (answer: (request: InferRequest) => string): ModelClient & { calls: number } => {
    const client = {
      id: "scripted",
      isDemo: false,
      calls: 0,
      async infer(request: InferRequest) {
        client.calls++;
        return {
          text: answer(request),
          toolCalls: [],
          usage: { inputTokens: 1, outputTokens: 1 },
          finishReason: "stop" as const,
          model: "scripted",
        };
      },
    };
    return client;
  };
  async function talk(title: string, client: ModelClient) {
    const conversation = await store.createConversation({ accountId, botId, title });
    const sent = await store.appendMessage({
      conversationId: conversation.id,
      clientMessageId: "m1",
      authorAccountId: accountId,
      text: "$ uname -a",
    });
    await titleFirstMessage(store, conversation.id, sent.message.text);
    const events: ConversationEvent[] = [];
    const hub = createEventHub();
    hub.subscribe(conversation.id, (event) => events.push(event));
    await runConversation(
      createMemoryDurable(`inv_${title}`),
      {
        store,
        events: hub,
        resolveModel: () => client,
        tools: createToolRouter({ sources: [] }),
        followUpWindowMs: 10,
        interrupts: createTurnInterrupts(),
        afterTurn: [createTitleHook({ store, events: hub, resolveModel: () => client })],
      },
      conversation.id,
    );
    return { conversation: (await store.getConversation(conversation.id))!, events };
  }

  it("the rule's title at once, then the model's after its first reply", async () => {
    const client = model((request) =>
      request.system.startsWith("Write a title") ? '"Kernel version check."' : "Linux 6.1",
    );
    const { conversation, events } = await talk(defaultConversationTitle("Echo"), client);
    expect(conversation.title).toBe("Kernel version check");
    expect(events).toContainEqual({
      type: "renamed",
      conversationId: conversation.id,
      title: "Kernel version check",
    });
  });

  it("a title a person chose is never replaced", async () => {
    const client = model(() => "Something else");
    const { conversation } = await talk("My own title", client);
    expect(conversation.title).toBe("My own title");
    expect(client.calls).toBe(1); // the reply only: no title request
  });

  it("a failed title request keeps the rule's title (TTL3)", async () => {
    let calls = 0;
    const client: ModelClient = {
      id: "flaky",
      isDemo: false,
      async infer() {
        if (calls++ > 0) throw new Error("provider down");
        return {
          text: "ok",
          toolCalls: [],
          usage: { inputTokens: 1, outputTokens: 1 },
          finishReason: "stop",
          model: "flaky",
        };
      },
    };
    const { conversation } = await talk(defaultConversationTitle("Echo"), client);
    expect(conversation.title).toBe("Run uname -a");
  });
});
