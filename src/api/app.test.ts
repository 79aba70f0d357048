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
import { parseEgressPolicy } from "../egress/index.ts";
import { errorCodes, RoostError } from "../errors/index.ts";
import { createEventHub, type EventHub } from "../events/index.ts";
import { createLogger, type Logger } from "../log/index.ts";
import { createModelResolver, parseModelSpec } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { waitFor } from "../../test/support/wait.ts";
import { createApi, type ApiDependencies } from "./app.ts";
import { errorBody, httpStatus } from "./errors.ts";

type BotView = Api.Bot;
type ConversationView = Api.Conversation;
type PostedMessage = Api.PostedMessage;
type StepView = Api.Step;

interface Harness {
  app: ReturnType<typeof createApi>;
  store: Store;
  events: EventHub;
  kicks: string[];
  interrupts: string[];
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
  const interrupts: string[] = [];
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
    interrupt: (conversationId) => {
      interrupts.push(conversationId);
      return events.turnState(conversationId) === "working";
    },
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
    interrupts,
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

/** The real JSON logger, writing its lines into `lines` (so redaction is the real one). */
function logTo(lines: string[]): Logger {
  return createLogger({ level: "debug", destination: { write: (line) => lines.push(line) } });
}

/** Parsed log lines. */
function entries(lines: string[]): Record<string, unknown>[] {
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
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

/** Every authenticated route, with a valid body for those that take one. */
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
  ["DELETE", `/v1/bots/${botId}`],
  ["PATCH", `/v1/conversations/${conversationId}`, { title: "renamed" }],
  ["DELETE", `/v1/conversations/${conversationId}`],
  ["GET", "/v1/tokens"],
  ["DELETE", "/v1/tokens/tok_whatever"],
];

describe("authentication", () => {
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
    expect(table.length).toBe(19);
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
      logger: logTo(logged),
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
      /unknown field "colour" \(remove it\); unknown field "size"/,
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
      logger: logTo(logged),
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

describe("interrupting a turn", () => {
  let h: Harness;
  let conversationId: string;
  beforeEach(async () => {
    h = await startHarness();
    const bot = await call<{ id: string }>(h, "POST", "/v1/bots", { json: { name: "b" } });
    conversationId = (
      await call<{ id: string }>(h, "POST", "/v1/conversations", { json: { botId: bot.body.id } })
    ).body.id;
  });
  afterEach(() => h.close());

  it("POST …/interrupt stops a running turn (202) and says when none was running (200)", async () => {
    const idle = await call(h, "POST", `/v1/conversations/${conversationId}/interrupt`);
    expect(idle).toMatchObject({ status: 200, body: { interrupted: false } });
    h.events.publish({ type: "turn", conversationId, state: "working", turnId: "t1" });
    const running = await call(h, "POST", `/v1/conversations/${conversationId}/interrupt`, {
      json: {},
    });
    expect(running).toMatchObject({ status: 202, body: { interrupted: true } });
    expect(h.interrupts).toEqual([conversationId, conversationId]);
    const audit = await h.store.listAudit({ accountId: h.alice.id });
    expect(audit.filter((entry) => entry.action === "conversation.interrupt")).toHaveLength(2);
  });

  it("another account cannot interrupt (404), and a body other than {} is refused", async () => {
    const other = await call(h, "POST", `/v1/conversations/${conversationId}/interrupt`, {
      token: h.bob.token,
    });
    expectError(other, 404, "not_found");
    const junk = await call(h, "POST", `/v1/conversations/${conversationId}/interrupt`, {
      json: { now: true },
    });
    expectError(junk, 400, "invalid_request");
    expect(h.interrupts).toEqual([]);
  });

  it("a message with interrupt: true stops the running turn and is stored like any message", async () => {
    h.events.publish({ type: "turn", conversationId, state: "working", turnId: "t1" });
    const sent = await call(h, "POST", `/v1/conversations/${conversationId}/messages`, {
      json: { text: "stop, do this instead", clientMessageId: "m1", interrupt: true },
    });
    expect(sent.status).toBe(202);
    expect(h.interrupts).toEqual([conversationId]);
    expect(h.kicks).toEqual([conversationId]);
    const plain = await call(h, "POST", `/v1/conversations/${conversationId}/messages`, {
      json: { text: "and this waits its turn", clientMessageId: "m2" },
    });
    expect(plain.status).toBe(202);
    expect(h.interrupts).toEqual([conversationId]);
    const bad = await call(h, "POST", `/v1/conversations/${conversationId}/messages`, {
      json: { text: "x", clientMessageId: "m3", interrupt: "yes" },
    });
    expectError(bad, 400, "invalid_request");
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

/** Opens an event stream and waits for its hello; `close` ends it as a client would. */
async function openStream(h: Harness, conversationId: string, token: string) {
  const response = await h.app.request(`/v1/conversations/${conversationId}/events`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (response.status !== 200) return { response, close: async () => undefined };
  const messages = readSse(response.body!);
  const hello = await messages.next();
  expect(hello.done !== true && hello.value.event).toBe("hello");
  return {
    response,
    /** Resolves when the server ends the stream. */
    ended: async () => {
      for (;;) if ((await messages.next()).done === true) return;
    },
    close: async () => {
      await messages.return(undefined);
    },
  };
}

describe("DELETE /v1/bots/{id}", () => {
  it("deletes the bot with its conversations, messages and steps (204), audited, leaving the rest", async () => {
    const bot = await createBot(harness.alice, "doomed");
    const kept = await createBot(harness.alice, "kept");
    const bobs = await createBot(harness.bob, "doomed");
    const conversations = [
      await createConversation(harness.alice, bot.id),
      await createConversation(harness.alice, bot.id),
    ];
    const keptConversation = await createConversation(harness.alice, kept.id);
    for (const [index, conversation] of [...conversations, keptConversation].entries()) {
      await call(harness, "POST", `/v1/conversations/${conversation.id}/messages`, {
        json: { text: "hi", clientMessageId: `m${index}` },
      });
    }
    await harness.store.appendStep({
      conversationId: conversations[0]!.id,
      id: "turn-1:reply",
      turnId: "turn-1",
      kind: "reply",
      payload: { text: "hello", model: "demo" },
    });
    const before = harness.rowCounts();

    const answer = await harness.app.request(`/v1/bots/${bot.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${harness.alice.token}` },
    });
    expect(answer.status).toBe(204);
    expect(await answer.text()).toBe("");

    expect(harness.rowCounts()).toMatchObject({
      bots: before.bots! - 1,
      conversations: before.conversations! - 2,
      messages: before.messages! - 2,
      steps: before.steps! - 3,
      audit_log: before.audit_log! + 1,
    });
    expectError(await call(harness, "GET", `/v1/bots/${bot.id}`), 404, "not_found");
    for (const conversation of conversations) {
      expectError(
        await call(harness, "GET", `/v1/conversations/${conversation.id}`),
        404,
        "not_found",
      );
      expectError(
        await call(harness, "GET", `/v1/conversations/${conversation.id}/steps`),
        404,
        "not_found",
      );
    }
    expect((await call<{ bots: BotView[] }>(harness, "GET", "/v1/bots")).body.bots).toEqual([kept]);
    expect((await call(harness, "GET", `/v1/conversations/${keptConversation.id}`)).status).toBe(
      200,
    );
    expect((await harness.store.getBot(bobs.id))?.name).toBe("doomed");
    expect((await harness.store.listAudit({ accountId: harness.alice.id }))[0]).toMatchObject({
      action: "bot.delete",
      target: bot.id,
      detail: { conversations: 2, messages: 2, steps: 3 },
    });
    // Gone: deleting again is 404.
    expectError(await call(harness, "DELETE", `/v1/bots/${bot.id}`), 404, "not_found");
  });

  it("another account's bot, or an unknown one, answers 404 like a missing id and nothing is deleted", async () => {
    const bobs = await createBot(harness.bob, "bobs");
    await createConversation(harness.bob, bobs.id);
    for (const [id, token] of [
      [bobs.id, harness.alice.token],
      [bobs.id, harness.admin.token],
      ["bot_doesnotexist", harness.alice.token],
    ] as const) {
      await expectNothingStored(async () =>
        expectError(
          await call(harness, "DELETE", `/v1/bots/${id}`, { token }),
          404,
          "not_found",
          new RegExp(`bot "${id}" not found`),
        ),
      );
    }
    expect((await harness.store.getBot(bobs.id))?.name).toBe("bobs");
  });

  it.each([
    ["a JSON body", { json: { cascade: false } }],
    ["a text body", { raw: "yes", contentType: "text/plain" }],
    ["a query parameter", { query: "?force=true" }],
  ])("refuses %s with 400 invalid_request and deletes nothing", async (_label, options) => {
    const bot = await createBot(harness.alice);
    const { query = "", ...rest } = options as CallOptions & { query?: string };
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "DELETE", `/v1/bots/${bot.id}${query}`, rest),
        400,
        "invalid_request",
        query === "" ? /takes no body/ : /unknown query parameter "force"/,
      ),
    );
  });

  it("a running turn of a deleted bot finds its conversation gone: reads answer nothing, its next step fails not_found", async () => {
    const bot = await createBot(harness.alice);
    const conversation = await createConversation(harness.alice, bot.id);
    await call(harness, "POST", `/v1/conversations/${conversation.id}/messages`, {
      json: { text: "start a long turn", clientMessageId: "m" },
    });
    // The loop took the message and is mid-turn when the owner deletes the bot.
    await harness.store.takeInbox(conversation.id, "take-1", null);
    expect((await call(harness, "DELETE", `/v1/bots/${bot.id}`)).status).toBe(204);
    expect(await harness.store.getConversation(conversation.id)).toBeUndefined();
    expect(await harness.store.getBot(bot.id)).toBeUndefined();
    expect(await harness.store.takeInbox(conversation.id, "take-1", null)).toEqual([]);
    await expect(
      harness.store.appendStep({
        conversationId: conversation.id,
        id: "take-1:reply",
        turnId: "take-1",
        kind: "reply",
        payload: { text: "too late" },
      }),
    ).rejects.toMatchObject({ name: "NotFoundError", code: "not_found" });
  });

  it("an event stream following a deleted bot's conversation ends, and reopening it is 404", async () => {
    const bot = await createBot(harness.alice);
    const conversation = await createConversation(harness.alice, bot.id);
    const stream = await openStream(harness, conversation.id, harness.alice.token);
    try {
      expect((await call(harness, "DELETE", `/v1/bots/${bot.id}`)).status).toBe(204);
      await stream.ended!();
      expectError(
        await call(harness, "GET", `/v1/conversations/${conversation.id}/events`),
        404,
        "not_found",
      );
    } finally {
      await stream.close();
    }
  });
});

describe("a resync of the events hub (the relay reconnected: other nodes' events were missed)", () => {
  it("ends every live conversation stream, so its client reconnects and reloads from its hello", async () => {
    const bot = await createBot(harness.alice);
    const conversation = await createConversation(harness.alice, bot.id);
    const stream = await openStream(harness, conversation.id, harness.alice.token);
    try {
      harness.events.resync();
      await stream.ended!();
      const again = await openStream(harness, conversation.id, harness.alice.token);
      await again.close();
    } finally {
      await stream.close();
    }
  });
});

describe("DELETE /v1/conversations/{id}", () => {
  it("deletes the conversation with its messages and steps (204), audited; the bot and its other conversations stay", async () => {
    const bot = await createBot(harness.alice);
    const doomed = await createConversation(harness.alice, bot.id);
    const sibling = await createConversation(harness.alice, bot.id);
    for (const conversation of [doomed, sibling]) {
      await call(harness, "POST", `/v1/conversations/${conversation.id}/messages`, {
        json: { text: "hi", clientMessageId: "same-id-in-both" },
      });
    }
    const stream = await openStream(harness, doomed.id, harness.alice.token);
    try {
      const before = harness.rowCounts();
      const answer = await call(harness, "DELETE", `/v1/conversations/${doomed.id}`);
      expect(answer).toEqual({ status: 204, body: undefined });
      expect(harness.rowCounts()).toMatchObject({
        bots: before.bots,
        conversations: before.conversations! - 1,
        messages: before.messages! - 1,
        steps: before.steps! - 1,
        audit_log: before.audit_log! + 1,
      });
      await stream.ended!();
    } finally {
      await stream.close();
    }
    expectError(await call(harness, "GET", `/v1/conversations/${doomed.id}`), 404, "not_found");
    expectError(
      await call(harness, "POST", `/v1/conversations/${doomed.id}/messages`, {
        json: { text: "anyone there?", clientMessageId: "late" },
      }),
      404,
      "not_found",
    );
    expect((await call(harness, "GET", `/v1/conversations/${sibling.id}`)).body.lastSeq).toBe(1);
    expect((await call(harness, "GET", `/v1/bots/${bot.id}`)).status).toBe(200);
    expect((await harness.store.listAudit({ accountId: harness.alice.id }))[0]).toMatchObject({
      action: "conversation.delete",
      target: doomed.id,
    });
    expectError(await call(harness, "DELETE", `/v1/conversations/${doomed.id}`), 404, "not_found");
  });

  it("another account's conversation, or an unknown one, answers 404 and nothing is deleted", async () => {
    const bobsBot = await createBot(harness.bob, "bobs");
    const bobs = await createConversation(harness.bob, bobsBot.id);
    for (const [id, token] of [
      [bobs.id, harness.alice.token],
      [bobs.id, harness.admin.token],
      ["conv_unknown", harness.alice.token],
    ] as const) {
      await expectNothingStored(async () =>
        expectError(
          await call(harness, "DELETE", `/v1/conversations/${id}`, { token }),
          404,
          "not_found",
          new RegExp(`conversation "${id}" not found`),
        ),
      );
    }
    expect((await harness.store.getConversation(bobs.id))?.id).toBe(bobs.id);
  });

  it("refuses a body with 400 and deletes nothing", async () => {
    const bot = await createBot(harness.alice);
    const conversation = await createConversation(harness.alice, bot.id);
    await expectNothingStored(async () =>
      expectError(
        await call(harness, "DELETE", `/v1/conversations/${conversation.id}`, { json: {} }),
        400,
        "invalid_request",
        /takes no body/,
      ),
    );
  });
});

describe("PATCH /v1/conversations/{id}", () => {
  let conversation: ConversationView;
  beforeEach(async () => {
    const bot = await createBot(harness.alice);
    conversation = await createConversation(harness.alice, bot.id);
  });
  const patch = (options: CallOptions, id: string = conversation.id) =>
    call<ConversationView>(harness, "PATCH", `/v1/conversations/${id}`, options);
  const unchanged = async () =>
    expect(await harness.store.getConversation(conversation.id)).toMatchObject({
      title: conversation.title,
      updatedAt: Date.parse(conversation.updatedAt),
    });

  it("renames the conversation (200 with the view), audited", async () => {
    const answer = await patch({ json: { title: "Trip to Lisbon" } });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      id: conversation.id,
      botId: conversation.botId,
      title: "Trip to Lisbon",
      lastSeq: 0,
      state: "idle",
    });
    expect(Date.parse(answer.body.updatedAt)).toBeGreaterThan(Date.parse(conversation.updatedAt));
    expect((await call(harness, "GET", `/v1/conversations/${conversation.id}`)).body).toEqual(
      answer.body,
    );
    expect((await harness.store.listAudit({ accountId: harness.alice.id }))[0]).toMatchObject({
      action: "conversation.rename",
      target: conversation.id,
      detail: { title: "Trip to Lisbon" },
    });
    // 200 characters is the most.
    expect((await patch({ json: { title: "t".repeat(200) } })).status).toBe(200);
  });

  it.each(malformedBodies)(
    "rejects $label ($status $code) and changes nothing",
    async ({ options, status, code }) => {
      await expectNothingStored(async () => expectError(await patch(options), status, code));
      await unchanged();
    },
  );

  it.each([
    ["an empty patch", {}, /title is required/],
    ["an empty title", { title: "" }, /title must not be empty/],
    ["a blank title", { title: " \t " }, /title must not be empty/],
    ["a title of 201 characters", { title: "t".repeat(201) }, /title must be at most 200/],
    ["a numeric title", { title: 7 }, /title must be a string/],
    ["a null title", { title: null }, /title must be a string/],
    ["an unknown field", { title: "x", botId: "bot_other" }, /unknown field "botId"/],
    ["a read-only field", { title: "x", lastSeq: 9 }, /unknown field "lastSeq"/],
  ])("rejects %s with 400 invalid_request and changes nothing", async (_label, json, message) => {
    await expectNothingStored(async () =>
      expectError(await patch({ json }), 400, "invalid_request", message),
    );
    await unchanged();
  });

  it("another account's conversation, or an unknown one, answers 404 and nothing changes", async () => {
    for (const token of [harness.bob.token, harness.admin.token]) {
      await expectNothingStored(async () =>
        expectError(await patch({ token, json: { title: "mine now" } }), 404, "not_found"),
      );
    }
    expectError(
      await patch({ json: { title: "x" } }, "conv_unknown"),
      404,
      "not_found",
      /conversation "conv_unknown" not found/,
    );
    await unchanged();
  });
});

describe("API tokens: GET /v1/tokens and DELETE /v1/tokens/{id}", () => {
  interface TokenView {
    id: string;
    name: string;
    createdAt: string;
    lastUsedAt: string | null;
    current: boolean;
  }
  const createToken = async (name: string, token = harness.alice.token) => {
    const answer = await call<{ id: string; token: string }>(
      harness,
      "POST",
      "/v1/accounts/me/tokens",
      { token, json: { name } },
    );
    expect(answer.status).toBe(201);
    return answer.body;
  };

  it("lists the caller's own tokens, marks the current one, and never shows a token or its hash", async () => {
    const laptop = await createToken("laptop");
    await createToken("bobs phone", harness.bob.token);
    const answer = await call<{ tokens: TokenView[] }>(harness, "GET", "/v1/tokens", {
      token: laptop.token,
    });
    expect(answer.status).toBe(200);
    expect(answer.body.tokens).toEqual([
      {
        id: expect.stringMatching(/^tok_/),
        name: "test",
        createdAt: expect.any(String),
        lastUsedAt: expect.any(String),
        current: false,
      },
      {
        id: laptop.id,
        name: "laptop",
        createdAt: expect.any(String),
        lastUsedAt: expect.any(String), // this very request used it
        current: true,
      },
    ]);
    const dump = JSON.stringify(answer.body);
    expect(dump).not.toContain(laptop.token);
    expect(dump).not.toContain(harness.alice.token);
    expect(dump).not.toMatch(/[0-9a-f]{64}/); // no SHA-256 hash either
    const unused = await createToken("unused");
    const later = await call<{ tokens: TokenView[] }>(harness, "GET", "/v1/tokens");
    expect(later.body.tokens.find((token) => token.id === unused.id)?.lastUsedAt).toBeNull();
  });

  it("a revoked token gets 401 at once, others keep working, and the revoke is audited", async () => {
    const laptop = await createToken("laptop");
    const phone = await createToken("phone");
    expect((await call(harness, "GET", "/v1/me", { token: laptop.token })).status).toBe(200);

    const revoked = await call(harness, "DELETE", `/v1/tokens/${laptop.id}`, {
      token: phone.token,
    });
    expect(revoked).toEqual({ status: 204, body: undefined });
    expectError(
      await call(harness, "GET", "/v1/me", { token: laptop.token }),
      401,
      "unauthenticated",
    );
    expectError(
      await call(harness, "POST", "/v1/bots", { token: laptop.token, json: { name: "x" } }),
      401,
      "unauthenticated",
    );
    expect((await call(harness, "GET", "/v1/me", { token: phone.token })).status).toBe(200);
    const listed = await call<{ tokens: TokenView[] }>(harness, "GET", "/v1/tokens");
    expect(listed.body.tokens.map((token) => token.id)).not.toContain(laptop.id);
    expect((await harness.store.listAudit({ accountId: harness.alice.id }))[0]).toMatchObject({
      action: "token.revoke",
      target: laptop.id,
    });
    // A token may revoke itself (sign out); the request after that is 401.
    expect(
      (await call(harness, "DELETE", `/v1/tokens/${phone.id}`, { token: phone.token })).status,
    ).toBe(204);
    expectError(
      await call(harness, "GET", "/v1/tokens", { token: phone.token }),
      401,
      "unauthenticated",
    );
    expectError(await call(harness, "DELETE", `/v1/tokens/${laptop.id}`), 404, "not_found");
  });

  it("another account's token id answers 404 like an unknown one, and that token keeps working", async () => {
    const bobs = await createToken("bobs laptop", harness.bob.token);
    for (const [id, token] of [
      [bobs.id, harness.alice.token],
      [bobs.id, harness.admin.token],
      ["tok_doesnotexist", harness.alice.token],
    ] as const) {
      await expectNothingStored(async () =>
        expectError(
          await call(harness, "DELETE", `/v1/tokens/${id}`, { token }),
          404,
          "not_found",
          new RegExp(`token "${id}" not found`),
        ),
      );
    }
    expect((await call(harness, "GET", "/v1/me", { token: bobs.token })).body.id).toBe(
      harness.bob.id,
    );
    // Nor does Alice's list show Bob's tokens.
    const listed = await call<{ tokens: TokenView[] }>(harness, "GET", "/v1/tokens");
    expect(listed.body.tokens.map((token) => token.id)).not.toContain(bobs.id);
  });

  it.each([
    [
      "GET /v1/tokens with a query",
      "GET",
      "/v1/tokens?all=true",
      {},
      /unknown query parameter "all"/,
    ],
    ["DELETE with a body", "DELETE", "/v1/tokens/TOKEN", { json: {} }, /takes no body/],
  ])("refuses %s with 400 and revokes nothing", async (_label, method, path, options, message) => {
    const laptop = await createToken("laptop");
    await expectNothingStored(async () =>
      expectError(
        await call(harness, method, path.replace("TOKEN", laptop.id), options),
        400,
        "invalid_request",
        message,
      ),
    );
    expect((await call(harness, "GET", "/v1/me", { token: laptop.token })).status).toBe(200);
  });
});

describe("request ids and the log of failed requests", () => {
  it("every answer carries x-request-id: a valid one from the client is kept, a malformed one replaced", async () => {
    const generated = await harness.app.request("/v1/health");
    expect(generated.headers.get("x-request-id")).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
    const kept = await harness.app.request("/v1/me", {
      headers: {
        authorization: `Bearer ${harness.alice.token}`,
        "x-request-id": "3f1c2a9e-5b7d-4e8f-9a0b-1c2d3e4f5a6b",
      },
    });
    expect(kept.headers.get("x-request-id")).toBe("3f1c2a9e-5b7d-4e8f-9a0b-1c2d3e4f5a6b");
    for (const malformed of ["has spaces", "x".repeat(129), "line\u0007break", "<script>"]) {
      const replaced = await harness.app.request("/v1/nothing-here", {
        headers: { "x-request-id": malformed },
      });
      expect(replaced.headers.get("x-request-id")).toMatch(/^req_/);
    }
    // Error answers and event streams carry it too.
    const refused = await harness.app.request("/v1/bots");
    expect(refused.status).toBe(401);
    expect(refused.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it("a refused request logs one info line with requestId, method, path, status and accountId, and no token", async () => {
    const lines: string[] = [];
    const logged = await startHarness({ logger: logTo(lines) });
    try {
      const ok = await logged.app.request("/v1/me", {
        headers: { authorization: `Bearer ${logged.alice.token}` },
      });
      expect(ok.status).toBe(200);
      expect(lines).toEqual([]); // successful requests are not logged

      const missing = await logged.app.request("/v1/bots/bot_nope", {
        headers: { authorization: `Bearer ${logged.alice.token}`, "x-request-id": "trace-42" },
      });
      expect(missing.status).toBe(404);
      const forged = "roost_" + "A".repeat(43);
      await logged.app.request("/v1/me", { headers: { authorization: `Bearer ${forged}` } });
      // A token pasted into a path is redacted too.
      await logged.app.request(`/v1/bots/${logged.alice.token}`, {
        headers: { authorization: `Bearer ${logged.alice.token}` },
      });

      const [notFound, unauthenticated, pasted] = entries(lines);
      expect(lines).toHaveLength(3);
      expect(notFound).toMatchObject({
        level: "info",
        component: "api",
        requestId: "trace-42",
        method: "GET",
        path: "/v1/bots/bot_nope",
        route: "/v1/bots/:id",
        status: 404,
        code: "not_found",
        accountId: logged.alice.id,
      });
      expect(unauthenticated).toMatchObject({
        level: "info",
        status: 401,
        code: "unauthenticated",
      });
      expect(unauthenticated?.accountId).toBeUndefined();
      expect(pasted).toMatchObject({ status: 404, path: "/v1/bots/[REDACTED]" });
      const text = lines.join("\n");
      expect(text).not.toContain(logged.alice.token);
      expect(text).not.toContain(forged);
    } finally {
      await logged.close();
    }
  });

  it("a 500 logs one error line with the request id and the stack, and the answer hides the cause", async () => {
    const lines: string[] = [];
    const broken = await startHarness({
      logger: logTo(lines),
      defaultModel: () => {
        throw new Error("disk on fire");
      },
    });
    try {
      const response = await broken.app.request("/v1/me", {
        headers: { authorization: `Bearer ${broken.alice.token}`, "x-request-id": "boom-1" },
      });
      expect(response.status).toBe(500);
      expect(JSON.stringify(await response.json())).not.toContain("disk on fire");
      expect(entries(lines)).toEqual([
        expect.objectContaining({
          level: "error",
          requestId: "boom-1",
          method: "GET",
          path: "/v1/me",
          status: 500,
          code: "internal",
          accountId: broken.alice.id,
          error: expect.objectContaining({
            message: "disk on fire",
            stack: expect.stringContaining("app.test.ts"),
          }),
        }),
      ]);
    } finally {
      await broken.close();
    }
  });
});

describe("rate limits (API3)", () => {
  it("a flood from one token gets 429 rate_limited with retry-after, while other accounts and tokens keep working", async () => {
    let now = 1_000_000;
    const limited = await startHarness({
      limits: { requestsPerMinute: 60, requestBurst: 5 },
      clock: () => now,
    });
    try {
      const me = (token: string) =>
        limited.app.request("/v1/me", { headers: { authorization: `Bearer ${token}` } });
      for (let index = 0; index < 5; index++)
        expect((await me(limited.alice.token)).status).toBe(200);
      const flooded = await me(limited.alice.token);
      expect(flooded.status).toBe(429);
      expect(flooded.headers.get("retry-after")).toBe("1");
      const error = await errorOf(flooded);
      expect(error).toMatchObject({ code: "rate_limited", details: { retryAfterSeconds: 1 } });
      expect(error.message).toMatch(/at most 60 a minute.*retry in 1 s/);
      for (let index = 0; index < 20; index++)
        expect((await me(limited.alice.token)).status).toBe(429);

      // Bob, and another token of Alice's, have buckets of their own; health needs none.
      for (let index = 0; index < 5; index++)
        expect((await me(limited.bob.token)).status).toBe(200);
      const second = (await issueApiToken(limited.store, limited.alice.id, "second")).token;
      expect((await me(second)).status).toBe(200);
      for (let index = 0; index < 50; index++)
        expect((await limited.app.request("/v1/health")).status).toBe(200);

      // The bucket refills at the rate: one request a second here.
      now += 1000;
      expect((await me(limited.alice.token)).status).toBe(200);
      expect((await me(limited.alice.token)).status).toBe(429);
      now += 60_000; // never above the burst
      for (let index = 0; index < 5; index++)
        expect((await me(limited.alice.token)).status).toBe(200);
      expect((await me(limited.alice.token)).status).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it("a rate-limited write stores nothing and kicks nothing", async () => {
    const limited = await startHarness({ limits: { requestsPerMinute: 1, requestBurst: 3 } });
    try {
      const bot = await limited.store.createBot({
        accountId: limited.alice.id,
        name: "b",
        instructions: "",
        model: null,
      });
      const target = await limited.store.createConversation({
        accountId: limited.alice.id,
        botId: bot.id,
        title: "t",
      });
      const post = (clientMessageId: string) =>
        limited.app.request(`/v1/conversations/${target.id}/messages`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${limited.alice.token}`,
            "content-type": "application/json",
          },
          body: JSON.stringify({ text: "hi", clientMessageId }),
        });
      for (const id of ["a", "b", "c"]) expect((await post(id)).status).toBe(202);
      const before = limited.rowCounts();
      const refused = await post("d");
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(59);
      expect(limited.rowCounts()).toEqual(before);
      expect(limited.kicks).toHaveLength(3);
    } finally {
      await limited.close();
    }
  });

  it("a limit of 0 requests per minute turns the request limit off", async () => {
    const unlimited = await startHarness({ limits: { requestsPerMinute: 0, requestBurst: 1 } });
    try {
      for (let index = 0; index < 200; index++) {
        const response = await unlimited.app.request("/v1/me", {
          headers: { authorization: `Bearer ${unlimited.alice.token}` },
        });
        expect(response.status).toBe(200);
      }
    } finally {
      await unlimited.close();
    }
  });

  it("the 21st event stream of an account is refused with 429, other accounts still connect, and closing one frees a slot", async () => {
    const bot = await createBot(harness.alice);
    const conversation = await createConversation(harness.alice, bot.id);
    const bobsBot = await createBot(harness.bob, "bobs");
    const bobs = await createConversation(harness.bob, bobsBot.id);
    const open: Awaited<ReturnType<typeof openStream>>[] = [];
    try {
      // Default limit (20), across several tokens of the same account.
      const second = (await issueApiToken(harness.store, harness.alice.id, "second")).token;
      for (let index = 0; index < 20; index++) {
        const stream = await openStream(
          harness,
          conversation.id,
          index % 2 === 0 ? harness.alice.token : second,
        );
        expect(stream.response.status).toBe(200);
        open.push(stream);
      }
      const refused = await harness.app.request(`/v1/conversations/${conversation.id}/events`, {
        headers: { authorization: `Bearer ${second}` },
      });
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("10");
      const error = await errorOf(refused);
      expect(error.code).toBe("rate_limited");
      expect(error.message).toMatch(/already has 20 open event streams.*close one/);

      const bobsStream = await openStream(harness, bobs.id, harness.bob.token);
      expect(bobsStream.response.status).toBe(200);
      open.push(bobsStream);

      await open.shift()!.close();
      const reopened = await waitFor(async () => {
        const attempt = await openStream(harness, conversation.id, harness.alice.token);
        return attempt.response.status === 200 ? attempt : undefined;
      });
      open.push(reopened);
      // And the slot it took is the only one that was free.
      const again = await harness.app.request(`/v1/conversations/${conversation.id}/events`, {
        headers: { authorization: `Bearer ${harness.alice.token}` },
      });
      expect(again.status).toBe(429);
    } finally {
      for (const stream of open) await stream.close();
    }
  });
});

describe("strict query parameters (API4)", () => {
  let conversation: ConversationView;
  beforeEach(async () => {
    const bot = await createBot(harness.alice);
    conversation = await createConversation(harness.alice, bot.id);
  });

  it.each([
    [
      "?limit=1e2",
      "limit",
      /limit must be a whole number from 1 to 1000, in decimal digits only \(got "1e2"\)/,
    ],
    [
      "?after=0x10",
      "after",
      /after must be a whole number ≥ 0, in decimal digits only \(got "0x10"\)/,
    ],
    ["?after=%2B1", "after", /in decimal digits only \(got "\+1"\)/],
    ["?after=+1", "after", /in decimal digits only \(got " 1"\)/],
    ["?after=1.0", "after", /decimal digits only/],
    ["?after=-0", "after", /decimal digits only/],
    ["?after=99999999999999999999", "after", /decimal digits only/],
    ["?after=", "after", /query parameter "after" is empty; give it a value or leave it out/],
    ["?after", "after", /query parameter "after" is empty/],
    ["?limit=1&limit=2", "limit", /query parameter "limit" is given 2 times; send it once/],
    ["?after=1&after=1", "after", /"after" is given 2 times/],
    ["?since=1", "since", /unknown query parameter "since" \(remove it; accepted: after, limit\)/],
  ])("GET …/steps%s is 400 invalid_request naming the parameter", async (query, name, message) => {
    const answer = await call(harness, "GET", `/v1/conversations/${conversation.id}/steps${query}`);
    expectError(answer, 400, "invalid_request", message);
    expect(answer.body.error?.details).toEqual({
      issues: [{ path: name, message: expect.stringContaining(`"${name}"`) }],
    });
  });

  it.each([
    ["limit=1e2", /limit must be a whole number from 1 to 500, in decimal digits only/],
    ["limit=", /"limit" is empty/],
    ["botId=", /"botId" is empty/],
    ["botId=a&botId=b", /"botId" is given 2 times/],
    ["limit=1&limit=1", /"limit" is given 2 times/],
  ])("GET /v1/conversations?%s is 400 invalid_request", async (query, message) => {
    expectError(
      await call(harness, "GET", `/v1/conversations?${query}`),
      400,
      "invalid_request",
      message,
    );
  });

  it("decimal digits are still accepted, leading zeros included", async () => {
    expect(
      (await call(harness, "GET", `/v1/conversations/${conversation.id}/steps?after=0&limit=10`))
        .status,
    ).toBe(200);
    expect(
      (await call(harness, "GET", `/v1/conversations/${conversation.id}/steps?limit=007`)).status,
    ).toBe(200);
    expect((await call(harness, "GET", "/v1/conversations?limit=500")).status).toBe(200);
  });

  it("every route that takes no query parameters refuses one with 400 and does nothing", async () => {
    const bot = await createBot(harness.alice, "other-bot");
    const target = await createConversation(harness.alice, bot.id);
    const table = routes(bot.id, target.id, harness.alice.id).filter(
      ([method, path]) =>
        !(method === "GET" && /\/steps|\/conversations$/.test(path.split("?")[0]!)),
    );
    expect(table.length).toBe(17);
    for (const [method, path, json] of table) {
      const withQuery = path.includes("?") ? `${path}&x=1` : `${path}?x=1`;
      await expectNothingStored(async () => {
        const answer = await call(harness, method, withQuery, {
          ...(json === undefined ? {} : { json }),
        });
        expect({
          route: `${method} ${path}`,
          status: answer.status,
          code: answer.body?.error?.code,
        }).toEqual({
          route: `${method} ${path}`,
          status: 400,
          code: "invalid_request",
        });
        expect(answer.body.error?.message).toMatch(/unknown query parameter "x"/);
      });
    }
  });

  it("health ignores query parameters (a monitor's cache-buster must not take the node out)", async () => {
    expect((await harness.app.request("/v1/health?t=123&t=456")).status).toBe(200);
  });
});

describe("one error body everywhere (API5)", () => {
  it("a bad network policy is answered in the standard shape, its paths under the policy field", async () => {
    const computers = {
      forAccount: async (accountId: string) => ({
        id: `cmp_of_${accountId}`,
        provider: "process",
        isolated: false,
      }),
      status: async (id: string) => ({
        id,
        state: "asleep",
        lastActiveAt: null,
        holders: 0,
        failure: null,
      }),
      wake: async () => {
        throw new Error("not in this test");
      },
      sleep: async () => {
        throw new Error("not in this test");
      },
      files: undefined as never,
      networkPolicy: async () => null,
      setNetworkPolicy: async (_id: string, _accountId: string, input: unknown) =>
        parseEgressPolicy(input),
      egressEnforced: false,
      isConnected: () => false,
      useSelfHosted: async () => {
        throw new Error("not in this test");
      },
      useHosted: async () => {
        throw new Error("not in this test");
      },
    };
    const withComputers = await startHarness({ computers });
    try {
      const put = async (body: unknown) => {
        const response = await withComputers.app.request("/v1/computers/me/network-policy", {
          method: "PUT",
          headers: {
            authorization: `Bearer ${withComputers.alice.token}`,
            "content-type": "application/json",
          },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as ErrorEnvelope };
      };
      const mode = await put({ policy: { mode: "sometimes" } });
      expect(mode.status).toBe(400);
      expect(mode.body).toEqual({
        error: {
          code: "invalid_request",
          message: expect.stringMatching(/^field "policy\.mode": /),
          details: { issues: [{ path: "policy.mode", message: mode.body.error.message }] },
        },
      });
      const rule = await put({ policy: { mode: "allowlist-only", allow: ["ok.example", "*"] } });
      expect(rule.body.error.details).toEqual({
        issues: [
          {
            path: "policy.allow.1",
            message: expect.stringMatching(/^field "policy\.allow\.1": "\*" is not a host/),
          },
        ],
      });
      const notObject = await put({ policy: "open" });
      expect(notObject.body.error.details).toEqual({
        issues: [{ path: "policy", message: expect.stringMatching(/^field "policy": /) }],
      });
      // The same shape as any body field the API checks itself.
      const own = await put({ policy: { mode: "none" }, extra: 1 });
      expect(Object.keys(own.body.error).sort()).toEqual(["code", "details", "message"]);
      expect(own.body.error.details).toEqual({
        issues: [{ path: "extra", message: 'unknown field "extra" (remove it)' }],
      });
    } finally {
      await withComputers.close();
    }
  });

  it("every issue in an error body has a string path and message, whoever raised it", () => {
    const raised = new RoostError("invalid_request", "bad", {
      details: {
        issues: [
          { path: ["allow", 0], message: "nope" },
          { path: [], message: "root" },
        ],
      },
    });
    expect(errorBody(raised)).toEqual({
      error: {
        code: "invalid_request",
        message: "bad",
        details: {
          issues: [
            { path: "allow.0", message: "nope" },
            { path: "", message: "root" },
          ],
        },
      },
    });
  });
});

describe("API6: an outage is logged once, not per request", () => {
  it("many requests answered 503 while the store is down make one error line, and one line when it is back", async () => {
    const lines: string[] = [];
    let down = false;
    const outage = () =>
      new RoostError(
        "unavailable",
        "the postgres store is unavailable (Connection terminated unexpectedly); try again shortly",
        { retryAfterMs: 1000, cause: new Error("Connection terminated unexpectedly") },
      );
    const h = await startHarness({ logger: logTo(lines) });
    // Every store method fails while `down`, as on a Postgres outage.
    const flaky = new Proxy(h.store, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) =>
          down
            ? Promise.reject(outage())
            : (value as (...a: unknown[]) => unknown).apply(target, args);
      },
    });
    const app = createApi({
      store: flaky,
      events: h.events,
      kick: async () => undefined,
      health: async () => ({ ok: true, checks: {} }),
      checkModel: () => undefined,
      defaultModel: () => ({ id: "demo", isDemo: true }),
      maxBodyBytes: 1_048_576,
      interrupt: () => false,
      logger: logTo(lines),
    });
    const get = () =>
      app.request("/v1/bots", { headers: { authorization: `Bearer ${h.alice.token}` } });
    try {
      down = true;
      for (let index = 0; index < 20; index++) {
        const response = await get();
        expect(response.status).toBe(503);
        expect(response.headers.get("retry-after")).toBe("1");
        expect(((await response.json()) as Api.ErrorBody).error.code).toBe("unavailable");
      }
      down = false;
      expect((await get()).status).toBe(200);
      const logged = entries(lines).filter(
        (entry) => entry.level === "error" || String(entry.msg).includes("after an outage"),
      );
      expect(logged).toHaveLength(2);
      expect(logged[0]).toMatchObject({ level: "error", status: 503, code: "unavailable" });
      expect(logged[1]).toMatchObject({ answered503: 20 });
    } finally {
      await h.close();
    }
  });
});
