/**
 * A Restate cluster (issue 17 §5, docs/operations.md "A Restate cluster"): Roost runs against three
 * restate-server nodes with replicated metadata and a replicated log (replication 2), started here
 * from the same npm binary. One Restate node is SIGKILLed while conversations are mid-turn: every
 * message gets exactly one reply, none is lost and none is repeated.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { startRestateCluster, type RestateCluster } from "../support/restate-cluster.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

const conversations = 12;
const messagesEach = 4;

describe("a 3-node Restate cluster", () => {
  const dirs: string[] = [];
  let cluster: RestateCluster;
  let roost: RoostProcess;

  beforeAll(async () => {
    const dir = () => {
      const created = mkdtempSync(join(tmpdir(), "roost-restate-cluster-"));
      dirs.push(created);
      return created;
    };
    cluster = await startRestateCluster({ dir: dir() });
    const entry = cluster.nodes[0]!;
    roost = await createRoostProcess({
      dataDir: dir(),
      env: {
        ROOST_RESTATE_INGRESS_URL: entry.ingressUrl,
        ROOST_RESTATE_ADMIN_URL: entry.adminUrl,
        ROOST_COMPUTER_PROVIDER: "process",
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        // The test polls every conversation for its replies.
        ROOST_RATE_LIMIT_PER_MINUTE: "0",
      },
    });
    await roost.start();
  }, 180_000);
  afterAll(async () => {
    await roost?.stop();
    await cluster?.close();
    for (const created of dirs) rmSync(created, { recursive: true, force: true });
  });

  it("one Restate node killed mid-load: every message gets exactly one reply", async () => {
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("clustered");
    const ids: string[] = [];
    for (let index = 0; index < conversations; index++)
      ids.push((await api.createConversation(bot.id)).id);

    let replies = 0;
    const victim = cluster.nodes[1]!;
    let killed: Promise<void> | undefined;
    let repliesAtKill = 0;
    const converse = async (conversationId: string, index: number) => {
      for (let message = 1; message <= messagesEach; message++) {
        await api.send(conversationId, `c${index} m${message}`);
        await api.waitForSteps(conversationId, "reply", message, 120_000);
        replies += 1;
        // A third of the way in, with other turns in flight: a node dies.
        if (killed === undefined && replies >= (conversations * messagesEach) / 3) {
          repliesAtKill = replies;
          killed = victim.kill();
        }
      }
    };
    await Promise.all(ids.map((id, index) => converse(id, index)));
    await killed;
    expect(victim.running()).toBe(false);
    // Most turns ran after the kill, many of them in flight when it came.
    expect(conversations * messagesEach - repliesAtKill).toBeGreaterThan(conversations);

    // Exact counts: one reply per message, in order, each answering its own message.
    for (const [index, id] of ids.entries()) {
      const steps = await api.steps(id);
      const sent = steps.filter((step) => step.kind === "message");
      const answered = steps.filter((step) => step.kind === "reply");
      expect(sent).toHaveLength(messagesEach);
      expect(answered).toHaveLength(messagesEach);
      for (let message = 1; message <= messagesEach; message++) {
        const matching = answered.filter((step) =>
          String(step.payload.text).includes(`"c${index} m${message}"`),
        );
        expect(matching, `conversation ${index} message ${message}`).toHaveLength(1);
      }
    }

    // The survivors still take new work, and the killed node rejoins.
    await api.send(ids[0]!, "after the kill");
    await api.waitForSteps(ids[0]!, "reply", messagesEach + 1, 60_000);
    await victim.start();
    await api.send(ids[1]!, "after the rejoin");
    await api.waitForSteps(ids[1]!, "reply", messagesEach + 1, 60_000);
    await waitFor(async () => (await api.steps(ids[1]!)).length === 2 * (messagesEach + 1), {
      what: "the last turn's steps",
    });
    expect((await api.steps(ids[1]!)).filter((step) => step.kind === "reply").length).toBe(
      messagesEach + 1,
    );
  }, 300_000);
});
