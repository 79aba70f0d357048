/** What the Memory panel's tabs share: labels, the owner of a change, and the panel's context. */
import type { MemoryScope } from "../api/client.ts";
import type { Bot, MemoryRevision, MemoryTier } from "../api/types.ts";

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The owner a revision belongs to, for the API call that acts on it. */
export function scopeOf(botId: string, revision: Pick<MemoryRevision, "scope">): MemoryScope {
  return revision.scope === "user" ? { kind: "user" } : { kind: "bot", botId };
}

/** The owner of a tier's facts: user facts are the account's, the rest the bot's. */
export function scopeOfTier(botId: string, tier: MemoryTier): MemoryScope {
  return tier === "user" ? { kind: "user" } : { kind: "bot", botId };
}

export const tierLabel: Record<MemoryTier, string> = {
  user: "User fact",
  profile: "Profile",
  note: "Note",
  log: "Log",
  team: "Team memory",
};

/** What the last change did, with a way to undo it (a revert, so it is a revision too). */
export interface Done {
  text: string;
  undo?: { scope: MemoryScope; revisionId: string };
}

export interface PanelContext {
  bot: Bot;
  /** Bumps on every change, so each tab reloads what it shows. */
  version: number;
  /** Something changed: load again, and say what happened. */
  changed(done?: Done): void;
}
