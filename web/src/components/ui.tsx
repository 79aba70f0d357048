/** Small shared pieces: the view header, empty states, the model badge, the turn state pill. */
import { Menu, Settings2 } from "lucide-react";
import type { ReactNode } from "react";
import type { Bot } from "../api/types.ts";
import { onLinkClick, paths } from "../lib/router.ts";

export function Header({
  title,
  subtitle,
  onMenu,
  children,
}: {
  title: ReactNode;
  subtitle?: ReactNode;
  onMenu(): void;
  children?: ReactNode;
}) {
  return (
    <header className="view-header">
      <button
        type="button"
        className="icon-button menu-button"
        onClick={onMenu}
        aria-label="Open the list of bots and chats"
      >
        <Menu size={20} aria-hidden="true" />
      </button>
      <div className="view-title">
        <h1>{title}</h1>
        {subtitle !== undefined && <div className="view-subtitle">{subtitle}</div>}
      </div>
      <div className="view-actions">{children}</div>
    </header>
  );
}

export function EmptyState({
  title,
  detail,
  children,
}: {
  title: string;
  detail?: ReactNode;
  children?: ReactNode;
}) {
  return (
    <div className="empty-state">
      <h2>{title}</h2>
      {detail !== undefined && <p className="muted">{detail}</p>}
      {children}
    </div>
  );
}

/** A bot id that is not one of the account's bots (or does not exist). */
export function BotNotFound() {
  return (
    <EmptyState
      title="This bot does not exist"
      detail="It may belong to another account, or the address is wrong."
    >
      <a className="button" href="/" onClick={(event) => onLinkClick(event, paths.home)}>
        Go to your bots
      </a>
    </EmptyState>
  );
}

/** The header's link to a bot's settings. */
export function EditBotLink({ bot }: { bot: Bot }) {
  if (!bot.own) return null; // a teammate's team bot: only its owner edits it
  const href = paths.editBot(bot.id);
  return (
    <a
      className="icon-button"
      href={href}
      onClick={(event) => onLinkClick(event, href)}
      aria-label={`Edit ${bot.name}`}
      title={`Edit ${bot.name}`}
    >
      <Settings2 size={18} aria-hidden="true" />
    </a>
  );
}

export function ModelBadge({ bot }: { bot: Bot }) {
  if (bot.isDemo) {
    return (
      <span
        className="badge badge-demo"
        title="No model provider is configured, so this bot answers with the offline demo model. Set ROOST_MODEL and a provider key (docs/configuration.md)."
      >
        Demo model
      </span>
    );
  }
  return (
    <span
      className="badge"
      title={bot.model === null ? "The platform's default model" : "This bot's model"}
    >
      {bot.effectiveModel}
    </span>
  );
}

export function Avatar({ name, size = "md" }: { name: string; size?: "sm" | "md" | "lg" }) {
  const letter = name.trim().charAt(0).toUpperCase() || "?";
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return (
    <span
      className={`avatar avatar-${size}`}
      style={{ "--hue": String(hash % 360) } as React.CSSProperties}
      aria-hidden="true"
    >
      {letter}
    </span>
  );
}
