/** The stored OAuth provider (oauth.ts MCPO1, MCPO3, MCPO5) on a real SQLite store. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSecretCipher, loadSecretsKey, type SecretCipher } from "../secrets/index.ts";
import { openStore, type McpServerRecord, type Store } from "../store/index.ts";
import { createStoredOAuthProvider, readOAuth } from "./oauth.ts";

let dir: string;
let store: Store;
let cipher: SecretCipher;
let record: McpServerRecord;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "roost-mcp-oauth-"));
  store = await openStore({ kind: "sqlite", path: path.join(dir, "roost.db") });
  cipher = createSecretCipher(await loadSecretsKey({ dataDir: dir }));
  const account = await store.createAccount({ name: "a", isAdmin: false });
  const put = await store.putMcpServer({
    scope: "user",
    ownerId: account.id,
    accountId: account.id,
    name: "s",
    transport: "http",
    spec: JSON.stringify({ url: "https://mcp.example.com/mcp" }),
    sealed: null,
    secretNames: [],
    limit: 20,
    actorAccountId: account.id,
  });
  if (put.outcome === "limited") throw new Error("limited");
  record = put.record;
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const provider = (from = record) =>
  createStoredOAuthProvider({
    store,
    cipher,
    record: from,
    redirectUrl: "https://roost.example.com/cb",
  });

describe("the stored OAuth provider", () => {
  it("MCPO5 attack: a javascript: authorization link is refused and never stored", async () => {
    await expect(
      provider().redirectToAuthorization(new URL("javascript:alert(document.cookie)")),
    ).rejects.toThrow(/only http\(s\) links/);
    const stored = await store.getMcpServer("user", record.ownerId, "s");
    expect(readOAuth(stored!, cipher).authorizationUrl).toBeUndefined();
  });

  it("MCPO1, MCPO3: tokens are sealed, end the flow, and are forgotten by a PUT", async () => {
    const oauth = provider();
    const flow = await oauth.state!();
    expect((await store.findMcpServerByOAuthState(flow))?.name).toBe("s");
    await oauth.saveTokens({ access_token: "at-secret-value", token_type: "Bearer" });
    expect(await oauth.tokens()).toMatchObject({ access_token: "at-secret-value" });
    const stored = await store.getMcpServer("user", record.ownerId, "s");
    expect(stored?.oauth).not.toContain("at-secret-value");
    expect(stored?.oauthState).toBeNull(); // the flow is over: its callback no longer works
    expect(await store.findMcpServerByOAuthState(flow)).toBeUndefined();

    await store.putMcpServer({ ...record, limit: 20, actorAccountId: record.accountId });
    expect(await oauth.tokens()).toBeUndefined(); // MST4: the old settings' tokens are gone
    await oauth.saveTokens({ access_token: "late", token_type: "Bearer" }); // stale provider
    const after = await store.getMcpServer("user", record.ownerId, "s");
    expect(after?.oauth).toBeNull();
  });
});
