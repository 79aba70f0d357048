import { describe, expect, it } from "vitest";
import { createTestDatabase, postgresAvailable } from "../../test/support/postgres.ts";
import { waitFor } from "../../test/support/wait.ts";
import { createEventHub, type ConversationEvent, type HubEvent } from "./index.ts";
import { connectPostgresRelay } from "./postgres-relay.ts";

const postgres = await postgresAvailable();

// Needs Postgres; in CI (CI=true) postgresAvailable() fails loudly instead of skipping.
describe.skipIf(!postgres.ok)("events relayed between nodes through Postgres", () => {
  it("delivers one node's events to another node's subscribers, once, and keeps turn state", async () => {
    const database = await createTestDatabase();
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
      // Too big for one notification: tool output is cut, not lost.
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
      expect(output.data.length).toBeLessThan(8000);
      expect(output.data.endsWith("…")).toBe(true);
      // The publishing node delivered each event once, locally (R1).
      nodeB.publish({ type: "changed", conversationId: "conv_1", seq: 8 });
      await waitFor(() => seenA.some((event) => event.type === "changed" && event.seq === 8), {
        what: "B's event at A",
      });
      expect(seenA.filter((event) => event.type === "changed" && event.seq === 7)).toHaveLength(1);
      expect(seenB.filter((event) => event.type === "changed" && event.seq === 8)).toHaveLength(1);

      // R4: a burst of deltas arrives in the order it was published (they build the text).
      const pieces = Array.from({ length: 60 }, (_, index) => `${index} `);
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
});
