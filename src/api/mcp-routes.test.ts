/**
 * The MCP server routes (mcp-routes.ts MCPAPI1–MCPAPI3; mcp/settings.ts MCPS1–MCPS4): settings in,
 * names out (never a value), another account's bots and servers, bad names and bodies that store
 * nothing (injection attempts included), the limit, and no value at rest in the store's file.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub } from "../events/index.ts";
import { createMcpService } from "../mcp/index.ts";
import type { Api } from "../protocol/index.ts";
import { createSecretCipher, loadSecretsKey } from "../secrets/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let app: ReturnType<typeof createApi>;
let alice: { id: string; token: string; botId: string };
let bob: { id: string; token: string; botId: string };

const literal = "ghp_literalTokenValue12345";

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-mcp-api-"));
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
    mcp: createMcpService({ store, cipher, limit: 3 }),
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
  token = alice.token,
): Promise<{
  status: number;
  text: string;
  body: T & { error?: { code: string; message: string } };
}> {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, text, body: (text === "" ? {} : JSON.parse(text)) as never };
}

describe.each([
  ["bot", (): string => `/v1/bots/${alice.botId}/mcp-servers`],
  ["user", (): string => "/v1/me/mcp-servers"],
] as const)("%s MCP servers", (scope, base) => {
  it("MCPAPI2: PUT a command server answers its settings with values hidden; GET, list, DELETE", async () => {
    const created = await call<Api.McpServerView>("PUT", `${base()}/github`, {
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-github"],
      env: { GITHUB_TOKEN: { secret: "GITHUB_TOKEN" }, LOG_LEVEL: literal },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      name: "github",
      scope,
      transport: "command",
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-github"],
      env: { GITHUB_TOKEN: { secret: "GITHUB_TOKEN" }, LOG_LEVEL: { hidden: true } },
      usesSecrets: true,
      status: { tools: null, lastError: null },
    });
    expect(created.text).not.toContain(literal);

    const replaced = await call<Api.McpServerView>("PUT", `${base()}/github`, {
      url: "https://mcp.example.com/mcp",
      headers: { Authorization: `Bearer ${literal}` },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      transport: "http",
      url: "https://mcp.example.com/mcp",
      headers: { Authorization: { hidden: true } },
      usesSecrets: true,
    });
    expect(replaced.body.command).toBeUndefined();

    const one = await call<Api.McpServerView>("GET", `${base()}/github`);
    expect(one.status).toBe(200);
    expect(one.text).not.toContain(literal);
    const list = await call<Api.McpServerList>("GET", base());
    expect(list.body.servers.map((server) => server.name)).toEqual(["github"]);
    expect(list.body.limit).toBe(20);

    expect((await call("DELETE", `${base()}/github`)).status).toBe(204);
    expect((await call("DELETE", `${base()}/github`)).status).toBe(404);
    expect((await call("GET", `${base()}/github`)).status).toBe(404);
  });

  it("MCPS2: no value is at rest in the store's file", async () => {
    await call("PUT", `${base()}/tools`, { command: "srv", args: [], env: { TOKEN_X: literal } });
    await store.close();
    const bytes = await readFile(join(dir, "roost.db"));
    expect(bytes.includes(literal)).toBe(false);
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  });

  it.each([
    ["../etc", "path"],
    ["a;rm -rf ~", "shell"],
    ["$(id)", "command substitution"],
    ["UPPER", "upper case"],
    ["a".repeat(25), "too long"],
    ["a__b:c", "colon"],
    ["-lead", "a leading dash (an option to a command)"],
  ])("MCPS1 attack: the name %j (%s) is a 400 and stores nothing", async (name) => {
    const response = await call("PUT", `${base()}/${encodeURIComponent(name)}`, {
      command: "srv",
      args: [],
    });
    expect(response.status).toBe(400);
    expect(response.body.error?.message).toMatch(/a-z, 0-9, _ and -/);
    expect((await call<Api.McpServerList>("GET", base())).body.servers).toEqual([]);
  });

  it.each([
    [{}, /send \{"command"/],
    [{ command: "" }, /command is the program/],
    [{ command: "x", args: "not a list" }, /args is a list of strings/],
    [{ command: "x", env: { PATH: "/evil" } }, /PATH.*relies on|relies on/],
    [{ command: "x", env: { LD_PRELOAD: "/evil.so" } }, /relies on/],
    [{ command: "x", env: { HTTP_PROXY: "http://evil" } }, /relies on/],
    [{ command: "x", env: { A: { secret: "lower" } } }, /secret's name/],
    [{ command: "x", env: { A: 5 } }, /a string or \{"secret"/],
    [{ command: "x", extra: 1 }, /extra|Unrecognized/i],
    [{ url: "file:///etc/passwd" }, /http or https/],
    [{ url: "not a url" }, /absolute http/],
    [{ url: "https://user:pw@mcp.example.com/" }, /user name or password/],
    [{ url: "https://mcp.example.com/", headers: { Host: "evil" } }, /set by the MCP transport/],
    [{ url: "https://mcp.example.com/", headers: { "Bad Header": "x" } }, /header name/],
  ])("MCPS4: the body %j is a 400 saying how to fix it", async (body, message) => {
    const response = await call("PUT", `${base()}/srv`, body);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error?.message).toMatch(message);
    expect((await call<Api.McpServerList>("GET", base())).body.servers).toEqual([]);
  });

  it("MCPST2: a flood of new names stops at the limit with a 400 that says what to do", async () => {
    const statuses: number[] = [];
    for (let index = 0; index < 5; index += 1)
      statuses.push((await call("PUT", `${base()}/s${index}`, { command: "x" })).status);
    expect(statuses).toEqual([201, 201, 201, 400, 400]);
    const refused = await call("PUT", `${base()}/s9`, { command: "x" });
    expect(refused.body.error?.message).toMatch(/at most 3 MCP servers; delete one/);
    // Replacing an existing one is still fine.
    expect((await call("PUT", `${base()}/s0`, { command: "y" })).status).toBe(200);
  });
});

describe("MCPAPI1: another account", () => {
  it("sees neither the bot's servers nor the user's, and cannot write or delete them (404)", async () => {
    await call("PUT", `/v1/bots/${alice.botId}/mcp-servers/mine`, { command: "x" });
    await call("PUT", "/v1/me/mcp-servers/mine", { command: "x" });
    for (const [method, body] of [
      ["GET", undefined],
      ["PUT", { command: "evil" }],
      ["DELETE", undefined],
    ] as const) {
      const response = await call(
        method,
        `/v1/bots/${alice.botId}/mcp-servers/mine`,
        body,
        bob.token,
      );
      expect(response.status).toBe(404);
      expect(response.body.error?.message).toMatch(/bot/);
    }
    expect(
      (await call("GET", `/v1/bots/${alice.botId}/mcp-servers`, undefined, bob.token)).status,
    ).toBe(404);
    // Bob's own user servers are his: alice's are not among them.
    expect(
      (await call<Api.McpServerList>("GET", "/v1/me/mcp-servers", undefined, bob.token)).body
        .servers,
    ).toEqual([]);
    expect((await call("DELETE", "/v1/me/mcp-servers/mine", undefined, bob.token)).status).toBe(
      404,
    );
    // Alice's are untouched.
    expect((await call("GET", `/v1/bots/${alice.botId}/mcp-servers/mine`)).body).toMatchObject({
      command: "x",
    });
    expect((await call("GET", "/v1/me/mcp-servers/mine")).status).toBe(200);
  });
});

describe("MCP OAuth routes", () => {
  it("MCPAPI4 attack: a forged callback (no token, made-up state) changes nothing and says why", async () => {
    const response = await app.request("/v1/mcp-oauth/callback?state=forged&code=abc");
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/no longer valid/);
    const missing = await app.request("/v1/mcp-oauth/callback");
    expect(missing.status).toBe(400);
    const markup = await app.request(
      `/v1/mcp-oauth/callback?error=${encodeURIComponent("<script>x</script>")}`,
    );
    expect(await markup.text()).not.toContain("<script>");
  });

  it("authorize: a command server is a 400; another account's bot or a missing server a 404", async () => {
    await call("PUT", `/v1/bots/${alice.botId}/mcp-servers/cmd`, { command: "x" });
    const command = await call("POST", `/v1/bots/${alice.botId}/mcp-servers/cmd/authorize`);
    expect(command.status).toBe(400);
    expect(command.body.error?.message).toMatch(/only HTTP MCP servers use OAuth/);
    const other = await call(
      "POST",
      `/v1/bots/${alice.botId}/mcp-servers/cmd/authorize`,
      undefined,
      bob.token,
    );
    expect(other.status).toBe(404);
    expect((await call("POST", "/v1/me/mcp-servers/none/authorize")).status).toBe(404);
  });
});
