/**
 * The approvals service in durable code (APR1–APR7), on a real SQLite store and the in-memory
 * durable context (engine/testing), whose journal shows what was waited on and can be replayed.
 * The same hooks against a real Restate: test/e2e/approvals.test.ts and
 * test/faults/approval-kill.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable, type MemoryDurable } from "../engine/testing/index.ts";
import { createEventHub } from "../events/index.ts";
import { createScriptedModel } from "../models/testing/index.ts";
import type { NotificationInput } from "../notifications/index.ts";
import { openStore, type Store } from "../store/index.ts";
import type { ToolCallRequest } from "../tools/index.ts";
import { createApprovals, type ApprovalsService } from "./approvals.ts";

let dir: string;
let store: Store;
let now: number;
let notified: NotificationInput[];
let releaseFails: boolean;
let durable: MemoryDurable | undefined;
let approvals: ApprovalsService;
let request: Omit<ToolCallRequest, "durable">;
let ownerId: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-approvals-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  now = Date.UTC(2026, 11, 1, 12);
  notified = [];
  releaseFails = false;
  approvals = createApprovals({
    store,
    events: createEventHub(),
    notifier: { notify: async (notification) => void notified.push(notification) },
    release: async (waiterId, value) => {
      if (releaseFails) throw new Error("engine unavailable");
      durable?.resolveExternal(waiterId, value);
    },
    resolveModel: () => createScriptedModel([{ text: '{"decision":"allow","reason":"fine"}' }]),
    checkModel: () => undefined,
    timeoutMs: 60_000,
    clock: () => now,
  });
  const owner = await store.createAccount({ name: "owner", isAdmin: false });
  ownerId = owner.id;
  const bot = await store.createBot({
    accountId: owner.id,
    name: "b",
    instructions: "",
    model: null,
  });
  const conversation = await store.createConversation({
    accountId: owner.id,
    botId: bot.id,
    title: "c",
  });
  request = {
    accountId: owner.id,
    botId: bot.id,
    conversationId: conversation.id,
    turnId: "turn_1",
    callId: "turn_1:0:0",
    signal: new AbortController().signal,
  };
});
afterEach(async () => {
  durable = undefined;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const call = { name: "shell", input: { command: "rm -rf /srv" }, source: "test", review: null };
const ask = (context: MemoryDurable) =>
  approvals.ask({ ...call, reason: "asks before rm" }, { ...request, durable: context });

describe("approvals service", () => {
  it("APR2, APR7: a replay of the journal after the approval asks nothing again and adds nothing", async () => {
    durable = createMemoryDurable({ clock: () => now });
    const answer = ask(durable);
    await durable.waiting();
    const [pending] = await store.listApprovals(ownerId, { state: "pending" });
    await approvals.decide(ownerId, pending!.id, { decision: "approve" });
    expect(await answer).toEqual({ decision: "allow" });
    expect(durable.steps).toEqual(["approval:ask", "approval:settle"]);

    const replay = createMemoryDurable({ journal: durable.journal, clock: () => now });
    expect(await ask(replay)).toEqual({ decision: "allow" });
    expect(replay.steps).toEqual([]); // nothing ran again
    expect(notified).toHaveLength(1);
    const steps = await store.listSteps(request.conversationId);
    expect(steps.map((step) => [step.kind, step.payload.state])).toEqual([
      ["approval", "pending"],
      ["approval", "approved"],
    ]);
  });

  it("APR6: a decision whose release was lost (engine down) is released by the sweep, and the call goes on", async () => {
    durable = createMemoryDurable({ clock: () => now });
    const answer = ask(durable);
    await durable.waiting();
    const [pending] = await store.listApprovals(ownerId, { state: "pending" });
    releaseFails = true;
    // The answer is stored and reported even though the wake-up failed.
    expect((await approvals.decide(ownerId, pending!.id, { decision: "deny" })).state).toBe(
      "denied",
    );
    releaseFails = false;
    expect(await approvals.sweep()).toBe(1);
    expect(await answer).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining("the owner denied it"),
    });
    // Settled and released: the next sweep has nothing to do.
    expect(await approvals.sweep()).toBe(0);
  });

  it("APR5: an approval whose turn went away expires in the sweep, audited; a live one is left to its timer", async () => {
    durable = createMemoryDurable({ clock: () => now });
    void ask(durable);
    await durable.waiting();
    durable = undefined; // the turn is gone (its conversation deleted, say)
    now += 60_000 + 30_000;
    await approvals.sweep();
    expect((await store.listApprovals(ownerId))[0]?.state).toBe("pending"); // within the grace
    now += 60_000;
    await approvals.sweep();
    expect((await store.listApprovals(ownerId))[0]?.state).toBe("expired");
    const audit = await store.listAudit({ accountId: ownerId });
    expect(audit.map((entry) => entry.action)).toContain("approval.expire");
  });

  it("APR3: another account can neither read nor answer an approval", async () => {
    durable = createMemoryDurable({ clock: () => now });
    void ask(durable);
    await durable.waiting();
    const [pending] = await store.listApprovals(ownerId, { state: "pending" });
    const stranger = await store.createAccount({ name: "stranger", isAdmin: false });
    await expect(approvals.get(stranger.id, pending!.id)).rejects.toMatchObject({
      code: "not_found",
    });
    await expect(
      approvals.decide(stranger.id, pending!.id, { decision: "approve" }),
    ).rejects.toMatchObject({ code: "not_found" });
    expect(await approvals.list(stranger.id)).toEqual([]);
    expect((await store.getApproval(pending!.id))?.state).toBe("pending");
  });

  it("the review model's ask beats the policy's allow and shows on the decision; a policy deny is not reviewed", async () => {
    await store.setToolPolicy(request.botId, {
      rules: [
        { tool: "shell", decision: "allow" },
        { tool: "shell", match: "shutdown", decision: "deny" },
      ],
      useDefaults: true,
      reviewModel: "demo",
    });
    const context = { ...request, durable: createMemoryDurable() };
    const asked = await approvals.policy(
      { name: "shell", input: { command: "rm old.log" }, source: "t" },
      context,
    );
    expect(asked).toMatchObject({
      decision: "ask",
      reason: "the review model (demo) says: it deletes or overwrites data (rm)",
      review: { decision: "ask", model: "demo" },
    });
    expect(
      await approvals.policy(
        { name: "shell", input: { command: "shutdown now" }, source: "t" },
        context,
      ),
    ).toEqual({ decision: "deny", reason: 'this bot\'s policy denies shell "shutdown"' });
    expect(
      await approvals.policy({ name: "memory", input: { action: "add" }, source: "t" }, context),
    ).toEqual({ decision: "allow" }); // memory writes are not reviewed
  });
});
