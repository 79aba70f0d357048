/** A conversation: header with the bot and its state, the live timeline, and the composer. */
import { MonitorPlay, WifiOff } from "lucide-react";
import { useEffect, useMemo, useState, useSyncExternalStore } from "react";
import type { Conversation } from "../api/types.ts";
import { onLinkClick, paths } from "../lib/router.ts";
import type { FeedSnapshot } from "../state/feed.ts";
import { useComputerEvents, useSession } from "../state/session.tsx";
import { ComputerControls } from "./computer.tsx";
import { LiveView } from "./live-view.tsx";
import { Composer } from "./composer.tsx";
import { useUploads } from "./upload.tsx";
import { HelperOrigin, HelpersPanel } from "./helpers.tsx";
import { MemoryLink } from "./memory-link.tsx";
import { UsageLink } from "./usage-panel.tsx";
import { owesAnswer, Timeline } from "./timeline.tsx";
import { EditBotLink, EmptyState, Header, ModelBadge } from "./ui.tsx";
import { ChatActionsProvider } from "./message-actions.tsx";
import { useChatActionState } from "../state/chat-actions.ts";

type Activity = "working" | "waiting" | "idle" | "reconnecting" | "offline" | "loading";

function activityOf(snapshot: FeedSnapshot): Activity {
  if (snapshot.status === "failed") return "offline";
  if (snapshot.status === "reconnecting") return "reconnecting";
  if (!snapshot.loaded) return "loading";
  if (snapshot.turnState === "working") return "working";
  return owesAnswer(snapshot) ? "waiting" : "idle";
}

const activityLabel: Record<Activity, string> = {
  working: "Working",
  waiting: "Waiting for the bot",
  idle: "Idle",
  reconnecting: "Reconnecting",
  offline: "Offline",
  loading: "Connecting",
};

export function StatePill({ activity }: { activity: Activity }) {
  return (
    <span
      className={`state-pill state-${activity}`}
      data-state={activity}
      role="status"
      aria-live="polite"
    >
      <span className="state-dot" aria-hidden="true" />
      {activityLabel[activity]}
    </span>
  );
}

export function ChatView({ conversationId, onMenu }: { conversationId: string; onMenu(): void }) {
  const session = useSession();
  const { api, bots, conversations, upsertConversation, refreshConversations } = session;
  const openFeed = session.feed;
  const feed = useMemo(() => openFeed(conversationId), [openFeed, conversationId]);
  const snapshot = useSyncExternalStore(feed.subscribe, feed.getSnapshot);
  const listed = conversations?.find((candidate) => candidate.id === conversationId);
  const [fetched, setFetched] = useState<Conversation>();
  // A handoff notification links here with ?screen=: the live view opens at once.
  const [showScreen, setShowScreen] = useState(
    () => new URLSearchParams(location.search).get("screen") !== null,
  );
  const conversation = listed ?? fetched;
  const bot = bots?.find((candidate) => candidate.id === conversation?.botId);

  useEffect(() => {
    if (listed !== undefined || conversations === undefined) return;
    api
      .getConversation(conversationId)
      .then((value) => {
        setFetched(value);
        upsertConversation(value);
      })
      .catch(() => undefined); // the feed reports a missing conversation itself
  }, [api, conversationId, listed, conversations, upsertConversation]);

  // Keep the sidebar's working dots and order in step with this conversation.
  useEffect(() => {
    void refreshConversations();
  }, [snapshot.turnState, refreshConversations]);

  // What the owner has on screen is read (the sidebar's "Unread activity", docs/results.md).
  const listedActivity = listed?.activity;
  useEffect(() => {
    if (!snapshot.loaded || snapshot.lastSeq === 0) return;
    let cancelled = false;
    const markSeen = () => {
      if (cancelled || document.visibilityState !== "visible") return;
      api
        .markSeen(conversationId, snapshot.lastSeq)
        .then(() => {
          if (listedActivity === "unread" || listedActivity === "needs_attention")
            void refreshConversations();
        })
        .catch(() => undefined); // marking is a convenience; the next change tries again
    };
    const timer = setTimeout(markSeen, 500);
    document.addEventListener("visibilitychange", markSeen);
    return () => {
      cancelled = true;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", markSeen);
    };
  }, [
    api,
    conversationId,
    snapshot.loaded,
    snapshot.lastSeq,
    listedActivity,
    refreshConversations,
  ]);

  useComputerEvents(snapshot.computerState, snapshot.computerHeldByTurns);
  const uploads = useUploads(conversationId);
  const activity = activityOf(snapshot);
  // Branches, edit and regenerate (message-actions.tsx); the timeline shows the chosen versions.
  const { actions, shown, lastEditable } = useChatActionState(feed, snapshot, {
    meId: session.me.id,
    idle: activity === "idle",
    mayBranch: conversation?.place !== "shared",
  });
  // An automatic title arrived on the stream: the sidebar and header show it.
  useEffect(() => {
    if (snapshot.title !== undefined) void refreshConversations();
  }, [snapshot.title, refreshConversations]);
  // Esc stops the bot wherever the focus is (an editor or dialog handles its own Esc first).
  useEffect(() => {
    if (activity !== "working") return;
    const onKey = (event: KeyboardEvent) => {
      // An open popover or dialog takes the Esc for itself (it closes); the bot keeps working.
      const dialogOpen = document.querySelector('[role="dialog"]') !== null;
      if (event.key === "Escape" && !event.defaultPrevented && !dialogOpen) void feed.stop();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [activity, feed]);

  if (snapshot.status === "failed" && !snapshot.loaded) {
    return (
      <>
        <Header title="Conversation" onMenu={onMenu} />
        <EmptyState
          title={
            snapshot.problemCode === "not_found"
              ? "This conversation does not exist"
              : "Could not open this conversation"
          }
          detail={snapshot.problem}
        >
          <a className="button" href="/" onClick={(event) => onLinkClick(event, paths.home)}>
            Go to your bots
          </a>
        </EmptyState>
      </>
    );
  }

  return (
    <>
      <Header
        title={conversation?.title ?? "Conversation"}
        onMenu={onMenu}
        subtitle={
          <>
            {bot !== undefined && <span className="subtitle-bot">{bot.name}</span>}
            {bot !== undefined && <ModelBadge bot={bot} />}
            <StatePill activity={activity} />
          </>
        }
      >
        <ComputerControls />
        {bot !== undefined && (
          <button
            type="button"
            className="icon-button"
            aria-pressed={showScreen}
            title={showScreen ? "Hide the bot's screen" : "Watch the bot's screen live"}
            onClick={() => setShowScreen((value) => !value)}
          >
            <MonitorPlay size={18} aria-hidden="true" />
          </button>
        )}
        {bot !== undefined && <MemoryLink bot={bot} />}
        {bot !== undefined && <UsageLink bot={bot} />}
        {bot !== undefined && <EditBotLink bot={bot} />}
      </Header>
      {(snapshot.status === "reconnecting" || snapshot.status === "failed") && (
        <div
          className={`banner ${snapshot.status === "failed" ? "banner-error" : "banner-warn"}`}
          role="status"
        >
          <WifiOff size={16} aria-hidden="true" />
          <span>
            {snapshot.status === "failed" ? "Live updates stopped: " : "Reconnecting… "}
            {snapshot.problem}
          </span>
          {snapshot.status === "reconnecting" && (
            <button type="button" className="link-button" onClick={() => feed.nudge()}>
              Retry now
            </button>
          )}
        </div>
      )}
      {showScreen && bot !== undefined && (
        <aside className="live-view-panel" aria-label="The bot's screen">
          <LiveView botId={bot.id} />
        </aside>
      )}
      <HelperOrigin conversationId={conversationId} lastSeq={snapshot.lastSeq} />
      <ChatActionsProvider value={actions}>
        <Timeline feed={feed} snapshot={shown} bot={bot} />
      </ChatActionsProvider>
      <HelpersPanel
        conversationId={conversationId}
        lastSeq={snapshot.lastSeq}
        turnState={snapshot.turnState}
      />
      <Composer
        draftKey={conversationId}
        placeholder={
          activity === "working"
            ? "Add to what the bot is doing…"
            : `Message ${bot?.name ?? "the bot"}…`
        }
        hint={
          snapshot.stopProblem !== undefined
            ? `Could not stop the bot: ${snapshot.stopProblem}`
            : snapshot.stopping
              ? "Stopping…"
              : activity === "working"
                ? "The bot is working: a message now joins the running turn · Stop ends the turn"
                : undefined
        }
        uploads={uploads}
        onSend={async (text, attachments) => {
          await feed.send(text, attachments);
          void refreshConversations();
        }}
        onStop={activity === "working" ? () => void feed.stop() : undefined}
        onEditLast={
          lastEditable !== undefined && actions.canAct
            ? () => actions.startEdit(lastEditable)
            : undefined
        }
        stopping={snapshot.stopping}
      />
    </>
  );
}
