/**
 * MCP servers as the store keeps them (issue 15 §2, docs/mcp.md): per bot or per user (shared by
 * all of the account's bots). The plain part (command, args, url) is a JSON `spec`; the values of
 * `env` and `headers` (credentials, or references to secrets) are sealed (src/secrets/crypto.ts).
 * The last tool list a server gave and its last error are kept with it: the tools a turn is
 * offered when the server cannot be asked, and what the owner sees in the bot's settings.
 *
 * Invariants (both implementations; checked by mcp-store.test.ts):
 *   MST1 one server per (scope, owner, name): a PUT of a name that exists replaces its settings
 *        and forgets its tool list and error (they were the old settings').
 *   MST2 at most `limit` servers per owner (the owner's row is locked while counting).
 *   MST4 a PUT forgets the server's OAuth state (its tokens were for the old settings).
 *   MST3 every write and delete is audited in its transaction (name, scope and transport, never
 *        a value).
 */
export type McpScope = "bot" | "user";
export type McpTransport = "command" | "http";

/** One tool as a server listed it (already capped, docs/mcp.md). */
export interface McpToolRecord {
  /** The name the model calls: `mcp__<server>__<tool>` sanitised (MCP4). */
  name: string;
  /** The tool's own name on its server. */
  tool: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface McpServerRecord {
  scope: McpScope;
  /** The bot's id, or the account's id for a user server. */
  ownerId: string;
  accountId: string;
  name: string;
  transport: McpTransport;
  /** JSON: `{command, args}` or `{url}`. */
  spec: string;
  /** `env` (command) or `headers` (http), sealed JSON; null: none. */
  sealed: string | null;
  /** The secrets the sealed values refer to (`{"secret": NAME}`), for the owner-only rule. */
  secretNames: string[];
  tools: McpToolRecord[] | null;
  listedAt: number | null;
  lastError: string | null;
  lastErrorAt: number | null;
  /** An HTTP server's OAuth client state (registration, tokens, verifier), sealed; null: none. */
  oauth: string | null;
  /** The random state of an OAuth flow under way (its callback finds the server by it). */
  oauthState: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface PutMcpServerInput extends Pick<
  McpServerRecord,
  "scope" | "ownerId" | "accountId" | "name" | "transport" | "spec" | "sealed" | "secretNames"
> {
  /** MST2 */
  limit: number;
  actorAccountId: string;
}

export interface McpStore {
  /** MST1–MST3 */
  putMcpServer(
    input: PutMcpServerInput,
  ): Promise<{ outcome: "created" | "replaced"; record: McpServerRecord } | { outcome: "limited" }>;
  listMcpServers(scope: McpScope, ownerId: string): Promise<McpServerRecord[]>;
  getMcpServer(
    scope: McpScope,
    ownerId: string,
    name: string,
  ): Promise<McpServerRecord | undefined>;
  /** MST3: false when there was none. */
  deleteMcpServer(input: {
    scope: McpScope;
    ownerId: string;
    name: string;
    actorAccountId: string;
  }): Promise<boolean>;
  /**
   * Records what asking the server gave: a tool list (clears the error) or an error (keeps the
   * last list). Only when the row still has `updatedAt` (a PUT meanwhile wins).
   */
  recordMcpListing(
    key: { scope: McpScope; ownerId: string; name: string; updatedAt: number },
    outcome: { tools: McpToolRecord[] } | { error: string },
  ): Promise<void>;
  /** Keeps an HTTP server's OAuth state; only while the row has `updatedAt` (MST4). */
  saveMcpOAuth(
    key: { scope: McpScope; ownerId: string; name: string; updatedAt: number },
    oauth: { sealed: string | null; state: string | null },
  ): Promise<boolean>;
  /** The server whose OAuth flow has this state. */
  findMcpServerByOAuthState(state: string): Promise<McpServerRecord | undefined>;
}
