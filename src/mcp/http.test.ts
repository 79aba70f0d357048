/**
 * HTTP MCP servers from the server side (source.ts, http-servers.ts, http-fetch.ts) against the MCP
 * SDK's own published example server (simpleStreamableHttp.js) as a real process on 127.0.0.1,
 * through the real tool router and store: a call's round trip, the turn's fixed tool list (MCP1),
 * the owner-only rule (MCP6), secrets resolved on the server (MCP7), and the egress attacks
 * (MCPF1): the metadata address, the Roost API itself, a name that resolves to loopback, a
 * policy of `none`, a server that never answers.
 *
 * The example server checks that its Host header is `localhost`; the test's resolver gives
 * `localhost` a public address and its connector takes that address to 127.0.0.1 (the test-only
 * allowance, as in the owner-webhook tests): every egress check still runs on the public address.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { connect, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  compilePolicy,
  createDestinationContext,
  parseEgressPolicy,
  type EgressPolicy,
} from "../egress/index.ts";
import { findFreePort } from "../engine/index.ts";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { createSecretCipher, createSecretsService, loadSecretsKey } from "../secrets/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter, type ToolRouter, type ToolTurnContext } from "../tools/index.ts";
import { createGuardedFetch } from "./http-fetch.ts";
import { readOAuth } from "./oauth.ts";
import { readFile } from "node:fs/promises";
import { createHttpMcpClients, type HttpMcpClients } from "./http-servers.ts";
import { createMcpService, type McpService } from "./service.ts";
import { createMcpTools } from "./source.ts";

const require = createRequire(import.meta.url);
const examples = path.join(
  path.dirname(require.resolve("@modelcontextprotocol/sdk/client/index.js")),
  "..",
  "examples",
  "server",
);
const publicAddress = "93.184.216.34";

let dir: string;
let store: Store;
let example: ChildProcess;
let examplePort: number;
let silent: Server;
let silentPort: number;
let http: HttpMcpClients;
let router: ToolRouter;
let mcp: McpService;
let policy: EgressPolicy = parseEgressPolicy({ mode: "allow-all" });
let alice: { accountId: string; botId: string };
let bobId: string;
const roostApiPort = 4242;
const redirectUrl = "http://roost.example.com/v1/mcp-oauth/callback";
let cipherForTest: ReturnType<typeof createSecretCipher> | undefined;
let turnCount = 0;

/** The SDK's example server (with `--oauth`: and its demo authorization server) on free ports. */
async function spawnExample(
  args: string[],
): Promise<{ child: ChildProcess; port: number; authPort: number }> {
  const port = await findFreePort();
  const authPort = await findFreePort([port]);
  const child = spawn(process.execPath, [path.join(examples, "simpleStreamableHttp.js"), ...args], {
    env: { ...process.env, MCP_PORT: String(port), MCP_AUTH_PORT: String(authPort) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    let output = "";
    const timer = setTimeout(
      () => reject(new Error(`the example did not start: ${output}`)),
      20_000,
    );
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("MCP Streamable HTTP Server listening on port")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => reject(new Error(`the example exited with ${code}: ${output}`)));
  });
  return { child, port, authPort };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "roost-mcp-http-"));
  store = await openStore({ kind: "sqlite", path: path.join(dir, "roost.db") });
  const cipher = createSecretCipher(await loadSecretsKey({ dataDir: dir }));
  const secrets = createSecretsService({ store, cipher });
  const account = await store.createAccount({ name: "alice", isAdmin: false });
  const bot = await store.createBot({
    accountId: account.id,
    name: "b",
    instructions: "",
    model: null,
  });
  alice = { accountId: account.id, botId: bot.id };
  bobId = (await store.createAccount({ name: "bob", isAdmin: false })).id;
  await secrets.put({
    scope: "bot",
    ownerId: bot.id,
    accountId: account.id,
    name: "DEMO_TOKEN",
    value: "demo-token-value-123",
    actorAccountId: account.id,
  });
  ({ child: example, port: examplePort } = await spawnExample([]));
  // A server that accepts connections and never answers.
  silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  silentPort = (silent.address() as AddressInfo).port;

  http = createHttpMcpClients();
  const fetchFor = () =>
    createGuardedFetch({
      policy: async () => compilePolicy(policy),
      destination: createDestinationContext({ platformPorts: () => [roostApiPort] }),
      resolve: async (host) =>
        host === "localhost" ? [publicAddress] : host === "rebind.example.com" ? ["127.0.0.1"] : [],
      connect: (address, port) => connect(port, address === publicAddress ? "127.0.0.1" : address),
    });
  mcp = createMcpService({
    store,
    cipher,
    onChange: (key) => http.forget(`${key.scope}:${key.ownerId}:${key.name}:`),
    oauth: { redirectUrl, fetchFor },
  });
  cipherForTest = cipher;
  const source = createMcpTools({
    store,
    cipher,
    secrets,
    gateway: {
      call: () => Promise.reject(new Error("no computer in this test")),
      isConnected: () => false,
      worker: () => undefined,
    },
    providerKind: "process",
    http,
    listTimeoutMs: 2000,
    callTimeoutMs: 5000,
    fetchFor,
    oauthRedirectUrl: redirectUrl,
  });
  router = createToolRouter({ sources: [source] });
});

afterAll(async () => {
  await http?.close();
  example?.kill();
  await new Promise<void>((resolve) =>
    silent === undefined ? resolve() : silent.close(() => resolve()),
  );
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

function turn(authorAccountId = alice.accountId): ToolTurnContext {
  turnCount += 1;
  return {
    ...alice,
    conversationId: "conv_test",
    turnId: `turn_${turnCount}`,
    trigger: { source: { kind: "chat" }, authorAccountId },
  };
}

async function call(context: ToolTurnContext, name: string, input: unknown) {
  return router.execute(name, input, {
    ...context,
    callId: `${context.turnId}:call`,
    durable: createMemoryDurable(),
    signal: new AbortController().signal,
  });
}

const put = (name: string, body: unknown) =>
  mcp.put({
    scope: "bot",
    ownerId: alice.botId,
    accountId: alice.accountId,
    name,
    body,
    actorAccountId: alice.accountId,
  });
const del = (name: string) =>
  mcp.delete({ scope: "bot", ownerId: alice.botId, name, actorAccountId: alice.accountId });
const statusOf = async (name: string) => (await mcp.get("bot", alice.botId, name))?.status;

describe("HTTP MCP servers (the SDK's example server)", () => {
  it("lists its tools at a turn's start and calls one: the round trip", async () => {
    await put("demo", { url: `http://localhost:${examplePort}/mcp` });
    const context = turn();
    const names = (await router.specs(context)).map((spec) => spec.name);
    expect(names).toContain("mcp__demo__greet");
    expect(names).toContain("mcp__demo__multi-greet");
    const result = await call(context, "mcp__demo__greet", { name: "Ada" });
    expect(result).toMatchObject({ output: "Hello, Ada!", isError: false });
    expect((await statusOf("demo"))?.tools).toContain("mcp__demo__greet");
    await router.endTurn({ ...context, durable: createMemoryDurable() });
    await del("demo");
  });

  it("MCP1: a turn keeps the list it started with; the next turn sees the change", async () => {
    await put("first", { url: `http://localhost:${examplePort}/mcp` });
    const running = turn();
    expect((await router.specs(running)).map((spec) => spec.name)).toContain("mcp__first__greet");
    await put("second", { url: `http://localhost:${examplePort}/mcp` });
    const during = await call(running, "mcp__second__greet", { name: "Ada" });
    expect(during).toMatchObject({
      isError: true,
      output: 'There is no tool named "mcp__second__greet".',
    });
    expect((await call(running, "mcp__first__greet", { name: "Ada" })).output).toBe("Hello, Ada!");
    const next = turn();
    expect((await router.specs(next)).map((spec) => spec.name)).toContain("mcp__second__greet");
    expect((await call(next, "mcp__second__greet", { name: "Bo" })).output).toBe("Hello, Bo!");
    await del("first");
    await del("second");
  });

  it("MCP6: a server with secrets is offered only in the owner's chat; MCP7: its secret resolves on the server", async () => {
    await put("secret", {
      url: `http://localhost:${examplePort}/mcp`,
      headers: { "X-Token": { secret: "DEMO_TOKEN" } },
    });
    const owner = turn();
    expect((await router.specs(owner)).map((spec) => spec.name)).toContain("mcp__secret__greet");
    expect((await call(owner, "mcp__secret__greet", { name: "Ada" })).output).toBe("Hello, Ada!");
    const teammate = turn(bobId);
    expect((await router.specs(teammate)).map((spec) => spec.name)).not.toContain(
      "mcp__secret__greet",
    );
    const refused = await call(teammate, "mcp__secret__greet", { name: "Ada" });
    expect(refused).toMatchObject({ isError: true });
    expect(refused.output).not.toContain("Hello");
    await del("secret");
  });

  it("another account's bot is offered none of this account's servers, bot or user", async () => {
    await put("mine", { url: `http://localhost:${examplePort}/mcp` });
    await mcp.put({
      scope: "user",
      ownerId: alice.accountId,
      accountId: alice.accountId,
      name: "shared",
      body: { url: `http://localhost:${examplePort}/mcp` },
      actorAccountId: alice.accountId,
    });
    const bobBot = await store.createBot({
      accountId: bobId,
      name: "bb",
      instructions: "",
      model: null,
    });
    const bobTurn: ToolTurnContext = {
      accountId: bobId,
      botId: bobBot.id,
      conversationId: "conv_bob",
      turnId: "turn_bob",
    };
    expect(await router.specs(bobTurn)).toEqual([]);
    expect((await call(bobTurn, "mcp__mine__greet", { name: "x" })).output).toBe(
      'There is no tool named "mcp__mine__greet".',
    );
    const names = (await router.specs(turn())).map((spec) => spec.name);
    expect(names).toEqual(expect.arrayContaining(["mcp__mine__greet", "mcp__shared__greet"]));
    await del("mine");
    await mcp.delete({
      scope: "user",
      ownerId: alice.accountId,
      name: "shared",
      actorAccountId: alice.accountId,
    });
  });

  it("a missing secret is a clear error the owner sees", async () => {
    await put("nokey", {
      url: `http://localhost:${examplePort}/mcp`,
      headers: { Authorization: { secret: "NOT_SET" } },
    });
    expect((await router.specs(turn())).map((spec) => spec.name)).not.toContain(
      "mcp__nokey__greet",
    );
    expect((await statusOf("nokey"))?.lastError).toMatch(
      /needs the secret NOT_SET, which is not set/,
    );
    await del("nokey");
  });

  it.each([
    ["the metadata address", "http://169.254.169.254/mcp", /link-local|can never reach/],
    ["the Roost API itself", `http://127.0.0.1:${roostApiPort}/v1/mcp`, /Roost host itself/],
    ["a name that resolves to loopback", "http://rebind.example.com/mcp", /Roost host itself/],
    ["a private address", "http://10.1.2.3/mcp", /private/],
  ])("MCPF1 attack: %s is never contacted; the owner sees why", async (_what, url, reason) => {
    await put("attack", { url });
    expect((await router.specs(turn())).map((spec) => spec.name)).toEqual([]);
    const status = await statusOf("attack");
    expect(status?.lastError).toMatch(/was not contacted/);
    expect(status?.lastError).toMatch(reason);
    await del("attack");
  });

  it("MCPF1: the account's egress policy applies (none refuses, an allowlist without the host refuses)", async () => {
    await put("policy", { url: `http://localhost:${examplePort}/mcp` });
    try {
      policy = parseEgressPolicy({ mode: "none" });
      await router.specs(turn());
      expect((await statusOf("policy"))?.lastError).toMatch(/no network access/);
      policy = parseEgressPolicy({ mode: "allowlist-only", allow: [{ host: "example.org" }] });
      await router.specs(turn());
      expect((await statusOf("policy"))?.lastError).toMatch(/was not contacted/);
      policy = parseEgressPolicy({
        mode: "allowlist-only",
        allow: [{ host: "localhost", ports: [examplePort] }],
      });
      const context = turn();
      expect((await router.specs(context)).map((spec) => spec.name)).toContain(
        "mcp__policy__greet",
      );
    } finally {
      policy = parseEgressPolicy({ mode: "allow-all" });
      await del("policy");
    }
  });

  it("MCPH2: a server that never answers times out; the turn goes on without its tools", async () => {
    await put("silent", { url: `http://localhost:${silentPort}/mcp` });
    const started = Date.now();
    expect(await router.specs(turn())).toEqual([]);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect((await statusOf("silent"))?.lastError).toMatch(/did not answer in time|timed out/i);
    await del("silent");
  });
});

describe("HTTP MCP servers with OAuth (the SDK's example server and its demo authorization server)", () => {
  let secured: { child: ChildProcess; port: number };
  beforeAll(async () => {
    secured = await spawnExample(["--oauth"]);
  });
  afterAll(() => {
    secured?.child.kill();
  });

  it("asks the owner to authorize, finishes at the callback, keeps the tokens sealed, and calls", async () => {
    await put("secured", { url: `http://localhost:${secured.port}/mcp` });
    // The first listing meets a 401: no tools, and the owner is told what to do.
    expect(await router.specs(turn())).toEqual([]);
    expect((await statusOf("secured"))?.lastError).toMatch(/needs authorization/);

    const started = await mcp.authorize("bot", alice.botId, "secured");
    if (!("authorizationUrl" in started)) throw new Error("expected a link to open");
    const view = await mcp.get("bot", alice.botId, "secured");
    expect(view?.oauth).toEqual({ connected: false, authorizationUrl: started.authorizationUrl });

    // The owner's browser: the demo authorization server approves at once and redirects back.
    const approved = await fetch(started.authorizationUrl, { redirect: "manual" });
    const back = new URL(approved.headers.get("location") ?? "");
    expect(`${back.origin}${back.pathname}`).toBe(redirectUrl);
    const code = back.searchParams.get("code")!;
    const state = back.searchParams.get("state")!;
    expect(await mcp.finishAuthorization(state, code)).toBe("secured");
    // MCPO2: the same callback again does nothing.
    await expect(mcp.finishAuthorization(state, code)).rejects.toThrow(/no longer valid/);
    await expect(mcp.finishAuthorization("forged", code)).rejects.toThrow(/no longer valid/);

    const connected = await mcp.get("bot", alice.botId, "secured");
    expect(connected?.oauth).toEqual({ connected: true, authorizationUrl: null });
    expect(connected?.usesSecrets).toBe(true); // MCP6: its tokens are the owner's

    const context = turn();
    expect((await router.specs(context)).map((spec) => spec.name)).toContain("mcp__secured__greet");
    expect((await call(context, "mcp__secured__greet", { name: "Ada" })).output).toBe(
      "Hello, Ada!",
    );
    // MCP6: a teammate's chat does not get a server whose tokens are the owner's.
    expect((await router.specs(turn(bobId))).map((spec) => spec.name)).not.toContain(
      "mcp__secured__greet",
    );

    // MCPO1: the access token is in no view and not in the store's file.
    const record = await store.getMcpServer("bot", alice.botId, "secured");
    const token = readOAuth(record!, cipherForTest!).tokens?.access_token;
    expect(token).toBeTruthy();
    expect(JSON.stringify(connected)).not.toContain(token);
    const bytes = await readFile(path.join(dir, "roost.db"));
    const wal = await readFile(path.join(dir, "roost.db-wal")).catch(() => Buffer.alloc(0));
    expect(bytes.includes(token!) || wal.includes(token!)).toBe(false);
    await del("secured");
  });
});
