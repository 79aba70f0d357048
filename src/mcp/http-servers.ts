/**
 * Streamable HTTP MCP servers, reached from the Roost server with the official SDK client
 * (StreamableHTTPClientTransport) through the guarded fetch (http-fetch.ts). Their headers (and
 * OAuth tokens) stay on the server: nothing of them reaches the computer.
 *
 * Invariants:
 *   MCPH1 one client (one MCP session) per server and settings version; a failed request drops
 *         it, so the next request starts a new session instead of reusing a broken one.
 *   MCPH2 every request has a deadline; a server that never answers gives a timeout error.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mcpLimits, reduceMcpResult, type McpCallOutput, type McpTool } from "../protocol/index.ts";

export type McpFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface HttpServerTarget {
  /** Identifies the server and its settings version (MCPH1). */
  key: string;
  url: string;
  headers: Record<string, string>;
  fetch: McpFetch;
  authProvider?: OAuthClientProvider;
}

export interface HttpMcpClients {
  tools(target: HttpServerTarget, timeoutMs: number, signal?: AbortSignal): Promise<McpTool[]>;
  call(
    target: HttpServerTarget,
    request: { tool: string; arguments: Record<string, unknown> },
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<McpCallOutput>;
  /** Forgets a server's session (its settings changed or were deleted). */
  forget(keyPrefix: string): Promise<void>;
  close(): Promise<void>;
}

export function createHttpMcpClients(): HttpMcpClients {
  const clients = new Map<string, Promise<Client>>();

  function clientFor(target: HttpServerTarget, timeoutMs: number): Promise<Client> {
    const known = clients.get(target.key);
    if (known !== undefined) return known;
    const transport = new StreamableHTTPClientTransport(new URL(target.url), {
      fetch: target.fetch,
      requestInit: { headers: target.headers },
      ...(target.authProvider === undefined ? {} : { authProvider: target.authProvider }),
      reconnectionOptions: {
        maxReconnectionDelay: 5000,
        initialReconnectionDelay: 500,
        reconnectionDelayGrowFactor: 2,
        maxRetries: 1,
      },
    });
    const client = new Client({ name: "roost", version: "1" });
    const connecting = client.connect(transport, { timeout: timeoutMs }).then(() => client);
    clients.set(target.key, connecting);
    connecting.catch(() => {
      if (clients.get(target.key) === connecting) clients.delete(target.key);
    });
    return connecting;
  }

  async function drop(key: string): Promise<void> {
    const known = clients.get(key);
    clients.delete(key);
    await known?.then((client) => client.close()).catch(() => undefined);
  }

  async function withClient<T>(
    target: HttpServerTarget,
    timeoutMs: number,
    action: (client: Client) => Promise<T>,
  ): Promise<T> {
    try {
      return await action(await clientFor(target, timeoutMs));
    } catch (error) {
      await drop(target.key); // MCPH1
      throw error;
    }
  }

  return {
    tools: (target, timeoutMs, signal) =>
      withClient(target, timeoutMs, async (client) => {
        const tools: McpTool[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor }, {
            timeout: timeoutMs,
            ...(signal === undefined ? {} : { signal }),
          }); // MCPH2
          for (const tool of page.tools)
            tools.push({
              name: tool.name,
              description: tool.description ?? "",
              inputSchema: tool.inputSchema,
            });
          cursor = page.nextCursor;
        } while (cursor !== undefined && tools.length < mcpLimits.maxToolsPerServer);
        return tools.slice(0, mcpLimits.maxToolsPerServer);
      }),

    call: (target, request, timeoutMs, signal) =>
      withClient(target, timeoutMs, async (client) => {
        const result = await client.callTool(
          { name: request.tool, arguments: request.arguments },
          undefined,
          { timeout: timeoutMs, ...(signal === undefined ? {} : { signal }) },
        ); // MCPH2
        return reduceMcpResult(result as Parameters<typeof reduceMcpResult>[0]);
      }),

    async forget(keyPrefix) {
      await Promise.all([...clients.keys()].filter((key) => key.startsWith(keyPrefix)).map(drop));
    },

    async close() {
      await Promise.all([...clients.keys()].map(drop));
    },
  };
}
