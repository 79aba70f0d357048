import {
  Bell,
  BookOpen,
  LogOut,
  Monitor,
  Moon,
  Plus,
  Settings,
  SquarePen,
  Sun,
  Users,
  X,
} from "lucide-react";
import { useMemo, useState } from "react";
import type { Conversation } from "../api/types.ts";
import {
  browserPermission,
  requestBrowserPermission,
  type BrowserPermission,
} from "../lib/browser-notifications.ts";
import { formatRelative } from "../lib/format.ts";
import { onLinkClick, paths, useRoute } from "../lib/router.ts";
import { setThemeChoice, useThemeChoice, type ThemeChoice } from "../lib/theme.ts";
import { useSession } from "../state/session.tsx";
import { NotificationsMenu } from "./notifications-menu.tsx";
import { ConversationRow } from "./conversation-menu.tsx";
import { SearchButton } from "./switcher.tsx";
import { Avatar } from "./ui.tsx";

const nextTheme: Record<ThemeChoice, ThemeChoice> = {
  system: "light",
  light: "dark",
  dark: "system",
};
const themeLabel: Record<ThemeChoice, string> = {
  system: "Theme: system",
  light: "Theme: light",
  dark: "Theme: dark",
};

/** The sidebar's state of a conversation: Working, Needs attention, Unread activity (docs/results.md). */
function ActivityMark({ conversation }: { conversation: Conversation }) {
  const activity = conversation.activity ?? conversation.state;
  if (activity === "working")
    return <span className="working-dot" title="Working" aria-label="working" />;
  if (activity === "needs_attention")
    return (
      <span className="attention-mark" title="Needs attention" aria-label="needs attention">
        !
      </span>
    );
  if (activity === "unread")
    return <span className="unread-dot" title="Unread activity" aria-label="unread activity" />;
  return <span className="nav-time">{formatRelative(conversation.updatedAt)}</span>;
}

/** A bot's conversations that need the owner, shown on the bot (its chats may be out of view). */
function BotActivity({ conversations }: { conversations: readonly Conversation[] }) {
  const attention = conversations.filter((c) => c.activity === "needs_attention").length;
  const unread = conversations.filter((c) => c.activity === "unread").length;
  if (attention > 0)
    return (
      <span
        className="attention-mark"
        title={`${attention} conversation${attention === 1 ? "" : "s"} need${attention === 1 ? "s" : ""} attention`}
      >
        {attention}
      </span>
    );
  if (unread > 0) return <span className="unread-dot" title="Unread activity" />;
  return null;
}

/** Browser notifications are asked for only when the owner clicks (browsers refuse otherwise). */
function BrowserNotificationsButton() {
  const [permission, setPermission] = useState<BrowserPermission>(browserPermission);
  if (permission !== "default") return null;
  return (
    <button
      type="button"
      className="nav-item nav-button"
      onClick={() => void requestBrowserPermission().then(setPermission)}
    >
      <Bell size={16} aria-hidden="true" />
      <span className="nav-label">Turn on browser notifications</span>
    </button>
  );
}

export function Sidebar({
  selectedBotId,
  onNavigate,
  onClose,
}: {
  selectedBotId: string | undefined;
  onNavigate(): void;
  onClose(): void;
}) {
  const { bots, conversations, me, signOut } = useSession();
  const route = useRoute();
  const theme = useThemeChoice();
  const botId = selectedBotId ?? bots?.[0]?.id;
  const bot = bots?.find((candidate) => candidate.id === botId);
  const chats = useMemo(
    () =>
      (conversations ?? [])
        .filter((conversation) => conversation.botId === botId)
        .sort((a, b) => Date.parse(b.updatedAt) - Date.parse(a.updatedAt)),
    [conversations, botId],
  );
  const ThemeIcon = theme === "dark" ? Moon : theme === "light" ? Sun : Monitor;

  return (
    <nav className="sidebar-inner">
      <div className="sidebar-top">
        <a
          className="brand"
          href="/"
          onClick={(event) => onLinkClick(event, paths.home, onNavigate)}
        >
          <span className="brand-mark" aria-hidden="true" />
          <span>Roost</span>
        </a>
        <button
          type="button"
          className="icon-button"
          onClick={() => setThemeChoice(nextTheme[theme])}
          aria-label={`${themeLabel[theme]} (switch)`}
          title={themeLabel[theme]}
        >
          <ThemeIcon size={18} aria-hidden="true" />
        </button>
        <button
          type="button"
          className="icon-button close-nav"
          onClick={onClose}
          aria-label="Close the list"
        >
          <X size={18} aria-hidden="true" />
        </button>
      </div>

      <div className="sidebar-section">
        <SearchButton />
      </div>

      <div className="sidebar-section">
        <div className="sidebar-heading">
          <h2 id="bots-heading">Bots</h2>
          <a
            className="icon-button"
            href={paths.newBot}
            onClick={(event) => onLinkClick(event, paths.newBot, onNavigate)}
            aria-label="New bot"
            title="New bot"
          >
            <Plus size={18} aria-hidden="true" />
          </a>
        </div>
        <ul className="nav-list" aria-labelledby="bots-heading">
          {bots === undefined && <li className="muted nav-note">Loading…</li>}
          {bots?.length === 0 && <li className="muted nav-note">No bots yet.</li>}
          {bots?.map((candidate) => (
            <li key={candidate.id}>
              <a
                className="nav-item"
                href={paths.bot(candidate.id)}
                aria-current={candidate.id === botId ? "true" : undefined}
                onClick={(event) => onLinkClick(event, paths.bot(candidate.id), onNavigate)}
              >
                <Avatar name={candidate.name} size="sm" />
                <span className="nav-label">{candidate.name}</span>
                {candidate.isDemo && <span className="badge badge-demo badge-small">Demo</span>}
                {candidate.team !== undefined && (
                  <span
                    className="badge badge-small"
                    title={`${candidate.team.ownerName}'s bot, shared with ${candidate.team.name}`}
                  >
                    {candidate.team.name}
                  </span>
                )}
                <BotActivity
                  conversations={(conversations ?? []).filter(
                    (conversation) => conversation.botId === candidate.id,
                  )}
                />
              </a>
            </li>
          ))}
        </ul>
      </div>

      {bot !== undefined && (
        <div className="sidebar-section sidebar-chats">
          <div className="sidebar-heading">
            <h2 id="chats-heading">Chats with {bot.name}</h2>
          </div>
          <a
            className="button button-block new-chat"
            href={paths.bot(bot.id)}
            aria-current={route.name === "bot" && route.botId === bot.id ? "page" : undefined}
            onClick={(event) => onLinkClick(event, paths.bot(bot.id), onNavigate)}
          >
            <SquarePen size={16} aria-hidden="true" /> New chat
          </a>
          <ul className="nav-list" aria-labelledby="chats-heading">
            {chats.length === 0 && <li className="muted nav-note">No chats yet.</li>}
            {chats.map((conversation) => {
              const active =
                route.name === "conversation" && route.conversationId === conversation.id;
              return (
                <ConversationRow key={conversation.id} conversation={conversation} active={active}>
                  <a
                    className="nav-item nav-chat"
                    href={paths.conversation(conversation.id)}
                    aria-current={active ? "page" : undefined}
                    onClick={(event) =>
                      onLinkClick(event, paths.conversation(conversation.id), onNavigate)
                    }
                  >
                    <span className="nav-label">{conversation.title}</span>
                    <ActivityMark conversation={conversation} />
                  </a>
                </ConversationRow>
              );
            })}
          </ul>
        </div>
      )}

      <div className="sidebar-section">
        <a
          className="nav-item"
          href={paths.skills}
          aria-current={route.name === "skills" || route.name === "skill" ? "page" : undefined}
          onClick={(event) => onLinkClick(event, paths.skills, onNavigate)}
        >
          <BookOpen size={16} aria-hidden="true" />
          <span className="nav-label">Skills</span>
        </a>
        <a
          className="nav-item"
          href={paths.teams}
          aria-current={route.name === "teams" ? "page" : undefined}
          onClick={(event) => onLinkClick(event, paths.teams, onNavigate)}
        >
          <Users size={16} aria-hidden="true" />
          <span className="nav-label">Teams</span>
        </a>
        <a
          className="nav-item"
          href={paths.settings()}
          aria-current={route.name === "settings" ? "page" : undefined}
          onClick={(event) => onLinkClick(event, paths.settings(), onNavigate)}
        >
          <Settings size={16} aria-hidden="true" />
          <span className="nav-label">Settings</span>
        </a>
        <NotificationsMenu onNavigate={onNavigate} />
        <BrowserNotificationsButton />
      </div>

      <div className="sidebar-footer">
        <Avatar name={me.name} size="sm" />
        <span className="nav-label" title={me.isAdmin ? "Admin account" : undefined}>
          {me.name}
        </span>
        <button
          type="button"
          className="icon-button"
          onClick={signOut}
          aria-label="Sign out"
          title="Sign out"
        >
          <LogOut size={18} aria-hidden="true" />
        </button>
      </div>
    </nav>
  );
}
