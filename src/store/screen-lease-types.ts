/**
 * Control leases of the live view's screens (docs/live-view.md, decision 0026): who may send
 * input to a screen of a computer, until when.
 *
 * Invariants (both implementations; checked by screen-leases.contract.ts):
 *   SCL1 At most one lease per (computer, screen). Taking one is a single conditional write: it
 *        succeeds when there is none, when the one there has expired, or when it is the same
 *        viewer's (a renewal); so of two viewers racing for a free screen exactly one wins.
 *   SCL2 A renewal keeps the lease's `startedAt`; a take after an expired lease starts anew.
 *   SCL3 Every take (not a renewal) and every release is audited in its transaction.
 *   SCL4 A handoff is created once per id (a replay finds the first), and settled once: of a
 *        hand-back racing the timeout exactly one changes its state.
 */
export interface ScreenLease {
  computerId: string;
  screenId: string;
  accountId: string;
  /** The viewer (one live view in one browser tab) holding it. */
  viewerId: string;
  startedAt: number;
  /** Epoch ms; the lease is over from then on. */
  until: number;
  /** Why it was taken: `person` (Take control) or `handoff` (the bot asked). */
  reason: string;
}

export type ScreenHandoffState = "pending" | "handed_back" | "expired";

/** A bot's request that a person take over its screen (ask_user_to_take_over). */
export interface ScreenHandoff {
  id: string;
  accountId: string;
  botId: string;
  conversationId: string;
  computerId: string;
  screenId: string;
  /** The parked call's durable promise. */
  waiterId: string;
  reason: string;
  state: ScreenHandoffState;
  createdAt: number;
  settledAt: number | null;
}

export interface ScreenLeaseStore {
  /** SCL4: the handoff with this id, made now or by an earlier attempt. */
  createScreenHandoff(
    input: Omit<ScreenHandoff, "state" | "createdAt" | "settledAt">,
  ): Promise<ScreenHandoff>;
  getScreenHandoff(id: string): Promise<ScreenHandoff | undefined>;
  /** Pending handoffs of a screen, oldest first. */
  listPendingScreenHandoffs(computerId: string, screenId: string): Promise<ScreenHandoff[]>;
  /** SCL4: settles a pending handoff; `changed` is false when it was settled already. */
  settleScreenHandoff(
    id: string,
    state: Exclude<ScreenHandoffState, "pending">,
  ): Promise<{ changed: boolean; handoff: ScreenHandoff | undefined }>;

  /** SCL1–SCL3: the lease now held; `taken: false` with the other viewer's unexpired lease. */
  takeScreenLease(input: {
    computerId: string;
    screenId: string;
    accountId: string;
    viewerId: string;
    until: number;
    reason: string;
  }): Promise<
    { taken: true; renewed: boolean; lease: ScreenLease } | { taken: false; holder: ScreenLease }
  >;
  /** The lease of a screen, expired or not; undefined when there is none. */
  getScreenLease(computerId: string, screenId: string): Promise<ScreenLease | undefined>;
  listScreenLeases(computerId: string): Promise<ScreenLease[]>;
  /**
   * SCL3: ends the lease (only `viewerId`'s when given) and answers the lease it ended; undefined
   * when there was none (or another viewer's).
   */
  releaseScreenLease(input: {
    computerId: string;
    screenId: string;
    viewerId?: string;
    actorAccountId: string;
  }): Promise<ScreenLease | undefined>;
}
