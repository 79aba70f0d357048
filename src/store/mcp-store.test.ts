/**
 * The MCP servers part of the store (mcp-types.ts, MST1–MST3) on SQLite and on Postgres: the same
 * cases against both real databases.
 */
import { describe, expect, it } from "vitest";
import type { PutMcpServerInput, Store } from "./types.ts";
import { storeOpeners } from "./testing/openers.ts";

const openers = await storeOpeners("roost-mcp-store-");

async function owner(store: Store) {
  const account = await store.createAccount({ name: "a", isAdmin: false });
  const bot = await store.createBot({
    accountId: account.id,
    name: "b",
    instructions: "",
    model: null,
  });
  return { accountId: account.id, botId: bot.id };
}

const put = (accountId: string, ownerId: string, name: string, spec = "{}"): PutMcpServerInput => ({
  scope: "bot",
  ownerId,
  accountId,
  name,
  transport: "command",
  spec,
  sealed: null,
  secretNames: [],
  limit: 2,
  actorAccountId: accountId,
});

const tool = { name: "mcp__s__t", tool: "t", description: "d", inputSchema: { type: "object" } };

describe.each(openers)("MCP servers on %s", (_name, open) => {
  it.skipIf(open === undefined)(
    "MST1: a PUT replaces the settings and forgets the list; a listing of old settings does not land",
    async () => {
      const { store, close } = await open!();
      try {
        const { accountId, botId } = await owner(store);
        const first = await store.putMcpServer(put(accountId, botId, "s"));
        if (first.outcome === "limited") throw new Error("limited");
        await store.recordMcpListing(first.record, { tools: [tool] });
        expect((await store.getMcpServer("bot", botId, "s"))?.tools).toEqual([tool]);
        await store.recordMcpListing(first.record, { error: "it broke" });
        expect(await store.getMcpServer("bot", botId, "s")).toMatchObject({
          tools: [tool],
          lastError: "it broke",
        }); // MCP2: the last good list stays

        const second = await store.putMcpServer(put(accountId, botId, "s", '{"command":"x"}'));
        expect(second.outcome).toBe("replaced");
        if (second.outcome === "limited") throw new Error("limited");
        expect(second.record.updatedAt).toBeGreaterThan(first.record.updatedAt);
        expect(await store.getMcpServer("bot", botId, "s")).toMatchObject({
          spec: '{"command":"x"}',
          tools: null,
          lastError: null,
        });
        await store.recordMcpListing(first.record, { tools: [tool] }); // stale: ignored
        expect((await store.getMcpServer("bot", botId, "s"))?.tools).toBeNull();
      } finally {
        await close();
      }
    },
  );

  it.skipIf(open === undefined)(
    "MST2, MST3: the limit holds; writes and deletes are audited; a deleted bot takes its servers",
    async () => {
      const { store, close } = await open!();
      try {
        const { accountId, botId } = await owner(store);
        expect((await store.putMcpServer(put(accountId, botId, "a"))).outcome).toBe("created");
        expect((await store.putMcpServer(put(accountId, botId, "b"))).outcome).toBe("created");
        expect((await store.putMcpServer(put(accountId, botId, "c"))).outcome).toBe("limited");
        expect(
          await store.deleteMcpServer({
            scope: "bot",
            ownerId: botId,
            name: "a",
            actorAccountId: accountId,
          }),
        ).toBe(true);
        expect(
          await store.deleteMcpServer({
            scope: "bot",
            ownerId: botId,
            name: "a",
            actorAccountId: accountId,
          }),
        ).toBe(false);
        const audit = await store.listAudit({ accountId });
        expect(audit.map((entry) => entry.action)).toEqual(
          expect.arrayContaining(["mcp_server.put", "mcp_server.delete"]),
        );
        await store.deleteBot({ id: botId, actorAccountId: accountId });
        expect(await store.listMcpServers("bot", botId)).toEqual([]);
      } finally {
        await close();
      }
    },
  );
});
