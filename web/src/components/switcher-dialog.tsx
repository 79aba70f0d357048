/** The Ctrl/Cmd-K dialog (switcher.tsx): search the caller's chats and open one. */
import { useEffect, useId, useRef, useState, type KeyboardEvent } from "react";
import type { ConversationSearchHit } from "../api/types.ts";
import { formatRelative } from "../lib/format.ts";
import { navigate, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import "./switcher.css";

export default function SwitcherDialog({ onClose }: { onClose(): void }) {
  const { api, conversations, bots } = useSession();
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState<readonly ConversationSearchHit[]>();
  const [problem, setProblem] = useState<string>();
  const [selected, setSelected] = useState(0);
  const input = useRef<HTMLInputElement>(null);
  const listId = useId();
  const returnFocus = useRef<Element | null>(document.activeElement);

  useEffect(() => {
    input.current?.focus();
    const previous = returnFocus.current;
    return () => {
      if (previous instanceof HTMLElement) previous.focus();
    };
  }, []);

  useEffect(() => {
    const words = query.trim();
    setSelected(0);
    if (words === "") {
      setHits(undefined);
      setProblem(undefined);
      return;
    }
    const abort = new AbortController();
    const timer = setTimeout(() => {
      api
        .searchConversations(words, abort.signal)
        .then((answer) => {
          setHits(answer.results);
          setProblem(undefined);
        })
        .catch((error: unknown) => {
          if (abort.signal.aborted) return;
          setProblem(error instanceof Error ? error.message : String(error));
        });
    }, 150);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [api, query]);

  const results: readonly ConversationSearchHit[] =
    hits ??
    (conversations ?? []).slice(0, 12).map((conversation) => ({ conversation, match: null }));
  const botName = (botId: string) => bots?.find((bot) => bot.id === botId)?.name;

  const go = (hit: ConversationSearchHit | undefined) => {
    if (hit === undefined) return;
    onClose();
    navigate(paths.conversation(hit.conversation.id));
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      onClose();
    } else if (event.key === "ArrowDown") {
      event.preventDefault();
      setSelected((index) => Math.min(results.length - 1, index + 1));
    } else if (event.key === "ArrowUp") {
      event.preventDefault();
      setSelected((index) => Math.max(0, index - 1));
    } else if (event.key === "Enter") {
      event.preventDefault();
      go(results[selected]);
    }
  };

  return (
    <div
      className="switcher-backdrop"
      onMouseDown={(event) => {
        if (event.target === event.currentTarget) onClose();
      }}
    >
      <div className="switcher" role="dialog" aria-modal="true" aria-label="Search chats">
        <input
          ref={input}
          className="switcher-input"
          type="search"
          placeholder="Search chats: titles and messages"
          aria-label="Search chats"
          role="combobox"
          aria-expanded="true"
          aria-controls={listId}
          aria-activedescendant={results.length > 0 ? `${listId}-${selected}` : undefined}
          value={query}
          maxLength={200}
          onChange={(event) => setQuery(event.target.value)}
          onKeyDown={onKeyDown}
        />
        {problem !== undefined && (
          <div className="switcher-note chat-action-problem" role="alert">
            Could not search: {problem}
          </div>
        )}
        {query.trim() !== "" && hits !== undefined && hits.length === 0 && (
          <div className="switcher-note" role="status">
            No chat mentions “{query.trim()}”.
          </div>
        )}
        <ul className="switcher-results" id={listId} role="listbox" aria-label="Chats">
          {results.map((hit, index) => (
            <li
              key={hit.conversation.id}
              id={`${listId}-${index}`}
              role="option"
              aria-selected={index === selected}
              className="switcher-result"
              onMouseEnter={() => setSelected(index)}
              onClick={() => go(hit)}
            >
              <span className="switcher-title">{hit.conversation.title}</span>
              <span className="switcher-snippet">
                {hit.match !== null
                  ? `${hit.match.kind === "reply" ? "Bot: " : ""}${hit.match.snippet}`
                  : [botName(hit.conversation.botId), formatRelative(hit.conversation.updatedAt)]
                      .filter((part) => part !== undefined && part !== "")
                      .join(" · ")}
              </span>
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}
