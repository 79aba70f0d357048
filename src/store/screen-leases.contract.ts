/**
 * The screen-lease part of the store contract (screen-lease-types.ts SCL1–SCL3), run by SQLite
 * and Postgres alike from store.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "./types.ts";

export function screenLeasesContract(
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
  const lease = (viewerId: string, until: number) => ({
    computerId: "cmp_1",
    screenId: "s-bot_1",
    accountId: "acc_1",
    viewerId,
    until,
    reason: "person",
  });
  const far = () => Date.now() + 60_000;

  describe(`screen leases store contract: ${name}`, () => {
    it("SCL1: of two viewers racing for a free screen exactly one holds it", () =>
      withStore(async (store) => {
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, index) => store.takeScreenLease(lease(`v${index}`, far()))),
        );
        const winners = results.filter((result) => result.taken);
        expect(winners).toHaveLength(1);
        const holder = (await store.getScreenLease("cmp_1", "s-bot_1"))!;
        for (const result of results)
          if (!result.taken) expect(result.holder.viewerId).toBe(holder.viewerId);
      }));

    it("SCL1/SCL2: the holder renews (keeping its start), another viewer takes an expired lease anew", () =>
      withStore(async (store) => {
        const first = await store.takeScreenLease(lease("a", far()));
        expect(first).toMatchObject({ taken: true, renewed: false });
        const renewal = await store.takeScreenLease(lease("a", far() + 1000));
        expect(renewal).toMatchObject({ taken: true, renewed: true });
        if (!first.taken || !renewal.taken) throw new Error("unreachable");
        expect(renewal.lease.startedAt).toBe(first.lease.startedAt);
        expect(await store.takeScreenLease(lease("b", far()))).toMatchObject({
          taken: false,
          holder: { viewerId: "a" },
        });
        await store.takeScreenLease(lease("a", Date.now() - 1)); // ends it now
        const taken = await store.takeScreenLease(lease("b", far()));
        expect(taken).toMatchObject({ taken: true, renewed: false, lease: { viewerId: "b" } });
      }));

    it("SCL3: a release ends only the viewer's own lease; takes and releases are audited", () =>
      withStore(async (store) => {
        const account = await store.createAccount({ name: "a", isAdmin: false });
        await store.takeScreenLease({ ...lease("a", far()), accountId: account.id });
        await store.takeScreenLease({ ...lease("a", far()), accountId: account.id }); // renewal
        expect(
          await store.releaseScreenLease({
            computerId: "cmp_1",
            screenId: "s-bot_1",
            viewerId: "b",
            actorAccountId: account.id,
          }),
        ).toBeUndefined();
        expect(await store.listScreenLeases("cmp_1")).toHaveLength(1);
        const released = await store.releaseScreenLease({
          computerId: "cmp_1",
          screenId: "s-bot_1",
          viewerId: "a",
          actorAccountId: account.id,
        });
        expect(released?.viewerId).toBe("a");
        expect(await store.getScreenLease("cmp_1", "s-bot_1")).toBeUndefined();
        const actions = (await store.listAudit({ accountId: account.id })).map(
          (entry) => entry.action,
        );
        expect(actions.filter((action) => action.startsWith("screen."))).toEqual(
          expect.arrayContaining(["screen.control_taken", "screen.control_released"]),
        );
        expect(actions.filter((action) => action === "screen.control_taken")).toHaveLength(1);
      }));

    it("SCL4: a handoff is created once per id and settled once", () =>
      withStore(async (store) => {
        const input = {
          id: "hof_1",
          accountId: "acc_1",
          botId: "bot_1",
          conversationId: "conv_1",
          computerId: "cmp_1",
          screenId: "s-bot_1",
          waiterId: "w1",
          reason: "log in",
        };
        const first = await store.createScreenHandoff(input);
        const replay = await store.createScreenHandoff({ ...input, waiterId: "w2" });
        expect(replay.waiterId).toBe("w1");
        expect(first.state).toBe("pending");
        expect(await store.listPendingScreenHandoffs("cmp_1", "s-bot_1")).toHaveLength(1);
        const [a, b] = await Promise.all([
          store.settleScreenHandoff("hof_1", "handed_back"),
          store.settleScreenHandoff("hof_1", "expired"),
        ]);
        expect([a.changed, b.changed].filter(Boolean)).toHaveLength(1);
        expect(await store.listPendingScreenHandoffs("cmp_1", "s-bot_1")).toEqual([]);
      }));
  });
}
