/**
 * Tool policies and approvals as the store keeps them (issue 12 §1, docs/approvals.md). The rules
 * (matching, defaults, who may answer) live in src/policy/; the store keeps and settles.
 *
 * Invariants (both implementations; checked by approvals.contract.ts):
 *   APS1 an approval is created once per id (derived from the tool call): creating it again
 *        returns the stored one, unchanged, so a replayed step never asks twice.
 *   APS2 an approval is settled at most once: `settleApproval` changes only a pending one, in one
 *        conditional update, and answers the stored row either way, so of two answers racing (two
 *        clicks, a click and the timeout) exactly one wins and both callers see the winner.
 *   APS3 a decided approval stays listed as unreleased until `markApprovalReleased`: the sweep
 *        resolves the turn's durable promise again after a crash between the decision and the
 *        release (the turn reads the decision from the store, so a second release is harmless).
 */
import type { Api } from "../protocol/index.ts";

export interface StoredToolPolicy {
  botId: string;
  policy: Api.ToolPolicy;
  updatedAt: number;
}

export interface ApprovalRecord {
  id: string;
  accountId: string;
  botId: string;
  conversationId: string;
  turnId: string;
  callId: string;
  /** The durable promise's id (a Restate awakeable) that the turn waits on. */
  waiterId: string;
  tool: string;
  input: unknown;
  reason: string;
  botReason: string | null;
  review: Api.ReviewVerdict | null;
  approvers: string[];
  state: Api.ApprovalState;
  decidedBy: string | null;
  decidedAt: number | null;
  remembered: string | null;
  released: boolean;
  expiresAt: number;
  createdAt: number;
}

export type NewApproval = Omit<
  ApprovalRecord,
  "state" | "decidedBy" | "decidedAt" | "remembered" | "released"
>;

export interface ApprovalStore {
  getToolPolicy(botId: string): Promise<StoredToolPolicy | undefined>;
  setToolPolicy(botId: string, policy: Api.ToolPolicy): Promise<StoredToolPolicy>;
  /** APS1 */
  createApproval(approval: NewApproval): Promise<ApprovalRecord>;
  getApproval(id: string): Promise<ApprovalRecord | undefined>;
  /** Newest first; only the account's approvals. */
  listApprovals(
    accountId: string,
    options?: { state?: Api.ApprovalState; limit?: number },
  ): Promise<ApprovalRecord[]>;
  /** APS2: the stored row after the attempt; `changed` says whether this call settled it. */
  settleApproval(
    id: string,
    outcome: {
      state: Exclude<Api.ApprovalState, "pending">;
      decidedBy: string | null;
      remembered?: string | null;
      at: number;
    },
  ): Promise<{ approval: ApprovalRecord; changed: boolean } | undefined>;
  markApprovalReleased(id: string): Promise<void>;
  /** APS3: decided but not yet released (oldest first). */
  listUnreleasedApprovals(limit: number): Promise<ApprovalRecord[]>;
  /** Pending approvals whose `expiresAt` is before `atMs` (oldest first). */
  listOverdueApprovals(atMs: number, limit: number): Promise<ApprovalRecord[]>;
  /** Pending approvals of a conversation (the owner's stop denies them). */
  pendingApprovalsOf(conversationId: string): Promise<ApprovalRecord[]>;
}
