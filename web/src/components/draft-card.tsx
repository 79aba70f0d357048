/**
 * A draft the bot made (the `draft` tool): what it is, where it goes and its text, with Send and
 * Discard while it waits. Sending goes through the server's channel adapter (docs/results.md);
 * a failed send shows why and may be tried again. The card follows the account's stream, so a
 * draft sent or discarded elsewhere (another tab, the API) updates here too.
 */
import { Hash, Mail, MessageSquare, Send, Trash2 } from "lucide-react";
import { useCallback, useEffect, useState } from "react";
import { ApiError } from "../api/client.ts";
import type { Draft } from "../api/types.ts";
import { useSession } from "../state/session.tsx";

const kindLabel: Record<Draft["kind"], string> = {
  email: "Email",
  slack: "Slack message",
  message: "Message",
};
const statusLabel: Record<Draft["status"], string> = {
  pending: "Draft: waiting for you",
  sending: "Sending…",
  sent: "Sent",
  failed: "Not sent",
  discarded: "Discarded",
};

export function DraftCard({ draftId }: { draftId: string }) {
  const { api, accountEvents } = useSession();
  const [draft, setDraft] = useState<Draft>();
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);

  const load = useCallback(
    (signal?: AbortSignal) =>
      api
        .getDraft(draftId, signal)
        .then((value) => {
          setDraft(value);
          setProblem(undefined);
        })
        .catch((error: unknown) => {
          if (signal?.aborted === true) return;
          setProblem(error instanceof Error ? error.message : String(error));
        }),
    [api, draftId],
  );
  useEffect(() => {
    const controller = new AbortController();
    void load(controller.signal);
    const unsubscribe = accountEvents.subscribe((event) => {
      if (event.type === "draft" && event.draftId === draftId) void load();
    });
    return () => {
      controller.abort();
      unsubscribe();
    };
  }, [load, accountEvents, draftId]);

  const act = async (action: "send" | "discard") => {
    setBusy(true);
    setProblem(undefined);
    try {
      setDraft(await (action === "send" ? api.sendDraft(draftId) : api.discardDraft(draftId)));
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
      if (error instanceof ApiError && error.status === 409) void load();
    } finally {
      setBusy(false);
    }
  };

  if (draft === undefined)
    return (
      <div className="draft-card" aria-busy={problem === undefined}>
        <p className="muted">{problem ?? "Loading the draft…"}</p>
      </div>
    );
  const Icon = draft.kind === "email" ? Mail : draft.kind === "slack" ? Hash : MessageSquare;
  const open = draft.status === "pending" || draft.status === "failed";
  return (
    <article
      className={`draft-card draft-${draft.status}`}
      aria-label={`${kindLabel[draft.kind]} draft`}
    >
      <header className="draft-head">
        <Icon size={16} aria-hidden="true" />
        <span className="draft-kind">{kindLabel[draft.kind]}</span>
        <span className="draft-to">to {draft.to}</span>
        <span className="draft-status" role="status">
          {statusLabel[draft.status]}
        </span>
      </header>
      {draft.subject !== null && <p className="draft-subject">{draft.subject}</p>}
      <p className="draft-text">{draft.text}</p>
      {draft.status === "failed" && draft.error !== null && (
        <p className="notice notice-error" role="alert">
          {draft.error}
        </p>
      )}
      {problem !== undefined && (
        <p className="notice notice-error" role="alert">
          {problem}
        </p>
      )}
      {open && (
        <div className="draft-actions">
          <button
            type="button"
            className="button button-primary button-small"
            disabled={busy}
            onClick={() => void act("send")}
          >
            <Send size={14} aria-hidden="true" />{" "}
            {draft.status === "failed" ? "Send again" : "Send"}
          </button>
          <button
            type="button"
            className="button button-small"
            disabled={busy}
            onClick={() => void act("discard")}
          >
            <Trash2 size={14} aria-hidden="true" /> Discard
          </button>
        </div>
      )}
    </article>
  );
}
