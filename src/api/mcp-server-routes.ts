/**
 * Roost as an MCP server (docs/serve.md): `/v1/mcp`, streamable HTTP in stateless mode, behind
 * the API's bearer auth. Each bot the caller may ask is a tool `ask_<bot>` taking `{message}`
 * and answering the bot's reply as text. Built on the official SDK's McpServer and its
 * web-standard transport, one pair per request (stateless: nothing outlives the request).
 *
 * Invariants:
 *   MCPS1 the tools are the caller's own bots and the team bots they may use (ASK2), listed anew
 *         on every request: another account's bots are never listed, nor callable.
 *   MCPS2 tool names match ^[a-zA-Z0-9_-]{1,64}$: `ask_` and the bot's name with every other
 *         character as `_`, cut to fit; two bots that come out the same get `_2`, `_3`, … .
 *   MCPS3 every call holds one of the account's event streams while it waits (OAI3).
 *   MCPS4 a bot's failed turn is a tool error (`isError`), never a protocol error.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Hono } from "hono";
import { z } from "zod";
import { toRoostError } from "../errors/index.ts";
import type { Account, Bot } from "../store/index.ts";
import { askableBots, askBot, askConversation, type AskDependencies } from "./ask.ts";
import { maxAskChars } from "./openai-routes.ts";

export const mcpServerPath = "/v1/mcp";

/** MCPS2: a tool name for each bot, unique among them. */
export function askToolNames(bots: Bot[]): Map<string, Bot> {
  const names = new Map<string, Bot>();
  for (const bot of bots) {
    const base = `ask_${bot.name.replace(/[^a-zA-Z0-9_-]/g, "_")}`.slice(0, 64);
    let name = base;
    for (let n = 2; names.has(name); n++) {
      const suffix = `_${n}`;
      name = `${base.slice(0, 64 - suffix.length)}${suffix}`;
    }
    names.set(name, bot);
  }
  return names;
}

type McpApp = Hono<{ Variables: { account: Account; requestId: string } }>;

export function registerMcpServerRoute(
  app: McpApp,
  deps: AskDependencies & { acquireStream(accountId: string): () => void },
): void {
  app.all(mcpServerPath, async (context) => {
    const account = context.get("account");
    const requestId = context.get("requestId");
    const server = new McpServer({ name: "roost", version: "1.0.0" });
    for (const [name, bot] of askToolNames(await askableBots(deps.store, account.id))) {
      server.registerTool(
        name,
        {
          title: `Ask ${bot.name}`,
          description: `Sends a message to the Roost bot "${bot.name}" in a new conversation and answers its reply.`,
          inputSchema: {
            message: z
              .string()
              .min(1)
              .max(maxAskChars)
              .describe(`what to ask ${bot.name} (at most ${maxAskChars} characters)`),
          },
        },
        async ({ message }, extra) => {
          const release = deps.acquireStream(account.id); // MCPS3
          try {
            const conversation = await askConversation(
              deps.store,
              account.id,
              bot,
              undefined,
              `Chat with ${bot.name} (MCP)`,
            );
            const result = await askBot(deps, {
              accountId: account.id,
              conversation,
              text: message,
              requestId,
              signal: extra.signal,
            });
            return {
              content: [{ type: "text" as const, text: result.text }],
              ...(result.isError ? { isError: true } : {}),
            };
          } catch (error) {
            // MCPS4
            return {
              content: [{ type: "text" as const, text: toRoostError(error).message }],
              isError: true,
            };
          } finally {
            release();
          }
        },
      );
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    try {
      return await transport.handleRequest(context.req.raw);
    } finally {
      await server.close();
    }
  });
}
