import { KeyRound } from "lucide-react";
import { useState, type FormEvent } from "react";
import { ApiError } from "../api/client.ts";

export function SignIn({
  message,
  offline,
  onSubmit,
}: {
  message: string | undefined;
  offline: boolean;
  onSubmit(token: string): Promise<string | undefined>;
}) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      setError(await onSubmit(token.trim()));
    } catch (caught) {
      setError(
        caught instanceof ApiError || caught instanceof Error ? caught.message : String(caught),
      );
    } finally {
      setBusy(false);
    }
  };

  const shown = error ?? message;
  return (
    <main className="sign-in">
      <form className="sign-in-card" onSubmit={(event) => void submit(event)}>
        <div className="sign-in-brand">
          <span className="brand-mark" aria-hidden="true" />
          <h1>Roost</h1>
        </div>
        <p className="muted">Sign in with an API token to talk to your bots.</p>
        <label className="field">
          <span>API token</span>
          <input
            type="password"
            autoComplete="current-password"
            name="token"
            placeholder="roost_…"
            value={token}
            onChange={(event) => setToken(event.target.value)}
            autoFocus
            required
          />
        </label>
        {shown !== undefined && (
          <p className={offline ? "notice notice-warn" : "notice notice-error"} role="alert">
            {shown}
          </p>
        )}
        <button
          className="button button-primary"
          type="submit"
          disabled={busy || token.trim() === ""}
        >
          <KeyRound size={16} aria-hidden="true" /> {busy ? "Signing in…" : "Sign in"}
        </button>
        <details className="help">
          <summary>Where do I get a token?</summary>
          <p>
            On the computer running Roost, the admin token is in{" "}
            <code>$ROOST_DATA_DIR/admin-token</code> (by default <code>.roost/admin-token</code>).
            Create more with <code>roost token create</code>. Opening this page on that computer at{" "}
            <code>http://localhost</code> signs you in by itself.
          </p>
        </details>
      </form>
    </main>
  );
}
