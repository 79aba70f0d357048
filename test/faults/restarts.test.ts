/**
 * Fault tests for the spine (ARCHITECTURE.md §12), each named after its failure. Roost runs as a
 * child process with its embedded Restate; the model is a fake OpenAI-compatible server in this
 * process, so the test decides when inference finishes. Postgres holds the store where a test
 * needs to hold a write mid-step.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  startFakeOpenAiServer,
  type FakeOpenAiReply,
  type FakeOpenAiServer,
} from "../../src/models/testing/index.ts";
import { openStore } from "../../src/store/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { createTestDatabase, postgresAvailable } from "../support/postgres.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

interface Gate {
  promise: Promise<void>;
  open(): void;
}
function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const postgres = await postgresAvailable();

describe("faults: restarts mid-turn", () => {
  let dataDir: string;
  let roost: RoostProcess | undefined;
  let fake: FakeOpenAiServer | undefined;
  let database: { url: string; drop(): Promise<void> } | undefined;
  /** Per-request behaviour of the fake model; default: answer at once. */
  let onInfer: (index: number) => Promise<FakeOpenAiReply> | FakeOpenAiReply;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-fault-"));
    onInfer = (index) => ({ type: "completion", textChunks: [`reply #${index}`] });
    fake = await startFakeOpenAiServer((_request, index) => onInfer(index));
  });
  afterEach(async () => {
    await roost?.stop();
    await fake?.close();
    await database?.drop();
    roost = undefined;
    database = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function startRoost(
    store: "sqlite" | "postgres" = "sqlite",
    extraEnv: Record<string, string> = {},
  ) {
    const env: Record<string, string> = {
      ROOST_MODEL: "openai-compatible:fake-model",
      ROOST_OPENAI_COMPATIBLE_BASE_URL: fake!.baseUrl,
      ROOST_FOLLOW_UP_WINDOW_MS: "200",
      // These tests count the model's requests; the memory pass would add its own.
      ROOST_MEMORY_PASS: "off",
      ROOST_MODEL_TITLES: "off", // nor the title request after the first reply
      ...extraEnv,
    };
    if (store === "postgres") {
      database = await createTestDatabase();
      env.ROOST_STORE = "postgres";
      env.ROOST_DATABASE_URL = database.url;
    }
    roost = await createRoostProcess({ dataDir, env });
    await roost.start();
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("faulty");
    const conversation = await api.createConversation(bot.id);
    return { api, conversationId: conversation.id };
  }

  function expectOneCleanTurn(steps: TestStep[]) {
    expect(steps.map((step) => step.kind)).toEqual(["message", "reply"]);
    expect(steps.map((step) => step.seq)).toEqual([1, 2]);
    expect(new Set(steps.map((step) => step.id)).size).toBe(steps.length);
  }

  it("server process SIGKILLed during inference: after restart the turn completes once", async () => {
    const { api, conversationId } = await startRoost();
    const held = gate();
    onInfer = async (index) => {
      if (index === 0) await held.promise; // the first inference never finishes in this process
      return { type: "completion", textChunks: [`reply #${index}`] };
    };
    await api.send(conversationId, "hello");
    await waitFor(() => fake!.requests.length === 1, { what: "the first model request" });
    await roost!.kill("SIGKILL");
    held.open();
    await roost!.start();
    const steps = await api.waitForSteps(conversationId, "reply");
    await waitFor(
      async () =>
        (await api.call<{ state: string }>("GET", `/v1/conversations/${conversationId}`)).state ===
        "idle",
    );
    expectOneCleanTurn(await api.steps(conversationId));
    // Inference was not journaled when the process died, so it ran again: the second answer wins.
    expect(steps.find((step) => step.kind === "reply")!.payload.text).toBe("reply #1");
  });

  // Needs Postgres to hold a write mid-step; in CI (CI=true) postgresAvailable() fails loudly instead of skipping.
  it.runIf(postgres.ok)(
    "server process SIGKILLed after inference was journaled but before the reply was sent: the model is not called again",
    async () => {
      const { api, conversationId } = await startRoost("postgres");
      const locker = new pg.Client({ connectionString: database!.url });
      const watcher = new pg.Client({ connectionString: database!.url });
      await locker.connect();
      await watcher.connect();
      try {
        const held = gate();
        onInfer = async (index) => {
          if (index === 0) {
            // Hold every write to the step log, then answer: "infer" completes and is journaled,
            // and "send-to-user" blocks on the lock.
            await locker.query("BEGIN");
            await locker.query("LOCK TABLE steps IN EXCLUSIVE MODE");
            held.open();
          }
          return { type: "completion", textChunks: [`reply #${index}`] };
        };
        await api.send(conversationId, "hello");
        await held.promise;
        // pg_stat_activity is a snapshot per transaction: look from outside the locking one.
        await waitFor(
          async () => {
            const result = await watcher.query<{ count: string }>(
              "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%steps%'",
            );
            return Number(result.rows[0]!.count) > 0;
          },
          { what: "send-to-user to be blocked on the step log" },
        );
        await roost!.kill("SIGKILL");
        await locker.query("ROLLBACK");
        await roost!.start();
        const steps = await api.waitForSteps(conversationId, "reply");
        expectOneCleanTurn(steps);
        expect(steps[1]!.payload.text).toBe("reply #0");
        expect(fake!.requests).toHaveLength(1);
      } finally {
        await locker.end();
        await watcher.end();
      }
    },
  );

  it("restate-server SIGKILLed mid-turn: it is restarted and the turn completes once", async () => {
    const { api, conversationId } = await startRoost();
    const held = gate();
    onInfer = async (index) => {
      if (index === 0) await held.promise;
      return { type: "completion", textChunks: [`reply #${index}`] };
    };
    await api.send(conversationId, "hello");
    await waitFor(() => fake!.requests.length === 1, { what: "the first model request" });
    const restatePid = roost!.restatePid()!;
    process.kill(restatePid, "SIGKILL");
    held.open();
    await waitFor(
      () => {
        const pid = roost!.restatePid();
        return pid !== undefined && pid !== restatePid;
      },
      { what: "a new restate-server" },
    );
    const steps = await api.waitForSteps(conversationId, "reply");
    expectOneCleanTurn(steps);
    expect(roost!.output()).toContain("restarting");
  });

  it("engine down when a message arrives: the message is acknowledged, kept, and answered once the engine is back", async () => {
    const { api, conversationId } = await startRoost();
    const restatePid = roost!.restatePid()!;
    process.kill(restatePid, "SIGSTOP"); // the engine hangs: the kick cannot be delivered
    let ack;
    try {
      ack = await api.send(conversationId, "are you there?");
      expect(ack.seq).toBe(1);
      expect((await api.steps(conversationId)).map((step) => step.kind)).toEqual(["message"]);
    } finally {
      process.kill(restatePid, "SIGKILL"); // and then dies; the supervisor starts a new one
    }
    const steps = await api.waitForSteps(conversationId, "reply");
    expectOneCleanTurn(steps);
  });

  it("server process SIGKILLed right after acknowledging a message: the message is answered after restart", async () => {
    const { api, conversationId } = await startRoost();
    const held = gate();
    onInfer = async (index) => {
      if (index === 0) await held.promise;
      return { type: "completion", textChunks: [`reply #${index}`] };
    };
    await api.send(conversationId, "first words");
    await roost!.kill("SIGKILL");
    held.open();
    await roost!.start();
    const steps = await api.waitForSteps(conversationId, "reply");
    expectOneCleanTurn(steps);
  });

  it("a message sent just before a crash, its wake-up lost: after restart it is answered within seconds, not after the follow-up window", async () => {
    // A long follow-up window: the loop is still waiting in Restate when the server dies.
    const { api, conversationId } = await startRoost("sqlite", {
      ROOST_FOLLOW_UP_WINDOW_MS: "120000",
    });
    await api.send(conversationId, "first");
    await api.waitForSteps(conversationId, "reply");
    // The reply is stored a moment before the loop records that it waits for follow-ups.
    const db = new DatabaseSync(join(dataDir, "roost.db"), { readOnly: true });
    try {
      await waitFor(
        () =>
          (
            db.prepare("SELECT waiter FROM conversations WHERE id = ?").get(conversationId) as
              { waiter: string | null } | undefined
          )?.waiter != null,
        { what: "the loop waiting for follow-ups" },
      );
    } finally {
      db.close();
    }
    await roost!.kill("SIGKILL");
    // The message was stored, but the process died before its wake-up reached the waiting loop.
    const store = await openStore({ kind: "sqlite", path: join(dataDir, "roost.db") });
    try {
      const account = await store.findAdminAccount();
      const { waiter } = await store.appendMessage({
        conversationId,
        clientMessageId: "lost-kick",
        authorAccountId: account!.id,
        text: "second",
      });
      expect(waiter).not.toBeNull(); // the loop was waiting for it
    } finally {
      await store.close();
    }
    const restarted = Date.now();
    await roost!.start();
    const steps = await api.waitForSteps(conversationId, "reply", 2, 30_000);
    expect(Date.now() - restarted).toBeLessThan(30_000);
    expect(steps.map((step) => step.kind)).toEqual(["message", "reply", "message", "reply"]);
  });
});
