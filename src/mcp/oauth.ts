/**
 * MCP's OAuth flow for HTTP servers that need it (docs/mcp.md "OAuth"), with the SDK's own auth
 * code (`auth()`, discovery, dynamic client registration, PKCE, refresh): this file is only the
 * SDK's `OAuthClientProvider`, keeping the client's state in the store.
 *
 * Invariants:
 *   MCPO1 the client's state (its registration, tokens and PKCE verifier) is sealed with the
 *         secrets key under the server's row (MCPS2) and lives only on the server: no token ever
 *         reaches the computer, a step, an event or an API answer.
 *   MCPO2 a flow's `state` is 32 random bytes, stored beside the server; the callback acts only on
 *         the server holding that state, once (finishing the flow clears it), so a forged or
 *         replayed callback does nothing.
 *   MCPO3 the state is read from the store at every use (another node may have refreshed the
 *         tokens) and written only while the server's settings are the ones it was made for (a
 *         PUT forgets it: MST4).
 *   MCPO5 an authorization link is kept (and shown to the owner) only when it is http(s): a
 *         server's metadata cannot put a `javascript:` link in the owner's settings page.
 *   MCPO4 the OAuth requests (discovery, registration, token) use the same egress-checked fetch
 *         as the server's own (MCPF1).
 */
import { randomBytes } from "node:crypto";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import type { SecretCipher } from "../secrets/index.ts";
import type { McpServerRecord, Store } from "../store/index.ts";

/** The API's OAuth callback (unauthenticated: the owner's browser is redirected to it). */
export const mcpOAuthCallbackPath = "/v1/mcp-oauth/callback";

/** What the store keeps of one server's OAuth client (sealed: MCPO1). */
export interface McpOAuthState {
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  codeVerifier?: string;
  /** The link the owner opens to authorize Roost (set while a flow waits for them). */
  authorizationUrl?: string;
}

const oauthRow = (record: Pick<McpServerRecord, "scope" | "ownerId" | "name">) =>
  `mcp-oauth:${record.scope}:${record.ownerId}:${record.name}`;

export function readOAuth(record: McpServerRecord, cipher: SecretCipher): McpOAuthState {
  return record.oauth === null
    ? {}
    : (JSON.parse(cipher.open(record.oauth, oauthRow(record))) as McpOAuthState);
}

/** The SDK's provider for one server, its state in the store (MCPO1–MCPO3). */
export function createStoredOAuthProvider(deps: {
  store: Store;
  cipher: SecretCipher;
  record: McpServerRecord;
  /** The API's callback route (`GET /v1/mcp-oauth/callback`), absolute. */
  redirectUrl: string;
}): OAuthClientProvider {
  const { store, cipher, record } = deps;
  const key = {
    scope: record.scope,
    ownerId: record.ownerId,
    name: record.name,
    updatedAt: record.updatedAt,
  };
  const current = async () => {
    const fresh = await store.getMcpServer(record.scope, record.ownerId, record.name); // MCPO3
    return fresh === undefined || fresh.updatedAt !== record.updatedAt
      ? { state: {} as McpOAuthState, flow: null }
      : { state: readOAuth(fresh, cipher), flow: fresh.oauthState };
  };
  const update = async (
    change: (state: McpOAuthState) => McpOAuthState,
    flow?: string | null,
  ): Promise<void> => {
    const now = await current();
    const next = change(now.state);
    await store.saveMcpOAuth(key, {
      sealed: cipher.seal(JSON.stringify(next), oauthRow(record)),
      state: flow === undefined ? now.flow : flow,
    }); // MCPO1, MCPO3
  };
  const metadata: OAuthClientMetadata = {
    client_name: "Roost",
    redirect_uris: [deps.redirectUrl],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };

  return {
    get redirectUrl() {
      return deps.redirectUrl;
    },
    get clientMetadata() {
      return metadata;
    },
    async state() {
      const flow = randomBytes(32).toString("base64url"); // MCPO2
      await update((state) => state, flow);
      return flow;
    },
    clientInformation: async () => (await current()).state.client,
    saveClientInformation: (client) => update((state) => ({ ...state, client })),
    tokens: async () => (await current()).state.tokens,
    // MCPO2: tokens end the flow: its state and link are cleared.
    saveTokens: (tokens) =>
      update(({ client }) => ({ ...(client === undefined ? {} : { client }), tokens }), null),
    async redirectToAuthorization(url) {
      // MCPO5: the link comes from the server's metadata and is shown to the owner as a link.
      if (url.protocol !== "https:" && url.protocol !== "http:")
        throw new Error(
          `the MCP server's authorization endpoint is a ${url.protocol} URL; only http(s) links are shown`,
        );
      await update((state) => ({ ...state, authorizationUrl: url.href }));
    },
    saveCodeVerifier: (codeVerifier) => update((state) => ({ ...state, codeVerifier })),
    async codeVerifier() {
      const verifier = (await current()).state.codeVerifier;
      if (verifier === undefined) throw new Error("no OAuth flow is under way for this server");
      return verifier;
    },
    invalidateCredentials: (scope) =>
      update((state) => {
        if (scope === "all") return {};
        const next = { ...state };
        if (scope === "client") delete next.client;
        if (scope === "tokens") delete next.tokens;
        if (scope === "verifier") delete next.codeVerifier;
        return next;
      }),
  };
}
