/**
 * The MCP servers of bots and users (docs/mcp.md): what the API does with them. The tools they
 * offer are source.ts's.
 */
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { InvalidRequestError, NotFoundError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import type { SecretCipher } from "../secrets/index.ts";
import type { McpScope, Store } from "../store/index.ts";
import type { McpFetch } from "./http-servers.ts";
import { createStoredOAuthProvider, readOAuth } from "./oauth.ts";
import {
  fromStored,
  maxMcpServersPerOwner,
  mcpServerNameProblem,
  parseMcpSettings,
  toStored,
  toView,
} from "./settings.ts";

export interface McpService {
  put(input: {
    scope: McpScope;
    ownerId: string;
    accountId: string;
    name: string;
    body: unknown;
    actorAccountId: string;
  }): Promise<{ created: boolean; server: Api.McpServerView }>;
  list(scope: McpScope, ownerId: string): Promise<Api.McpServerView[]>;
  get(scope: McpScope, ownerId: string, name: string): Promise<Api.McpServerView | undefined>;
  delete(input: {
    scope: McpScope;
    ownerId: string;
    name: string;
    actorAccountId: string;
  }): Promise<boolean>;
  /** Starts (or confirms) an HTTP server's OAuth connection: the link the owner opens. */
  authorize(scope: McpScope, ownerId: string, name: string): Promise<Api.McpAuthorizeResponse>;
  /** The OAuth callback: finishes the flow with this state (MCPO2); the server's name. */
  finishAuthorization(state: string, code: string): Promise<string>;
}

/** What the OAuth flow needs (absent: HTTP servers that ask for OAuth cannot be connected). */
export interface McpOAuthOptions {
  /** The absolute URL of `GET /v1/mcp-oauth/callback`. */
  redirectUrl: string;
  /** MCPO4 */
  fetchFor(accountId: string): McpFetch;
}

export function createMcpService(deps: {
  store: Store;
  cipher: SecretCipher;
  /** Told when a server's settings change or go (drops its HTTP session). */
  onChange?: (key: { scope: McpScope; ownerId: string; name: string }) => Promise<void>;
  /** @default maxMcpServersPerOwner */
  limit?: number;
  oauth?: McpOAuthOptions;
}): McpService {
  const { store, cipher } = deps;
  const limit = deps.limit ?? maxMcpServersPerOwner;
  return {
    async put(input) {
      const problem = mcpServerNameProblem(input.name);
      if (problem !== undefined)
        throw new InvalidRequestError(problem, { issues: [{ path: "name", message: problem }] }); // MCPS1
      const settings = parseMcpSettings(input.body); // MCPS4
      const key = { scope: input.scope, ownerId: input.ownerId, name: input.name };
      const outcome = await store.putMcpServer({
        ...key,
        accountId: input.accountId,
        ...toStored(settings, key, cipher), // MCPS2
        limit,
        actorAccountId: input.actorAccountId,
      });
      if (outcome.outcome === "limited")
        throw new InvalidRequestError(
          `${input.scope === "bot" ? "a bot" : "a user"} has at most ${limit} MCP servers; delete one you no longer need (DELETE …/mcp-servers/{name}) before adding ${input.name}`,
          { issues: [{ path: "name", message: `at most ${limit} MCP servers` }] },
        );
      await deps.onChange?.(key);
      return { created: outcome.outcome === "created", server: toView(outcome.record, cipher) };
    },

    async list(scope, ownerId) {
      return (await store.listMcpServers(scope, ownerId)).map((record) => toView(record, cipher));
    },

    async get(scope, ownerId, name) {
      const record = await store.getMcpServer(scope, ownerId, name);
      return record === undefined ? undefined : toView(record, cipher);
    },

    async delete(input) {
      const deleted = await store.deleteMcpServer(input);
      if (deleted) await deps.onChange?.(input);
      return deleted;
    },

    async authorize(scope, ownerId, name) {
      const record = await store.getMcpServer(scope, ownerId, name);
      if (record === undefined) throw new NotFoundError("MCP server", name);
      const settings = fromStored(record, cipher);
      if (settings.transport !== "http")
        throw new InvalidRequestError(
          `${name} is a command server; only HTTP MCP servers use OAuth (give a command server its credentials in env)`,
        );
      const oauth = deps.oauth;
      if (oauth === undefined)
        throw new InvalidRequestError("this Roost cannot connect MCP servers with OAuth");
      const provider = createStoredOAuthProvider({
        store,
        cipher,
        record,
        redirectUrl: oauth.redirectUrl,
      });
      const outcome = await auth(provider, {
        serverUrl: settings.url,
        fetchFn: oauth.fetchFor(record.accountId), // MCPO4
      });
      if (outcome === "AUTHORIZED") return { authorized: true };
      const fresh = await store.getMcpServer(scope, ownerId, name);
      const url = fresh === undefined ? undefined : readOAuth(fresh, cipher).authorizationUrl;
      if (url === undefined)
        throw new Error(`the OAuth flow of ${name} gave no authorization link`);
      return { authorizationUrl: url };
    },

    async finishAuthorization(state, code) {
      const expired = new InvalidRequestError(
        "this authorization link is no longer valid (used already, or the server's settings changed): start again from the bot's settings",
      );
      const oauth = deps.oauth;
      const record = await store.findMcpServerByOAuthState(state); // MCPO2
      if (record === undefined || oauth === undefined) throw expired;
      const settings = fromStored(record, cipher);
      if (settings.transport !== "http") throw expired;
      const provider = createStoredOAuthProvider({
        store,
        cipher,
        record,
        redirectUrl: oauth.redirectUrl,
      });
      const outcome = await auth(provider, {
        serverUrl: settings.url,
        authorizationCode: code,
        fetchFn: oauth.fetchFor(record.accountId),
      });
      if (outcome !== "AUTHORIZED") throw expired;
      await deps.onChange?.(record);
      return record.name;
    },
  };
}
