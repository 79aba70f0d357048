/**
 * In-process fan-out of "something changed" to live clients (the SSE stream, later WebSockets).
 *
 * Events are hints, never the record: a client that misses one reloads from the store by
 * sequence number. That is why this bus may drop events and needs no durability. With several
 * server nodes each node only sees its own loops' events; docs/operations.md says how that
 * scales (Postgres LISTEN/NOTIFY is the planned carrier).
 */

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
    };

export type AccountEvent = {
  type: "computer";
  accountId: string;
  state: string;
  computerId: string;
};

type Listener<Event> = (event: Event) => void;

export interface EventHub {
  publish(event: ConversationEvent): void;
  subscribe(conversationId: string, listener: Listener<ConversationEvent>): () => void;
  publishAccount(event: AccountEvent): void;
  subscribeAccount(accountId: string, listener: Listener<AccountEvent>): () => void;
  /** The last turn state seen for a conversation in this process (idle when unknown). */
  turnState(conversationId: string): TurnState;
}

export function createEventHub(): EventHub {
  const conversations = new Map<string, Set<Listener<ConversationEvent>>>();
  const accounts = new Map<string, Set<Listener<AccountEvent>>>();
  const working = new Set<string>();

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

  return {
    publish(event) {
      if (event.type === "turn") {
        if (event.state === "working") working.add(event.conversationId);
        else working.delete(event.conversationId);
      }
      deliver(conversations.get(event.conversationId), event);
    },
    subscribe: (conversationId, listener) => add(conversations, conversationId, listener),
    publishAccount: (event) => deliver(accounts.get(event.accountId), event),
    subscribeAccount: (accountId, listener) => add(accounts, accountId, listener),
    turnState: (conversationId) => (working.has(conversationId) ? "working" : "idle"),
  };
}
