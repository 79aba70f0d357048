/**
 * The API's own costs, in-process over a real SQLite store (or Postgres with a URL):
 *   - GET /v1/me round trips (auth, rate limit, request id) and a refused 429 round trip;
 *   - DELETE /v1/bots/{id} of a bot with C conversations of S steps each (one transaction).
 * Run: `node bench/api-deletes.ts [conversations=50] [stepsEach=200] [postgresUrl]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApi } from "../src/api/index.ts";
import { issueApiToken } from "../src/auth/index.ts";
import { createEventHub } from "../src/events/index.ts";
import { openStore } from "../src/store/index.ts";
import { summarize } from "./support.ts";

const conversations = Number(process.argv[2] ?? 50);
const stepsEach = Number(process.argv[3] ?? 200);
const postgresUrl = process.argv[4];
const dir = mkdtempSync(join(tmpdir(), "roost-bench-api-"));
const store = await openStore(
  postgresUrl === undefined
    ? { kind: "sqlite", path: join(dir, "roost.db") }
    : { kind: "postgres", url: postgresUrl },
);
try {
  const app = createApi({
    store,
    events: createEventHub(),
    kick: async () => undefined,
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1 << 20,
    limits: { requestsPerMinute: 1, requestBurst: 1000 },
  });
  const account = await store.createAccount({ name: `bench-${Date.now()}`, isAdmin: false });
  const { token } = await issueApiToken(store, account.id, "bench");
  const headers = { authorization: `Bearer ${token}` };

  const timed = async (run: () => Response | Promise<Response>, expected: number) => {
    const started = performance.now();
    const response = await run();
    await response.arrayBuffer();
    if (response.status !== expected)
      throw new Error(`expected ${expected}, got ${response.status}`);
    return performance.now() - started;
  };
  const allowed: number[] = [];
  for (let index = 0; index < 1000; index++)
    allowed.push(await timed(() => app.request("/v1/me", { headers }), 200));
  const refused: number[] = [];
  for (let index = 0; index < 1000; index++)
    refused.push(await timed(() => app.request("/v1/me", { headers }), 429));
  console.log(summarize("GET /v1/me, allowed", allowed));
  console.log(summarize("GET /v1/me, refused 429", refused));

  const bot = await store.createBot({
    accountId: account.id,
    name: "doomed",
    instructions: "",
    model: null,
  });
  for (let c = 0; c < conversations; c++) {
    const conversation = await store.createConversation({
      accountId: account.id,
      botId: bot.id,
      title: `c${c}`,
    });
    for (let s = 0; s < stepsEach; s++)
      await store.appendStep({
        conversationId: conversation.id,
        id: `${conversation.id}:${s}`,
        turnId: "t",
        kind: "model",
        payload: { text: "x".repeat(200) },
      });
  }
  const fresh = await issueApiToken(store, account.id, "delete");
  const deleteMs = await timed(
    () =>
      app.request(`/v1/bots/${bot.id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${fresh.token}` },
      }),
    204,
  );
  console.log(
    `DELETE /v1/bots/{id} (${store.kind}, ${conversations} conversations × ${stepsEach} steps = ${conversations * stepsEach} rows): ${deleteMs.toFixed(1)} ms`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
