/**
 * MCP servers (docs/api.md "MCP servers", docs/mcp.md): a bot's own and the caller's (available
 * to all of their bots).
 *
 * Invariants:
 *   MCPAPI1 every route reads and writes the caller's own bots and servers only: another
 *           account's bot answers 404 exactly like a missing one, and so does a missing server.
 *   MCPAPI2 no response, error or audit row holds an env or header value (MCPS2).
 *   MCPAPI3 a bad name or body is a 400 that says how to fix it, and stores nothing (MCPS4).
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { NotFoundError } from "../errors/index.ts";
import { maxMcpServersPerOwner, type McpService } from "../mcp/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, McpScope, Store } from "../store/index.ts";
import { ownBotOf } from "./ownership.ts";
import { readJson } from "./validation.ts";

type McpApp = Hono<{ Variables: { account: Account } }>;
type McpContext = Context<{ Variables: { account: Account } }>;

export function registerMcpRoutes(app: McpApp, deps: { store: Store; mcp: McpService }): void {
  const { store, mcp } = deps;
  // MCPAPI1
  const owner = async (context: McpContext, scope: McpScope) => {
    const accountId = context.get("account").id;
    return scope === "bot"
      ? { ownerId: (await ownBotOf(store, accountId, context.req.param("id") ?? "")).id, accountId }
      : { ownerId: accountId, accountId };
  };

  for (const [scope, base] of [
    ["bot", "/v1/bots/:id/mcp-servers"],
    ["user", "/v1/me/mcp-servers"],
  ] as const) {
    app.get(base, async (context) => {
      const { ownerId } = await owner(context, scope);
      return context.json({
        servers: await mcp.list(scope, ownerId),
        limit: maxMcpServersPerOwner,
      } satisfies Api.McpServerList);
    });

    app.get(`${base}/:name`, async (context) => {
      const { ownerId } = await owner(context, scope);
      const name = context.req.param("name");
      const server = await mcp.get(scope, ownerId, name);
      if (server === undefined) throw new NotFoundError("MCP server", name);
      return context.json(server satisfies Api.McpServerView);
    });

    app.put(`${base}/:name`, async (context) => {
      const { ownerId, accountId } = await owner(context, scope);
      const body = await readJson(context, z.unknown()); // MCPAPI3: parsed by the service
      const { created, server } = await mcp.put({
        scope,
        ownerId,
        accountId,
        name: context.req.param("name"),
        body,
        actorAccountId: accountId,
      });
      return context.json(server satisfies Api.McpServerView, created ? 201 : 200); // MCPAPI2
    });

    app.delete(`${base}/:name`, async (context) => {
      const { ownerId, accountId } = await owner(context, scope);
      const name = context.req.param("name");
      const deleted = await mcp.delete({ scope, ownerId, name, actorAccountId: accountId });
      if (!deleted) throw new NotFoundError("MCP server", name);
      return context.body(null, 204);
    });
  }
}
