/**
 * The secrets module's turn hooks (hooks.ts, SECR11–SECR12) and the service's injection rules
 * (service.ts, SECR9–SECR10), on a real SQLite store with a real cipher.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import type { NotificationInput } from "../notifications/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter, type ToolCallRequest } from "../tools/index.ts";
import { createSecretCipher, loadSecretsKey } from "./crypto.ts";
import { createRequestSecretTool, createSecretRedaction } from "./hooks.ts";
import {
  brokerPlaceholder,
  createBrokeredSecrets,
  createSecretsService,
  type SecretsService,
} from "./service.ts";

let dir: string;
let store: Store;
let secrets: SecretsService;
let accountId: string;
let botId: string;
let otherBotId: string;
let notified: NotificationInput[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-secrets-hooks-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  secrets = createSecretsService({
    store,
    cipher: createSecretCipher(await loadSecretsKey({ dataDir: dir })),
  });
  accountId = (await store.createAccount({ name: "a", isAdmin: false })).id;
  const bot = (name: string) => store.createBot({ accountId, name, instructions: "", model: null });
  botId = (await bot("one")).id;
  otherBotId = (await bot("two")).id;
  notified = [];
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const put = (
  scope: "bot" | "user",
  ownerId: string,
  name: string,
  value: string,
  broker?: { hosts: string[] },
) => secrets.put({ scope, ownerId, accountId, name, value, broker, actorAccountId: accountId });

describe("injection (SECR9) and the redactor's reach (SECR10)", () => {
  it("a bot gets the user's secrets and its own, its own winning; brokered ones as placeholders", async () => {
    await put("user", accountId, "SHARED", "user-shared-value");
    await put("user", accountId, "CLASH", "user-clash-value");
    await put("bot", botId, "CLASH", "bot-clash-value");
    await put("bot", botId, "GH_TOKEN", "ghp-brokered-value", { hosts: ["api.github.com"] });
    await put("bot", otherBotId, "OTHER", "other-bot-value");
    expect(await secrets.envFor(accountId, botId)).toEqual({
      SHARED: "user-shared-value",
      CLASH: "bot-clash-value",
      GH_TOKEN: brokerPlaceholder("GH_TOKEN"),
    });
    const redactor = await secrets.redactorFor(accountId);
    for (const value of [
      "user-shared-value",
      "bot-clash-value",
      "ghp-brokered-value",
      "other-bot-value",
    ])
      expect(redactor.text(`x ${value} y`)).toBe("x [REDACTED] y");
    const computer = await store.ensureComputer(accountId, "process");
    expect(await createBrokeredSecrets({ store, secrets }).forComputer(computer.id)).toEqual([
      {
        name: "GH_TOKEN",
        value: "ghp-brokered-value",
        hosts: ["api.github.com"],
        botId,
        accountId,
      },
    ]);
  });

  it("a new value is redacted on the next call (the redactor is read fresh)", async () => {
    await put("bot", botId, "ROTATED", "first-value-1");
    expect((await secrets.redactorFor(accountId)).text("first-value-1")).toBe("[REDACTED]");
    await put("bot", botId, "ROTATED", "second-value-2");
    const redactor = await secrets.redactorFor(accountId);
    expect(redactor.text("second-value-2")).toBe("[REDACTED]");
    expect(redactor.text("first-value-1")).toBe("first-value-1");
  });

  it("a bad value for an existing name is refused and the stored value is kept", async () => {
    await put("bot", botId, "KEPT", "kept-value-123");
    await expect(put("bot", botId, "KEPT", "short")).rejects.toThrow(/8 to 4096 bytes/);
    await expect(
      put("bot", botId, "KEPT", "other-value-123", { hosts: ["localhost"] }),
    ).rejects.toThrow(/localhost/);
    expect(await secrets.envFor(accountId, botId)).toEqual({ KEPT: "kept-value-123" });
  });

  it("a sealed value moved to another row does not open (SECR6)", async () => {
    await put("bot", botId, "MOVED", "moved-value-123");
    const [record] = await store.listSecrets("bot", botId);
    await store.putSecret({
      ...record!,
      ownerId: otherBotId,
      limit: 25,
      actorAccountId: accountId,
    });
    await expect(secrets.envFor(accountId, otherBotId)).rejects.toThrow();
  });
});

function router() {
  const durable = createMemoryDurable({});
  const tools = createToolRouter({
    ...createSecretRedaction(secrets),
    sources: [
      createRequestSecretTool({
        store,
        secrets,
        notifier: { notify: async (notification) => void notified.push(notification) },
      }),
    ],
  });
  const request = (callId: string): ToolCallRequest => ({
    accountId,
    botId,
    conversationId: "conv_1",
    turnId: "turn_1",
    callId,
    durable,
    signal: new AbortController().signal,
  });
  return { tools, request };
}

describe("request_secret (SECR12)", () => {
  it("notifies the owner once per bot and name, however often the bot asks", async () => {
    const { tools, request } = router();
    for (let index = 0; index < 20; index += 1) {
      const result = await tools.execute(
        "request_secret",
        { name: "STRIPE_KEY", reason: "charge the card" },
        request(`call_${index}`),
      );
      expect(result.output).toMatch(/^Asked the owner for STRIPE_KEY/);
    }
    expect(new Set(notified.map((notification) => notification.id))).toEqual(
      new Set([`secret_request:${botId}:STRIPE_KEY`]),
    );
    expect(notified[0]).toMatchObject({ kind: "secret_request", subjectId: "STRIPE_KEY", botId });
  });

  it("bad input: a bad name is refused with how to fix it; no card", async () => {
    const { tools, request } = router();
    for (const name of ["lower", "PATH", "A B"]) {
      const result = await tools.execute("request_secret", { name, reason: "x" }, request(name));
      expect(result.isError).toBe(true);
      expect(result.output).toMatch(/^Not requested: /);
    }
    const missing = await tools.execute(
      "request_secret",
      { name: "OK_NAME" },
      request("no-reason"),
    );
    expect(missing.isError).toBe(true);
    expect(notified).toEqual([]);
  });

  it("a secret that is set already is not asked for again, and its value is never in the answer", async () => {
    await put("user", accountId, "HAVE_IT", "have-it-value");
    const { tools, request } = router();
    const result = await tools.execute(
      "request_secret",
      { name: "HAVE_IT", reason: "x" },
      request("c"),
    );
    expect(result.output).toBe("HAVE_IT is already set: use $HAVE_IT in your shell commands.");
    expect(notified).toEqual([]);
  });
});

describe("SECR11: redaction fails closed", () => {
  it("redact before prepare throws instead of passing a result through", () => {
    const hooks = createSecretRedaction(secrets);
    const turn = { accountId, botId, conversationId: "c", turnId: "t" };
    expect(() => hooks.redact("anything", turn)).toThrow(/no redactor loaded/);
  });
});
