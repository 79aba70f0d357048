/**
 * The routines routes (routine-routes.ts RAPI1–RAPI4): every endpoint with bad input and with
 * another account's ids; the webhook's attacks (no key, a wrong key, bad JSON, a huge body, a
 * flood), each answered without storing anything but its audit entry.
 * The scheduler here runs the real run code in-process (memory durable); Restate's side is
 * tested in test/routines/ and test/faults/routines.test.ts.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { RoostError } from "../errors/index.ts";
import { createEventHub } from "../events/index.ts";
import type { Api } from "../protocol/index.ts";
import {
  createRoutineLookup,
  createRoutineService,
  defaultRoutineSettings,
  startRun,
  type SchedulerClient,
} from "../routines/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let app: ReturnType<typeof createApi>;
let alice: { id: string; token: string };
let bob: { id: string; token: string };
let armed: { routineId: string; generation: number }[];
let engineDown: boolean;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-routines-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  armed = [];
  engineDown = false;
  const runDeps = {
    store,
    deliver: (message: Parameters<Store["appendMessage"]>[0]) => store.appendMessage(message),
    keepRuns: 20,
  };
  const scheduler: SchedulerClient = {
    arm: async (routineId, generation) => {
      if (engineDown) throw new Error("engine down");
      armed.push({ routineId, generation });
    },
    run: (routineId, request) => startRun(createMemoryDurable(), runDeps, routineId, request),
    send: async (routineId, request) => {
      // What createSchedulerClient throws when the ingress refuses.
      if (engineDown)
        throw new RoostError("unavailable", "the durable engine did not take the routine", {
          retryAfterMs: 1000,
        });
      await startRun(createMemoryDurable(), runDeps, routineId, request);
    },
  };
  const settings = {
    ...defaultRoutineSettings,
    maxPerBot: 3,
    webhookMaxBodyBytes: 2048,
    webhookPerMinute: 5,
  };
  app = createApi({
    store,
    events: createEventHub(),
    kick: async () => undefined,
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1024 * 1024,
    routines: {
      routines: createRoutineService({
        store,
        scheduler,
        settings,
        runUsage: {
          usageOfRuns: async (ids) => new Map(ids.map((id) => [id, { tokens: 42, cost: null }])),
        },
      }),
      webhookMaxBodyBytes: settings.webhookMaxBodyBytes,
      webhookPerMinute: settings.webhookPerMinute,
    },
  });
  const account = async (name: string) => {
    const created = await store.createAccount({ name, isAdmin: false });
    return { id: created.id, token: (await issueApiToken(store, created.id, "t")).token };
  };
  alice = await account("alice");
  bob = await account("bob");
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

interface Answer<T> {
  status: number;
  body: T & { error?: { code: string; message: string } };
  headers: Headers;
}

async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  body?: unknown,
  options: { token?: string | null; raw?: string; contentType?: string } = {},
): Promise<Answer<T>> {
  const token = options.token === undefined ? alice.token : options.token;
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const payload = options.raw ?? (body === undefined ? undefined : JSON.stringify(body));
  if (payload !== undefined) headers["content-type"] = options.contentType ?? "application/json";
  const response = await app.request(`http://roost.test${path}`, {
    method,
    headers,
    body: payload,
  });
  const text = await response.text();
  return {
    status: response.status,
    body: (text === "" ? {} : JSON.parse(text)) as Answer<T>["body"],
    headers: response.headers,
  };
}

async function aliceBot() {
  return (await store.createBot({ accountId: alice.id, name: "b", instructions: "", model: null }))
    .id;
}
const daily = { type: "schedule", preset: "daily", at: "09:00" };

describe("routines API", () => {
  it("creates, lists, reads, edits and deletes a routine; saving arms it and never runs it", async () => {
    const botId = await aliceBot();
    const created = await call<Api.Routine>("POST", `/v1/bots/${botId}/routines`, {
      name: "morning",
      instruction: "Brief me.",
      trigger: { type: "schedule", cron: "0 9 * * 1-5", timezone: "Europe/Berlin" },
      budget: { tokensPerDay: 5000 },
      triageModel: "openai:gpt-4.1-mini",
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "morning",
      enabled: true,
      misfire: "once",
      target: { kind: "new_conversation" },
      timezone: "Europe/Berlin",
      webhook: null,
      budget: { tokensPerDay: 5000 },
      triageModel: "openai:gpt-4.1-mini",
      paused: false,
    });
    expect(created.body.nextRunAt).toMatch(/T08:00:00.000Z$/);
    expect(armed).toEqual([{ routineId: created.body.id, generation: 1 }]);
    expect(await store.listRoutineRuns(created.body.id, 20)).toEqual([]);

    const list = await call<Api.RoutineList>("GET", `/v1/bots/${botId}/routines`);
    expect(list.body.routines.map((routine) => routine.id)).toEqual([created.body.id]);
    const patched = await call<Api.Routine>("PATCH", `/v1/routines/${created.body.id}`, {
      trigger: { type: "schedule", everyMs: 600_000 },
      misfire: "skip",
    });
    expect(patched.body).toMatchObject({ misfire: "skip", timezone: "UTC" });
    expect(armed.at(-1)).toEqual({ routineId: created.body.id, generation: 2 });
    // A rename is not a schedule change: nothing re-armed.
    await call("PATCH", `/v1/routines/${created.body.id}`, { name: "renamed" });
    expect(armed).toHaveLength(2);
    expect((await call("DELETE", `/v1/routines/${created.body.id}`)).status).toBe(204);
    expect((await call("GET", `/v1/routines/${created.body.id}`)).status).toBe(404);
  });

  it("refuses bad input with a message that says how to fix it, and stores nothing", async () => {
    const botId = await aliceBot();
    const cases: [unknown, RegExp][] = [
      [
        { name: "x", instruction: "y", trigger: { type: "schedule", cron: "* * * * *" } },
        /at least 5 minutes apart/,
      ],
      [
        { name: "x", instruction: "y", trigger: { type: "schedule", everyMs: 1000 } },
        /everyMs >= 300000/,
      ],
      [
        {
          name: "x",
          instruction: "y",
          trigger: { type: "schedule", cron: "0 9 * * *", timezone: "Nowhere/Land" },
        },
        /IANA timezone/,
      ],
      [{ name: "x", instruction: "y", trigger: { type: "cron" } }, /trigger must be/],
      [
        { name: "x", instruction: "y", trigger: daily, misfire: "sometimes" },
        /misfire must be skip, once or catch_up/,
      ],
      [
        {
          name: "x",
          instruction: "y",
          trigger: daily,
          target: { kind: "conversation", conversationId: "conv_missing" },
        },
        /not a conversation of this bot/,
      ],
      [{ name: "x", instruction: "y", trigger: daily, budget: {} }, /budget names at least one/],
      [{ name: "x", instruction: "y", trigger: daily, triageModel: "gpt 4" }, /provider:model/],
      [{ name: "", instruction: "y", trigger: daily }, /name/],
      [{ name: "x", instruction: "y", trigger: daily, extra: 1 }, /extra/],
    ];
    for (const [body, message] of cases) {
      const answer = await call("POST", `/v1/bots/${botId}/routines`, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error?.message, JSON.stringify(body)).toMatch(message);
    }
    const broken = await call("POST", `/v1/bots/${botId}/routines`, undefined, { raw: "{" });
    expect(broken.body.error?.code).toBe("invalid_json");
    expect(await store.listRoutines(botId)).toEqual([]);
    expect(armed).toEqual([]);
  });

  it("another account's bot and routine answer 404 on every route, exactly like missing ones (RAPI1)", async () => {
    const botId = await aliceBot();
    const created = await call<Api.Routine>("POST", `/v1/bots/${botId}/routines`, {
      name: "mine",
      instruction: "y",
      trigger: { type: "webhook" },
    });
    const id = created.body.id;
    const asBob = { token: bob.token };
    const attempts: [string, string, unknown?][] = [
      ["POST", `/v1/bots/${botId}/routines`, { name: "x", instruction: "y", trigger: daily }],
      ["GET", `/v1/bots/${botId}/routines`],
      ["GET", `/v1/routines/${id}`],
      ["PATCH", `/v1/routines/${id}`, { enabled: false }],
      ["DELETE", `/v1/routines/${id}`],
      ["POST", `/v1/routines/${id}/run`],
      ["GET", `/v1/routines/${id}/runs`],
      ["POST", `/v1/routines/${id}/webhook/rotate`],
    ];
    for (const [method, path, body] of attempts) {
      const answer = await call(method, path, body, asBob);
      expect(answer.status, `${method} ${path}`).toBe(404);
      const missing = await call(
        method,
        path.replace(id, "rtn_missing").replace(botId, "bot_missing"),
        body,
        asBob,
      );
      expect(missing.status).toBe(404);
    }
    // Bob's own timezone setting is his alone.
    await call("PATCH", "/v1/me/settings", { timezone: "Asia/Tokyo" }, asBob);
    expect((await call<Api.AccountSettings>("GET", "/v1/me/settings")).body.timezone).toBeNull();
    expect(await store.getRoutine(id)).toMatchObject({ enabled: true, name: "mine" });
    expect(await store.listRoutineRuns(id, 20)).toEqual([]);
  });

  it("a bot takes at most its limit of routines, even when created at once (RST1 through the API)", async () => {
    const botId = await aliceBot();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        call("POST", `/v1/bots/${botId}/routines`, {
          name: `r${index}`,
          instruction: "y",
          trigger: daily,
        }),
      ),
    );
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(3);
    const refused = answers.filter((answer) => answer.status === 409);
    expect(refused).toHaveLength(3);
    expect(refused[0]!.body.error?.message).toMatch(/delete one before adding another/);
  });

  it("run now starts a real run; the runs list shows it with its usage", async () => {
    const botId = await aliceBot();
    const created = await call<Api.Routine>("POST", `/v1/bots/${botId}/routines`, {
      name: "now",
      instruction: "Do it.",
      trigger: daily,
    });
    const started = await call<Api.StartedRun>("POST", `/v1/routines/${created.body.id}/run`);
    expect(started.status).toBe(202);
    const messages = await store.listMessages(started.body.conversationId);
    expect(messages[0]).toMatchObject({
      clientMessageId: started.body.runId,
      authorAccountId: alice.id,
    });
    expect(messages[0]!.text).toContain("Do it.");
    const runs = await call<Api.RoutineRunList>("GET", `/v1/routines/${created.body.id}/runs`);
    expect(runs.body.runs).toEqual([
      expect.objectContaining({
        id: started.body.runId,
        status: "running",
        kind: "manual",
        tokens: 42,
        cost: null,
      }),
    ]);
    expect((await call("POST", `/v1/routines/${created.body.id}/run`, { now: true })).status).toBe(
      400,
    );
  });

  it("an account timezone applies to routines without their own; bad ones are refused", async () => {
    const botId = await aliceBot();
    expect((await call("PATCH", "/v1/me/settings", { timezone: "Atlantis/Capital" })).status).toBe(
      400,
    );
    const set = await call<Api.AccountSettings>("PATCH", "/v1/me/settings", {
      timezone: "America/New_York",
    });
    expect(set.body).toEqual({ timezone: "America/New_York" });
    const created = await call<Api.Routine>("POST", `/v1/bots/${botId}/routines`, {
      name: "ny",
      instruction: "y",
      trigger: daily,
    });
    expect(created.body.timezone).toBe("America/New_York");
    expect(created.body.nextRunAt).toMatch(/T1[34]:00:00.000Z$/); // 09:00 in New York
  });

  it("routes refuse what they do not take: a query, a body on delete, an unknown patch field; RoutineLookup reads what is stored", async () => {
    const botId = await aliceBot();
    const created = await call<Api.Routine>("POST", `/v1/bots/${botId}/routines`, {
      name: "q",
      instruction: "y",
      trigger: daily,
      budget: { costPerMonth: 2.5 },
    });
    const id = created.body.id;
    expect((await call("GET", `/v1/routines/${id}/runs?limit=5`)).status).toBe(400);
    expect((await call("DELETE", `/v1/routines/${id}`, { really: true })).status).toBe(400);
    const patch = await call("PATCH", `/v1/routines/${id}`, { schedule: "daily" });
    expect(patch.status).toBe(400);
    expect((await call("PATCH", `/v1/routines/${id}`, {})).body.error?.message).toMatch(
      /send at least one of/,
    );
    expect(
      (await call("PATCH", `/v1/routines/${id}`, { budget: { tokensPerDay: -1 } })).status,
    ).toBe(400);
    expect(await createRoutineLookup(store).routineSettings(id)).toEqual({
      ownerAccountId: alice.id,
      budget: { costPerMonth: 2.5 },
      triageModel: null,
    });
    expect(await createRoutineLookup(store).routineSettings("rtn_missing")).toBeNull();
    expect(await store.getRoutine(id)).toMatchObject({ name: "q", budget: { costPerMonth: 2.5 } });
  });

  it("after an absence pause the views say paused; only the owner's resume lifts it", async () => {
    const botId = await aliceBot();
    const created = await call<Api.Routine>("POST", `/v1/bots/${botId}/routines`, {
      name: "p",
      instruction: "y",
      trigger: daily,
    });
    await store.setRoutinesPaused(alice.id, Date.now());
    const paused = await call<Api.Routine>("GET", `/v1/routines/${created.body.id}`);
    expect(paused.body).toMatchObject({ paused: true, nextRunAt: null });
    // Another account's resume is its own: Alice's routines stay paused.
    expect(
      (
        await call<Api.RoutinesResumed>("POST", "/v1/routines/resume", undefined, {
          token: bob.token,
        })
      ).body,
    ).toEqual({ resumed: false });
    expect((await store.getRoutineAccountSettings(alice.id)).routinesPausedAt).not.toBeNull();
    expect((await call("POST", "/v1/routines/resume", { now: 1 })).status).toBe(400);
    expect((await call<Api.RoutinesResumed>("POST", "/v1/routines/resume")).body).toEqual({
      resumed: true,
    });
    const resumed = await call<Api.Routine>("GET", `/v1/routines/${created.body.id}`);
    expect(resumed.body.paused).toBe(false);
    expect(resumed.body.nextRunAt).not.toBeNull();
    expect((await store.listAudit({ accountId: alice.id }))[0]?.action).toBe("routines.resume");
  });

  it("a routine stored while the engine is down is armed by the sweep later (RTN2)", async () => {
    const botId = await aliceBot();
    engineDown = true;
    const created = await call<Api.Routine>("POST", `/v1/bots/${botId}/routines`, {
      name: "later",
      instruction: "y",
      trigger: daily,
    });
    expect(created.status).toBe(201);
    expect(armed).toEqual([]);
    engineDown = false;
    // The in-process scheduler never marks the routine armed, so every sweep re-arms it (idempotent per generation).
    const service = createRoutineService({
      store,
      scheduler: {
        arm: async (routineId, generation) => void armed.push({ routineId, generation }),
        run: async () => null,
        send: async () => undefined,
      },
      settings: defaultRoutineSettings,
      runUsage: { usageOfRuns: async () => new Map() },
    });
    expect(await service.armPending()).toBe(1);
    expect(armed).toEqual([{ routineId: created.body.id, generation: 1 }]);
  });
});

describe("webhooks", () => {
  async function webhookRoutine() {
    const botId = await aliceBot();
    const created = await call<Api.Routine>("POST", `/v1/bots/${botId}/routines`, {
      name: "hook",
      instruction: "Handle it.",
      trigger: { type: "webhook" },
    });
    return created.body;
  }
  const hook = (url: string, key: string | null, raw: string, contentType = "application/json") =>
    call<{ runId: string }>("POST", new URL(url).pathname, undefined, {
      token: key,
      raw,
      contentType,
    });

  const nothingStored = async (routineId: string) => {
    expect(await store.listRoutineRuns(routineId, 20)).toEqual([]);
    expect(await store.listConversations(alice.id)).toEqual([]);
  };

  it("a call with the key answers 202 {runId} and starts a run with the payload; each call is audited", async () => {
    const routine = await webhookRoutine();
    expect(routine.webhook?.url).toBe(`http://roost.test/v1/hooks/${routine.id}`);
    const answer = await hook(routine.webhook!.url, routine.webhook!.key, JSON.stringify({ n: 1 }));
    expect(answer.status).toBe(202);
    const [run] = await store.listRoutineRuns(routine.id, 20);
    expect(run).toMatchObject({ id: answer.body.runId, kind: "webhook", status: "running" });
    const [message] = await store.listMessages(run!.conversationId!);
    expect(message!.source).toEqual({
      kind: "webhook",
      routineId: routine.id,
      runId: answer.body.runId,
    });
    expect(message!.text).toContain('"n": 1');
    const [entry] = await store.listAudit({ accountId: alice.id });
    expect(entry).toMatchObject({
      action: "routine.webhook",
      target: routine.id,
      detail: { outcome: "accepted", runId: answer.body.runId },
    });
  });

  it("no key, a wrong key, and an unknown routine get the same 401; nothing is stored but the audit entry (RAPI2, RAPI3)", async () => {
    const routine = await webhookRoutine();
    const body = JSON.stringify({ n: 1 });
    const none = await hook(routine.webhook!.url, null, body);
    const wrong = await hook(routine.webhook!.url, "rwk_guess", body);
    const unknown = await hook("http://roost.test/v1/hooks/rtn_nope", routine.webhook!.key, body);
    // An API token is not the webhook's key.
    const apiToken = await hook(routine.webhook!.url, alice.token, body);
    for (const answer of [none, wrong, unknown, apiToken]) {
      expect(answer.status).toBe(401);
      expect(answer.body.error?.message).toBe(none.body.error?.message);
    }
    expect(none.body.error?.message).toMatch(/Authorization: Bearer <key>/);
    await nothingStored(routine.id);
    const outcomes = (await store.listAudit({ limit: 20 }))
      .filter((entry) => entry.action === "routine.webhook")
      .map((entry) => entry.detail.outcome);
    expect(outcomes.sort()).toEqual(["bad_key", "bad_key", "bad_key", "no_key"]);
  });

  it("bad JSON is 400, a huge body 413, a non-JSON type 415; nothing half-stored", async () => {
    const routine = await webhookRoutine();
    const key = routine.webhook!.key;
    const bad = await hook(routine.webhook!.url, key, "{not json");
    expect(bad.status).toBe(400);
    expect(bad.body.error?.code).toBe("invalid_json");
    const huge = await hook(routine.webhook!.url, key, JSON.stringify({ blob: "x".repeat(5000) }));
    expect(huge.status).toBe(413);
    expect(huge.body.error?.message).toMatch(/at most 2048 bytes/);
    const form = await hook(routine.webhook!.url, key, "a=1", "application/x-www-form-urlencoded");
    expect(form.status).toBe(415);
    await nothingStored(routine.id);
    const outcomes = (await store.listAudit({ limit: 20 }))
      .filter((entry) => entry.action === "routine.webhook")
      .map((entry) => entry.detail.outcome);
    expect(outcomes.sort()).toEqual(["bad_json", "bad_media_type", "too_large"]);
  });

  it("a flood gets 429 with retry-after, before the key is checked (RAPI4)", async () => {
    const routine = await webhookRoutine();
    const answers = [];
    for (let index = 0; index < 7; index++)
      answers.push(await hook(routine.webhook!.url, routine.webhook!.key, "{}"));
    expect(answers.slice(0, 5).every((answer) => answer.status === 202)).toBe(true);
    const limited = answers[5]!;
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await store.listRoutineRuns(routine.id, 20)).toHaveLength(5);
  });

  it("the engine down: 503 with retry-after, and no run stored", async () => {
    const routine = await webhookRoutine();
    engineDown = true;
    const answer = await hook(routine.webhook!.url, routine.webhook!.key, "{}");
    expect(answer.status).toBe(503);
    expect(answer.headers.get("retry-after")).not.toBeNull();
    await nothingStored(routine.id);
  });

  it("the key is shown once and rotating it makes the old one fail", async () => {
    const routine = await webhookRoutine();
    expect(
      (await call<Api.Routine>("GET", `/v1/routines/${routine.id}`)).body.webhook?.key,
    ).toBeNull();
    const rotated = await call<Api.Routine>("POST", `/v1/routines/${routine.id}/webhook/rotate`);
    expect(rotated.body.webhook?.key).toMatch(/^rwk_/);
    expect(rotated.body.webhook?.key).not.toBe(routine.webhook!.key);
    expect((await hook(routine.webhook!.url, routine.webhook!.key, "{}")).status).toBe(401);
    expect((await hook(routine.webhook!.url, rotated.body.webhook!.key, "{}")).status).toBe(202);
    // The key is stored hashed only (RST5).
    const stored = await store.getRoutine(routine.id);
    expect(stored!.webhookKeyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored)).not.toContain(rotated.body.webhook!.key!);
    // A schedule routine has no webhook to rotate.
    const botId = (await store.listBots(alice.id))[0]!.id;
    const scheduled = await call<Api.Routine>("POST", `/v1/bots/${botId}/routines`, {
      name: "s",
      instruction: "y",
      trigger: daily,
    });
    expect((await call("POST", `/v1/routines/${scheduled.body.id}/webhook/rotate`)).status).toBe(
      409,
    );
  });

  it("a disabled routine's webhook answers 409 and stores nothing", async () => {
    const routine = await webhookRoutine();
    await call("PATCH", `/v1/routines/${routine.id}`, { enabled: false });
    const answer = await hook(routine.webhook!.url, routine.webhook!.key, "{}");
    expect(answer.status).toBe(409);
    await nothingStored(routine.id);
  });
});
