/**
 * The header's way to a bot's Memory panel, with the inbox's count on it when proposals wait.
 * Small on purpose: it is in the first-load bundle, the panel itself loads on demand.
 */
import { Brain } from "lucide-react";
import type { Bot } from "../api/types.ts";
import { onLinkClick, paths } from "../lib/router.ts";
import { inboxCount, useMemoryInbox } from "../state/memory-inbox.ts";

export function MemoryLink({ bot }: { bot: Bot }) {
  const inbox = useMemoryInbox(bot.id);
  const waiting = (inbox.proposals?.length ?? 0) > 0;
  const count = inboxCount(inbox);
  // With proposals waiting, the link opens the inbox itself.
  const href = paths.botMemory(bot.id, waiting ? "inbox" : "facts");
  const label = waiting
    ? `Memory of ${bot.name}: ${count} ${count === "1" ? "change waits" : "changes wait"} for your review`
    : `Memory of ${bot.name}`;
  return (
    <a
      className="icon-button memory-link"
      href={href}
      onClick={(event) => onLinkClick(event, href)}
      aria-label={label}
      title={label}
    >
      <Brain size={18} aria-hidden="true" />
      {waiting && (
        <span className="count-badge count-badge-float" aria-hidden="true">
          {count}
        </span>
      )}
    </a>
  );
}
