/**
 * A conversation's row in the sidebar with its menu (issue 16 §2): rename in place, delete after
 * a confirmation in the row (no browser dialog). Deleting the open conversation goes home.
 */
import { Check, MoreHorizontal, Pencil, Trash2, X } from "lucide-react";
import { useEffect, useRef, useState, type ReactNode } from "react";
import type { Conversation } from "../api/types.ts";
import { navigate, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import "./chat-actions.css";

type Mode = "closed" | "menu" | "rename" | "confirm-delete";

export function ConversationRow({
  conversation,
  active,
  children,
}: {
  conversation: Conversation;
  active: boolean;
  /** The row's link. */
  children: ReactNode;
}) {
  const { api, refreshConversations } = useSession();
  const [mode, setMode] = useState<Mode>("closed");
  const [title, setTitle] = useState(conversation.title);
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (mode === "rename") input.current?.select();
  }, [mode]);

  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setProblem(undefined);
    try {
      await action();
      setMode("closed");
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
    } finally {
      setBusy(false);
    }
  };
  const rename = () =>
    run(async () => {
      const next = title.trim();
      if (next === "" || next === conversation.title) return;
      await api.renameConversation(conversation.id, next);
      await refreshConversations();
    });
  const remove = () =>
    run(async () => {
      await api.deleteConversation(conversation.id);
      if (active) navigate(paths.bot(conversation.botId));
      await refreshConversations();
    });
  const label = `Conversation actions for ${conversation.title}`;

  return (
    <li data-conversation={conversation.id}>
      <div className="nav-chat-row">
        {children}
        <button
          type="button"
          className="icon-button conversation-menu-button"
          aria-label={label}
          title="Rename or delete"
          aria-expanded={mode !== "closed"}
          onClick={() => {
            setProblem(undefined);
            setMode(mode === "closed" ? "menu" : "closed");
          }}
        >
          <MoreHorizontal size={16} aria-hidden="true" />
        </button>
      </div>
      {mode === "menu" && (
        <div className="conversation-menu" role="group" aria-label={label}>
          <button
            type="button"
            className="link-button"
            onClick={() => {
              setTitle(conversation.title);
              setMode("rename");
            }}
          >
            <Pencil size={13} aria-hidden="true" /> Rename
          </button>
          <button type="button" className="link-button" onClick={() => setMode("confirm-delete")}>
            <Trash2 size={13} aria-hidden="true" /> Delete
          </button>
        </div>
      )}
      {mode === "rename" && (
        <form
          className="conversation-menu"
          onSubmit={(event) => {
            event.preventDefault();
            void rename();
          }}
        >
          <input
            ref={input}
            className="conversation-rename"
            value={title}
            maxLength={200}
            aria-label="New title"
            onChange={(event) => setTitle(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === "Escape") {
                event.preventDefault();
                setMode("closed");
              }
            }}
          />
          <button
            type="submit"
            className="icon-button"
            aria-label="Save title"
            disabled={busy || title.trim() === ""}
          >
            <Check size={14} aria-hidden="true" />
          </button>
          <button
            type="button"
            className="icon-button"
            aria-label="Cancel rename"
            onClick={() => setMode("closed")}
          >
            <X size={14} aria-hidden="true" />
          </button>
        </form>
      )}
      {mode === "confirm-delete" && (
        <div className="conversation-menu" role="group" aria-label="Confirm delete">
          <span>Delete this chat and its history?</span>
          <button
            type="button"
            className="button button-small button-danger"
            disabled={busy}
            onClick={() => void remove()}
          >
            {busy ? "Deleting…" : "Delete"}
          </button>
          <button type="button" className="button button-small" onClick={() => setMode("closed")}>
            Keep
          </button>
        </div>
      )}
      {problem !== undefined && (
        <div className="conversation-menu chat-action-problem" role="alert">
          {problem}
        </div>
      )}
    </li>
  );
}
