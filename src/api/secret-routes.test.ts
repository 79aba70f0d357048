/**
 * The secrets routes (secret-routes.ts, SECAPI1–SECAPI3; service.ts SECR7–SECR8): names and
 * metadata only, another account's bots and secrets, bad input that stores nothing, a flood past
 * the limit, racing writers, and the value never at rest in the store.
 */
import { mkdtemp, readFile, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub } from "../events/index.ts";
import type { Api } from "../protocol/index.ts";
import { createSecretCipher, createSecretsService, loadSecretsKey } from "../secrets/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let app: ReturnType<typeof createApi>;
let alice: { id: string; token: string; botId: string };
let bob: { id: string; token: string; botId: string };

const value = "sk-live-4f9c2d7e1a3b5c6d";

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-secrets-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  const cipher = createSecretCipher(await loadSecretsKey({ dataDir: dir }));
  app = createApi({
    store,
    events: createEventHub(),
    kick: async () => undefined,
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1024 * 1024,
    secrets: createSecretsService({ store, cipher }),
    limits: { requestsPerMinute: 10_000 },
  });
  const account = async (name: string) => {
    const created = await store.createAccount({ name, isAdmin: false });
    const bot = await store.createBot({
      accountId: created.id,
      name: `${name}'s bot`,
      instructions: "",
      model: null,
    });
    return {
      id: created.id,
      token: (await issueApiToken(store, created.id, "t")).token,
      botId: bot.id,
    };
  };
  alice = await account("alice");
  bob = await account("bob");
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  body?: unknown,
  options: { token?: string; raw?: string } = {},
): Promise<{
  status: number;
  text: string;
  body: T & { error?: { code: string; message: string } };
}> {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${options.token ?? alice.token}`,
      ...(body === undefined && options.raw === undefined
        ? {}
        : { "content-type": "application/json" }),
    },
    ...(options.raw !== undefined
      ? { body: options.raw }
      : body === undefined
        ? {}
        : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, text, body: (text === "" ? {} : JSON.parse(text)) as never };
}

describe.each([
  ["bot", (): string => `/v1/bots/${alice.botId}/secrets`],
  ["user", (): string => "/v1/me/secrets"],
] as const)("%s secrets", (scope, base) => {
  it("SECAPI2: PUT stores a value and answers names and metadata only, never the value", async () => {
    const created = await call<Api.SecretView>("PUT", `${base()}/OPENAI_API_KEY`, { value });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: "OPENAI_API_KEY", scope, broker: null });
    const replaced = await call("PUT", `${base()}/OPENAI_API_KEY`, { value: `${value}-2` });
    expect(replaced.status).toBe(200);
    const listed = await call<Api.SecretList>("GET", base());
    expect(listed.status).toBe(200);
    expect(listed.body.secrets.map((secret) => secret.name)).toEqual(["OPENAI_API_KEY"]);
    expect(listed.body.limit).toBe(25);
    for (const answer of [created, replaced, listed]) expect(answer.text).not.toContain(value);
    const audit = JSON.stringify(await store.listAudit({ accountId: alice.id }));
    expect(audit).toContain("secret.put");
    expect(audit).not.toContain(value);
  });

  it("a brokered secret keeps its hosts", async () => {
    const put = await call<Api.SecretView>("PUT", `${base()}/GITHUB_TOKEN`, {
      value,
      broker: { hosts: ["api.github.com", "api.github.com"] },
    });
    expect(put.status).toBe(201);
    expect(put.body.broker).toEqual({ hosts: ["api.github.com"] });
  });

  it("SECR14: a brokered name is one secret across the account's computer: a second owner of it is a 409", async () => {
    const other = scope === "bot" ? "/v1/me/secrets" : `/v1/bots/${alice.botId}/secrets`;
    const broker = { hosts: ["api.github.com"] };
    expect((await call("PUT", `${base()}/SHARED_TOKEN`, { value, broker })).status).toBe(201);
    const clash = await call("PUT", `${other}/SHARED_TOKEN`, { value: `${value}-x`, broker });
    expect(clash.status).toBe(409);
    expect(clash.body.error?.message).toMatch(/must be unique: pick another name/);
    expect(clash.text).not.toContain(value);
    // Not brokered, the same name is fine (injected as a value, the bot's own first).
    expect((await call("PUT", `${other}/SHARED_TOKEN`, { value: `${value}-y` })).status).toBe(201);
    // Replacing the brokered one itself is not a clash.
    expect((await call("PUT", `${base()}/SHARED_TOKEN`, { value, broker })).status).toBe(200);
  });

  it("DELETE removes it; a second DELETE is 404", async () => {
    await call("PUT", `${base()}/TOKEN_A`, { value });
    expect((await call("DELETE", `${base()}/TOKEN_A`)).status).toBe(204);
    expect((await call<Api.SecretList>("GET", base())).body.secrets).toEqual([]);
    const again = await call("DELETE", `${base()}/TOKEN_A`);
    expect(again.status).toBe(404);
    expect(JSON.stringify(await store.listAudit({ accountId: alice.id }))).toContain(
      "secret.delete",
    );
  });

  it("SECAPI3: bad input is a 400 that says how to fix it, and stores nothing", async () => {
    await call("PUT", `${base()}/KEEP_ME`, { value });
    const cases: [string, unknown, RegExp][] = [
      ["lower_case", { value }, /upper-case letter/],
      ["1ABC", { value }, /upper-case letter/],
      ["A-B", { value }, /upper-case letter/],
      [`A${"B".repeat(64)}`, { value }, /at most 64/],
      ["PATH", { value }, /relies on/],
      ["LD_PRELOAD", { value }, /relies on/],
      ["ROOST_SECRETS_KEY", { value }, /relies on/],
      ["HTTPS_PROXY", { value }, /relies on/],
      ["SHORT", { value: "1234567" }, /8 to 4096 bytes; this one is 7/],
      ["LONG", { value: "x".repeat(4097) }, /this one is 4097/],
      ["MULTIBYTE", { value: "é".repeat(2049) }, /this one is 4098/],
      ["NUL", { value: "abcd\u0000efgh" }, /NUL/],
      ["MARK", { value: "[REDACTED]1234" }, /cannot contain \[REDACTED\]/],
      ["NOVALUE", {}, /value/],
      ["NUMBER", { value: 12345678 }, /value/],
      ["EXTRA", { value, shown: true }, /shown/],
      ["HOSTS", { value, broker: { hosts: [] } }, /1 to 20 host names/],
      ["HOSTS", { value, broker: { hosts: ["https://api.example.com/"] } }, /no scheme/],
      ["HOSTS", { value, broker: { hosts: ["API.example.com"] } }, /lower case/],
      ["HOSTS", { value, broker: { hosts: ["127.0.0.1"] } }, /no scheme, port, path, address/],
      ["HOSTS", { value, broker: { hosts: ["localhost"] } }, /such as localhost/],
      ["HOSTS", { value, broker: { hosts: ["metadata.google.internal"] } }, /\*\.internal/],
      ["HOSTS", { value, broker: { hosts: ["10.0.0.1"] } }, /address/],
      ["HOSTS", { value, broker: { hosts: Array(21).fill("a.example.com") } }, /1 to 20/],
    ];
    for (const [name, body, message] of cases) {
      const answer = await call("PUT", `${base()}/${encodeURIComponent(name)}`, body);
      expect(answer.status, name).toBe(400);
      expect(answer.body.error?.message, name).toMatch(message);
    }
    expect((await call("PUT", `${base()}/RAW`, undefined, { raw: "{value" })).status).toBe(400);
    const listed = await call<Api.SecretList>("GET", base());
    expect(listed.body.secrets.map((secret) => secret.name)).toEqual(["KEEP_ME"]);
  });

  it("SST2: a flood of new names stops at 25 with a message; replacing one still works", async () => {
    const answers = [];
    for (let index = 0; index < 30; index += 1)
      answers.push(await call("PUT", `${base()}/KEY_${index}`, { value }));
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(25);
    const refused = answers.filter((answer) => answer.status === 400);
    expect(refused).toHaveLength(5);
    expect(refused[0]!.body.error?.message).toMatch(/at most 25 secrets; delete one/);
    expect((await call("PUT", `${base()}/KEY_0`, { value: `${value}-new` })).status).toBe(200);
  });

  it("SST2: 30 racing writers of new names store exactly 25", async () => {
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, index) => call("PUT", `${base()}/RACE_${index}`, { value })),
    );
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(25);
    expect((await call<Api.SecretList>("GET", base())).body.secrets).toHaveLength(25);
  });
});

describe("another account", () => {
  it("SECAPI1: another account's bot answers 404 like a missing one, and its secrets stay put", async () => {
    await call("PUT", `/v1/bots/${alice.botId}/secrets/ALICE_KEY`, { value });
    for (const [method, path, body] of [
      ["GET", `/v1/bots/${alice.botId}/secrets`, undefined],
      ["PUT", `/v1/bots/${alice.botId}/secrets/ALICE_KEY`, { value: "overwritten!" }],
      ["DELETE", `/v1/bots/${alice.botId}/secrets/ALICE_KEY`, undefined],
    ] as const) {
      const answer = await call(method, path, body, { token: bob.token });
      const missing = await call(method, path.replace(alice.botId, "bot_missing"), body, {
        token: bob.token,
      });
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.error?.code).toBe(missing.body.error?.code);
    }
    await call("PUT", "/v1/me/secrets/ALICE_USER", { value });
    const bobs = await call<Api.SecretList>("GET", "/v1/me/secrets", undefined, {
      token: bob.token,
    });
    expect(bobs.body.secrets).toEqual([]);
    expect(
      (await call("DELETE", "/v1/me/secrets/ALICE_USER", undefined, { token: bob.token })).status,
    ).toBe(404);
    const names = (await call<Api.SecretList>("GET", `/v1/bots/${alice.botId}/secrets`)).body
      .secrets;
    expect(names.map((secret) => secret.name)).toEqual(["ALICE_KEY"]);
  });

  it("without a token every route is 401", async () => {
    const response = await app.request(`/v1/me/secrets`);
    expect(response.status).toBe(401);
  });
});

describe("at rest", () => {
  it("SECR5: the store holds no value; the key file is mode 0600", async () => {
    await call("PUT", `/v1/bots/${alice.botId}/secrets/AT_REST`, { value });
    await store.close();
    for (const file of await readdir(dir)) {
      if ((await stat(join(dir, file))).isFile())
        expect((await readFile(join(dir, file))).includes(value), file).toBe(false);
    }
    expect((await stat(join(dir, "secrets-key"))).mode & 0o777).toBe(0o600);
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  });
});
