/**
 * Memory scopes of a team bot (docs/teams.md "Memory"; MEMT1–MEMT3) through the real loop, the
 * real memory tool and the prompt's memory section on a real store: the team memory is written
 * only when someone says the whole team should know; otherwise facts are the talking person's
 * private notes; every change carries who and where, and its revision shows the scope.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { createEventHub } from "../events/index.ts";
import { createTurnInterrupts, runConversation, type LoopDependencies } from "../loop/index.ts";
import type { InferRequest, InferResult, ModelClient } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter } from "../tools/index.ts";
import { createLexicalRanker } from "./ranker.ts";
import { createMemorySection } from "./section.ts";
import { createMemoryService } from "./service.ts";
import { runMemoryPass } from "./pass.ts";
import { createDemoModel } from "../models/index.ts";
import { createMemoryTools } from "./tool.ts";

/** Calls `memory` with `input` once, then replies; records every request's system prompt. */
function model(input: Record<string, unknown> | undefined, prompts: string[]): ModelClient {
  let calls = 0;
  return {
    id: "scripted",
    isDemo: false,
    async infer(request: InferRequest): Promise<InferResult> {
      prompts.push(request.system);
      const call = input !== undefined && calls++ === 0;
      return {
        text: call ? "" : "ok",
        toolCalls: call ? [{ id: `call-${prompts.length}`, name: "memory", input }] : [],
        usage: { inputTokens: 1, outputTokens: 1 },
        finishReason: call ? "tool-calls" : "stop",
        model: "scripted",
      };
    },
  };
}

describe("team bot memory (MEMT1–MEMT3)", () => {
  let dir: string;
  let store: Store;
  let owner: string;
  let mate: string;
  let botId: string;
  let prompts: string[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-team-memory-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    owner = (await store.createAccount({ name: "olga", isAdmin: false })).id;
    mate = (await store.createAccount({ name: "mia", isAdmin: false })).id;
    const teamId = (await store.createTeam({ name: "Ops", ownerAccountId: owner, limit: 50 })).id;
    await store.putTeamMember({ teamId, accountId: mate, role: "member", actorAccountId: owner });
    botId = (
      await store.createBot({
        accountId: owner,
        name: "ops",
        instructions: "",
        model: null,
        teamId,
      })
    ).id;
    prompts = [];
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function say(
    person: string,
    text: string,
    memory?: Record<string, unknown>,
    place: "direct" | "shared" = "direct",
  ) {
    const conversation = await store.createConversation({
      accountId: person,
      botId,
      title: "t",
      place,
    });
    await store.appendMessage({
      conversationId: conversation.id,
      clientMessageId: "m",
      authorAccountId: person,
      text,
    });
    const scripted = model(memory, prompts);
    const deps: LoopDependencies = {
      store,
      events: createEventHub(),
      resolveModel: () => scripted,
      tools: createToolRouter({ sources: [createMemoryTools(createMemoryService(store), store)] }),
      promptSections: [createMemorySection({ store, ranker: createLexicalRanker(store) })],
      followUpWindowMs: 20,
      interrupts: createTurnInterrupts(),
    };
    // Step ids derive from the invocation id (LOOP2): one per conversation, as the engine gives.
    await runConversation(createMemoryDurable(`inv_${conversation.id}`), deps, conversation.id);
    const tool = (await store.listSteps(conversation.id)).find((step) => step.kind === "tool");
    return {
      conversationId: conversation.id,
      output: (tool?.payload as { output?: string } | undefined)?.output ?? "",
    };
  }

  it("MEMT2: a teammate's facts are their private notes, unseen in the owner's chat", async () => {
    const saved = await say(mate, "remember that I prefer tabs", {
      action: "add",
      tier: "profile",
      text: "Mia prefers tabs",
    });
    expect(saved.output).toMatch(/^Saved profile fact/);
    const facts = await store.listMemoryFacts({ accountId: mate, botId, tiers: ["profile"] });
    expect(facts.map((fact) => fact.text)).toEqual(["Mia prefers tabs"]);
    expect(await store.listMemoryFacts({ accountId: owner, botId })).toEqual([]);
    prompts.length = 0;
    await say(owner, "hello");
    expect(prompts.join("\n")).not.toContain("Mia prefers tabs");
    prompts.length = 0;
    await say(mate, "hello again");
    expect(prompts.join("\n")).toContain("Mia prefers tabs");
    const [revision] = await store.listMemoryRevisions({ accountId: mate, botId });
    expect(revision).toMatchObject({ tier: "profile", byAccountId: mate });
  });

  it("MEMT1: the team memory is refused unless someone says the whole team should know", async () => {
    const refused = await say(mate, "the deploy is on Fridays", {
      action: "add",
      tier: "team",
      text: "Deploys happen on Fridays",
    });
    expect(refused.output).toContain("only when the person you talk to says the whole team");
    expect(await store.listMemoryFacts({ accountId: owner, botId, tiers: ["team"] })).toEqual([]);

    const asked = await say(mate, "The whole team should know: deploys are on Fridays", {
      action: "add",
      tier: "team",
      text: "Deploys happen on Fridays",
    });
    expect(asked.output).toMatch(/^Saved team fact/);
    const team = await store.listMemoryFacts({ accountId: owner, botId, tiers: ["team"] });
    expect(team.map((fact) => fact.text)).toEqual(["Deploys happen on Fridays"]);
    // Provenance and scope: who asked, in which conversation, as the team's.
    const [revision] = await store.listMemoryRevisions({ accountId: owner, botId });
    expect(revision).toMatchObject({
      tier: "team",
      byAccountId: mate,
      conversationId: asked.conversationId,
    });
    // Everyone who talks to the bot reads it, in their own chats and in shared places.
    prompts.length = 0;
    await say(owner, "hi");
    await say(mate, "hi", undefined, "shared");
    for (const prompt of prompts.filter((text) => text.includes("# Memory")))
      expect(prompt).toContain('Team memory (tier "team"');
    expect(prompts.join("\n")).toContain("Deploys happen on Fridays");
  });

  it("MEMT1: a bot that is not a team bot has no team memory", async () => {
    const own = await store.createBot({
      accountId: owner,
      name: "solo",
      instructions: "",
      model: null,
    });
    botId = own.id;
    const refused = await say(owner, "the whole team should know this", {
      action: "add",
      tier: "team",
      text: "x",
    });
    expect(refused.output).toContain("only when");
    expect(await store.listMemoryFacts({ accountId: owner, botId, tiers: ["team"] })).toEqual([]);
  });

  it("MEMT2: in a shared place the memory tool writes the talking person's private notes", async () => {
    await say(mate, "note this", { action: "add", tier: "note", text: "Mia is on call" }, "shared");
    expect(
      (await store.listMemoryFacts({ accountId: mate, botId, tiers: ["note"] })).map((f) => f.text),
    ).toEqual(["Mia is on call"]);
    const shared = await store.ensureBotSharedAccount({ botId, botName: "ops" });
    expect(await store.listMemoryFacts({ accountId: shared, botId })).toEqual([]);
  });

  it("MEMT3: the post-turn pass remembers nothing on its own in a shared place", async () => {
    const pass = async (place: "direct" | "shared") => {
      const { conversationId } = await say(
        mate,
        "I am Mia and I work on billing",
        undefined,
        place,
      );
      return runMemoryPass(
        createMemoryDurable(`pass_${conversationId}`),
        {
          store,
          memory: createMemoryService(store),
          ranker: createLexicalRanker(store),
          resolveModel: () => createDemoModel(),
        },
        { accountId: mate, botId, conversationId, turnId: "t", fromSeq: 1, toSeq: 10 },
      );
    };
    expect(await pass("shared")).toEqual({ applied: 0, proposed: 0, skipped: [] });
    expect(await store.listMemoryFacts({ accountId: mate, botId: null })).toEqual([]);
    // The same words in the person's own chat are remembered (the demo pass keeps a log entry).
    expect((await pass("direct")).applied).toBeGreaterThan(0);
  });
});
