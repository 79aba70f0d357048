/**
 * Scale-out figures (issue 17): two Roost nodes on one Postgres and one external Restate.
 *   1. load: C conversations × M messages (demo model): turns/s, p50/p95 reply, exact counts;
 *   2. the same with node A SIGKILLed halfway (its clients retry on node B, same clientMessageId);
 *   3. idle cost: N sleeping computers and N idle conversations (rows inserted directly), for each
 *      N given: each node's RSS and the Postgres connections in use, to show how cost grows.
 *
 * With --balancer (decision 0039) both nodes register the built-in service balancer's URL, so
 * loops run on both nodes and phase 2 kills a node that runs loops (A): its loops are retried
 * through the balancer on B, and node-to-node forwarding (ROOST_NODE_URL) is on. Without it,
 * Restate runs every loop on the deployment registered last (node B) and phase 2 kills A, which
 * then only served API traffic. Say which wherever these figures are quoted.
 *
 *   node bench/scale.ts [--balancer] [--conversations 200] [--messages 5] [--idle 1000,10000]
 *                       [--skip-load] [--skip-kill] [--skip-idle]
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { findFreePort, startEmbeddedRestate } from "../src/engine/index.ts";
import { startServiceBalancer, type ServiceBalancer } from "../src/platform/index.ts";
import { apiClient } from "../test/support/api-client.ts";
import { createTestDatabase, postgresAvailable } from "../test/support/postgres.ts";
import { createRoostProcess, type RoostProcess } from "../test/support/roost-process.ts";
import { openEventStream } from "../test/support/sse.ts";
import { rssMiB, summarize } from "./support.ts";

const { values: flags } = parseArgs({
  options: {
    conversations: { type: "string", default: "200" },
    messages: { type: "string", default: "5" },
    idle: { type: "string", default: "1000,10000" },
    "skip-load": { type: "boolean", default: false },
    "skip-kill": { type: "boolean", default: false },
    "skip-idle": { type: "boolean", default: false },
    balancer: { type: "boolean", default: false },
  },
});
const positive = (name: string, text: string) => {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`--${name} must be a whole number ≥ 1, got ${JSON.stringify(text)}`);
  return value;
};
const conversations = positive("conversations", flags.conversations);
const messagesEach = positive("messages", flags.messages);
const idleSizes = flags.idle.split(",").map((size) => positive("idle", size.trim()));

const available = await postgresAvailable();
if (!available.ok) throw new Error(`bench/scale.ts needs Postgres: ${available.reason}`);

interface Cluster {
  restateUrl: { ingress: string; admin: string };
  database: { url: string; drop(): Promise<void> };
  nodeA: RoostProcess;
  nodeB: RoostProcess;
  /** With --balancer: the streams it sent to each node. */
  streams(): string;
  close(): Promise<void>;
}

async function startCluster(): Promise<Cluster> {
  const dirs: string[] = [];
  const dir = () => {
    const created = mkdtempSync(join(tmpdir(), "roost-bench-scale-"));
    dirs.push(created);
    return created;
  };
  const ingressPort = await findFreePort();
  const adminPort = await findFreePort([ingressPort]);
  const restate = await startEmbeddedRestate({ dataDir: dir(), ingressPort, adminPort });
  const database = await createTestDatabase();
  const blobDir = dir();
  const env = {
    ROOST_STORE: "postgres",
    ROOST_DATABASE_URL: database.url,
    ROOST_RESTATE_INGRESS_URL: restate.ingressUrl,
    ROOST_RESTATE_ADMIN_URL: restate.adminUrl,
    ROOST_COMPUTER_PROVIDER: "process",
    ROOST_BLOB_DIR: blobDir,
    ROOST_FOLLOW_UP_WINDOW_MS: "200",
    // One bench client drives every conversation with one token.
    ROOST_RATE_LIMIT_PER_MINUTE: "0",
    ROOST_MAX_EVENT_STREAMS: String(Math.max(20, conversations + 10)),
  };
  let nodeA: RoostProcess;
  let nodeB: RoostProcess;
  let balancer: ServiceBalancer | undefined;
  if (flags.balancer) {
    // Both nodes register the balancer's URL; forwarding on, as a scale-mode install runs it.
    const balancerPort = await findFreePort([ingressPort, adminPort]);
    const nodePortA = await findFreePort([ingressPort, adminPort, balancerPort]);
    const nodePortB = await findFreePort([ingressPort, adminPort, balancerPort, nodePortA]);
    const secret = randomBytes(32).toString("base64url");
    const scaled = (id: string, nodePort: number) => ({
      ...env,
      ROOST_NODE_ID: id,
      ROOST_SERVICE_URL: `http://127.0.0.1:${balancerPort}`,
      ROOST_NODE_URL: `http://127.0.0.1:${nodePort}`,
      ROOST_NODE_PORT: String(nodePort),
      ROOST_NODE_SECRET: secret,
    });
    nodeA = await createRoostProcess({ dataDir: dir(), env: scaled("a", nodePortA) });
    nodeB = await createRoostProcess({ dataDir: dir(), env: scaled("b", nodePortB) });
    balancer = await startServiceBalancer({
      nodes: [`http://127.0.0.1:${nodeA.servicePort}`, `http://127.0.0.1:${nodeB.servicePort}`],
      port: balancerPort,
      probeIntervalMs: 200,
    });
    await nodeA.start();
    await nodeB.start();
  } else {
    nodeA = await createRoostProcess({ dataDir: dir(), env: { ...env, ROOST_NODE_ID: "a" } });
    await nodeA.start();
    // B registers last: Restate runs the loops there.
    nodeB = await createRoostProcess({ dataDir: dir(), env: { ...env, ROOST_NODE_ID: "b" } });
    await nodeB.start();
  }
  return {
    streams: () =>
      balancer === undefined
        ? "no balancer: every loop on B"
        : `balancer streams: A ${balancer.nodes()[0]!.streams}, B ${balancer.nodes()[1]!.streams}`,
    restateUrl: { ingress: restate.ingressUrl, admin: restate.adminUrl },
    database,
    nodeA,
    nodeB,
    async close() {
      await nodeA.stop();
      await nodeB.stop();
      await balancer?.close();
      await restate.close();
      await database.drop();
      for (const created of dirs) rmSync(created, { recursive: true, force: true });
    },
  };
}

async function load(killHalfway: boolean): Promise<void> {
  const cluster = await startCluster();
  const { nodeA, nodeB } = cluster;
  try {
    const token = () => nodeA.token(); // one admin, made by the first node
    const viaA = apiClient(nodeA.url, token);
    const viaB = apiClient(nodeB.url, token);
    const bot = await viaA.createBot("scale");
    let aDown = false;
    const lanes = await Promise.all(
      Array.from({ length: conversations }, async (_, index) => {
        const preferred = index % 2 === 0 ? viaA : viaB;
        const conversation = await preferred.createConversation(bot.id);
        // Streams on B, the node that stays up (and runs the loops).
        const stream = await openEventStream(
          `${nodeB.url}/v1/conversations/${conversation.id}/events`,
          token(),
        );
        await stream.next((event) => event.event === "hello");
        return { index, preferred, conversation, stream };
      }),
    );
    const latencies: number[] = [];
    let replies = 0;
    let retriedOnB = 0;
    let killAt: number | undefined;
    const total = conversations * messagesEach;
    const started = performance.now();
    await Promise.all(
      lanes.map(async ({ index, preferred, conversation, stream }) => {
        for (let message = 1; message <= messagesEach; message++) {
          const text = `c${index} m${message}`;
          const clientMessageId = randomUUID();
          const sentAt = performance.now();
          let ack: { seq: number };
          try {
            ack = await (aDown && preferred === viaA ? viaB : preferred).send(
              conversation.id,
              text,
              clientMessageId,
            );
          } catch (error) {
            if (preferred !== viaA || !aDown) throw error;
            // Node A died under this request: the same message again through B (deduplicated).
            retriedOnB += 1;
            ack = await viaB.send(conversation.id, text, clientMessageId);
          }
          await stream.next(
            (event) =>
              event.event === "changed" && (event.data as { seq: number }).seq >= ack.seq + 1,
            120_000,
          );
          latencies.push(performance.now() - sentAt);
          replies += 1;
          if (killHalfway && killAt === undefined && replies >= total / 2) {
            killAt = replies;
            aDown = true;
            void nodeA.kill("SIGKILL");
          }
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    // Exact counts from the store, through the node that stayed up.
    let lost = 0;
    let duplicated = 0;
    for (const { index, conversation } of lanes) {
      const steps = await viaB.steps(conversation.id);
      const sent = steps.filter((step) => step.kind === "message");
      const answered = steps.filter((step) => step.kind === "reply");
      duplicated += Math.max(0, sent.length - messagesEach);
      for (let message = 1; message <= messagesEach; message++) {
        const matching = answered.filter((step) =>
          String(step.payload.text).includes(`"c${index} m${message}"`),
        ).length;
        if (matching === 0) lost += 1;
        duplicated += Math.max(0, matching - 1);
      }
    }
    await Promise.all(lanes.map(({ stream }) => stream.close()));
    const where = flags.balancer ? "loops on both nodes through the balancer" : "loops on B";
    const label = killHalfway
      ? `load, node A SIGKILLed after ${killAt} of ${total} replies (${where}; ${retriedOnB} sends retried on B)`
      : `load (${where})`;
    console.log(
      `${label}: 2 nodes × ${conversations} conversations × ${messagesEach} messages = ${total} turns in ${seconds.toFixed(2)} s → ${(total / seconds).toFixed(1)} turns/s; lost ${lost}, duplicated ${duplicated}`,
    );
    console.log(`  ${summarize("reply (send → reply step on the stream)", latencies)}`);
    console.log(`  ${cluster.streams()}`);
  } finally {
    await cluster.close();
  }
}

async function postgresConnections(client: pg.Client, databaseUrl: string): Promise<number> {
  const name = new URL(databaseUrl).pathname.slice(1);
  const result = await client.query<{ count: string }>(
    "SELECT count(*) AS count FROM pg_stat_activity WHERE datname = $1",
    [name],
  );
  return Number(result.rows[0]!.count) - 1; // not this bench's own connection
}

async function idle(size: number): Promise<void> {
  const cluster = await startCluster();
  const { nodeA, nodeB, database } = cluster;
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    // Both nodes have migrated the schema; stop them, fill the store, start them on it again.
    await nodeA.stop();
    await nodeB.stop();
    const now = Date.now();
    await client.query(
      `INSERT INTO accounts (id, name, is_admin, created_at)
         SELECT 'acct_idle_' || n, 'idle ' || n, 0, $1 FROM generate_series(1, $2) AS n`,
      [now, size],
    );
    await client.query(
      `INSERT INTO computers (id, account_id, provider, created_at, home_host)
         SELECT 'cmp_idle_' || n, 'acct_idle_' || n, 'process', $1,
                CASE WHEN n % 2 = 0 THEN 'a' ELSE 'b' END
         FROM generate_series(1, $2) AS n`,
      [now, size],
    );
    const admin = await client.query<{ id: string }>(
      "SELECT id FROM accounts WHERE is_admin = 1 LIMIT 1",
    );
    await client.query(
      `INSERT INTO bots (id, account_id, name, instructions, created_at, updated_at)
         VALUES ('bot_idle', $1, 'idle', '', $2, $2)`,
      [admin.rows[0]!.id, now],
    );
    await client.query(
      `INSERT INTO conversations (id, account_id, bot_id, title, created_at, updated_at)
         SELECT 'conv_idle_' || n, $1, 'bot_idle', 'idle ' || n, $2, $2
         FROM generate_series(1, $3) AS n`,
      [admin.rows[0]!.id, now, size],
    );
    await nodeA.start();
    await nodeB.start();
    // Let the start-up sweeps run, then read an idle steady state.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const api = apiClient(nodeA.url, () => nodeA.token());
    await api.createBot("probe"); // one request through the API, to count a warm node
    const rss = [nodeA, nodeB].map((node) => rssMiB(node.pid()!));
    const connections = await postgresConnections(client, database.url);
    console.log(
      `idle: ${size} sleeping computers + ${size} idle conversations → node A RSS ${rss[0]!.toFixed(1)} MiB, node B RSS ${rss[1]!.toFixed(1)} MiB, Postgres connections ${connections}`,
    );
  } finally {
    await client.end();
    await cluster.close();
  }
}

if (!flags["skip-load"]) await load(false);
if (!flags["skip-kill"]) await load(true);
if (!flags["skip-idle"]) for (const size of idleSizes) await idle(size);
