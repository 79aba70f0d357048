/**
 * Costs of results (docs/results.md), in-process over a real SQLite store (or Postgres with a URL):
 *   - Notifier.notify: a new notification (stored, streamed) and a repeat of one (idempotent);
 *   - GET /v1/conversations with the sidebar's states (`activity`) for C conversations, each with
 *     a waiting draft and unread notifications, against the same list's cost before results.
 * Run: `node bench/results.ts [conversations=200] [postgresUrl]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApi } from "../src/api/index.ts";
import { issueApiToken } from "../src/auth/index.ts";
import { createEventHub } from "../src/events/index.ts";
import { createNotifier } from "../src/notifications/index.ts";
import { openStore } from "../src/store/index.ts";
import { summarize } from "./support.ts";

const conversations = Number(process.argv[2] ?? 200);
const postgresUrl = process.argv[3];
const dir = mkdtempSync(join(tmpdir(), "roost-bench-results-"));
const store = await openStore(
  postgresUrl === undefined
    ? { kind: "sqlite", path: join(dir, "roost.db") }
    : { kind: "postgres", url: postgresUrl },
);
try {
  const events = createEventHub();
  const account = await store.createAccount({ name: `bench-${Date.now()}`, isAdmin: false });
  const bot = await store.createBot({
    accountId: account.id,
    name: "b",
    instructions: "",
    model: null,
  });
  const notifier = createNotifier({ store, events });

  const timed = async (run: () => Promise<unknown>) => {
    const started = performance.now();
    await run();
    return performance.now() - started;
  };
  const ids: string[] = [];
  for (let c = 0; c < conversations; c++) {
    const conversation = await store.createConversation({
      accountId: account.id,
      botId: bot.id,
      title: `c${c}`,
    });
    ids.push(conversation.id);
    await store.appendStep({
      conversationId: conversation.id,
      id: `${conversation.id}:s`,
      turnId: "t",
      kind: "reply",
      payload: { text: "x" },
    });
    if (c % 2 === 0)
      await store.createDraft({
        id: `dft_${c}`,
        accountId: account.id,
        botId: bot.id,
        conversationId: conversation.id,
        kind: "message",
        to: "Ada",
        subject: null,
        text: "hi",
      });
  }
  const fresh: number[] = [];
  for (let index = 0; index < 1000; index++)
    fresh.push(
      await timed(() =>
        notifier.notify({
          id: `bench:${index}`,
          accountId: account.id,
          kind: index % 3 === 0 ? "needs_input" : "finished",
          title: "t",
          conversationId: ids[index % ids.length]!,
        }),
      ),
    );
  const repeats: number[] = [];
  for (let index = 0; index < 1000; index++)
    repeats.push(
      await timed(() =>
        notifier.notify({
          id: `bench:${index}`,
          accountId: account.id,
          kind: "finished",
          title: "t",
        }),
      ),
    );
  console.log(summarize(`notify, new (${store.kind})`, fresh));
  console.log(summarize(`notify, repeated id (${store.kind})`, repeats));

  const app = createApi({
    store,
    events,
    kick: async () => undefined,
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1 << 20,
    limits: { requestsPerMinute: 0 },
  });
  const { token } = await issueApiToken(store, account.id, "bench");
  const headers = { authorization: `Bearer ${token}` };
  const list: number[] = [];
  for (let index = 0; index < 200; index++)
    list.push(
      await timed(async () => {
        const response = await app.request(`/v1/conversations?limit=500`, { headers });
        await response.arrayBuffer();
      }),
    );
  const marks: number[] = [];
  for (let index = 0; index < 200; index++)
    marks.push(await timed(() => store.conversationMarks(account.id, ids)));
  console.log(
    summarize(
      `GET /v1/conversations with activity, ${conversations} conversations (${store.kind})`,
      list,
    ),
  );
  console.log(summarize(`  of which the sidebar's marks query (${store.kind})`, marks));
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
