/**
 * Model providers from Settings → Models (provider-routes.ts PAPI1–PAPI4, models/
 * provider-settings.ts MPS1–MPS5) over a real SQLite store, the real cipher and a fake
 * OpenAI-compatible server on 127.0.0.1 that checks keys as the real one does: another account,
 * bad base URLs and keys, the environment winning, keys never answered, a stored key reaching the
 * server, a flood of connection tests, and a change reaching another node.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub } from "../events/index.ts";
import {
  createModelResolver,
  createProviderSettings,
  type ModelResolver,
  type ProviderSettings,
  type ProvidersConfig,
} from "../models/index.ts";
import {
  fakeTextReply,
  startFakeOpenAiServer,
  type FakeOpenAiServer,
} from "../models/testing/index.ts";
import type { Api } from "../protocol/index.ts";
import { createSecretCipher, loadSecretsKey, type SecretCipher } from "../secrets/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

const serverKey = "sk-local-0123456789abcdef-WXYZ";
let dir: string;
let store: Store;
let cipher: SecretCipher;
let fake: FakeOpenAiServer;
let admin: string;
let user: string;

interface Platform {
  app: ReturnType<typeof createApi>;
  providers: ProviderSettings;
  models: ModelResolver;
}

/** What the platform wires (src/platform/index.ts): the resolver reads the settings' config. */
async function platform(environment: ProvidersConfig = {}): Promise<Platform> {
  const providers = createProviderSettings({ store, cipher, environment, timeoutMs: 2000 });
  await providers.load();
  const models = createModelResolver(() => providers.config(), { retry: { maxAttempts: 1 } });
  const app = createApi({
    store,
    events: createEventHub(),
    kick: async () => undefined,
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: (spec) => {
      if (spec !== null) models.resolve(spec);
    },
    defaultModel: () => {
      const client = models.resolve(null);
      return { id: client.id, isDemo: client.isDemo };
    },
    providers,
    maxBodyBytes: 1024 * 1024,
    limits: { requestsPerMinute: 100_000 },
  });
  return { app, providers, models };
}

async function call<T = Record<string, unknown>>(
  app: Platform["app"],
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string; body: T & { error?: Api.ErrorBody["error"] } }> {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, text, body: text === "" ? ({} as T) : JSON.parse(text) };
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-providers-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  cipher = createSecretCipher(await loadSecretsKey({ dataDir: dir }));
  fake = await startFakeOpenAiServer(() => fakeTextReply("hello from ", "the local server"), {
    apiKey: serverKey,
    models: ["model-a", "model-b"],
  });
  const adminAccount = (await store.ensureAdminAccount("admin")).account;
  admin = (await issueApiToken(store, adminAccount.id, "t")).token;
  const userAccount = await store.createAccount({ name: "uma", isAdmin: false });
  user = (await issueApiToken(store, userAccount.id, "t")).token;
});
afterEach(async () => {
  await fake.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const localServer = () => ({
  kind: "openai-compatible",
  label: "Local server",
  baseUrl: `${fake.baseUrl}/`,
  apiKey: serverKey,
});

describe("provider routes", () => {
  it("another account: every admin route answers 403 before reading a body or calling a provider", async () => {
    const { app } = await platform();
    expect((await call(app, admin, "PUT", "/v1/admin/providers/local", localServer())).status).toBe(
      200,
    );
    for (const [method, path, body] of [
      ["GET", "/v1/admin/providers", undefined],
      ["PUT", "/v1/admin/providers/local", { kind: "openai-compatible", baseUrl: "http://x/v1" }],
      ["PUT", "/v1/admin/providers/openai", "not even an object"],
      ["DELETE", "/v1/admin/providers/local", undefined],
      ["POST", "/v1/admin/providers/local/test", undefined],
      ["GET", "/v1/accounts", undefined],
    ] as const) {
      const answer = await call(app, user, method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(403);
      expect(answer.body.error?.message).toContain("only an admin account");
    }
    expect(fake.requests).toHaveLength(0);
    // The stored server is untouched.
    const list = await call<Api.ModelProviderList>(app, admin, "GET", "/v1/admin/providers");
    expect(list.body.providers.map((provider) => provider.baseUrl)).toEqual([fake.baseUrl]);
  });

  it("a stored key is sealed and never answered: views show that it is set and its last four", async () => {
    const { app } = await platform();
    const put = await call<Api.ModelProviderView>(
      app,
      admin,
      "PUT",
      "/v1/admin/providers/local",
      localServer(),
    );
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      id: "local",
      kind: "openai-compatible",
      source: "settings",
      baseUrl: fake.baseUrl, // trailing slash trimmed
      key: { set: true, lastFour: "WXYZ" },
      specPrefix: "local",
    });
    const list = await call(app, admin, "GET", "/v1/admin/providers");
    const models = await call(app, user, "GET", "/v1/providers/models");
    for (const text of [put.text, list.text, models.text]) expect(text).not.toContain(serverKey);
    const [row] = await store.listModelProviders();
    expect(row?.sealedKey).toMatch(/^v1:/);
    expect(row?.sealedKey).not.toContain(serverKey);
    expect(JSON.stringify(await store.listAudit())).not.toContain(serverKey);
    // Changing the label keeps the key; `apiKey: null` removes it.
    const relabelled = await call<Api.ModelProviderView>(
      app,
      admin,
      "PUT",
      "/v1/admin/providers/local",
      {
        kind: "openai-compatible",
        label: "GPU box",
      },
    );
    expect(relabelled.body.key).toEqual({ set: true, lastFour: "WXYZ" });
    const keyless = await call<Api.ModelProviderView>(
      app,
      admin,
      "PUT",
      "/v1/admin/providers/local",
      {
        kind: "openai-compatible",
        apiKey: null,
      },
    );
    expect(keyless.body.key).toEqual({ set: false, lastFour: null });
  });

  it("bad base URLs, keys and ids are 400s that say what to write, and store nothing", async () => {
    const { app } = await platform();
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["local", { kind: "openai-compatible", baseUrl: "localhost:11434" }, "http:// or https://"],
      ["local", { kind: "openai-compatible", baseUrl: "not a url" }, "is not a URL"],
      [
        "local",
        { kind: "openai-compatible", baseUrl: "file:///etc/passwd" },
        "http:// or https://",
      ],
      [
        "local",
        { kind: "openai-compatible", baseUrl: "http://me:secret@127.0.0.1/v1" },
        "user name or password",
      ],
      ["local", { kind: "openai-compatible", baseUrl: "http://127.0.0.1/v1?x=1" }, "query"],
      ["local", { kind: "openai-compatible" }, "baseUrl is required"],
      ["local", { kind: "openai-compatible", baseUrl: 42 }, "baseUrl"],
      ["openai", { kind: "openai" }, "apiKey is required for OpenAI"],
      ["openai", { kind: "openai", apiKey: "sk a b" }, "spaces"],
      ["openai", { kind: "openai", apiKey: "x".repeat(600) }, "longer than"],
      ["openai", { kind: "anthropic", apiKey: "k" }, 'stored as provider "anthropic"'],
      ["demo", { kind: "openai-compatible", baseUrl: "http://127.0.0.1/v1" }, "lowercase letters"],
      [
        "Ollama!",
        { kind: "openai-compatible", baseUrl: "http://127.0.0.1/v1" },
        "lowercase letters",
      ],
      ["local", { kind: "gemini", apiKey: "k" }, 'kind must be "openai"'],
      ["local", { kind: "openai-compatible", baseUrl: "http://x/v1", extra: 1 }, "extra"],
    ];
    for (const [id, body, message] of cases) {
      const answer = await call(
        app,
        admin,
        "PUT",
        `/v1/admin/providers/${encodeURIComponent(id)}`,
        body,
      );
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error?.message, JSON.stringify(body)).toContain(message);
    }
    expect(await store.listModelProviders()).toEqual([]);
  });

  it("the environment wins: shown read-only, storing its kind is a 409 naming the variable", async () => {
    const { app, providers } = await platform({ openai: { apiKey: "sk-env-key-1234" } });
    const list = await call<Api.ModelProviderList>(app, admin, "GET", "/v1/admin/providers");
    expect(list.body.providers).toEqual([
      expect.objectContaining({
        id: "openai",
        source: "environment",
        key: { set: true, lastFour: null },
        environment: ["ROOST_OPENAI_API_KEY", "ROOST_OPENAI_BASE_URL"],
      }),
    ]);
    expect(list.text).not.toContain("sk-env-key");
    const put = await call(app, admin, "PUT", "/v1/admin/providers/openai", {
      kind: "openai",
      apiKey: "sk-stored",
    });
    expect(put.status).toBe(409);
    expect(put.body.error?.message).toContain("ROOST_OPENAI_API_KEY");
    const remove = await call(app, admin, "DELETE", "/v1/admin/providers/openai");
    expect(remove.status).toBe(409);
    expect(providers.config().openai?.apiKey).toBe("sk-env-key-1234");
  });

  it("a key stored earlier, then set in the environment too: the environment's is used", async () => {
    const first = await platform();
    await call(first.app, admin, "PUT", "/v1/admin/providers/openai", {
      kind: "openai",
      apiKey: "sk-stored-9999",
    });
    expect(first.providers.config().openai?.apiKey).toBe("sk-stored-9999");
    const restarted = await platform({ openai: { apiKey: "sk-env-1111" } });
    expect(restarted.providers.config().openai?.apiKey).toBe("sk-env-1111");
    const list = await call<Api.ModelProviderList>(
      restarted.app,
      admin,
      "GET",
      "/v1/admin/providers",
    );
    expect(list.body.providers.map((view) => [view.id, view.source, view.shadowed])).toEqual([
      ["openai", "environment", false],
      ["openai", "settings", true],
    ]);
  });

  it("a stored key reaches the server: test connection, the picker's list, and a turn", async () => {
    const { app, models } = await platform();
    await call(app, admin, "PUT", "/v1/admin/providers/local", localServer());
    const test = await call<Api.ProviderTestResult>(
      app,
      admin,
      "POST",
      "/v1/admin/providers/local/test",
    );
    expect(test.body).toEqual({
      ok: true,
      models: 2,
      message: "Connected to Local server: 2 models listed.",
    });
    const choices = await call<Api.ModelChoices>(app, user, "GET", "/v1/providers/models");
    expect(choices.body.platformDefault).toEqual({
      spec: "demo",
      isDemo: true,
      label: "Platform default (demo model, offline)",
    });
    expect(choices.body.demo).toBeNull(); // offered once
    expect(choices.body.groups).toEqual([
      {
        providerId: "local",
        label: "Local server",
        listedBy: "provider",
        models: [
          { spec: "local:model-a", label: "model-a" },
          { spec: "local:model-b", label: "model-b" },
        ],
      },
    ]);
    // A bot may name it; a turn reaches the server with the stored key, without a restart.
    const bot = await call<Api.Bot>(app, user, "POST", "/v1/bots", {
      name: "Local",
      model: "local:model-a",
    });
    expect(bot.status).toBe(201);
    const result = await models.resolve("local:model-a").infer({
      system: "be brief",
      messages: [{ role: "user", text: "hi" }],
      tools: [],
    });
    expect(result.text).toBe("hello from the local server");
    expect(result.model).toBe("local:model-a");
    const chat = fake.requests.find((request) => request.path === "/v1/chat/completions");
    expect(chat?.headers.authorization).toBe(`Bearer ${serverKey}`);
    expect(chat?.body?.model).toBe("model-a");
    expect(fake.requests.every((request) => request.rejected === undefined)).toBe(true);
  });

  it("a wrong key or an unreachable server: the test says so in words, the picker shows the problem", async () => {
    const { app } = await platform();
    await call(app, admin, "PUT", "/v1/admin/providers/local", {
      ...localServer(),
      apiKey: "wrong",
    });
    const wrong = await call<Api.ProviderTestResult>(
      app,
      admin,
      "POST",
      "/v1/admin/providers/local/test",
    );
    expect(wrong.body).toEqual({
      ok: false,
      models: 0,
      message: "Local server refused the key (HTTP 401): check it",
    });
    await call(app, admin, "PUT", "/v1/admin/providers/gone", {
      kind: "openai-compatible",
      baseUrl: "http://127.0.0.1:9/v1",
    });
    const gone = await call<Api.ProviderTestResult>(
      app,
      admin,
      "POST",
      "/v1/admin/providers/gone/test",
    );
    expect(gone.body.ok).toBe(false);
    expect(gone.body.message).toContain("could not reach gone at http://127.0.0.1:9/v1/models");
    const choices = await call<Api.ModelChoices>(app, user, "GET", "/v1/providers/models");
    expect(choices.body.groups.find((group) => group.providerId === "gone")).toMatchObject({
      listedBy: "curated",
      models: [],
      problem: expect.stringContaining("could not reach"),
    });
    const missing = await call(app, admin, "POST", "/v1/admin/providers/nothing/test");
    expect(missing.status).toBe(404);
  });

  it("a server that redirects: the key is not carried to where it points (MPS5)", async () => {
    const redirector: Server = createServer((request, response) => {
      response.writeHead(302, { location: `${fake.baseUrl}/models` });
      response.end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
    try {
      const { app } = await platform();
      const port = (redirector.address() as AddressInfo).port;
      await call(app, admin, "PUT", "/v1/admin/providers/hop", {
        kind: "openai-compatible",
        baseUrl: `http://127.0.0.1:${port}/v1`,
        apiKey: serverKey,
      });
      const test = await call<Api.ProviderTestResult>(
        app,
        admin,
        "POST",
        "/v1/admin/providers/hop/test",
      );
      expect(test.body.ok).toBe(false);
      expect(fake.requests).toHaveLength(0);
    } finally {
      await new Promise((resolve) => redirector.close(resolve));
    }
  });

  it("many pickers opening at once: one models call per provider, then the cache", async () => {
    const { app } = await platform();
    await call(app, admin, "PUT", "/v1/admin/providers/local", localServer());
    const answers = await Promise.all(
      Array.from({ length: 15 }, () =>
        call<Api.ModelChoices>(app, user, "GET", "/v1/providers/models"),
      ),
    );
    expect(answers.every((answer) => answer.body.groups[0]?.models.length === 2)).toBe(true);
    await call(app, user, "GET", "/v1/providers/models");
    expect(fake.requests.filter((request) => request.path === "/v1/models")).toHaveLength(1);
  });

  it("a flood of connection tests: one call to the provider at a time (PAPI4)", async () => {
    const { app } = await platform();
    await call(app, admin, "PUT", "/v1/admin/providers/local", localServer());
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => call(app, admin, "POST", "/v1/admin/providers/local/test")),
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(fake.requests.filter((request) => request.path === "/v1/models").length).toBeLessThan(
      20,
    );
    expect(fake.requests.filter((request) => request.path === "/v1/models").length).toBe(1);
  });

  it("a deleted provider: a bot naming it gets a 400 whose details name the provider", async () => {
    const { app } = await platform();
    await call(app, admin, "PUT", "/v1/admin/providers/openai", {
      kind: "openai",
      apiKey: "sk-1234",
    });
    expect(
      (await call(app, user, "POST", "/v1/bots", { name: "A", model: "openai:gpt-4.1" })).status,
    ).toBe(201);
    expect((await call(app, admin, "DELETE", "/v1/admin/providers/openai")).status).toBe(204);
    expect((await call(app, admin, "DELETE", "/v1/admin/providers/openai")).status).toBe(404);
    const refused = await call(app, user, "POST", "/v1/bots", {
      name: "B",
      model: "openai:gpt-4.1",
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error?.details?.provider).toBe("openai");
    expect(refused.body.error?.message).toContain("ROOST_OPENAI_API_KEY");
  });

  it("a change on one node reaches another node's resolver once it rereads the store (MPS3)", async () => {
    const one = await platform();
    const two = await platform();
    expect(two.models.defaultSpec).toBe("demo");
    const before = two.providers.config();
    await two.providers.load();
    expect(two.providers.config()).toBe(before); // nothing changed: the same object
    await call(one.app, admin, "PUT", "/v1/admin/providers/xai", {
      kind: "xai",
      apiKey: "xai-key-5678",
    });
    await two.providers.load();
    expect(two.models.defaultSpec).toBe("xai:grok-4");
    expect(two.providers.config().xai?.apiKey).toBe("xai-key-5678");
  });

  it("a key sealed under another secrets key: the server starts, the provider shows no key", async () => {
    const first = await platform();
    await call(first.app, admin, "PUT", "/v1/admin/providers/openai", {
      kind: "openai",
      apiKey: "sk-old-key-4321",
    });
    cipher = createSecretCipher(await loadSecretsKey({ dataDir: join(dir, "other-key") }));
    const restarted = await platform();
    expect(restarted.providers.config().openai).toBeUndefined();
    const list = await call<Api.ModelProviderList>(
      restarted.app,
      admin,
      "GET",
      "/v1/admin/providers",
    );
    expect(list.body.providers).toEqual([
      expect.objectContaining({ id: "openai", key: { set: false, lastFour: null } }),
    ]);
  });

  it("the admin's accounts list", async () => {
    const { app } = await platform();
    const created = await call<Api.CreatedAccount>(app, admin, "POST", "/v1/accounts", {
      name: "nia",
    });
    const list = await call<Api.AccountList>(app, admin, "GET", "/v1/accounts");
    expect(list.body.accounts.map((account) => [account.name, account.isAdmin])).toEqual([
      ["admin", true],
      ["uma", false],
      ["nia", false],
    ]);
    expect(list.text).not.toContain(created.body.token);
  });
});
