/**
 * The owner's interrupt of a running turn (ARCHITECTURE.md §4), on the node that runs it. The
 * API publishes an `interrupt` event (carried to every node by the events relay); each node hands
 * it to its `TurnInterrupts`, which aborts the signal of that conversation's running turn. The
 * loop passes the signal into the model call and the tool calls, and their journaled steps
 * record that they were stopped, so a replay takes the same path.
 *
 * Invariants:
 *   INT1 an interrupt stops only a turn that had started before it was requested; a turn that
 *        starts later (the interrupt's own message starts one) is never hit by it.
 *   INT2 an interrupt that arrives while no step of the turn runs on this node (between steps, or
 *        while the turn is being resumed on another node) is kept for `retainMs` and stops the
 *        turn as soon as it (re)registers.
 */

export interface RunningTurn {
  readonly signal: AbortSignal;
  /** The turn is over: forget it. */
  end(): void;
}

export interface TurnInterrupts {
  /** Register the running turn of a conversation; `startedAt` is its journaled start (INT1). */
  begin(conversationId: string, startedAt: number): RunningTurn;
  /** An interrupt was requested at `requestedAt` (epoch ms). True when a turn here was stopped. */
  request(conversationId: string, requestedAt: number): boolean;
}

export interface TurnInterruptsOptions {
  /** INT2 @default 60000 */
  retainMs?: number;
  /** @default Date.now */
  clock?: () => number;
}

export function createTurnInterrupts(options: TurnInterruptsOptions = {}): TurnInterrupts {
  const retainMs = options.retainMs ?? 60_000;
  const clock = options.clock ?? Date.now;
  const running = new Map<string, { startedAt: number; controller: AbortController }[]>();
  const requested = new Map<string, number>();

  function forgetOld() {
    const cutoff = clock() - retainMs;
    for (const [conversationId, at] of requested) if (at < cutoff) requested.delete(conversationId);
  }

  return {
    begin(conversationId, startedAt) {
      forgetOld();
      const controller = new AbortController();
      const entry = { startedAt, controller };
      const requestedAt = requested.get(conversationId);
      // Strictly later: the interrupt's own message may start a turn within the same millisecond.
      if (requestedAt !== undefined && requestedAt > startedAt) controller.abort("interrupted"); // INT1, INT2
      const list = running.get(conversationId) ?? [];
      list.push(entry);
      running.set(conversationId, list);
      return {
        signal: controller.signal,
        end() {
          const current = running.get(conversationId)?.filter((other) => other !== entry) ?? [];
          if (current.length === 0) running.delete(conversationId);
          else running.set(conversationId, current);
        },
      };
    },

    request(conversationId, requestedAt) {
      forgetOld();
      requested.set(conversationId, Math.max(requested.get(conversationId) ?? 0, requestedAt));
      let stopped = false;
      for (const turn of running.get(conversationId) ?? []) {
        if (turn.startedAt <= requestedAt && !turn.controller.signal.aborted) {
          turn.controller.abort("interrupted"); // INT1
          stopped = true;
        }
      }
      return stopped;
    },
  };
}
