/**
 * A secret the bot asked for (the `request_secret` tool, docs/secrets.md): a password field whose
 * value goes straight to `PUT /v1/bots/{id}/secrets/{NAME}`. The value is never kept in the page's
 * state after it is sent, and the transcript only ever shows that it was provided.
 */
import { KeyRound } from "lucide-react";
import { useEffect, useState, type FormEvent } from "react";
import { useSession } from "../state/session.tsx";

export function SecretRequestCard({ botId, name }: { botId: string; name: string }) {
  const { api } = useSession();
  const [provided, setProvided] = useState<boolean>();
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    const controller = new AbortController();
    api
      .listSecrets(botId, controller.signal)
      .then((list) => setProvided(list.secrets.some((secret) => secret.name === name)))
      .catch(() => setProvided(false));
    return () => controller.abort();
  }, [api, botId, name]);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const field = form.elements.namedItem("value") as HTMLInputElement;
    setBusy(true);
    setProblem(undefined);
    try {
      await api.putSecret(botId, name, field.value);
      field.value = "";
      setProvided(true);
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
    } finally {
      setBusy(false);
    }
  };

  return (
    <article className="draft-card secret-card" aria-label={`Secret ${name}`}>
      <header className="draft-head">
        <KeyRound size={16} aria-hidden="true" />
        <span className="draft-kind">Secret</span>
        <span className="draft-to">{name}</span>
        <span className="draft-status" role="status">
          {provided === true ? "Provided" : provided === false ? "Waiting for you" : ""}
        </span>
      </header>
      {provided === true ? (
        <p className="muted">The bot can use ${name} in its commands; it never sees the value.</p>
      ) : (
        <form className="draft-actions" onSubmit={(event) => void submit(event)}>
          <input
            name="value"
            type="password"
            autoComplete="off"
            required
            minLength={8}
            maxLength={4096}
            aria-label={`Value of ${name}`}
            placeholder="Paste the value"
          />
          <button type="submit" className="button button-primary button-small" disabled={busy}>
            Save for this bot
          </button>
        </form>
      )}
      {problem !== undefined && (
        <p className="notice notice-error" role="alert">
          {problem}
        </p>
      )}
    </article>
  );
}
