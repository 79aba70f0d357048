/**
 * mcp/: MCP clients (issue 15 §2, docs/mcp.md, decision 0030). Bots and users configure MCP
 * servers (settings.ts, service.ts); their tools join a turn's tools as one tool source
 * (source.ts). Command (stdio) servers run on the computer, through its worker
 * (src/worker/mcp-servers.ts); streamable HTTP servers are reached from this server
 * (http-servers.ts) through a fetch that obeys the account's egress policy (http-fetch.ts).
 */
export {
  maxMcpServersPerOwner,
  mcpServerNameProblem,
  parseMcpSettings,
  type McpSettings,
  type McpValue,
} from "./settings.ts";
export { capTools, modelToolNames, mcpToolPrefix, maxMcpPartChars } from "./names.ts";
export { createMcpService, type McpOAuthOptions, type McpService } from "./service.ts";
export { createStoredOAuthProvider, mcpOAuthCallbackPath, type McpOAuthState } from "./oauth.ts";
export { createMcpTools, formatResult, serversOf, type McpToolsOptions } from "./source.ts";
export {
  createHttpMcpClients,
  type HttpMcpClients,
  type HttpServerTarget,
  type McpFetch,
} from "./http-servers.ts";
export { createGuardedFetch, EgressRefusedError, type GuardedFetchOptions } from "./http-fetch.ts";
