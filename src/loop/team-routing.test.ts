/**
 * LOOP13 (conversation-loop.ts) with a real store: a team bot's turn acts as the route its place
 * and talking person give, and a member removed while their message waited gets an error step and
 * runs nothing (TACC3: a removed member mid-conversation).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { createEventHub } from "../events/index.ts";
import type { InferResult, ModelClient } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import {
  createToolRouter,
  defineToolSource,
  serverTool,
  type ToolCallContext,
} from "../tools/index.ts";
import { runConversation, type LoopDependencies } from "./conversation-loop.ts";
import { createTurnInterrupts } from "./interrupts.ts";

/** Calls `whoami` once, then replies. */
function model(): ModelClient {
  let calls = 0;
  return {
    id: "scripted",
    isDemo: false,
    async infer(): Promise<InferResult> {
      const first = calls++ % 2 === 0;
      return {
        text: first ? "" : "done",
        toolCalls: first ? [{ id: `call-${calls}`, name: "whoami", input: {} }] : [],
        usage: { inputTokens: 1, outputTokens: 1 },
        finishReason: first ? "tool-calls" : "stop",
        model: "scripted",
      };
    },
  };
}

describe("team bot turns (LOOP13)", () => {
  let dir: string;
  let store: Store;
  let owner: string;
  let mate: string;
  let teamId: string;
  let botId: string;
  let seen: Pick<ToolCallContext, "accountId" | "route">[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-loop-teams-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    owner = (await store.createAccount({ name: "olga", isAdmin: false })).id;
    mate = (await store.createAccount({ name: "mia", isAdmin: false })).id;
    teamId = (await store.createTeam({ name: "Ops", ownerAccountId: owner, limit: 50 })).id;
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
    seen = [];
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const deps = (scripted = model()): LoopDependencies => ({
    store,
    events: createEventHub(),
    resolveModel: () => scripted,
    tools: createToolRouter({
      sources: [
        defineToolSource("test", [
          serverTool({
            name: "whoami",
            description: "who the turn acts as",
            input: z.object({}),
            run: async (_input, context) => {
              seen.push({ accountId: context.accountId, route: context.route });
              return { output: context.accountId, isError: false };
            },
          }),
        ]),
      ],
    }),
    followUpWindowMs: 20,
    interrupts: createTurnInterrupts(),
  });

  async function turn(starter: string, place: "direct" | "shared", author: string) {
    const conversation = await store.createConversation({
      accountId: starter,
      botId,
      title: "t",
      place,
    });
    await store.appendMessage({
      conversationId: conversation.id,
      clientMessageId: "m1",
      authorAccountId: author,
      text: "who are you acting as?",
    });
    return conversation.id;
  }

  it("each row acts as its route: the owner, the teammate, the bot's shared computer", async () => {
    for (const [starter, place] of [
      [owner, "direct"],
      [mate, "direct"],
      [mate, "shared"],
    ] as const) {
      const id = await turn(starter, place, starter);
      await runConversation(createMemoryDurable(`inv_${id}`), deps(), id);
    }
    const shared = await store.ensureBotSharedAccount({ botId, botName: "ops" });
    expect(
      seen.map((call) => [call.accountId, call.route?.row, call.route?.talkerAccountId]),
    ).toEqual([
      [owner, "owner", owner],
      [mate, "teammate", mate],
      [shared, "shared", mate],
    ]);
    expect(seen[1]?.route?.approverAccountId).toBe(mate);
    expect(seen[2]?.route?.approverAccountId).toBe(owner);
  });

  it("a member removed while their message waited gets an error step, and nothing runs", async () => {
    const id = await turn(mate, "direct", mate);
    await store.removeTeamMember({ teamId, accountId: mate, actorAccountId: owner });
    await runConversation(createMemoryDurable(), deps(), id);
    expect(seen).toEqual([]);
    const steps = await store.listSteps(id);
    expect(steps.map((step) => step.kind)).toEqual(["message", "error"]);
    expect(String(steps[1]?.payload.message)).toContain("may no longer use this bot");
  });

  it("a shared place's message from someone outside the team runs nothing", async () => {
    const stranger = (await store.createAccount({ name: "otto", isAdmin: false })).id;
    const id = await turn(mate, "shared", stranger);
    await runConversation(createMemoryDurable(), deps(), id);
    expect(seen).toEqual([]);
    expect((await store.listSteps(id)).map((step) => step.kind)).toEqual(["message", "error"]);
  });
});
