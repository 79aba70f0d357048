/**
 * The store unavailable for a minute in the middle of a turn (issue: "a store outage of a few
 * minutes must not lock a conversation"). Roost runs as a child process with its embedded
 * Restate; the model is a fake OpenAI-compatible server that holds its answer until the outage
 * has begun, so the reply's save lands inside the outage. After the store comes back the turn
 * completes (once) and later messages are answered.
 *   SQLite: another process holds the database's write lock for 60 s.
 *   Postgres: the test's own Postgres server is stopped for 60 s, then started again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import {
  privatePostgresUnavailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from "../support/private-postgres.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

const outageMs = 60_000;
const noPostgres = privatePostgresUnavailable();
if (noPostgres !== undefined && process.env.CI === "true")
  throw new Error(`${noPostgres}; CI requires it for the Postgres outage test`);

describe("faults: the store unavailable for 60 s mid-turn", () => {
  let dataDir: string;
  let roost: RoostProcess | undefined;
  let fake: FakeOpenAiServer | undefined;
  let postgres: PrivatePostgres | undefined;
  let release: (() => void) | undefined;
  let requests = 0;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-outage-"));
    requests = 0;
    fake = await startFakeOpenAiServer(async (request) => {
      // The memory pass after each turn asks the model too: answer it with no change, uncounted.
      if ((request.body?.tools ?? []).some((tool) => tool.function?.name === "update_memory"))
        return {
          type: "completion",
          toolCalls: [{ name: "update_memory", arguments: { add: [] } }],
        };
      requests++;
      if (requests === 1) await new Promise<void>((resolve) => (release = resolve));
      return { type: "completion", textChunks: [`reply #${requests - 1}`] };
    });
  });
  afterEach(async () => {
    release?.();
    await roost?.stop();
    await fake?.close();
    await postgres?.close();
    roost = undefined;
    postgres = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function start(env: Record<string, string> = {}) {
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake!.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "500",
        ROOST_MODEL_TITLES: "off", // the test counts the turns' model requests
        ...env,
      },
    });
    await roost.start();
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("patient");
    const conversation = await api.createConversation(bot.id);
    return { api, conversationId: conversation.id };
  }

  async function outageMidTurn(
    api: ReturnType<typeof apiClient>,
    conversationId: string,
    outage: { begin(): Promise<void>; end(): Promise<void> },
  ) {
    await api.send(conversationId, "first");
    await waitFor(() => requests >= 1, { timeoutMs: 30_000, what: "the first model call" });
    await outage.begin();
    const began = Date.now();
    release!(); // the reply is ready, and its save meets the outage
    // While the store is down, a new message is refused with 503 and a retry-after (nothing stored).
    const during = await fetch(`${roost!.url}/v1/conversations/${conversationId}/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${roost!.token()}`, "content-type": "application/json" },
      body: JSON.stringify({ text: "during", clientMessageId: "during" }),
    });
    expect(during.status).toBe(503);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, outageMs - (Date.now() - began))),
    );
    await outage.end();

    const steps = await api.waitForSteps(conversationId, "reply", 1, 60_000);
    expect(steps.map((step) => step.kind)).toEqual(["message", "reply"]);
    expect(steps[1]!.payload.text).toBe("reply #0");
    // The conversation is not locked: a later message gets its answer.
    await api.send(conversationId, "second");
    const after = await api.waitForSteps(conversationId, "reply", 2, 60_000);
    expect(after.map((step) => step.kind)).toEqual(["message", "reply", "message", "reply"]);
    expect(after.filter((step) => step.kind === "error")).toEqual([]);
    expect(requests).toBe(2); // the model was not asked again for the turn that met the outage
  }

  it("SQLite write lock held by another process for 60 s: the turn completes and later messages are answered", async () => {
    const { api, conversationId } = await start();
    let holder: DatabaseSync | undefined;
    await outageMidTurn(api, conversationId, {
      async begin() {
        holder = new DatabaseSync(join(dataDir, "roost.db"));
        holder.exec("PRAGMA busy_timeout = 10000");
        holder.exec("BEGIN IMMEDIATE");
      },
      async end() {
        holder?.exec("ROLLBACK");
        holder?.close();
      },
    });
  }, 240_000);

  it.skipIf(noPostgres !== undefined)(
    "Postgres stopped for 60 s: the turn completes and later messages are answered",
    async () => {
      postgres = await startPrivatePostgres();
      const { api, conversationId } = await start({
        ROOST_STORE: "postgres",
        ROOST_DATABASE_URL: postgres.url,
      });
      await outageMidTurn(api, conversationId, {
        begin: () => postgres!.stop(),
        end: () => postgres!.start(),
      });
    },
    240_000,
  );
});
