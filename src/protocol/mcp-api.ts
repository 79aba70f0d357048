/**
 * Wire types of the MCP servers API (docs/api.md "MCP servers", docs/mcp.md), part of `Api`
 * (api.ts re-exports them).
 */

/** A value of `env` or `headers` as the API shows it: a secret's name, or a hidden literal. */
export type McpValueView = { secret: string } | { hidden: true };

export interface McpServerView {
  name: string;
  /** `bot`: this bot's; `user`: available to all of the account's bots. */
  scope: "bot" | "user";
  /** Set for a bot's server. */
  botId?: string;
  transport: "command" | "http";
  /** A command server's program and arguments. */
  command?: string;
  args?: string[];
  /** An HTTP server's URL. */
  url?: string;
  /** Names only; a literal value is never shown again. */
  env?: Record<string, McpValueView>;
  headers?: Record<string, McpValueView>;
  /** True when a value refers to a secret: the server's tools are offered only in the owner's chat. */
  usesSecrets: boolean;
  /**
   * An HTTP server that asked for OAuth: whether Roost holds its tokens, and while it does not,
   * the link the owner opens to authorize it (`POST …/mcp-servers/{name}/authorize` makes one).
   */
  oauth?: { connected: boolean; authorizationUrl: string | null };
  /** What the last listing gave: the tool names a turn is offered, and the last error. */
  status: {
    tools: string[] | null;
    listedAt: string | null;
    lastError: string | null;
    lastErrorAt: string | null;
  };
  createdAt: string;
  updatedAt: string;
}

export interface McpServerList {
  servers: McpServerView[];
  /** At most this many per bot, and per user. */
  limit: number;
}

/** `POST …/mcp-servers/{name}/authorize`: connected already, or the link to open. */
export type McpAuthorizeResponse = { authorized: true } | { authorizationUrl: string };
