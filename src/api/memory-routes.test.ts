/** The memory routes (memory-routes.ts): facts, revisions, reverts, the inbox; MEMAPI1–2. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub } from "../events/index.ts";
import { createMemoryService } from "../memory/index.ts";
import type { Api } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let app: ReturnType<typeof createApi>;
let alice: { id: string; token: string };
let bob: { id: string; token: string };
let botId: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-memory-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  app = createApi({
    store,
    events: createEventHub(),
    kick: async () => undefined,
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1024 * 1024,
    memory: createMemoryService(store),
  });
  const account = async (name: string) => {
    const created = await store.createAccount({ name, isAdmin: false });
    return { id: created.id, token: (await issueApiToken(store, created.id, "t")).token };
  };
  alice = await account("alice");
  bob = await account("bob");
  botId = (
    await store.createBot({ accountId: alice.id, name: "helper", instructions: "", model: null })
  ).id;
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  body?: unknown,
  token = alice.token,
): Promise<{ status: number; body: T & { error?: { code: string; message: string } } }> {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text === "" ? {} : JSON.parse(text)) as never };
}

describe("memory routes", () => {
  it("a person adds, edits and deletes a bot's facts; each is a revision by the user (MEMAPI2)", async () => {
    const added = await call<Api.MemoryChangeResult>("POST", `/v1/bots/${botId}/memory`, {
      tier: "profile",
      text: "Answers in French.",
    });
    expect(added.status).toBe(201);
    expect(added.body.revision).toMatchObject({
      author: "user",
      action: "add",
      after: "Answers in French.",
      scope: "bot",
    });
    const factId = added.body.fact.id;
    const edited = await call<Api.MemoryChangeResult>(
      "PATCH",
      `/v1/bots/${botId}/memory/${factId}`,
      { text: "Answers in German." },
    );
    expect(edited.body.revision).toMatchObject({
      action: "replace",
      before: "Answers in French.",
      after: "Answers in German.",
    });
    const memory = await call<Api.BotMemory>("GET", `/v1/bots/${botId}/memory`);
    expect(memory.body.profile.map((fact) => fact.text)).toEqual(["Answers in German."]);
    expect(memory.body.limits).toEqual({
      user: { facts: 100, chars: 4000 },
      profile: { facts: 100, chars: 4000 },
      note: { facts: 30, chars: 6000 },
    });
    expect((await call("DELETE", `/v1/bots/${botId}/memory/${factId}`)).status).toBe(200);
    expect((await call<Api.BotMemory>("GET", `/v1/bots/${botId}/memory`)).body.profile).toEqual([]);
    const audit = (await call<Api.MemoryRevisionPage>("GET", `/v1/bots/${botId}/memory/revisions`))
      .body;
    expect(audit.revisions.map((revision) => revision.action)).toEqual([
      "remove",
      "replace",
      "add",
    ]);
  });

  it("pages revisions newest first and reverts one, which becomes a revision itself", async () => {
    for (const text of ["one", "two", "three"])
      await call("POST", `/v1/bots/${botId}/memory`, { tier: "log", text });
    const first = (
      await call<Api.MemoryRevisionPage>("GET", `/v1/bots/${botId}/memory/revisions?limit=2`)
    ).body;
    expect(first.revisions.map((revision) => revision.after)).toEqual(["three", "two"]);
    expect(first.next).not.toBeNull();
    const second = (
      await call<Api.MemoryRevisionPage>(
        "GET",
        `/v1/bots/${botId}/memory/revisions?limit=2&before=${first.next}`,
      )
    ).body;
    expect(second.revisions.map((revision) => revision.after)).toEqual(["one"]);
    expect(second.next).toBeNull();
    const reverted = await call<Api.MemoryChangeResult>(
      "POST",
      `/v1/bots/${botId}/memory/revisions/${first.revisions[0]!.id}/revert`,
    );
    expect(reverted.status).toBe(201);
    expect(reverted.body.revision).toMatchObject({
      action: "remove",
      revertOf: first.revisions[0]!.id,
      author: "user",
    });
    expect(
      (await call<Api.BotMemory>("GET", `/v1/bots/${botId}/memory`)).body.log.map(
        (fact) => fact.text,
      ),
    ).toEqual(["two", "one"]);
  });

  it("accepts and rejects proposals from the inbox", async () => {
    const memory = createMemoryService(store);
    const proposed = await memory.change({
      accountId: alice.id,
      botId,
      tier: "profile",
      action: "add",
      text: "Likes haiku.",
      author: "pass",
      propose: true,
    });
    const inbox = (
      await call<Api.MemoryRevisionPage>(
        "GET",
        `/v1/bots/${botId}/memory/revisions?status=proposed`,
      )
    ).body;
    expect(inbox.revisions.map((revision) => revision.id)).toEqual([proposed.revision.id]);
    const accepted = await call<Api.MemoryChangeResult>(
      "POST",
      `/v1/bots/${botId}/memory/revisions/${proposed.revision.id}/accept`,
    );
    expect(accepted.body.revision.status).toBe("applied");
    const again = await call(
      "POST",
      `/v1/bots/${botId}/memory/revisions/${proposed.revision.id}/reject`,
    );
    expect(again.status).toBe(409);
    expect(
      (await call<Api.BotMemory>("GET", `/v1/bots/${botId}/memory`)).body.profile.map(
        (fact) => fact.text,
      ),
    ).toEqual(["Likes haiku."]);
  });

  it("user facts live under /v1/me/memory and every bot of the account sees them", async () => {
    const added = await call<Api.MemoryChangeResult>("POST", "/v1/me/memory", {
      text: "The user is called Alice.",
    });
    expect(added.status).toBe(201);
    expect(added.body.revision.scope).toBe("user");
    expect(
      (await call<Api.BotMemory>("GET", `/v1/bots/${botId}/memory`)).body.user.map(
        (fact) => fact.text,
      ),
    ).toEqual(["The user is called Alice."]);
    expect((await call<Api.UserMemory>("GET", "/v1/me/memory")).body.user).toHaveLength(1);
    // A user fact is not edited through a bot's routes, nor a bot's fact through /v1/me.
    expect(
      (await call("PATCH", `/v1/bots/${botId}/memory/${added.body.fact.id}`, { text: "x" })).status,
    ).toBe(404);
    const botFact = await call<Api.MemoryChangeResult>("POST", `/v1/bots/${botId}/memory`, {
      tier: "profile",
      text: "p",
    });
    expect((await call("DELETE", `/v1/me/memory/${botFact.body.fact.id}`)).status).toBe(404);
  });

  it("another account gets 404 for the bot, its facts and its revisions, and changes nothing (MEMAPI1)", async () => {
    const added = await call<Api.MemoryChangeResult>("POST", `/v1/bots/${botId}/memory`, {
      tier: "profile",
      text: "private",
    });
    const aliceUser = await call<Api.MemoryChangeResult>("POST", "/v1/me/memory", {
      text: "alice's",
    });
    const attempts = [
      await call("GET", `/v1/bots/${botId}/memory`, undefined, bob.token),
      await call("GET", `/v1/bots/${botId}/memory/revisions`, undefined, bob.token),
      await call("POST", `/v1/bots/${botId}/memory`, { tier: "profile", text: "x" }, bob.token),
      await call(
        "PATCH",
        `/v1/bots/${botId}/memory/${added.body.fact.id}`,
        { text: "x" },
        bob.token,
      ),
      await call("DELETE", `/v1/bots/${botId}/memory/${added.body.fact.id}`, undefined, bob.token),
      await call(
        "POST",
        `/v1/bots/${botId}/memory/revisions/${added.body.revision.id}/revert`,
        undefined,
        bob.token,
      ),
      await call("PATCH", `/v1/me/memory/${aliceUser.body.fact.id}`, { text: "x" }, bob.token),
      await call(
        "POST",
        `/v1/me/memory/revisions/${aliceUser.body.revision.id}/revert`,
        undefined,
        bob.token,
      ),
    ];
    expect(attempts.map((attempt) => [attempt.status, attempt.body.error?.code])).toEqual(
      attempts.map(() => [404, "not_found"]),
    );
    expect(
      (await call<Api.BotMemory>("GET", `/v1/bots/${botId}/memory`)).body.profile.map(
        (fact) => fact.text,
      ),
    ).toEqual(["private"]);
    expect(
      (await call<Api.UserMemory>("GET", "/v1/me/memory", undefined, bob.token)).body.user,
    ).toEqual([]);
  });

  it("refuses bad input with what to fix, storing nothing", async () => {
    const cases: [string, string, unknown][] = [
      ["POST", `/v1/bots/${botId}/memory`, { tier: "user", text: "x" }],
      ["POST", `/v1/bots/${botId}/memory`, { tier: "profile" }],
      ["POST", `/v1/bots/${botId}/memory`, { tier: "profile", text: "   " }],
      ["POST", `/v1/bots/${botId}/memory`, { tier: "profile", text: "x".repeat(501) }],
      ["POST", `/v1/bots/${botId}/memory`, { tier: "profile", text: "x", extra: 1 }],
      ["POST", `/v1/bots/${botId}/memory`, { tier: "note", text: "x", expiresInHours: -1 }],
      ["GET", `/v1/bots/${botId}/memory/revisions?limit=1e2`, undefined],
      ["GET", `/v1/bots/${botId}/memory/revisions?status=maybe`, undefined],
      ["GET", `/v1/bots/${botId}/memory?extra=1`, undefined],
      ["POST", "/v1/me/memory", { text: "x", tier: "profile" }],
    ];
    for (const [method, path, body] of cases) {
      const answer = await call(method, path, body);
      expect([answer.status, path, body]).toEqual([400, path, body]);
      expect(answer.body.error?.message.length).toBeGreaterThan(0);
    }
    expect(
      (await call<Api.MemoryRevisionPage>("GET", `/v1/bots/${botId}/memory/revisions`)).body
        .revisions,
    ).toEqual([]);
    expect((await call("GET", `/v1/bots/${botId}/memory/revisions?before=rev_nope`)).status).toBe(
      404,
    );
  });
});
