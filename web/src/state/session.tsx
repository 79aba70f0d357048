/**
 * What the signed-in page shares: the API client, the account, bots, conversations, the
 * computer and the open conversations' feeds. Lists are refreshed after every change the page
 * makes and, quietly, every few seconds while the page is visible.
 */
import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  type ReactNode,
} from "react";
import { ApiError, type ApiClient } from "../api/client.ts";
import type { Bot, Computer, Conversation, Me } from "../api/types.ts";
import { showBrowserNotification } from "../lib/browser-notifications.ts";
import { navigate, parseRoute, paths } from "../lib/router.ts";
import { AccountEvents } from "./account-events.ts";
import { ConversationFeed } from "./feed.ts";

export interface Session {
  api: ApiClient;
  me: Me;
  bots: Bot[] | undefined;
  botsError: string | undefined;
  conversations: Conversation[] | undefined;
  refreshBots(): Promise<void>;
  refreshConversations(): Promise<void>;
  upsertBot(bot: Bot): void;
  upsertConversation(conversation: Conversation): void;
  feed(conversationId: string): ConversationFeed;
  /** The account's stream: notifications, drafts, activity in its conversations. */
  accountEvents: AccountEvents;
  computer: ComputerInfo;
  signOut(): void;
}

/** `unsupported`: the server has no computer endpoints (404); the chip hides. */
export type ComputerInfo =
  | { status: "loading" }
  | { status: "unsupported" }
  | { status: "error"; message: string }
  | {
      status: "ok";
      computer: Computer;
      busy: boolean;
      actionError: string | undefined;
      wake(): void;
      sleep(): void;
      refresh(): void;
      /** The events stream said how many turns hold it (issue 16 §2: live, not polled). */
      applyHolders(count: number): void;
    };

const SessionContext = createContext<Session | undefined>(undefined);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (session === undefined) throw new Error("useSession outside SessionProvider");
  return session;
}

const feedCacheSize = 4;

export function SessionProvider({
  api,
  me,
  signOut,
  children,
}: {
  api: ApiClient;
  me: Me;
  signOut(): void;
  children: ReactNode;
}) {
  const [bots, setBots] = useState<Bot[]>();
  const [botsError, setBotsError] = useState<string>();
  const [conversations, setConversations] = useState<Conversation[]>();
  const feeds = useRef(new Map<string, ConversationFeed>());
  const accountEvents = useMemo(() => new AccountEvents(api), [api]);

  const refreshBots = useCallback(async () => {
    try {
      setBots(await api.listBots());
      setBotsError(undefined);
    } catch (error) {
      setBotsError(error instanceof Error ? error.message : String(error));
    }
  }, [api]);
  const refreshConversations = useCallback(async () => {
    try {
      setConversations(await api.listConversations());
    } catch {
      // the next refresh tries again; the conversation view shows connection problems itself
    }
  }, [api]);

  useEffect(() => {
    void refreshBots();
    void refreshConversations();
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") void refreshConversations();
    }, 10_000);
    return () => clearInterval(timer);
  }, [refreshBots, refreshConversations]);

  // The sidebar follows the account's stream; a notification may become a browser notification.
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const refreshSoon = () => {
      if (timer !== undefined) return;
      timer = setTimeout(() => {
        timer = undefined;
        void refreshConversations();
      }, 300);
    };
    const unsubscribe = accountEvents.subscribe((event) => {
      if (event.type === "hello") return;
      refreshSoon();
      if (event.type !== "notification") return;
      const route = parseRoute(window.location.pathname);
      showBrowserNotification(
        event.notification,
        route.name === "conversation" ? route.conversationId : undefined,
        (conversationId) => navigate(paths.conversation(conversationId)),
      );
    });
    accountEvents.start();
    return () => {
      unsubscribe();
      accountEvents.close(); // a StrictMode re-mount starts it again
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [accountEvents, refreshConversations]);

  const mounted = useRef(false);
  useEffect(() => {
    mounted.current = true;
    const map = feeds.current;
    const nudge = () => map.forEach((feed) => feed.nudge());
    window.addEventListener("online", nudge);
    document.addEventListener("visibilitychange", nudge);
    return () => {
      mounted.current = false;
      window.removeEventListener("online", nudge);
      document.removeEventListener("visibilitychange", nudge);
      // Close the streams only when really unmounted (signed out), not on a StrictMode re-mount.
      setTimeout(() => {
        if (mounted.current) return;
        map.forEach((feed) => feed.close());
        map.clear();
      }, 0);
    };
  }, []);

  const feed = useCallback(
    (conversationId: string) => {
      const map = feeds.current;
      let existing = map.get(conversationId);
      if (existing !== undefined && !existing.closed) {
        map.delete(conversationId);
        map.set(conversationId, existing); // most recently used last
        return existing;
      }
      existing = new ConversationFeed(api, conversationId);
      map.set(conversationId, existing);
      while (map.size > feedCacheSize) {
        const [oldestId, oldest] = map.entries().next().value as [string, ConversationFeed];
        oldest.close();
        map.delete(oldestId);
      }
      return existing;
    },
    [api],
  );

  const upsertBot = useCallback((bot: Bot) => {
    setBots((current) => {
      const list = current ?? [];
      return list.some((candidate) => candidate.id === bot.id)
        ? list.map((candidate) => (candidate.id === bot.id ? bot : candidate))
        : [...list, bot];
    });
  }, []);
  const upsertConversation = useCallback((conversation: Conversation) => {
    setConversations((current) => [
      conversation,
      ...(current ?? []).filter((candidate) => candidate.id !== conversation.id),
    ]);
  }, []);

  const computer = useComputer(api);

  const value = useMemo<Session>(
    () => ({
      api,
      me,
      bots,
      botsError,
      conversations,
      refreshBots,
      refreshConversations,
      upsertBot,
      upsertConversation,
      feed,
      accountEvents,
      computer,
      signOut,
    }),
    [
      api,
      me,
      bots,
      botsError,
      conversations,
      refreshBots,
      refreshConversations,
      upsertBot,
      upsertConversation,
      feed,
      accountEvents,
      computer,
      signOut,
    ],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

/** The computer's state: polled quickly while it changes, slowly otherwise. */
function useComputer(api: ApiClient): ComputerInfo {
  const [computer, setComputer] = useState<Computer>();
  const [status, setStatus] = useState<"loading" | "unsupported" | "error" | "ok">("loading");
  const [message, setMessage] = useState("");
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string>();
  const [tick, setTick] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    api
      .computer(controller.signal)
      .then((value) => {
        setComputer(value);
        setStatus("ok");
      })
      .catch((error: unknown) => {
        if (controller.signal.aborted) return;
        if (error instanceof ApiError && error.status === 404) setStatus("unsupported");
        else if (status !== "ok") {
          setStatus("error");
          setMessage(error instanceof Error ? error.message : String(error));
        }
      });
    return () => controller.abort();
  }, [api, tick]);

  const changing = computer?.state === "waking" || computer?.state === "sleeping";
  // A self-hosted machine connects when its owner starts `roost worker`: notice it soon.
  const awaitingMachine = computer?.kind === "self-hosted" && !computer.connected;
  useEffect(() => {
    if (status === "unsupported") return;
    const delayMs = changing ? 1500 : awaitingMachine ? 5_000 : 20_000;
    const timer = setTimeout(() => setTick((value) => value + 1), delayMs);
    return () => clearTimeout(timer);
  }, [status, changing, awaitingMachine, tick]);

  const act = useCallback(
    (action: "wake" | "sleep") => {
      setBusy(true);
      setActionError(undefined);
      (action === "wake" ? api.wakeComputer() : api.sleepComputer())
        .then((value) => setComputer(value))
        .catch((error: unknown) =>
          setActionError(error instanceof Error ? error.message : String(error)),
        )
        .finally(() => {
          setBusy(false);
          setTick((value) => value + 1);
        });
    },
    [api],
  );

  return useMemo<ComputerInfo>(() => {
    if (status === "ok" && computer !== undefined) {
      return {
        status,
        computer,
        busy,
        actionError,
        wake: () => act("wake"),
        sleep: () => act("sleep"),
        refresh: () => setTick((value) => value + 1),
        applyHolders: (count) =>
          setComputer((value) => (value === undefined ? value : { ...value, heldByTurns: count })),
      };
    }
    if (status === "error") return { status, message };
    if (status === "unsupported") return { status };
    return { status: "loading" };
  }, [status, computer, busy, actionError, act, message]);
}

/** Lets a conversation's `computer` event update the chip without waiting for the next poll. */
export function useComputerEvents(
  state: Computer["state"] | undefined,
  heldByTurns?: number,
): void {
  const { computer } = useSession();
  const refresh = computer.status === "ok" ? computer.refresh : undefined;
  const current = computer.status === "ok" ? computer.computer.state : undefined;
  useEffect(() => {
    if (state !== undefined && state !== current) refresh?.();
  }, [state]);
  const applyHolders = computer.status === "ok" ? computer.applyHolders : undefined;
  useEffect(() => {
    if (heldByTurns !== undefined) applyHolders?.(heldByTurns);
  }, [heldByTurns]);
}
