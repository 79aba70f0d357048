/**
 * A bot's MCP servers in its settings (docs/mcp.md): its own and the account's, each with what its
 * last listing gave — the tools, or the error the bot's turns met (a server that would not start,
 * a refused address, "needs authorization") — a way to connect one that asks for OAuth, and
 * removal. Servers are added through the API (`PUT …/mcp-servers/{name}`).
 */
import { useCallback, useEffect, useState } from "react";
import type { McpAuthorizeResponse, McpServerList, McpServerView } from "../api/types.ts";
import { useSession } from "../state/session.tsx";
import "./mcp-servers.css";

type Api = ReturnType<typeof useSession>["api"];

async function call<T>(api: Api, method: string, path: string): Promise<T> {
  const response = await api.send(method, path, {});
  return (response.status === 204 ? undefined : await response.json()) as T;
}

export function McpServersSection({ botId }: { botId: string }) {
  const { api } = useSession();
  const [servers, setServers] = useState<McpServerView[]>();
  const [error, setError] = useState<string>();
  const bases = {
    bot: `/v1/bots/${encodeURIComponent(botId)}/mcp-servers`,
    user: "/v1/me/mcp-servers",
  } as const;

  const reload = useCallback(async () => {
    try {
      const [own, shared] = await Promise.all([
        call<McpServerList>(api, "GET", `/v1/bots/${encodeURIComponent(botId)}/mcp-servers`),
        call<McpServerList>(api, "GET", "/v1/me/mcp-servers"),
      ]);
      const names = new Set(own.servers.map((server) => server.name));
      setServers([...own.servers, ...shared.servers.filter((server) => !names.has(server.name))]);
      setError(undefined);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  }, [api, botId]);
  useEffect(() => void reload(), [reload]);

  const act = async (work: () => Promise<void>) => {
    try {
      await work();
      await reload();
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  };
  const path = (server: McpServerView) =>
    `${bases[server.scope]}/${encodeURIComponent(server.name)}`;

  return (
    <section className="mcp-servers" aria-label="MCP servers">
      <h2>MCP servers</h2>
      <p className="muted">
        Tools from MCP servers: command servers run on the bot's computer, HTTP servers are reached
        from Roost. Add one with{" "}
        <code>
          PUT /v1/bots/{"{id}"}/mcp-servers/{"{name}"}
        </code>
        .
      </p>
      {error !== undefined && (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      )}
      {servers !== undefined && servers.length === 0 && (
        <p className="muted">No MCP servers yet.</p>
      )}
      <ul className="mcp-server-list">
        {servers?.map((server) => (
          <li
            key={`${server.scope}:${server.name}`}
            className="mcp-server"
            aria-label={server.name}
          >
            <strong>{server.name}</strong>{" "}
            <span className="muted">
              {server.transport === "command"
                ? `command: ${[server.command, ...(server.args ?? [])].join(" ")}`
                : `HTTP: ${server.url}`}
              {server.scope === "user" ? " · all your bots" : ""}
              {server.usesSecrets ? " · uses secrets (your chats only)" : ""}
            </span>
            <p>
              {server.status.tools === null
                ? "Tools: not listed yet"
                : `Tools (${server.status.tools.length}): ${server.status.tools.join(", ")}`}
            </p>
            {server.status.lastError !== null && (
              <p className="notice notice-error" role="status">
                Last error: {server.status.lastError}
              </p>
            )}
            {server.oauth !== undefined && !server.oauth.connected && (
              <p className="notice" role="status">
                This server needs your authorization.{" "}
                {server.oauth.authorizationUrl === null ||
                !/^https?:\/\//i.test(server.oauth.authorizationUrl) ? null : (
                  <a href={server.oauth.authorizationUrl} target="_blank" rel="noreferrer">
                    Authorize
                  </a>
                )}
              </p>
            )}
            <div className="mcp-server-actions">
              {server.oauth !== undefined && !server.oauth.connected && (
                <button
                  className="button button-small"
                  type="button"
                  onClick={() =>
                    void act(async () => {
                      const answer = await call<McpAuthorizeResponse>(
                        api,
                        "POST",
                        `${path(server)}/authorize`,
                      );
                      if (
                        "authorizationUrl" in answer &&
                        /^https?:\/\//i.test(answer.authorizationUrl)
                      )
                        window.open(answer.authorizationUrl, "_blank", "noreferrer");
                    })
                  }
                >
                  Connect
                </button>
              )}
              <button
                className="button button-small"
                type="button"
                onClick={() => void act(async () => void (await call(api, "DELETE", path(server))))}
              >
                Remove
              </button>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
