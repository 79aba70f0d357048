/**
 * The MCP servers of bots and users (docs/mcp.md): what the API does with them. The tools they
 * offer are source.ts's.
 */
import { InvalidRequestError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import type { SecretCipher } from "../secrets/index.ts";
import type { McpScope, Store } from "../store/index.ts";
import {
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
}

export function createMcpService(deps: {
  store: Store;
  cipher: SecretCipher;
  /** Told when a server's settings change or go (drops its HTTP session). */
  onChange?: (key: { scope: McpScope; ownerId: string; name: string }) => Promise<void>;
  /** @default maxMcpServersPerOwner */
  limit?: number;
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
  };
}
