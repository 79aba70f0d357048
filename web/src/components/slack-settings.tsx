/**
 * A bot's Slack link in its settings (docs/slack.md): the workspace it is linked to, the two URLs
 * to paste into the Slack app, and the last error a Slack call answered (a revoked token, a
 * missing scope, a rate limit), so a broken link is visible where the bot is set up; a form to
 * link or relink (the token and signing secret are sent, never shown again), and unlink. A link
 * for many workspaces (OAuth install: the app's client id and secret) lists its workspaces, each
 * with Remove, and starts an install in another one (docs/slack.md "Many workspaces").
 */
import { useCallback, useEffect, useState, type FormEvent } from "react";
import { ApiError } from "../api/client.ts";
import type { SlackLinked, SlackLinkStatus } from "../api/types.ts";
import { useSession } from "../state/session.tsx";
import "./mcp-servers.css";

export function SlackSection({ botId }: { botId: string }) {
  const { api } = useSession();
  const [status, setStatus] = useState<SlackLinkStatus | null>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [kind, setKind] = useState<"token" | "oauth">("token");
  const path = `/v1/bots/${encodeURIComponent(botId)}/slack`;

  const reload = useCallback(async () => {
    try {
      const response = await api.send("GET", path);
      const loaded = (await response.json()) as SlackLinkStatus;
      setStatus(loaded);
      setKind(loaded.oauth === null ? "token" : "oauth"); // a relink keeps the link's kind
    } catch (caught) {
      if (caught instanceof ApiError && caught.status === 404) setStatus(null);
      else setError(caught instanceof Error ? caught.message : String(caught));
    }
  }, [api, path]);
  useEffect(() => void reload(), [reload]);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const element = event.currentTarget;
    const form = new FormData(element);
    const field = (name: string) => {
      const value = form.get(name);
      return typeof value === "string" ? value.trim() : "";
    };
    setBusy(true);
    try {
      const credentials =
        kind === "token"
          ? {
              botToken: field("botToken"),
              ...(field("appToken") === "" ? {} : { appToken: field("appToken") }),
            }
          : { clientId: field("clientId"), clientSecret: field("clientSecret") };
      const response = await api.send("PUT", path, {
        json: {
          ...credentials,
          signingSecret: field("signingSecret"),
          ...(field("apiUrl") === "" ? {} : { apiUrl: field("apiUrl") }),
        },
      });
      setStatus(((await response.json()) as SlackLinked).status);
      setError(undefined);
      element.reset(); // the token and secret are sent, not kept on the page
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  };
  /** Asks for a fresh install URL (its state is single-use) and goes to Slack's page. */
  const install = async () => {
    try {
      const response = await api.send("GET", `/v1/slack/${encodeURIComponent(botId)}/install`, {
        accept: "application/json",
      });
      const { url } = (await response.json()) as { url: string };
      window.location.assign(url);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  };
  const removeWorkspace = async (teamId: string) => {
    try {
      await api.send("DELETE", `${path}/installs/${encodeURIComponent(teamId)}`);
      await reload();
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  };
  const unlink = async () => {
    try {
      await api.send("DELETE", path);
      setStatus(null);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  };

  return (
    <section className="mcp-servers" aria-label="Slack">
      <h2>Slack</h2>
      {error !== undefined && (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      )}
      {status !== undefined && status !== null && (
        <div className="mcp-server">
          <strong>Linked to {status.workspace.name}</strong>{" "}
          <span className="muted">
            {status.botUserId === "" ? "" : `bot user ${status.botUserId}`}
            {status.socketMode ? " · Socket Mode" : ""}
          </span>
          <p>
            Events URL: <code>{status.eventsUrl}</code>
            <br />
            Interactivity URL: <code>{status.interactionsUrl}</code>
          </p>
          {status.oauth !== null && (
            <>
              <p>
                Redirect URL (in the app&apos;s OAuth settings):{" "}
                <code>{status.oauth.redirectUrl}</code>
              </p>
              {status.oauth.workspaces.length === 0 ? (
                <p className="muted">Not installed in any workspace yet.</p>
              ) : (
                <ul aria-label="Installed workspaces">
                  {status.oauth.workspaces.map((workspace) => (
                    <li key={workspace.id}>
                      {workspace.name} <span className="muted">{workspace.id}</span>{" "}
                      <button
                        className="button button-small"
                        type="button"
                        aria-label={`Remove ${workspace.name}`}
                        onClick={() => void removeWorkspace(workspace.id)}
                      >
                        Remove
                      </button>
                    </li>
                  ))}
                </ul>
              )}
            </>
          )}
          {status.lastError !== null && (
            <p className="notice notice-error" role="status">
              Slack error: {status.lastError.message}
            </p>
          )}
          <div className="mcp-server-actions">
            <button className="button button-small" type="button" onClick={() => void reload()}>
              Refresh
            </button>
            {status.oauth !== null && (
              <button className="button button-small" type="button" onClick={() => void install()}>
                Add to a Slack workspace
              </button>
            )}
            <button className="button button-small" type="button" onClick={() => void unlink()}>
              Unlink
            </button>
          </div>
        </div>
      )}
      {status !== undefined && (
        <form onSubmit={(event) => void submit(event)} aria-label="Link to Slack">
          <p className="muted">
            {status === null ? "Not linked." : "Relink with a new token or secret."} The app
            manifest to paste is in docs/slack.md.
          </p>
          <fieldset>
            <legend>Workspaces</legend>
            <label>
              <input
                type="radio"
                name="kind"
                checked={kind === "token"}
                onChange={() => setKind("token")}
              />{" "}
              One workspace (its bot token)
            </label>
            <label>
              <input
                type="radio"
                name="kind"
                checked={kind === "oauth"}
                onChange={() => setKind("oauth")}
              />{" "}
              Many workspaces (OAuth install)
            </label>
          </fieldset>
          {kind === "token" ? (
            <label>
              Bot User OAuth Token
              <input
                name="botToken"
                type="password"
                required
                autoComplete="off"
                placeholder="xoxb-…"
              />
            </label>
          ) : (
            <>
              <label>
                Client ID
                <input
                  name="clientId"
                  required
                  autoComplete="off"
                  placeholder="1234567890.1234567890"
                />
              </label>
              <label>
                Client Secret
                <input name="clientSecret" type="password" required autoComplete="off" />
              </label>
            </>
          )}
          <label>
            Signing Secret
            <input name="signingSecret" type="password" required autoComplete="off" />
          </label>
          {kind === "token" && (
            <label>
              App-level token (Socket Mode, optional)
              <input name="appToken" type="password" autoComplete="off" placeholder="xapp-…" />
            </label>
          )}
          <label>
            API URL (optional)
            <input name="apiUrl" type="url" placeholder="https://slack.com/api/" />
          </label>
          <button className="button button-primary" type="submit" disabled={busy}>
            {status === null ? "Link to Slack" : "Relink"}
          </button>
        </form>
      )}
    </section>
  );
}
