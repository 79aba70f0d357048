/**
 * Helpers as the store keeps them (issue 15 §1, docs/helpers.md): a helper is a conversation of
 * its own (same account and bot as its parent) plus this row, which records its parent, task,
 * tools, model and status.
 *
 * Invariants (both implementations; checked by store/helpers.test.ts):
 *   HST1 making a helper is idempotent by its id (derived from the start_helper call): the
 *        conversation and the row are written in one transaction; a repeat returns the first.
 *   HST2 a helper's parent, account, bot, depth, task, instructions, tools and model never change
 *        after it is made (only status, latest output and updated_at do), so durable code may
 *        read them outside a journaled step and a replay reads the same.
 *   HST3 every read that a bot or a person asks for names the account: another account's helper
 *        is as absent as a missing one.
 *   HST4 a stopped helper stays stopped: settling a turn never overwrites `stopped`.
 *   HST5 at most `maxRunning` helpers of a conversation are running: the count and the insert
 *        are one transaction, with the parent conversation's row locked.
 */
import type { Api } from "../protocol/index.ts";

export type HelperStatus = Api.HelperStatus;
export type HelperRecord = Api.Helper & { accountId: string };

export interface HelperStore {
  /**
   * HST1, HST5: makes the helper's conversation and row. `created: false` with the stored one on a
   * repeat; `{ capped: running }` when the parent has `maxRunning` running helpers already.
   */
  createHelper(
    input: Omit<HelperRecord, "status" | "latestOutput" | "createdAt" | "updatedAt"> & {
      title: string;
      maxRunning: number;
    },
  ): Promise<{ helper: HelperRecord; created: boolean } | { capped: number }>;
  /** HST3: the account's helper by id. */
  getHelper(accountId: string, id: string): Promise<HelperRecord | undefined>;
  /** The helper whose own conversation this is (HST2: any account; for the loop's hooks). */
  helperOfConversation(conversationId: string): Promise<HelperRecord | undefined>;
  /** HST3: a conversation's helpers, oldest first. */
  listHelpers(accountId: string, parentConversationId: string): Promise<HelperRecord[]>;
  /** HST4: sets the status (and output when given); a stopped helper is returned unchanged. */
  setHelperStatus(
    id: string,
    status: HelperStatus,
    latestOutput?: string,
  ): Promise<HelperRecord | undefined>;
  /** Marks it stopped (from any status); undefined for no such helper of the account. */
  stopHelper(accountId: string, id: string): Promise<HelperRecord | undefined>;
}
