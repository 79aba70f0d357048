import pg from "pg";
import { describe, expect, it } from "vitest";
import { createTestDatabase, postgresAvailable } from "../../test/support/postgres.ts";
import { waitFor } from "../../test/support/wait.ts";
import { createEventHub, type ConversationEvent, type HubEvent } from "./index.ts";
import { connectPostgresRelay } from "./postgres-relay.ts";
import { createPostgresDriver } from "../store/postgres-driver.ts";
import { createSqlStore } from "../store/sql-store.ts";

async function migrated(url: string): Promise<void> {
  const store = createSqlStore(createPostgresDriver(url));
  await store.migrate();
  await store.close();
}

const postgres = await postgresAvailable();

// Needs Postgres; in CI (CI=true) postgresAvailable() fails loudly instead of skipping.
describe.skipIf(!postgres.ok)("events relayed between nodes through Postgres", () => {
  it("delivers one node's events to another node's subscribers, once, and keeps turn state", async () => {
    const database = await createTestDatabase();
    await migrated(database.url);
    const nodeA = createEventHub();
    const nodeB = createEventHub();
    const relayA = await connectPostgresRelay({ url: database.url, hub: nodeA });
    const relayB = await connectPostgresRelay({ url: database.url, hub: nodeB });
    try {
      const seenA: ConversationEvent[] = [];
      const seenB: HubEvent[] = [];
      nodeA.subscribe("conv_1", (event) => seenA.push(event));
      nodeB.subscribe("conv_1", (event) => seenB.push(event));
      nodeB.subscribeAccount("acct_1", (event) => seenB.push(event));

      nodeA.publish({ type: "turn", conversationId: "conv_1", state: "working", turnId: "t1" });
      nodeA.publish({ type: "delta", conversationId: "conv_1", turnId: "t1", text: "Hel" });
      nodeA.publish({ type: "changed", conversationId: "conv_1", seq: 7 });
      nodeA.publishAccount({
        type: "computer",
        accountId: "acct_1",
        computerId: "cmp_1",
        state: "awake",
      });
      // Too big for one notification: it goes by reference, whole (R2).
      nodeA.publish({
        type: "tool-output",
        conversationId: "conv_1",
        callId: "c1",
        stream: "stdout",
        data: "x".repeat(20_000),
      });

      await waitFor(() => seenB.length === 5, { what: "five relayed events" });
      expect(seenB.map((event) => event.type)).toEqual([
        "turn",
        "delta",
        "changed",
        "computer",
        "tool-output",
      ]);
      expect(nodeB.turnState("conv_1")).toBe("working");
      const output = seenB[4] as Extract<HubEvent, { type: "tool-output" }>;
      expect(output.data).toBe("x".repeat(20_000));
      // The publishing node delivered each event once, locally (R1).
      nodeB.publish({ type: "changed", conversationId: "conv_1", seq: 8 });
      await waitFor(() => seenA.some((event) => event.type === "changed" && event.seq === 8), {
        what: "B's event at A",
      });
      expect(seenA.filter((event) => event.type === "changed" && event.seq === 7)).toHaveLength(1);
      expect(seenB.filter((event) => event.type === "changed" && event.seq === 8)).toHaveLength(1);

      // R4: a burst of deltas arrives in the order it was published (they build the text),
      // a delta over 8 kB among them (by reference) too.
      const pieces = Array.from({ length: 60 }, (_, index) =>
        index % 20 === 7 ? `${"y".repeat(12_000)} ` : `${index} `,
      );
      for (const text of pieces)
        nodeA.publish({ type: "delta", conversationId: "conv_1", turnId: "t2", text });
      const relayed = () =>
        seenB
          .filter((event) => event.type === "delta" && event.turnId === "t2")
          .map((event) => (event as { text: string }).text);
      await waitFor(() => relayed().length === pieces.length, { what: "the burst of deltas" });
      expect(relayed().join("")).toBe(pieces.join(""));
    } finally {
      await relayA.close();
      await relayB.close();
      await database.drop();
    }
  });

  it("after its LISTEN connection drops, the hub is told to resync (R3), and events flow again", async () => {
    const database = await createTestDatabase();
    await migrated(database.url);
    const nodeA = createEventHub();
    const nodeB = createEventHub();
    const relayA = await connectPostgresRelay({ url: database.url, hub: nodeA });
    const relayB = await connectPostgresRelay({ url: database.url, hub: nodeB });
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      let resyncs = 0;
      nodeB.onResync(() => (resyncs += 1));
      const seen: number[] = [];
      nodeB.subscribe("conv_1", (event) => {
        if (event.type === "changed") seen.push(event.seq);
      });
      // Every LISTEN connection is cut, as a Postgres restart or a network blip would.
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`,
      );
      await waitFor(() => resyncs >= 1, { what: "the resync after the reconnect" });
      await waitFor(
        async () => {
          nodeA.publish({ type: "changed", conversationId: "conv_1", seq: 9 });
          await new Promise((resolve) => setTimeout(resolve, 50));
          return seen.includes(9);
        },
        { what: "events relayed again after the reconnect" },
      );
    } finally {
      await admin.end();
      await relayA.close();
      await relayB.close();
      await database.drop();
    }
  });
});
