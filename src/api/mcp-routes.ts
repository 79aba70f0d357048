/**
 * MCP servers (docs/api.md "MCP servers", docs/mcp.md): a bot's own and the caller's (available
 * to all of their bots).
 *
 * Invariants:
 *   MCPAPI1 every route reads and writes the caller's own bots and servers only: another
 *           account's bot answers 404 exactly like a missing one, and so does a missing server.
 *   MCPAPI2 no response, error or audit row holds an env or header value (MCPS2).
 *   MCPAPI3 a bad name or body is a 400 that says how to fix it, and stores nothing (MCPS4).
 *   MCPAPI4 see registerMcpOAuthCallback.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { NotFoundError } from "../errors/index.ts";
import { maxMcpServersPerOwner, mcpOAuthCallbackPath, type McpService } from "../mcp/index.ts";
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

    app.post(`${base}/:name/authorize`, async (context) => {
      const { ownerId } = await owner(context, scope);
      const answer = await mcp.authorize(scope, ownerId, context.req.param("name"));
      return context.json(answer satisfies Api.McpAuthorizeResponse);
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

/**
 * MCPAPI4: the OAuth callback carries no API token (a browser redirect); it acts only through the
 * flow's random state (MCPO2), and its page names the server, never a token or code.
 */
export function registerMcpOAuthCallback(app: Hono, deps: { mcp: McpService }): void {
  app.get(mcpOAuthCallbackPath, async (context) => {
    const state = context.req.query("state") ?? "";
    const code = context.req.query("code") ?? "";
    const refused = context.req.query("error");
    const page = (status: 200 | 400, text: string) =>
      context.html(
        `<!doctype html><meta charset="utf-8"><title>Roost</title><p>${escapeHtml(text)}</p>`,
        status,
      );
    if (refused !== undefined)
      return page(400, `The MCP server's authorization was refused (${refused.slice(0, 100)}).`);
    if (state === "" || code === "")
      return page(
        400,
        "This link is missing its code or state; start again from the bot's settings.",
      );
    try {
      const name = await deps.mcp.finishAuthorization(state, code);
      return page(200, `Roost is connected to the MCP server ${name}. You can close this page.`);
    } catch (error) {
      return page(400, (error as Error).message.slice(0, 300));
    }
  });
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
