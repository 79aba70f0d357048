/**
 * A conversation's helpers (docs/helpers.md), under its timeline: a collapsible list of each
 * helper's task and status, each a link to the helper's own conversation. Live: reloaded when
 * the conversation's steps or turn state change (a helper starting, its result arriving), and
 * every few seconds while one runs. While helpers run, it offers to stop them (the interrupt
 * with `stopHelpers`, which also stops the bot's running turn).
 */
import { useEffect, useState } from "react";
import type { Conversation, Helper } from "../api/types.ts";
import { onLinkClick, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import "./helpers.css";

const pollMs = 3000;

export function HelpersPanel({
  conversationId,
  lastSeq,
  turnState,
}: {
  conversationId: string;
  lastSeq: number;
  turnState: string;
}) {
  const { api } = useSession();
  const [helpers, setHelpers] = useState<Helper[]>([]);
  const [tick, setTick] = useState(0);
  const [stopping, setStopping] = useState(false);

  useEffect(() => {
    const controller = new AbortController();
    api
      .helpers(conversationId, controller.signal)
      .then(setHelpers)
      .catch(() => undefined); // the list is an extra; the next change loads it again
    return () => controller.abort();
  }, [api, conversationId, lastSeq, turnState, tick]);

  const running = helpers.some((helper) => helper.status === "running");
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => setTick((value) => value + 1), pollMs);
    return () => clearInterval(timer);
  }, [running]);

  if (helpers.length === 0) return null;
  const active = helpers.filter((helper) => helper.status === "running").length;
  const stopAll = () => {
    setStopping(true);
    api
      .interrupt(conversationId, { stopHelpers: true })
      .then(() => setTick((value) => value + 1))
      .catch(() => undefined) // the list shows what is still running
      .finally(() => setStopping(false));
  };
  return (
    <details className="helpers-panel" open data-testid="helpers-panel">
      <summary>
        Helpers ({helpers.length}
        {active > 0 ? `, ${active} running` : ""})
      </summary>
      <ul className="helpers-list">
        {helpers.map((helper) => (
          <li key={helper.id} className="helper-item" data-helper-status={helper.status}>
            <span className={`helper-status helper-status-${helper.status}`}>{helper.status}</span>
            <a
              href={paths.conversation(helper.conversationId)}
              onClick={(event) => onLinkClick(event, paths.conversation(helper.conversationId))}
            >
              {helper.task.length > 120 ? `${helper.task.slice(0, 120)}…` : helper.task}
            </a>
          </li>
        ))}
      </ul>
      {active > 0 && (
        <button type="button" className="link-button" onClick={stopAll} disabled={stopping}>
          {turnState === "working" ? "Stop the bot and its helpers" : "Stop the helpers"}
        </button>
      )}
    </details>
  );
}

/** In a helper's own conversation: what it is, and a link back to the one that started it. */
export function HelperOrigin({
  conversationId,
  lastSeq,
}: {
  conversationId: string;
  lastSeq: number;
}) {
  const { api } = useSession();
  const [helper, setHelper] = useState<Conversation["helper"]>();
  useEffect(() => {
    const controller = new AbortController();
    api
      .getConversation(conversationId, controller.signal)
      .then((conversation) => setHelper(conversation.helper))
      .catch(() => undefined); // an extra: the timeline says what matters
    return () => controller.abort();
  }, [api, conversationId, lastSeq]);
  if (helper === undefined) return null;
  const parent = paths.conversation(helper.parentConversationId);
  return (
    <div className="banner helper-origin" role="note" data-testid="helper-origin">
      <span>
        A helper ({helper.status}): its result goes back to{" "}
        <a href={parent} onClick={(event) => onLinkClick(event, parent)}>
          the conversation that started it
        </a>
        .
      </span>
    </div>
  );
}
