/**
 * A bot's memory inbox: what its memory pass proposed in review mode and waits for the owner to
 * accept or reject. Both the bot's own proposals and the user facts it proposed (those live under
 * /v1/me/memory, shared by all the account's bots). The header's Memory link shows the count and
 * the Memory panel lists them; a change the panel makes calls `memoryInboxChanged()`, so every
 * count on the page follows at once instead of at the next poll.
 */
import { useEffect, useMemo, useState, useSyncExternalStore } from "react";
import type { ApiClient } from "../api/client.ts";
import type { Conversation, MemoryRevision } from "../api/types.ts";
import { useSession } from "./session.tsx";

/** Most proposals one request lists; past it the count reads "200+". */
export const inboxPageSize = 200;
const pollMs = 20_000;

let version = 0;
const listeners = new Set<() => void>();

/** Tell every inbox on the page to load again (after an accept, a reject or a setting change). */
export function memoryInboxChanged(): void {
  version++;
  listeners.forEach((listener) => listener());
}

function useInboxVersion(): number {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => version,
  );
}

/** Newest first, as the API orders revisions: by time, then by id. */
export function compareNewestFirst(a: MemoryRevision, b: MemoryRevision): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.id === b.id ? 0 : a.id < b.id ? 1 : -1;
}

/**
 * A user-fact proposal belongs in this bot's inbox unless it is known to come from a chat with
 * another bot: one from an unknown chat shows everywhere rather than nowhere.
 */
function isThisBots(
  revision: MemoryRevision,
  botId: string,
  conversations: Conversation[] | undefined,
): boolean {
  if (revision.conversationId === null) return true;
  const conversation = conversations?.find((candidate) => candidate.id === revision.conversationId);
  return conversation === undefined || conversation.botId === botId;
}

export interface MemoryInbox {
  /** Undefined until the first load. */
  proposals: MemoryRevision[] | undefined;
  /** More proposals wait than one request lists. */
  more: boolean;
  error: string | undefined;
}

interface Loaded {
  botId: string;
  own: MemoryRevision[];
  user: MemoryRevision[];
  more: boolean;
}

async function loadInbox(api: ApiClient, botId: string, signal: AbortSignal): Promise<Loaded> {
  const query = { status: "proposed", limit: inboxPageSize } as const;
  const [own, user] = await Promise.all([
    api.memoryRevisions({ kind: "bot", botId }, query, signal),
    api.memoryRevisions({ kind: "user" }, query, signal),
  ]);
  return {
    botId,
    own: own.revisions,
    user: user.revisions,
    more: own.next !== null || user.next !== null,
  };
}

/** The bot's inbox, loaded now, every 20 s while the page is visible, and after every change. */
export function useMemoryInbox(botId: string): MemoryInbox {
  const { api, conversations } = useSession();
  const changes = useInboxVersion();
  const [loaded, setLoaded] = useState<Loaded>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    loadInbox(api, botId, controller.signal)
      .then((value) => {
        setLoaded(value);
        setError(undefined);
      })
      .catch((caught: unknown) => {
        if (!controller.signal.aborted)
          setError(caught instanceof Error ? caught.message : String(caught));
      });
    return () => controller.abort();
  }, [api, botId, changes, tick]);

  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") setTick((value) => value + 1);
    }, pollMs);
    return () => clearInterval(timer);
  }, []);

  // Filtered at render, so the conversations' own refreshes don't reload the inbox.
  const proposals = useMemo(
    () =>
      loaded === undefined || loaded.botId !== botId
        ? undefined
        : [
            ...loaded.own,
            ...loaded.user.filter((revision) => isThisBots(revision, botId, conversations)),
          ].sort(compareNewestFirst),
    [loaded, botId, conversations],
  );
  return { proposals, more: proposals !== undefined && loaded?.more === true, error };
}

/** "3", or "200+" when more wait than one request lists. */
export function inboxCount(inbox: MemoryInbox): string {
  return `${inbox.proposals?.length ?? 0}${inbox.more ? "+" : ""}`;
}
