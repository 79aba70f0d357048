/**
 * In-process fan-out of "something changed" to live clients (the SSE stream, later WebSockets).
 *
 * Events are hints, never the record: a client that misses one reloads from the store by
 * sequence number. That is why this bus may drop events and needs no durability. With several
 * server nodes, a relay (postgres-relay.ts: Postgres LISTEN/NOTIFY) carries every published
 * event to the other nodes, which `receive` it for their own subscribers.
 */
export { connectPostgresRelay, type PostgresRelay } from "./postgres-relay.ts";

export type TurnState = "working" | "idle";

export type ConversationEvent =
  | { type: "changed"; conversationId: string; seq: number }
  /** Model text as it streams; `reset` drops what this turn streamed since its last step (a retried call). */
  | { type: "delta"; conversationId: string; turnId: string; text: string; reset?: true }
  | { type: "turn"; conversationId: string; state: TurnState; turnId: string | null }
  /** Output of a running computer tool, as it streams (the tool step holds the final result). */
  | {
      type: "tool-output";
      conversationId: string;
      callId: string;
      stream: "stdout" | "stderr";
      data: string;
    }
  /** The conversation got a new title (loop/titles.ts, a rename). */
  | { type: "renamed"; conversationId: string; title: string }
  /** The owner asked to stop the running turn (loop/interrupts.ts); for nodes, not for clients. */
  | { type: "interrupt"; conversationId: string; requestedAt: number };

export type AccountEvent =
  | {
      type: "computer";
      accountId: string;
      state: string;
      computerId: string;
      /** Turns holding it awake, when that changed (a turn took or let go of it). */
      heldByTurns?: number;
    }
  /** Something the owner is told (notifications/): the view the account's stream sends. */
  | { type: "notification"; accountId: string; notification: Record<string, unknown> }
  /** A draft was made, sent, failed or discarded (drafts/). */
  | { type: "draft"; accountId: string; draftId: string; conversationId: string; status: string };

type Listener<Event> = (event: Event) => void;

export type HubEvent = ConversationEvent | AccountEvent;

export interface EventHub {
  /** Deliver to this node's subscribers and hand to the relay, if one is attached. */
  publish(event: ConversationEvent): void;
  subscribe(conversationId: string, listener: Listener<ConversationEvent>): () => void;
  publishAccount(event: AccountEvent): void;
  subscribeAccount(accountId: string, listener: Listener<AccountEvent>): () => void;
  /** Every conversation event, published here or received from another node. */
  subscribeAll(listener: Listener<ConversationEvent>): () => void;
  /** The last turn state seen for a conversation on this node (idle when unknown). */
  turnState(conversationId: string): TurnState;
  /** Deliver an event that another node published (never relayed again). */
  receive(event: HubEvent): void;
  /** Every event published on this node goes to `relay` as well. */
  attachRelay(relay: (event: HubEvent) => void): void;
  /**
   * Called when this node may have missed other nodes' events (the relay reconnected): live
   * streams end, and their clients reconnect and reload from their last seq (their `hello`).
   */
  onResync(listener: () => void): () => void;
  resync(): void;
}

export function createEventHub(): EventHub {
  const conversations = new Map<string, Set<Listener<ConversationEvent>>>();
  const accounts = new Map<string, Set<Listener<AccountEvent>>>();
  const working = new Set<string>();
  const everything = new Set<Listener<ConversationEvent>>();

  function add<Event>(
    map: Map<string, Set<Listener<Event>>>,
    key: string,
    listener: Listener<Event>,
  ) {
    let set = map.get(key);
    if (set === undefined) {
      set = new Set();
      map.set(key, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) map.delete(key);
    };
  }

  function deliver<Event>(listeners: Set<Listener<Event>> | undefined, event: Event) {
    if (listeners === undefined) return;
    for (const listener of [...listeners]) {
      try {
        listener(event);
      } catch {
        // A broken listener (a closed stream) must not stop the others.
      }
    }
  }

  let relay: ((event: HubEvent) => void) | undefined;
  const resyncListeners = new Set<() => void>();

  function deliverLocally(event: HubEvent) {
    if ("accountId" in event) {
      deliver(accounts.get(event.accountId), event);
      return;
    }
    if (event.type === "turn") {
      if (event.state === "working") working.add(event.conversationId);
      else working.delete(event.conversationId);
    }
    deliver(conversations.get(event.conversationId), event);
    deliver(everything, event);
  }

  function publish(event: HubEvent) {
    deliverLocally(event);
    try {
      relay?.(event);
    } catch {
      // Relaying is best effort, like every live event.
    }
  }

  return {
    publish,
    subscribe: (conversationId, listener) => add(conversations, conversationId, listener),
    publishAccount: publish,
    subscribeAccount: (accountId, listener) => add(accounts, accountId, listener),
    subscribeAll(listener) {
      everything.add(listener);
      return () => everything.delete(listener);
    },
    turnState: (conversationId) => (working.has(conversationId) ? "working" : "idle"),
    receive: deliverLocally,
    attachRelay(next) {
      relay = next;
    },
    onResync(listener) {
      resyncListeners.add(listener);
      return () => resyncListeners.delete(listener);
    },
    resync() {
      for (const listener of [...resyncListeners]) {
        try {
          listener();
        } catch {
          // as deliver(): one broken listener must not stop the others
        }
      }
    },
  };
}
