/**
 * A bot's Slack link in its settings (docs/slack.md): the workspace it is linked to, the two URLs
 * to paste into the Slack app, and the last error a Slack call answered (a revoked token, a
 * missing scope, a rate limit), so a broken link is visible where the bot is set up; a form to
 * link or relink (the token and signing secret are sent, never shown again), and unlink.
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
  const path = `/v1/bots/${encodeURIComponent(botId)}/slack`;

  const reload = useCallback(async () => {
    try {
      const response = await api.send("GET", path);
      setStatus((await response.json()) as SlackLinkStatus);
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
      const response = await api.send("PUT", path, {
        json: {
          botToken: field("botToken"),
          signingSecret: field("signingSecret"),
          ...(field("apiUrl") === "" ? {} : { apiUrl: field("apiUrl") }),
          ...(field("appToken") === "" ? {} : { appToken: field("appToken") }),
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
            bot user {status.botUserId}
            {status.socketMode ? " · Socket Mode" : ""}
          </span>
          <p>
            Events URL: <code>{status.eventsUrl}</code>
            <br />
            Interactivity URL: <code>{status.interactionsUrl}</code>
          </p>
          {status.lastError !== null && (
            <p className="notice notice-error" role="status">
              Slack error: {status.lastError.message}
            </p>
          )}
          <div className="mcp-server-actions">
            <button className="button button-small" type="button" onClick={() => void reload()}>
              Refresh
            </button>
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
          <label>
            Signing Secret
            <input name="signingSecret" type="password" required autoComplete="off" />
          </label>
          <label>
            App-level token (Socket Mode, optional)
            <input name="appToken" type="password" autoComplete="off" placeholder="xapp-…" />
          </label>
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
