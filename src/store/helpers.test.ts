/**
 * The helpers part of the store (helper-types.ts, HST1–HST5) on SQLite and on Postgres: the same
 * cases against both real databases.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "./types.ts";
import { storeOpeners } from "./testing/openers.ts";

const openers = await storeOpeners("roost-helper-store-");

async function parent(store: Store, name = "a") {
  const account = await store.createAccount({ name, isAdmin: false });
  const bot = await store.createBot({
    accountId: account.id,
    name: "b",
    instructions: "",
    model: null,
  });
  const conversation = await store.createConversation({
    accountId: account.id,
    botId: bot.id,
    title: "t",
  });
  return { accountId: account.id, botId: bot.id, conversationId: conversation.id };
}

const helper = (owner: Awaited<ReturnType<typeof parent>>, key: string, maxRunning = 2) => ({
  id: `hlp_${key}`,
  conversationId: `conv_hlp_${key}`,
  accountId: owner.accountId,
  parentConversationId: owner.conversationId,
  botId: owner.botId,
  depth: 1,
  task: `task ${key}`,
  instructions: null,
  tools: ["read"],
  model: null,
  title: `Helper: ${key}`,
  maxRunning,
});

describe.each(openers)("helpers on %s", (_name, open) => {
  it.skipIf(open === undefined)(
    "HST1, HST5: made once per id, with its conversation; the running cap counts under a lock, racing starts included",
    async () => {
      const { store, close } = await open!();
      try {
        const owner = await parent(store);
        const first = await store.createHelper(helper(owner, "1"));
        expect(first).toMatchObject({
          created: true,
          helper: { status: "running", tools: ["read"] },
        });
        const again = await store.createHelper(helper(owner, "1"));
        expect(again).toMatchObject({ created: false });
        expect(await store.getConversation("conv_hlp_1")).toMatchObject({
          accountId: owner.accountId,
          botId: owner.botId,
        });
        // Five at once with room for one more: exactly one is made.
        const raced = await Promise.all(
          ["2", "3", "4", "5", "6"].map((key) => store.createHelper(helper(owner, key))),
        );
        expect(raced.filter((made) => "created" in made && made.created)).toHaveLength(1);
        expect(raced.filter((made) => "capped" in made)).toHaveLength(4);
        expect(raced.filter((made) => "capped" in made)[0]).toEqual({ capped: 2 });
        expect(await store.listHelpers(owner.accountId, owner.conversationId)).toHaveLength(2);
        // A finished helper frees its place.
        await store.setHelperStatus("hlp_1", "done", "out");
        expect(await store.createHelper(helper(owner, "7"))).toMatchObject({ created: true });
      } finally {
        await close();
      }
    },
  );

  it.skipIf(open === undefined)(
    "HST3, HST4: another account's helper is absent; a stopped helper stays stopped; deleting a helper's conversation drops its row",
    async () => {
      const { store, close } = await open!();
      try {
        const owner = await parent(store);
        const stranger = await parent(store, "z");
        await store.createHelper(helper(owner, "1"));
        expect(await store.getHelper(stranger.accountId, "hlp_1")).toBeUndefined();
        expect(await store.stopHelper(stranger.accountId, "hlp_1")).toBeUndefined();
        expect((await store.getHelper(owner.accountId, "hlp_1"))?.status).toBe("running");
        expect(await store.listHelpers(stranger.accountId, owner.conversationId)).toEqual([]);
        // HST2 lookups by conversation, for the loop's hooks.
        expect((await store.helperOfConversation("conv_hlp_1"))?.id).toBe("hlp_1");
        expect(await store.helperOfConversation(owner.conversationId)).toBeUndefined();

        expect((await store.stopHelper(owner.accountId, "hlp_1"))?.status).toBe("stopped");
        expect(await store.setHelperStatus("hlp_1", "done", "late")).toMatchObject({
          status: "stopped",
          latestOutput: null,
        });
        // A conversation made elsewhere with a helper's parent that is not the account's: refused.
        await expect(
          store.createHelper({ ...helper(owner, "x"), accountId: stranger.accountId }),
        ).rejects.toThrow(/not found/);

        // HST2: deleting the parent leaves the helper's row; deleting its own conversation drops it.
        await store.deleteConversation({
          id: owner.conversationId,
          actorAccountId: owner.accountId,
        });
        expect((await store.helperOfConversation("conv_hlp_1"))?.id).toBe("hlp_1");
        await store.deleteConversation({ id: "conv_hlp_1", actorAccountId: owner.accountId });
        expect(await store.getHelper(owner.accountId, "hlp_1")).toBeUndefined();
      } finally {
        await close();
      }
    },
  );
});
