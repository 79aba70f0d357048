/**
 * The HTTP API against a real SQLite store, with a recording `kick` instead of the durable loop:
 * bad input on every endpoint gets a 4xx with a stable code and stores nothing; the happy paths
 * answer as docs/api.md says.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import type { Api } from "../protocol/index.ts";
import { readSse, type SseMessage } from "../cli/sse.ts";
import { errorCodes, RoostError } from "../errors/index.ts";
import { createEventHub, type EventHub } from "../events/index.ts";
import { createModelResolver, parseModelSpec } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi, type ApiDependencies } from "./app.ts";
import { httpStatus } from "./errors.ts";

type BotView = Api.Bot;
type ConversationView = Api.Conversation;
type PostedMessage = Api.PostedMessage;
type StepView = Api.Step;

interface Harness {
  app: ReturnType<typeof createApi>;
  store: Store;
  events: EventHub;
  kicks: string[];
  dbPath: string;
  admin: { id: string; token: string };
  alice: { id: string; token: string };
  bob: { id: string; token: string };
  /** Row count of every table: a rejected write must leave all of them unchanged. */
  rowCounts(): Record<string, number>;
  close(): Promise<void>;
}

async function startHarness(overrides: Partial<ApiDependencies> = {}): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), "roost-api-"));
  const dbPath = join(dir, "roost.db");
  const store = await openStore({ kind: "sqlite", path: dbPath });
  const events = createEventHub();
  const kicks: string[] = [];
  // The platform's model check, over a configuration with no provider (so only "demo" works).
  const models = createModelResolver({});
  const app = createApi({
    store,
    events,
    kick: async (conversationId) => {
      kicks.push(conversationId);
    },
    health: async () => ({ ok: true, checks: { store: "ok", engine: "ok" } }),
    checkModel: (spec) => {
      if (spec === null || spec === "demo") return;
      parseModelSpec(spec);
      models.resolve(spec);
    },
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1_048_576,
    ...overrides,
  });
  const account = async (name: string, isAdmin: boolean) => {
    const created = await store.createAccount({ name, isAdmin });
    return { id: created.id, token: (await issueApiToken(store, created.id, "test")).token };
  };
  const admin = await account("admin", true);
  const alice = await account("alice", false);
  const bob = await account("bob", false);
  return {
    app,
    store,
    events,
    kicks,
    dbPath,
    admin,
    alice,
    bob,
    rowCounts() {
      const database = new DatabaseSync(dbPath, { readOnly: true });
      try {
        const tables = database
          .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
          )
          .all() as { name: string }[];
        return Object.fromEntries(
          tables.map(({ name }) => [
            name,
            Number(
              (database.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number }).n,
            ),
          ]),
        );
      } finally {
        database.close();
      }
    },
    async close() {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

interface CallOptions {
  token?: string | null;
  /** Sent as JSON with `Content-Type: application/json`. */
  json?: unknown;
  /** Sent as is. */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

interface ErrorEnvelope {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

/** A response: `T` is what the test expects on success (the error envelope is always possible). */
interface Answer<T = Record<string, unknown>> {
  status: number;
  body: T & Partial<ErrorEnvelope>;
}

async function call<T = Record<string, unknown>>(
  harness: Harness,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? harness.alice.token : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers["content-type"] = "application/json";
  }
  if (options.raw !== undefined) body = options.raw;
  if (options.contentType !== undefined) headers["content-type"] = options.contentType;
  const response = await harness.app.request(path, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: (text === "" ? undefined : JSON.parse(text)) as T & Partial<ErrorEnvelope>,
  };
}

async function errorOf(response: Response): Promise<ErrorEnvelope["error"]> {
  return ((await response.json()) as ErrorEnvelope).error;
}

function expectError(
  answer: Answer<unknown>,
  status: number,
  code: string,
  messagePattern?: RegExp,
): void {
  expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status, code });
  const message = answer.body.error?.message ?? "";
  expect(message.length).toBeGreaterThan(0);
  if (messagePattern !== undefined) expect(message).toMatch(messagePattern);
}

let harness: Harness;
beforeEach(async () => {
  harness = await startHarness();
});
afterEach(async () => {
  await harness.close();
});

async function createBot(as: { token: string }, name = "helper"): Promise<BotView> {
  const answer = await call<BotView>(harness, "POST", "/v1/bots", {
    token: as.token,
    json: { name },
  });
  expect(answer.status).toBe(201);
  return answer.body;
}

async function createConversation(as: { token: string }, botId: string): Promise<ConversationView> {
  const answer = await call<ConversationView>(harness, "POST", "/v1/conversations", {
    token: as.token,
    json: { botId },
  });
  expect(answer.status).toBe(201);
  return answer.body;
}

/** Asserts that `action` changed no table at all and handed nothing to the loop. */
async function expectNothingStored(action: () => Promise<void>): Promise<void> {
  const before = harness.rowCounts();
  const kicks = harness.kicks.length;
  await action();
  expect(harness.rowCounts()).toEqual(before);
  expect(harness.kicks.length).toBe(kicks);
}

describe("authentication", () => {
  const routes = (
    botId: string,
    conversationId: string,
    accountId: string,
  ): [string, string, unknown?][] => [
    ["GET", "/v1/me"],
    ["POST", "/v1/accounts", { name: "carol" }],
    ["POST", `/v1/accounts/${accountId}/tokens`, {}],
    ["POST", "/v1/accounts/me/tokens", {}],
    ["POST", "/v1/bots", { name: "other" }],
    ["GET", "/v1/bots"],
    ["GET", `/v1/bots/${botId}`],
    ["PATCH", `/v1/bots/${botId}`, { name: "renamed" }],
    ["POST", "/v1/conversations", { botId }],
    ["GET", "/v1/conversations"],
    ["GET", `/v1/conversations/${conversationId}`],
    ["POST", `/v1/conversations/${conversationId}/messages`, { text: "hi", clientMessageId: "c1" }],
    ["GET", `/v1/conversations/${conversationId}/steps?after=0`],
    ["GET", `/v1/conversations/${conversationId}/events`],
  ];

  it("every route but health answers 401 unauthenticated without a valid bearer token, and stores nothing", async () => {
    const bot = await createBot(harness.alice);
    const conversation = await createConversation(harness.alice, bot.id);
    const credentials: [string, Record<string, string>][] = [
      ["no header", {}],
      ["empty header", { authorization: "" }],
      [
        "basic scheme",
        { authorization: `Basic ${Buffer.from("alice:secret").toString("base64")}` },
      ],
      ["bearer without token", { authorization: "Bearer " }],
      ["unknown token", { authorization: "Bearer roost_notarealtokenatall" }],
      ["token without prefix", { authorization: "Bearer abcdef" }],
      ["token with trailing junk", { authorization: `Bearer ${harness.alice.token} extra` }],
    ];
    const table = routes(bot.id, conversation.id, harness.alice.id);
    expect(table.length).toBe(14);
    for (const [method, path, json] of table) {
      for (const [label, headers] of credentials) {
        await expectNothingStored(async () => {
          const answer = await call(harness, method, path, {
            token: null,
            headers,
            ...(json === undefined ? {} : { json }),
          });
          expect({
            route: `${method} ${path}`,
            label,
            status: answer.status,
            code: answer.body?.error?.code,
          }).toEqual({
            route: `${method} ${path}`,
            label,
            status: 401,
            code: "unauthenticated",
          });
        });
      }
    }
  });

  it("a valid token is accepted whatever the case of the scheme", async () => {
    const answer = await call(harness, "GET", "/v1/me", {
      token: null,
      headers: { authorization: `bearer ${harness.alice.token}` },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      id: harness.alice.id,
      name: "alice",
      isAdmin: false,
      defaultModel: { id: "demo", isDemo: true },
    });
  });

  it("health needs no token and reports 503 when a check fails", async () => {
    const ok = await call(harness, "GET", "/v1/health", { token: null });
    expect(ok).toEqual({ status: 200, body: { ok: true, checks: { store: "ok", engine: "ok" } } });
    const failing = await startHarness({
      health: async () => ({ ok: false, checks: { store: "ok", engine: "failing: down" } }),
    });
    try {
      const answer = await failing.app.request("/v1/health");
      expect(answer.status).toBe(503);
      expect(await answer.json()).toEqual({
        ok: false,
        checks: { store: "ok", engine: "failing: down" },
      });
    } finally {
      await failing.close();
    }
  });
});

describe("errors", () => {
  it("maps every error code to the status docs/api.md lists", () => {
    const documented: Record<string, number> = {
      invalid_json: 400,
      invalid_request: 400,
      unauthenticated: 401,
      forbidden: 403,
      not_found: 404,
      conflict: 409,
      payload_too_large: 413,
      unsupported_media_type: 415,
      rate_limited: 429,
      unavailable: 503,
      model_error: 502,
      computer_asleep: 409,
      computer_unavailable: 503,
      timeout: 504,
      config_invalid: 500,
      internal: 500,
    };
    expect(
      Object.fromEntries(errorCodes.map((code) => [code, httpStatus(new RoostError(code, "x"))])),
    ).toEqual(documented);
  });

  it("an unknown route answers 404 not_found with the error envelope", async () => {
    const answer = await call(harness, "GET", "/v1/nothing-here");
    expectError(answer, 404, "not_found", /no route GET \/v1\/nothing-here/);
    expectError(await call(harness, "DELETE", "/v1/bots"), 404, "not_found");
  });

  it("an unexpected failure answers 500 internal without leaking its message", async () => {
    const logged: string[] = [];
    const broken = await startHarness({
      defaultModel: () => {
        throw new Error("secret connection string postgres://user:pw@db");
      },
      log: (message) => logged.push(message),
    });
    try {
      const response = await broken.app.request("/v1/me", {
        headers: { authorization: `Bearer ${broken.alice.token}` },
      });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({
        error: { code: "internal", message: "internal error (see the server log)" },
      });
      expect(logged.join("\n")).toContain("secret connection string");
    } finally {
      await broken.close();
    }
  });
});

/** Malformed bodies every JSON-taking route must reject, with the status and code expected. */
const malformedBodies: { label: string; options: CallOptions; status: number; code: string }[] = [
  {
    label: "invalid JSON",
    options: { raw: '{"name": ', contentType: "application/json" },
    status: 400,
    code: "invalid_json",
  },
  {
    label: "trailing garbage",
    options: { raw: "{} {}", contentType: "application/json" },
    status: 400,
    code: "invalid_json",
  },
  {
    label: "text/plain",
    options: { raw: "{}", contentType: "text/plain" },
    status: 415,
    code: "unsupported_media_type",
  },
  {
    label: "form encoded",
    options: { raw: "name=x", contentType: "application/x-www-form-urlencoded" },
    status: 415,
    code: "unsupported_media_type",
  },
  { label: "no content type", options: { raw: "{}" }, status: 415, code: "unsupported_media_type" },
  { label: "a JSON array", options: { json: [] }, status: 400, code: "invalid_request" },
  { label: "a JSON string", options: { json: "hello" }, status: 400, code: "invalid_request" },
  {
    label: "JSON null",
    options: { raw: "null", contentType: "application/json" },
    status: 400,
    code: "invalid_request",
  },
];

describe("POST /v1/bots", () => {
  it("creates a bot (201) and lists it", async () => {
    const answer = await call<BotView>(harness, "POST", "/v1/bots", {
      json: { name: "researcher", instructions: "Cite sources.", model: "demo" },
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({
      name: "researcher",
      instructions: "Cite sources.",
      model: "demo",
      effectiveModel: "demo",
      isDemo: true,
    });
    expect(answer.body.id).toMatch(/^bot_/);
    expect(new Date(answer.body.createdAt).toISOString()).toBe(answer.body.createdAt);
    const plain = await call(harness, "POST", "/v1/bots", { json: { name: "plain" } });
    expect(plain.body).toMatchObject({
      instructions: "",
      model: null,
      effectiveModel: "demo",
      isDemo: true,
    });
    const list = await call<{ bots: BotView[] }>(harness, "GET", "/v1/bots");
    expect(list.status).toBe(200);
    expect(list.body.bots.map((bot) => bot.name)).toEqual(["researcher", "plain"]);
    expect(await harness.store.listAudit({ accountId: harness.alice.id })).toHaveLength(2);
  });

  it.each(malformedBodies)(
    "rejects $label ($status $code) and stores nothing",
    async ({ options, status, code }) => {
      await expectNothingStored(async () =>
        expectError(await call(harness, "POST", "/v1/bots", options), status, code),
      );
    },
  );

  it.each([
    ["a missing name", {}, /name is required/],
    ["an empty name", { name: "" }, /name must not be empty/],
    ["a blank name", { name: "   " }, /name must not be empty/],
    ["a name of 81 characters", { name: "x".repeat(81) }, /at most 80/],
    ["a numeric name", { name: 5 }, /name must be a string/],
    ["a null name", { name: null }, /name must be a string/],
    [
      "instructions of the wrong type",
      { name: "a", instructions: ["x"] },
      /instructions must be a string/,
    ],
    [
      "instructions over 20000 characters",
      { name: "a", instructions: "x".repeat(20_001) },
      /at most 20000/,
    ],
    ["an unknown field", { name: "a", colour: "red" }, /unknown field "colour"/],
    [
      "two unknown fields",
      { name: "a", colour: "red", size: 2 },
      /unknown fields "colour", "size"/,
    ],
    ["a model without provider", { name: "a", model: "gpt-4" }, /provider:model/],
    ["a model with spaces", { name: "a", model: "openai: gpt 4" }, /provider:model/],
    ["an unknown provider", { name: "a", model: "nope:x" }, /unknown model provider "nope"/],
    [
      "a provider that is not configured",
      { name: "a", model: "openai:gpt-4.1-mini" },
      /ROOST_OPENAI_API_KEY/,
    ],
    ["a numeric model", { name: "a", model: 4 }, /model/],
  ])("rejects %s with 400 invalid_request and stores nothing", async (_label, json, message) => {
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "POST", "/v1/bots", { json }),
        400,
        "invalid_request",
        message,
      ),
    );
  });

  it("names the offending field in details", async () => {
    const answer = await call(harness, "POST", "/v1/bots", { json: { name: 7 } });
    expect(answer.body.error?.details).toEqual({
      issues: [{ path: "name", message: 'field "name": name must be a string' }],
    });
  });

  it("rejects a second bot of the same name with 409 conflict", async () => {
    await createBot(harness.alice, "twin");
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "POST", "/v1/bots", { json: { name: "twin" } }),
        409,
        "conflict",
        /already exists/,
      ),
    );
    // Names are per account.
    expect(
      (
        await call(harness, "POST", "/v1/bots", {
          token: harness.bob.token,
          json: { name: "twin" },
        })
      ).status,
    ).toBe(201);
  });

  it("rejects a body over maxBodyBytes with 413 and stores nothing", async () => {
    const small = await startHarness({ maxBodyBytes: 1024 });
    try {
      const before = small.rowCounts();
      const response = await small.app.request("/v1/bots", {
        method: "POST",
        headers: {
          authorization: `Bearer ${small.alice.token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ name: "big", instructions: "x".repeat(2000) }),
      });
      expect(response.status).toBe(413);
      expect((await errorOf(response)).code).toBe("payload_too_large");
      expect(small.rowCounts()).toEqual(before);
      // Just under the limit is fine.
      const fits = await small.app.request("/v1/bots", {
        method: "POST",
        headers: {
          authorization: `Bearer ${small.alice.token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ name: "fits", instructions: "x".repeat(900) }),
      });
      expect(fits.status).toBe(201);
    } finally {
      await small.close();
    }
  });
});

describe("GET and PATCH /v1/bots/{id}", () => {
  it("gets and patches the caller's bot", async () => {
    const bot = await createBot(harness.alice, "before");
    expect(await call(harness, "GET", `/v1/bots/${bot.id}`)).toEqual({ status: 200, body: bot });
    const patched = await call(harness, "PATCH", `/v1/bots/${bot.id}`, {
      json: { name: "after", instructions: "Be brief.", model: "demo" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id: bot.id,
      name: "after",
      instructions: "Be brief.",
      model: "demo",
    });
    const reset = await call(harness, "PATCH", `/v1/bots/${bot.id}`, { json: { model: null } });
    expect(reset.body).toMatchObject({ name: "after", model: null, effectiveModel: "demo" });
    expect((await harness.store.getBot(bot.id))?.name).toBe("after");
  });

  it("answers 404 for unknown ids and for another account's bot, changing nothing", async () => {
    const bobs = await createBot(harness.bob, "bobs");
    for (const id of ["bot_doesnotexist", bobs.id]) {
      expectError(await call(harness, "GET", `/v1/bots/${id}`), 404, "not_found", new RegExp(id));
      await expectNothingStored(async () =>
        expectError(
          await call(harness, "PATCH", `/v1/bots/${id}`, { json: { name: "stolen" } }),
          404,
          "not_found",
        ),
      );
    }
    expect((await harness.store.getBot(bobs.id))?.name).toBe("bobs");
    // Bob's bot does not show in Alice's list.
    expect((await call(harness, "GET", "/v1/bots")).body).toEqual({ bots: [] });
  });

  it.each(malformedBodies)(
    "PATCH rejects $label ($status $code) and changes nothing",
    async ({ options, status, code }) => {
      const bot = await createBot(harness.alice);
      await expectNothingStored(async () =>
        expectError(await call(harness, "PATCH", `/v1/bots/${bot.id}`, options), status, code),
      );
      expect(await harness.store.getBot(bot.id)).toMatchObject({
        name: "helper",
        updatedAt: Date.parse(bot.updatedAt),
      });
    },
  );

  it.each([
    ["an empty patch", {}, /at least one of name, instructions, model/],
    ["an empty name", { name: "" }, /must not be empty/],
    ["a long name", { name: "n".repeat(81) }, /at most 80/],
    ["a wrong type", { instructions: 3 }, /instructions must be a string/],
    ["an unknown field", { name: "x", id: "bot_other" }, /unknown field "id"/],
    ["a bad model", { model: "nope" }, /provider:model/],
    [
      "an unconfigured provider",
      { model: "anthropic:claude-sonnet-4-5" },
      /ROOST_ANTHROPIC_API_KEY/,
    ],
  ])("PATCH rejects %s with 400 and changes nothing", async (_label, json, message) => {
    const bot = await createBot(harness.alice);
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "PATCH", `/v1/bots/${bot.id}`, { json }),
        400,
        "invalid_request",
        message,
      ),
    );
    expect(await harness.store.getBot(bot.id)).toMatchObject({
      name: "helper",
      model: null,
      updatedAt: Date.parse(bot.updatedAt),
    });
  });

  it("PATCH to a name the account already uses answers 409", async () => {
    await createBot(harness.alice, "taken");
    const bot = await createBot(harness.alice, "mine");
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "PATCH", `/v1/bots/${bot.id}`, { json: { name: "taken" } }),
        409,
        "conflict",
      ),
    );
  });
});

describe("/v1/conversations", () => {
  it("creates, lists (newest first, filtered by bot) and gets conversations", async () => {
    const first = await createBot(harness.alice, "first");
    const second = await createBot(harness.alice, "second");
    const a = await createConversation(harness.alice, first.id);
    expect(a).toMatchObject({
      botId: first.id,
      title: "Chat with first",
      lastSeq: 0,
      state: "idle",
    });
    expect(a.id).toMatch(/^conv_/);
    const titled = await call<ConversationView>(harness, "POST", "/v1/conversations", {
      json: { botId: second.id, title: "Plans" },
    });
    expect(titled.status).toBe(201);
    expect(titled.body.title).toBe("Plans");

    const all = await call<{ conversations: ConversationView[] }>(
      harness,
      "GET",
      "/v1/conversations",
    );
    expect(all.status).toBe(200);
    expect(all.body.conversations.map((conversation) => conversation.id).sort()).toEqual(
      [a.id, titled.body.id].sort(),
    );
    const filtered = await call<{ conversations: ConversationView[] }>(
      harness,
      "GET",
      `/v1/conversations?botId=${first.id}`,
    );
    expect(filtered.body.conversations.map((conversation) => conversation.id)).toEqual([a.id]);
    const limited = await call<{ conversations: ConversationView[] }>(
      harness,
      "GET",
      "/v1/conversations?limit=1",
    );
    expect(limited.body.conversations).toHaveLength(1);
    expect(await call(harness, "GET", `/v1/conversations/${a.id}`)).toEqual({
      status: 200,
      body: a,
    });
  });

  it.each(malformedBodies)(
    "POST rejects $label ($status $code) and stores nothing",
    async ({ options, status, code }) => {
      await createBot(harness.alice);
      await expectNothingStored(async () =>
        expectError(await call(harness, "POST", "/v1/conversations", options), status, code),
      );
    },
  );

  it.each([
    ["a missing botId", {}, 400, "invalid_request", /botId is required/],
    ["an empty botId", { botId: "" }, 400, "invalid_request", /botId must not be empty/],
    ["a numeric botId", { botId: 12 }, 400, "invalid_request", /botId must be a string/],
    [
      "a long title",
      { botId: "BOT", title: "t".repeat(201) },
      400,
      "invalid_request",
      /title must be at most 200/,
    ],
    [
      "an unknown field",
      { botId: "BOT", state: "working" },
      400,
      "invalid_request",
      /unknown field "state"/,
    ],
    ["an unknown bot", { botId: "bot_nope" }, 404, "not_found", /bot "bot_nope" not found/],
  ])("POST rejects %s and stores nothing", async (_label, json, status, code, message) => {
    const bot = await createBot(harness.alice);
    const body = JSON.parse(JSON.stringify(json).replace('"BOT"', JSON.stringify(bot.id)));
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "POST", "/v1/conversations", { json: body }),
        status,
        code,
        message,
      ),
    );
  });

  it("another account's bot, or conversation, is not found (404) and nothing is stored", async () => {
    const bobsBot = await createBot(harness.bob, "bobs");
    const bobsConversation = await createConversation(harness.bob, bobsBot.id);
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "POST", "/v1/conversations", { json: { botId: bobsBot.id } }),
        404,
        "not_found",
      ),
    );
    expectError(
      await call(harness, "GET", `/v1/conversations/${bobsConversation.id}`),
      404,
      "not_found",
    );
    expectError(await call(harness, "GET", "/v1/conversations/conv_unknown"), 404, "not_found");
    // Filtering by another account's bot lists nothing of theirs.
    expect((await call(harness, "GET", `/v1/conversations?botId=${bobsBot.id}`)).body).toEqual({
      conversations: [],
    });
  });

  it.each([
    ["limit=0", /limit/],
    ["limit=501", /limit/],
    ["limit=abc", /limit/],
    ["limit=2.5", /limit/],
    ["botId=", /botId/],
    ["page=2", /unknown query parameter "page"/],
  ])("GET rejects ?%s with 400 invalid_request", async (query, message) => {
    expectError(
      await call(harness, "GET", `/v1/conversations?${query}`),
      400,
      "invalid_request",
      message,
    );
  });
});

describe("POST /v1/conversations/{id}/messages", () => {
  let conversation: ConversationView;
  beforeEach(async () => {
    const bot = await createBot(harness.alice);
    conversation = await createConversation(harness.alice, bot.id);
  });
  const post = (json: unknown, token = harness.alice.token, id: string = conversation.id) =>
    call<PostedMessage>(harness, "POST", `/v1/conversations/${id}/messages`, { token, json });

  it("answers 202 {messageId, seq}, stores the message as step 1 and kicks the loop once", async () => {
    const answer = await post({ text: "hello", clientMessageId: "c-1" });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({
      messageId: expect.stringMatching(/^msg_/),
      seq: 1,
      duplicate: false,
    });
    expect(harness.kicks).toEqual([conversation.id]);
    const messages = await harness.store.listMessages(conversation.id);
    expect(messages.map((message) => [message.text, message.clientMessageId, message.seq])).toEqual(
      [["hello", "c-1", 1]],
    );
    expect((await call(harness, "GET", `/v1/conversations/${conversation.id}`)).body.lastSeq).toBe(
      1,
    );
  });

  it("a repeated clientMessageId gets the same answer, one stored message and one kick", async () => {
    const first = await post({ text: "hello", clientMessageId: "same" });
    const before = harness.rowCounts();
    const again = await post({ text: "hello", clientMessageId: "same" });
    expect(again.status).toBe(202);
    expect({ messageId: again.body.messageId, seq: again.body.seq }).toEqual({
      messageId: first.body.messageId,
      seq: first.body.seq,
    });
    expect(again.body.duplicate).toBe(true);
    expect(harness.rowCounts()).toEqual(before);
    expect(await harness.store.listMessages(conversation.id)).toHaveLength(1);
    expect(harness.kicks).toEqual([conversation.id]);

    const next = await post({ text: "and more", clientMessageId: "other" });
    expect(next.body).toMatchObject({ seq: 2, duplicate: false });
    expect(harness.kicks).toEqual([conversation.id, conversation.id]);
  });

  it("the same clientMessageId in another conversation is a different message", async () => {
    const other = await createConversation(harness.alice, conversation.botId);
    const a = await post({ text: "one", clientMessageId: "shared" });
    const b = await post({ text: "two", clientMessageId: "shared" }, harness.alice.token, other.id);
    expect(b.body.duplicate).toBe(false);
    expect(b.body.messageId).not.toBe(a.body.messageId);
  });

  it.each(malformedBodies)(
    "rejects $label ($status $code), stores nothing and kicks nothing",
    async ({ options, status, code }) => {
      await expectNothingStored(async () =>
        expectError(
          await call(harness, "POST", `/v1/conversations/${conversation.id}/messages`, options),
          status,
          code,
        ),
      );
    },
  );

  it.each([
    ["a missing text", { clientMessageId: "c" }, /text is required/],
    ["an empty text", { text: "", clientMessageId: "c" }, /text must not be empty/],
    ["a blank text", { text: " \n\t ", clientMessageId: "c" }, /text must not be empty/],
    [
      "a text over 100000 characters",
      { text: "x".repeat(100_001), clientMessageId: "c" },
      /at most 100000/,
    ],
    ["a non-string text", { text: { parts: [] }, clientMessageId: "c" }, /text must be a string/],
    ["a missing clientMessageId", { text: "hi" }, /clientMessageId is required/],
    [
      "an empty clientMessageId",
      { text: "hi", clientMessageId: "" },
      /clientMessageId must not be empty/,
    ],
    [
      "a numeric clientMessageId",
      { text: "hi", clientMessageId: 42 },
      /clientMessageId must be a string/,
    ],
    [
      "a clientMessageId over 200 characters",
      { text: "hi", clientMessageId: "c".repeat(201) },
      /at most 200/,
    ],
    [
      "an unknown field",
      { text: "hi", clientMessageId: "c", role: "system" },
      /unknown field "role"/,
    ],
  ])("rejects %s with 400, stores nothing and kicks nothing", async (_label, json, message) => {
    await expectNothingStored(async () =>
      expectError(await post(json), 400, "invalid_request", message),
    );
  });

  it("another account's conversation, or an unknown one, is 404 and nothing is stored or kicked", async () => {
    await expectNothingStored(async () => {
      expectError(
        await post({ text: "hi", clientMessageId: "c" }, harness.bob.token),
        404,
        "not_found",
      );
      expectError(
        await post({ text: "hi", clientMessageId: "c" }, harness.alice.token, "conv_unknown"),
        404,
        "not_found",
      );
      // Even the admin cannot post into someone else's conversation.
      expectError(
        await post({ text: "hi", clientMessageId: "c" }, harness.admin.token),
        404,
        "not_found",
      );
    });
  });

  it("a body over maxBodyBytes is 413 and nothing is stored or kicked", async () => {
    const small = await startHarness({ maxBodyBytes: 1024 });
    try {
      const bot = await small.store.createBot({
        accountId: small.alice.id,
        name: "b",
        instructions: "",
        model: null,
      });
      const target = await small.store.createConversation({
        accountId: small.alice.id,
        botId: bot.id,
        title: "t",
      });
      const before = small.rowCounts();
      const response = await small.app.request(`/v1/conversations/${target.id}/messages`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${small.alice.token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ text: "x".repeat(5000), clientMessageId: "big" }),
      });
      expect(response.status).toBe(413);
      expect((await errorOf(response)).code).toBe("payload_too_large");
      expect(small.rowCounts()).toEqual(before);
      expect(small.kicks).toEqual([]);
    } finally {
      await small.close();
    }
  });

  it("a kick that fails is logged and the message still accepted (the sweep retries)", async () => {
    const logged: string[] = [];
    const failing = await startHarness({
      kick: async () => {
        throw new Error("ingress down");
      },
      log: (message) => logged.push(message),
    });
    try {
      const bot = await failing.store.createBot({
        accountId: failing.alice.id,
        name: "b",
        instructions: "",
        model: null,
      });
      const target = await failing.store.createConversation({
        accountId: failing.alice.id,
        botId: bot.id,
        title: "t",
      });
      const response = await failing.app.request(`/v1/conversations/${target.id}/messages`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${failing.alice.token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ text: "hi", clientMessageId: "k" }),
      });
      expect(response.status).toBe(202);
      await expect.poll(() => logged.join("\n")).toContain("ingress down");
      expect(await failing.store.pendingMessages(target.id)).toHaveLength(1);
    } finally {
      await failing.close();
    }
  });
});

describe("GET /v1/conversations/{id}/steps", () => {
  let conversation: ConversationView;
  beforeEach(async () => {
    const bot = await createBot(harness.alice);
    conversation = await createConversation(harness.alice, bot.id);
    for (const [index, text] of ["one", "two", "three"].entries()) {
      await call(harness, "POST", `/v1/conversations/${conversation.id}/messages`, {
        json: { text, clientMessageId: `m${index}` },
      });
    }
  });
  const steps = (query: string, token = harness.alice.token, id: string = conversation.id) =>
    call<{ steps: StepView[]; lastSeq: number }>(
      harness,
      "GET",
      `/v1/conversations/${id}/steps${query}`,
      { token },
    );

  it("lists the steps after SEQ in order, limited by limit, with lastSeq", async () => {
    const all = await steps("");
    expect(all.status).toBe(200);
    expect(all.body.lastSeq).toBe(3);
    expect(all.body.steps.map((step) => [step.seq, step.kind])).toEqual([
      [1, "message"],
      [2, "message"],
      [3, "message"],
    ]);
    expect(all.body.steps[0]).toMatchObject({ turnId: null, payload: { text: "one" } });
    const after = await steps("?after=1");
    expect(after.body.steps.map((step) => step.seq)).toEqual([2, 3]);
    const page = await steps("?after=1&limit=1");
    expect(page.body).toMatchObject({ steps: [{ seq: 2, payload: { text: "two" } }], lastSeq: 3 });
    expect((await steps("?after=3")).body).toEqual({ steps: [], lastSeq: 3 });
    expect((await steps("?after=99")).body.steps).toEqual([]);
  });

  it.each([
    ["?after=-1", /after/],
    ["?after=abc", /after must be a whole number/],
    ["?after=1.5", /after/],
    ["?limit=0", /limit/],
    ["?limit=1001", /limit/],
    ["?limit=ten", /limit must be a whole number/],
    ["?since=1", /unknown query parameter "since"/],
  ])("rejects %s with 400 invalid_request", async (query, message) => {
    expectError(await steps(query), 400, "invalid_request", message);
  });

  it("another account's conversation, or an unknown one, is 404", async () => {
    expectError(await steps("?after=0", harness.bob.token), 404, "not_found");
    expectError(await steps("?after=0", harness.alice.token, "conv_unknown"), 404, "not_found");
  });
});

describe("GET /v1/conversations/{id}/events", () => {
  async function open(id: string, token = harness.alice.token) {
    const response = await harness.app.request(`/v1/conversations/${id}/events`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return response;
  }

  it("sends hello with the latest seq, then changed after a post, then the loop's events", async () => {
    const bot = await createBot(harness.alice);
    const conversation = await createConversation(harness.alice, bot.id);
    await call(harness, "POST", `/v1/conversations/${conversation.id}/messages`, {
      json: { text: "before", clientMessageId: "b" },
    });

    const response = await open(conversation.id);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const messages = readSse(response.body!);
    try {
      const next = async (): Promise<SseMessage> => {
        const result = await messages.next();
        if (result.done === true) throw new Error("the stream ended");
        return result.value;
      };
      const hello = await next();
      expect({ event: hello.event, data: JSON.parse(hello.data) }).toEqual({
        event: "hello",
        data: { seq: 1, state: "idle" },
      });

      const posted = await call(harness, "POST", `/v1/conversations/${conversation.id}/messages`, {
        json: { text: "after", clientMessageId: "a" },
      });
      expect(posted.status).toBe(202);
      const changed = await next();
      expect({ event: changed.event, data: JSON.parse(changed.data) }).toEqual({
        event: "changed",
        data: { seq: 2 },
      });

      // What the loop publishes reaches the stream too, without the conversation id.
      harness.events.publish({
        type: "turn",
        conversationId: conversation.id,
        state: "working",
        turnId: "t1",
      });
      harness.events.publish({
        type: "delta",
        conversationId: conversation.id,
        turnId: "t1",
        text: "Hel",
      });
      harness.events.publish({
        type: "turn",
        conversationId: "conv_someone_else",
        state: "working",
        turnId: "x",
      });
      harness.events.publish({
        type: "turn",
        conversationId: conversation.id,
        state: "idle",
        turnId: "t1",
      });
      const rest = [await next(), await next(), await next()].map((message) => ({
        event: message.event,
        data: JSON.parse(message.data),
      }));
      expect(rest).toEqual([
        { event: "turn", data: { state: "working", turnId: "t1" } },
        { event: "delta", data: { turnId: "t1", text: "Hel" } },
        { event: "turn", data: { state: "idle", turnId: "t1" } },
      ]);
    } finally {
      await messages.return(undefined);
    }
  });

  it("hello reports a turn that is already working", async () => {
    const bot = await createBot(harness.alice);
    const conversation = await createConversation(harness.alice, bot.id);
    harness.events.publish({
      type: "turn",
      conversationId: conversation.id,
      state: "working",
      turnId: "t",
    });
    const messages = readSse((await open(conversation.id)).body!);
    try {
      const hello = await messages.next();
      if (hello.done === true) throw new Error("the stream ended before hello");
      expect(hello.value.event).toBe("hello");
      expect(JSON.parse(hello.value.data)).toEqual({ seq: 0, state: "working" });
    } finally {
      await messages.return(undefined);
    }
  });

  it("another account's conversation, or an unknown one, is 404 with the JSON envelope", async () => {
    const bobsBot = await createBot(harness.bob, "bobs");
    const bobsConversation = await createConversation(harness.bob, bobsBot.id);
    for (const id of [bobsConversation.id, "conv_unknown"]) {
      const response = await open(id);
      expect(response.status).toBe(404);
      expect((await errorOf(response)).code).toBe("not_found");
    }
  });
});

describe("accounts and tokens", () => {
  it("an admin creates an account (201) whose token works and is stored only hashed", async () => {
    const answer = await call<{ account: { id: string }; token: string }>(
      harness,
      "POST",
      "/v1/accounts",
      {
        token: harness.admin.token,
        json: { name: "carol" },
      },
    );
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      account: { id: expect.stringMatching(/^acct_/), name: "carol", isAdmin: false },
      token: expect.stringMatching(/^roost_/),
    });
    const me = await call(harness, "GET", "/v1/me", { token: answer.body.token });
    expect(me.body).toMatchObject({ id: answer.body.account.id, name: "carol", isAdmin: false });
    const database = new DatabaseSync(harness.dbPath, { readOnly: true });
    try {
      const dump = JSON.stringify(database.prepare("SELECT * FROM api_tokens").all());
      expect(dump).not.toContain(answer.body.token);
    } finally {
      database.close();
    }
  });

  it("a non-admin may not create accounts (403) and nothing is stored", async () => {
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "POST", "/v1/accounts", { json: { name: "mallory" } }),
        403,
        "forbidden",
        /admin/,
      ),
    );
  });

  it.each(malformedBodies)(
    "POST /v1/accounts rejects $label ($status $code) and stores nothing",
    async ({ options, status, code }) => {
      await expectNothingStored(async () =>
        expectError(
          await call(harness, "POST", "/v1/accounts", { ...options, token: harness.admin.token }),
          status,
          code,
        ),
      );
    },
  );

  it.each([
    ["a missing name", {}, /name is required/],
    ["an empty name", { name: "" }, /must not be empty/],
    ["a long name", { name: "n".repeat(81) }, /at most 80/],
    ["an unknown field", { name: "x", isAdmin: true }, /unknown field "isAdmin"/],
  ])("POST /v1/accounts rejects %s with 400 and stores nothing", async (_label, json, message) => {
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "POST", "/v1/accounts", { token: harness.admin.token, json }),
        400,
        "invalid_request",
        message,
      ),
    );
  });

  it("any account creates tokens for itself (me or its own id); they work", async () => {
    for (const id of ["me", harness.alice.id]) {
      const answer = await call<{ token: string }>(harness, "POST", `/v1/accounts/${id}/tokens`, {
        json: { name: "laptop" },
      });
      expect(answer.status).toBe(201);
      expect(answer.body).toEqual({
        id: expect.stringMatching(/^tok_/),
        accountId: harness.alice.id,
        token: expect.stringMatching(/^roost_/),
      });
      expect((await call(harness, "GET", "/v1/me", { token: answer.body.token })).body.id).toBe(
        harness.alice.id,
      );
    }
    const unnamed = await call(harness, "POST", "/v1/accounts/me/tokens", { json: {} });
    expect(unnamed.status).toBe(201);
  });

  it("an admin creates tokens for another account; a non-admin may not (403)", async () => {
    const answer = await call(harness, "POST", `/v1/accounts/${harness.bob.id}/tokens`, {
      token: harness.admin.token,
      json: {},
    });
    expect(answer.status).toBe(201);
    expect(answer.body.accountId).toBe(harness.bob.id);
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "POST", `/v1/accounts/${harness.bob.id}/tokens`, { json: {} }),
        403,
        "forbidden",
      ),
    );
  });

  it("a token for an unknown account is 404 and nothing is stored", async () => {
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "POST", "/v1/accounts/acct_nobody/tokens", {
          token: harness.admin.token,
          json: {},
        }),
        404,
        "not_found",
      ),
    );
  });

  it.each(malformedBodies.filter((body) => body.label !== "JSON null"))(
    "POST /v1/accounts/me/tokens rejects $label ($status $code) and stores nothing",
    async ({ options, status, code }) => {
      await expectNothingStored(async () =>
        expectError(await call(harness, "POST", "/v1/accounts/me/tokens", options), status, code),
      );
    },
  );

  it.each([
    ["a non-string name", { name: 1 }, /name must be a string/],
    ["an empty name", { name: "" }, /must not be empty/],
    ["an unknown field", { name: "x", accountId: "acct_x" }, /unknown field "accountId"/],
    ["JSON null", null, /expected object/i],
  ])(
    "POST /v1/accounts/me/tokens rejects %s with 400 and stores nothing",
    async (_label, json, message) => {
      await expectNothingStored(async () =>
        expectError(
          await call(harness, "POST", "/v1/accounts/me/tokens", {
            raw: JSON.stringify(json),
            contentType: "application/json",
          }),
          400,
          "invalid_request",
          message,
        ),
      );
    },
  );
});
