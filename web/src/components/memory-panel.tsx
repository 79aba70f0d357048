/**
 * A bot's Memory panel (issue "Memory, skills and compaction" §2), loaded on demand: the facts by
 * tier with edit, delete and add; the history of revisions as diffs, each applied one with Revert;
 * and the inbox of the memory pass's proposals in review mode, with Accept and Reject. Every
 * change here goes through the API, so it is itself a revision (author: you).
 */
import "./memory-panel.css";
import { MessageSquare, Undo2 } from "lucide-react";
import { useCallback, useEffect, useState } from "react";
import type { Bot, BotMemory } from "../api/types.ts";
import { onLinkClick, paths, type MemoryTab } from "../lib/router.ts";
import { inboxCount, memoryInboxChanged, useMemoryInbox } from "../state/memory-inbox.ts";
import { useSession } from "../state/session.tsx";
import { MemoryFacts } from "./memory-facts.tsx";
import { messageOf, type Done, type PanelContext } from "./memory-shared.ts";
import { MemoryHistory, MemoryInboxList } from "./memory-revisions.tsx";
import { BotNotFound, EditBotLink, EmptyState, Header } from "./ui.tsx";

const tabLabel: Record<MemoryTab, string> = {
  facts: "Facts",
  history: "History",
  inbox: "Inbox",
};

export default function MemoryPanel({
  botId,
  tab,
  onMenu,
}: {
  botId: string;
  tab: MemoryTab;
  onMenu(): void;
}) {
  const { bots } = useSession();
  const bot = bots?.find((candidate) => candidate.id === botId);

  if (bot === undefined) {
    return (
      <>
        <Header title="Memory" onMenu={onMenu} />
        {bots === undefined ? <EmptyState title="Loading…" /> : <BotNotFound />}
      </>
    );
  }
  return <Panel key={bot.id} bot={bot} tab={tab} onMenu={onMenu} />;
}

function Panel({ bot, tab, onMenu }: { bot: Bot; tab: MemoryTab; onMenu(): void }) {
  const { api } = useSession();
  const inbox = useMemoryInbox(bot.id);
  const [version, setVersion] = useState(0);
  const [done, setDone] = useState<Done>();
  const [undoError, setUndoError] = useState<string>();
  const [memory, setMemory] = useState<BotMemory>();
  const [loadError, setLoadError] = useState<string>();

  useEffect(() => {
    const controller = new AbortController();
    api
      .memory(bot.id, controller.signal)
      .then((value) => {
        setMemory(value);
        setLoadError(undefined);
      })
      .catch((error: unknown) => {
        if (!controller.signal.aborted) setLoadError(messageOf(error));
      });
    return () => controller.abort();
  }, [api, bot.id, version]);

  // A finished change's note belongs to the tab it was made on.
  useEffect(() => {
    setDone(undefined);
    setUndoError(undefined);
  }, [tab]);

  const changed = useCallback((next?: Done) => {
    setVersion((value) => value + 1);
    setDone(next);
    setUndoError(undefined);
    memoryInboxChanged();
  }, []);

  const undo = async (target: NonNullable<Done["undo"]>) => {
    try {
      await api.decideMemory(target.scope, target.revisionId, "revert");
      changed({ text: "Undone." });
    } catch (error) {
      setUndoError(messageOf(error));
    }
  };

  const context: PanelContext = { bot, version, changed };
  const waiting = inbox.proposals?.length ?? 0;

  return (
    <>
      <Header title={`Memory of ${bot.name}`} onMenu={onMenu}>
        <a
          className="icon-button"
          href={paths.bot(bot.id)}
          onClick={(event) => onLinkClick(event, paths.bot(bot.id))}
          aria-label={`Chat with ${bot.name}`}
          title={`Chat with ${bot.name}`}
        >
          <MessageSquare size={18} aria-hidden="true" />
        </a>
        <EditBotLink bot={bot} />
      </Header>
      <nav className="memory-tabs" aria-label="Memory">
        {(["facts", "history", "inbox"] as const).map((name) => {
          const href = paths.botMemory(bot.id, name);
          return (
            <a
              key={name}
              className="memory-tab"
              href={href}
              aria-current={name === tab ? "page" : undefined}
              onClick={(event) => onLinkClick(event, href)}
            >
              {tabLabel[name]}
              {name === "inbox" && waiting > 0 && (
                <span className="count-badge">
                  <span className="visually-hidden">, waiting: </span>
                  {inboxCount(inbox)}
                </span>
              )}
            </a>
          );
        })}
      </nav>
      <div className="page memory-page">
        <div className="memory-status" role="status">
          {done !== undefined && (
            <p className="notice notice-info memory-done">
              <span>{done.text}</span>
              {done.undo !== undefined && (
                <button
                  type="button"
                  className="button button-small"
                  onClick={() => void undo(done.undo!)}
                >
                  <Undo2 size={14} aria-hidden="true" /> Undo
                </button>
              )}
            </p>
          )}
          {undoError !== undefined && <p className="notice notice-error">{undoError}</p>}
        </div>
        {tab !== "inbox" && waiting > 0 && (
          <p className="notice notice-warn memory-waiting">
            <span>
              {waiting === 1
                ? "1 change from the memory pass waits for your review."
                : `${inboxCount(inbox)} changes from the memory pass wait for your review.`}
            </span>
            <a
              className="button button-small"
              href={paths.botMemory(bot.id, "inbox")}
              onClick={(event) => onLinkClick(event, paths.botMemory(bot.id, "inbox"))}
            >
              Review them
            </a>
          </p>
        )}
        {tab === "facts" &&
          (memory === undefined ? (
            <EmptyState
              title={loadError === undefined ? "Loading…" : "Could not load this memory"}
              detail={loadError}
            />
          ) : (
            <MemoryFacts context={context} memory={memory} />
          ))}
        {tab === "history" && <MemoryHistory context={context} />}
        {tab === "inbox" && <MemoryInboxList context={context} inbox={inbox} />}
      </div>
    </>
  );
}
