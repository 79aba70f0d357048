/**
 * A tiny client-side router over the History API (the server answers index.html for any path
 * without a file extension). Routes:
 *   /                     home: the first bot's newest conversation, or "create a bot"
 *   /bots/new             create a bot
 *   /bots/:botId          a new chat with the bot
 *   /bots/:botId/edit     edit the bot
 *   /bots/:botId/memory   what the bot remembers (…/history: its revisions; …/inbox: proposals)
 *   /bots/:botId/usage    what the bot used and cost today and this month, and its budget
 *   /c/:conversationId    a conversation
 *   /skills               the skill library: list, create, upload
 *   /skills/:name         one skill: its instructions, files, edit, delete
 *   /teams                the caller's teams: create one, members, invitation links
 *   /teams/join#<token>   accept an invitation link (the token stays in the fragment)
 *   /settings[/:section]  settings: models (admin), tokens, notifications, accounts (admin)
 *   /slack/link#<token>   open a Slack person's sign-in link (docs/slack.md)
 */
import { useSyncExternalStore } from "react";

export type Route =
  | { name: "home" }
  | { name: "new-bot" }
  | { name: "bot"; botId: string }
  | { name: "edit-bot"; botId: string }
  | { name: "bot-memory"; botId: string; tab: MemoryTab }
  | { name: "bot-usage"; botId: string }
  | { name: "conversation"; conversationId: string }
  | { name: "skills" }
  | { name: "skill"; skillName: string }
  | { name: "teams" }
  | { name: "team-join" }
  | { name: "settings"; section: SettingsSection }
  | { name: "slack-link" }
  | { name: "not-found"; path: string };

export type MemoryTab = "facts" | "history" | "inbox";

export const settingsSections = ["models", "tokens", "notifications", "accounts"] as const;
export type SettingsSection = (typeof settingsSections)[number];
const isSettingsSection = (value: string | undefined): value is SettingsSection =>
  (settingsSections as readonly (string | undefined)[]).includes(value);

export function parseRoute(path: string): Route {
  const parts = path
    .split("/")
    .filter((part) => part !== "")
    .map(decodeURIComponent);
  if (parts.length === 0) return { name: "home" };
  if (parts[0] === "bots" && parts[1] === "new" && parts.length === 2) return { name: "new-bot" };
  if (parts[0] === "bots" && parts[1] !== undefined && parts.length === 2)
    return { name: "bot", botId: parts[1] };
  if (parts[0] === "bots" && parts[1] !== undefined && parts[2] === "edit" && parts.length === 3)
    return { name: "edit-bot", botId: parts[1] };
  if (parts[0] === "bots" && parts[1] !== undefined && parts[2] === "memory") {
    if (parts.length === 3) return { name: "bot-memory", botId: parts[1], tab: "facts" };
    const tab = parts[3];
    if (parts.length === 4 && (tab === "history" || tab === "inbox"))
      return { name: "bot-memory", botId: parts[1], tab };
  }
  if (parts[0] === "bots" && parts[1] !== undefined && parts[2] === "usage" && parts.length === 3)
    return { name: "bot-usage", botId: parts[1] };
  if (parts[0] === "c" && parts[1] !== undefined && parts.length === 2)
    return { name: "conversation", conversationId: parts[1] };
  if (parts[0] === "skills" && parts.length === 1) return { name: "skills" };
  if (parts[0] === "teams" && parts.length === 1) return { name: "teams" };
  if (parts[0] === "teams" && parts[1] === "join" && parts.length === 2)
    return { name: "team-join" };
  if (parts[0] === "slack" && parts[1] === "link" && parts.length === 2)
    return { name: "slack-link" };
  if (parts[0] === "skills" && parts[1] !== undefined && parts.length === 2)
    return { name: "skill", skillName: parts[1] };
  if (parts[0] === "settings" && parts.length === 1) return { name: "settings", section: "tokens" };
  if (parts[0] === "settings" && parts.length === 2 && isSettingsSection(parts[1]))
    return { name: "settings", section: parts[1] };
  return { name: "not-found", path };
}

const listeners = new Set<() => void>();
window.addEventListener("popstate", () => listeners.forEach((listener) => listener()));

export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (path === window.location.pathname) return;
  if (options.replace === true) window.history.replaceState(null, "", path);
  else window.history.pushState(null, "", path);
  listeners.forEach((listener) => listener());
}

const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

export function usePath(): string {
  return useSyncExternalStore(subscribe, () => window.location.pathname);
}

export function useRoute(): Route {
  return parseRoute(usePath());
}

export const paths = {
  home: "/",
  newBot: "/bots/new",
  bot: (botId: string) => `/bots/${encodeURIComponent(botId)}`,
  editBot: (botId: string) => `/bots/${encodeURIComponent(botId)}/edit`,
  botMemory: (botId: string, tab: MemoryTab = "facts") =>
    `/bots/${encodeURIComponent(botId)}/memory${tab === "facts" ? "" : `/${tab}`}`,
  botUsage: (botId: string) => `/bots/${encodeURIComponent(botId)}/usage`,
  conversation: (conversationId: string) => `/c/${encodeURIComponent(conversationId)}`,
  skills: "/skills",
  skill: (name: string) => `/skills/${encodeURIComponent(name)}`,
  teams: "/teams",
  settings: (section: SettingsSection = "tokens") => `/settings/${section}`,
};

/** Plain left clicks on in-app links navigate without a page load; others behave as links. */
export function onLinkClick(
  event: React.MouseEvent<HTMLAnchorElement>,
  path: string,
  after?: () => void,
): void {
  if (
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.altKey
  )
    return;
  event.preventDefault();
  navigate(path);
  after?.();
}
