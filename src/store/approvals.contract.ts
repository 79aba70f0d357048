/**
 * The tool-policy and approvals part of the store contract (approval-types.ts APS1–APS3), run by
 * SQLite and Postgres alike from store.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { NewApproval, Store } from "./types.ts";

const approvalInput = (accountId: string, id = "apr_1"): NewApproval => ({
  id,
  accountId,
  botId: "bot_1",
  conversationId: "conv_1",
  turnId: "turn_1",
  callId: `call_${id}`,
  waiterId: `waiter_${id}`,
  tool: "shell",
  input: { command: "rm -rf /srv/data" },
  reason: "ask before rm -rf outside /tmp",
  botReason: "cleaning up",
  review: { decision: "ask", reason: "deletes files", model: "demo" },
  approvers: [accountId],
  expiresAt: 2_000,
  createdAt: 1_000,
});

export function approvalsContract(
  name: string,
  open: () => Promise<{ store: Store; close: () => Promise<void> }>,
) {
  async function withStore(run: (store: Store) => Promise<void>) {
    const { store, close } = await open();
    try {
      await run(store);
    } finally {
      await close();
    }
  }

  describe(`approvals store contract: ${name}`, () => {
    it("deleting a bot deletes its tool policy", () =>
      withStore(async (store) => {
        const account = await store.createAccount({ name: "a", isAdmin: false });
        const bot = await store.createBot({
          accountId: account.id,
          name: "b",
          instructions: "",
          model: null,
        });
        await store.setToolPolicy(bot.id, { rules: [], useDefaults: false, reviewModel: null });
        await store.deleteBot({ id: bot.id, actorAccountId: account.id });
        expect(await store.getToolPolicy(bot.id)).toBeUndefined();
      }));

    it("a tool policy round-trips and a second PUT replaces it whole", () =>
      withStore(async (store) => {
        expect(await store.getToolPolicy("bot_1")).toBeUndefined();
        await store.setToolPolicy("bot_1", {
          rules: [{ tool: "shell", match: "git push*", decision: "ask" }],
          useDefaults: true,
          reviewModel: "demo",
        });
        await store.setToolPolicy("bot_1", { rules: [], useDefaults: false, reviewModel: null });
        expect((await store.getToolPolicy("bot_1"))?.policy).toEqual({
          rules: [],
          useDefaults: false,
          reviewModel: null,
        });
      }));

    it("APS1: creating an approval twice keeps the first, unchanged", () =>
      withStore(async (store) => {
        const first = await store.createApproval(approvalInput("acc_1"));
        const again = await store.createApproval({ ...approvalInput("acc_1"), reason: "other" });
        expect(again).toEqual(first);
        expect(first).toMatchObject({
          state: "pending",
          input: { command: "rm -rf /srv/data" },
          review: { decision: "ask" },
          approvers: ["acc_1"],
          released: false,
        });
      }));

    it("APS2: an approve and a timeout racing: exactly one settles it, both see the winner", () =>
      withStore(async (store) => {
        await store.createApproval(approvalInput("acc_1"));
        const [click, timeout] = await Promise.all([
          store.settleApproval("apr_1", { state: "approved", decidedBy: "acc_1", at: 1_500 }),
          store.settleApproval("apr_1", { state: "expired", decidedBy: null, at: 1_500 }),
        ]);
        expect([click!.changed, timeout!.changed].filter(Boolean)).toHaveLength(1);
        expect(click!.approval.state).toBe(timeout!.approval.state);
        const late = await store.settleApproval("apr_1", {
          state: "denied",
          decidedBy: "acc_1",
          at: 1_600,
        });
        expect(late).toMatchObject({ changed: false, approval: { state: click!.approval.state } });
        expect(
          await store.settleApproval("apr_missing", { state: "denied", decidedBy: null, at: 1 }),
        ).toBeUndefined();
      }));

    it("APS3: a decided approval stays unreleased until marked; lists see only the account's", () =>
      withStore(async (store) => {
        await store.createApproval(approvalInput("acc_1", "apr_1"));
        await store.createApproval(approvalInput("acc_1", "apr_2"));
        await store.createApproval({ ...approvalInput("acc_2", "apr_3"), conversationId: "c2" });
        await store.settleApproval("apr_1", {
          state: "approved",
          decidedBy: "acc_1",
          remembered: "rm -rf /srv/*",
          at: 1_500,
        });
        expect((await store.listUnreleasedApprovals(10)).map((a) => a.id)).toEqual(["apr_1"]);
        await store.markApprovalReleased("apr_1");
        expect(await store.listUnreleasedApprovals(10)).toEqual([]);
        expect((await store.listApprovals("acc_1", { state: "pending" })).map((a) => a.id)).toEqual(
          ["apr_2"],
        );
        expect((await store.listApprovals("acc_1")).map((a) => a.id).sort()).toEqual([
          "apr_1",
          "apr_2",
        ]);
        expect((await store.getApproval("apr_1"))?.remembered).toBe("rm -rf /srv/*");
        expect((await store.pendingApprovalsOf("conv_1")).map((a) => a.id)).toEqual(["apr_2"]);
        expect((await store.listOverdueApprovals(2_001, 10)).map((a) => a.id)).toEqual([
          "apr_2",
          "apr_3",
        ]);
        expect(await store.listOverdueApprovals(2_000, 10)).toEqual([]);
      }));
  });
}
