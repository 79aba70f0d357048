/**
 * Tool policy and approvals (issue 12 §1, docs/approvals.md, decision 0022): the router's policy
 * hook (TOOL2) judges each call against the bot's policy and, where the bot has one, the review
 * model; its ask hook parks the turn on a durable promise until the owner answers or the timeout
 * denies it.
 *
 * Invariants:
 *   APR1 a call that needs approval parks the turn on a Restate awakeable with a durable timer of
 *        `timeoutMs`: no process keeps a timer, nothing computes, a restart keeps it parked.
 *   APR2 the decision lives in the store and is read back in a journaled step after the wait; the
 *        tool then runs (or not) inside the same journal, so a crash after the approval never asks
 *        again and never runs the call twice (the router journals the tool's own steps).
 *   APR3 only the approval's approvers (the owner of the credentials the call would use: the bot's
 *        owner, or a teammate in their own chat with a team bot, ROUTE3) can answer; anyone else gets the
 *        404 of a missing approval. Every decision, expiry and policy change is audited.
 *   APR4 an approval is settled once (APS2): two answers racing, or an answer racing the timeout,
 *        settle it once, and the turn does what the winner said.
 *   APR5 an unanswered approval is denied at its timeout; the model is told it was not answered
 *        in time. The owner's stop denies a pending approval at once.
 *   APR6 a decision whose release was lost (the engine down, a kill -9 between the decision and
 *        the release) is released again by the sweep (APS3).
 *   APR7 each approval adds one pending step, one settled step and one notification, with ids
 *        derived from the call, so replays add nothing.
 */
import { createHash } from "node:crypto";
import type { DurableContext } from "../engine/index.ts";
import { InvalidRequestError, NotFoundError, RoostError } from "../errors/index.ts";
import type { EventHub } from "../events/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import type { ModelClient } from "../models/index.ts";
import type { Notifier } from "../notifications/index.ts";
import type { Api } from "../protocol/index.ts";
import type { ApprovalRecord, Store } from "../store/index.ts";
import type { AskHook, PolicyHook, ToolTurnContext } from "../tools/index.ts";
import { createModelReviewer, demoReview, isReviewed, type Reviewer } from "./review.ts";
import {
  defaultToolRules,
  describeRule,
  emptyToolPolicy,
  judgeCall,
  parseRememberPattern,
  parseToolPolicy,
  stronger,
} from "./rules.ts";

/** @default 10 minutes (ROOST_APPROVAL_TIMEOUT_MS) */
export const defaultApprovalTimeoutMs = 10 * 60_000;
const sweepBatch = 200;
/** How long past its expiry a pending approval is left to its turn's own timer. */
const overdueGraceMs = 60_000;
/** How long the sweep keeps re-releasing a decision (APR6). */
const releaseRetryMs = 3600_000;

/** What a parked call is woken with: look at the store again (the decision is there). */
type WakeValue = Api.ApprovalState;

export interface ApprovalsDependencies {
  store: Store;
  events: EventHub;
  notifier: Notifier;
  /** Resolves a parked call's durable promise (the kicker's awakeable resolution). */
  release(waiterId: string, value: WakeValue): Promise<void>;
  /** The review model a policy names (`"demo"` never comes here: the deterministic reviewer). */
  resolveModel(spec: string): ModelClient;
  /** Throws saying why this server cannot serve the model spec (as for a bot's model). */
  checkModel(spec: string): void;
  /** The secrets redaction (REV2), applied to what the reviewer sees. @default nothing to redact */
  redact?: <T>(value: T, context: ToolTurnContext) => T;
  /** @default 10 minutes */
  timeoutMs?: number;
  clock?: () => number;
  logger?: Logger;
}

export class ApprovalSettledError extends RoostError {
  override readonly name = "ApprovalSettledError";
  constructor(id: string, state: Api.ApprovalState) {
    super(
      "conflict",
      `approval ${id} is already ${state}; only a pending approval can be answered (GET /v1/approvals?state=pending lists them)`,
      { details: { id, state } },
    );
  }
}

export interface ApprovalsService {
  /** TOOL2 policy hook. */
  policy: PolicyHook;
  /** TOOL2 ask hook: parks the call (APR1) and answers with the decision (APR2). */
  ask: AskHook;
  toolPolicy(botId: string): Promise<Api.ToolPolicyView>;
  /** POL4 then stores the whole policy; audited by the caller's account. */
  setToolPolicy(botId: string, accountId: string, input: unknown): Promise<Api.ToolPolicyView>;
  list(accountId: string, state?: Api.ApprovalState): Promise<Api.Approval[]>;
  get(accountId: string, id: string): Promise<Api.Approval>;
  /** APR3, APR4: the owner's answer. */
  decide(accountId: string, id: string, input: Api.ApprovalDecisionInput): Promise<Api.Approval>;
  /** APR5: the owner stopped the conversation's turn. */
  stopPending(conversationId: string): Promise<void>;
  /** APR6: releases decided approvals whose release was lost; answers how many. */
  sweep(): Promise<number>;
}

export function approvalView(record: ApprovalRecord): Api.Approval {
  return {
    id: record.id,
    botId: record.botId,
    conversationId: record.conversationId,
    turnId: record.turnId,
    callId: record.callId,
    tool: record.tool,
    input: record.input,
    reason: record.reason,
    botReason: record.botReason,
    review: record.review,
    approvers: record.approvers,
    state: record.state,
    decidedBy: record.decidedBy,
    decidedAt: record.decidedAt === null ? null : new Date(record.decidedAt).toISOString(),
    remembered: record.remembered,
    expiresAt: new Date(record.expiresAt).toISOString(),
    createdAt: new Date(record.createdAt).toISOString(),
  };
}

/** APR7: one approval per tool call. */
export const approvalIdOf = (callId: string) =>
  `apr_${createHash("sha256").update(callId).digest("hex").slice(0, 24)}`;

export function createApprovals(deps: ApprovalsDependencies): ApprovalsService {
  const { store } = deps;
  const clock = deps.clock ?? Date.now;
  const timeoutMs = deps.timeoutMs ?? defaultApprovalTimeoutMs;
  const logger = deps.logger ?? silentLogger;
  const redact = deps.redact ?? (<T>(value: T) => value);
  const reviewers = new Map<string, Reviewer>();
  const reviewerFor = (spec: string) => {
    let reviewer = reviewers.get(spec);
    if (reviewer === undefined) {
      // REV4: "demo" is always the deterministic reviewer, whatever the demo model is set to.
      reviewer =
        spec === "demo"
          ? async (request) => demoReview(request)
          : createModelReviewer(deps.resolveModel(spec));
      reviewers.set(spec, reviewer);
    }
    return reviewer;
  };

  async function policyOf(botId: string): Promise<Api.ToolPolicy> {
    return (await store.getToolPolicy(botId))?.policy ?? emptyToolPolicy;
  }

  /** What the bot said in the model call that made this call (its text), if anything. */
  async function botReasonOf(conversationId: string, callId: string): Promise<string | null> {
    const step = await store.latestStepOfKind(conversationId, "model");
    const payload = step?.payload as unknown as Api.ModelPayload | undefined;
    if (payload === undefined || !payload.toolCalls.some((call) => call.id === callId)) return null;
    const text = payload.text.trim();
    return text === "" ? null : text.slice(0, 2000);
  }

  /** REV2: the latest tool result of the turn (outside content the call may follow), cut short. */
  async function outsideContentOf(conversationId: string, turnId: string): Promise<string[]> {
    const step = await store.latestStepOfKind(conversationId, "tool");
    if (step === undefined || step.turnId !== turnId) return [];
    const output = (step.payload as unknown as Api.ToolPayload).output;
    return typeof output === "string" && output !== "" ? [output.slice(-4000)] : [];
  }

  async function saveStep(record: ApprovalRecord, id: string) {
    const saved = await store.appendStep({
      conversationId: record.conversationId,
      id,
      turnId: record.turnId,
      kind: "approval",
      payload: {
        approvalId: record.id,
        callId: record.callId,
        tool: record.tool,
        input: record.input,
        reason: record.reason,
        review: record.review,
        state: record.state,
        expiresAt: new Date(record.expiresAt).toISOString(),
      } satisfies Api.ApprovalPayload,
    });
    deps.events.publish({
      type: "changed",
      conversationId: record.conversationId,
      seq: saved.seq,
    });
  }

  async function release(record: ApprovalRecord) {
    try {
      await deps.release(record.waiterId, record.state);
    } catch (error) {
      // APR6: the sweep tries again; the turn reads the decision from the store.
      logger.warn("could not wake a call waiting for approval", {
        approval: record.id,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  async function visible(accountId: string, id: string): Promise<ApprovalRecord> {
    const record = await store.getApproval(id);
    // APR3: another account's approval reads as missing.
    if (record === undefined || !record.approvers.includes(accountId))
      throw new NotFoundError("approval", id);
    return record;
  }

  async function policyView(botId: string): Promise<Api.ToolPolicyView> {
    const stored = await store.getToolPolicy(botId);
    return {
      botId,
      ...(stored?.policy ?? emptyToolPolicy),
      defaults: [...defaultToolRules],
      updatedAt: stored === undefined ? null : new Date(stored.updatedAt).toISOString(),
    };
  }

  return {
    async policy(call, context) {
      const policy = await policyOf(context.botId);
      const verdict = judgeCall(policy, call.name, call.input);
      const ruleReason = verdict.rule === null ? "" : describeRule(verdict.rule, verdict.isDefault);
      if (verdict.decision === "deny") return { decision: "deny", reason: ruleReason };
      let decision: Api.ToolDecision = verdict.decision;
      let reason = ruleReason;
      let review: Api.ReviewVerdict | null = null;
      if (policy.reviewModel !== null && isReviewed(call.name)) {
        const botReason =
          "callId" in context && typeof context.callId === "string"
            ? await botReasonOf(context.conversationId, context.callId)
            : null;
        // REV2: the reviewer sees redacted values only.
        review = await reviewerFor(policy.reviewModel)({
          tool: call.name,
          input: redact(call.input, context),
          botReason: botReason === null ? null : redact(botReason, context),
          outside: (await outsideContentOf(context.conversationId, context.turnId)).map((text) =>
            redact(text, context),
          ),
        });
        const merged = stronger(decision, review.decision);
        if (review.decision === merged && merged !== "allow") {
          const said = `the review model (${review.model}) says: ${review.reason}`;
          reason = decision === merged && ruleReason !== "" ? `${ruleReason}; ${said}` : said;
        }
        decision = merged;
      }
      if (decision === "allow") return { decision: "allow" };
      if (decision === "deny") return { decision: "deny", reason };
      return { decision: "ask", reason, review };
    },

    async ask(call, context) {
      const durable: DurableContext = context.durable;
      const id = approvalIdOf(context.callId);
      const waiter = durable.awaitExternal<WakeValue>(); // APR1
      const created = await durable.step("approval:ask", async () => {
        // LOOP8: a conversation deleted meanwhile asks nothing.
        if ((await store.getConversation(context.conversationId)) === undefined) return "gone";
        const bot = await store.getBot(context.botId);
        const now = clock();
        // ROUTE3 (teams/routing.ts): the owner of the credentials the call would use answers it.
        const approver =
          call.approverAccountId ??
          context.route?.approverAccountId ??
          bot?.accountId ??
          context.accountId;
        const record = await store.createApproval({
          id,
          accountId: approver,
          botId: context.botId,
          conversationId: context.conversationId,
          turnId: context.turnId,
          callId: context.callId,
          waiterId: waiter.id,
          tool: call.name,
          input: redact(call.input, context),
          reason: call.reason,
          botReason: await botReasonOf(context.conversationId, context.callId),
          review: call.review,
          approvers: [approver], // APR3
          expiresAt: now + timeoutMs,
          createdAt: now,
        });
        await saveStep(record, `${context.callId}:approval`); // APR7
        await deps.notifier.notify({
          id: `approval:${id}`,
          accountId: record.accountId,
          kind: "approval",
          title: `${bot?.name ?? "A bot"} asks to run ${call.name}`,
          body: `${call.reason}. Approve or deny it in the conversation, or with roost approvals.`,
          botId: context.botId,
          conversationId: context.conversationId,
          subjectId: id,
        });
        await store.audit({
          accountId: record.accountId,
          action: "approval.request",
          target: id,
          detail: { tool: call.name, botId: context.botId, reason: call.reason },
        });
        return { expiresAt: record.expiresAt };
      });
      if (created === "gone") return { decision: "deny", reason: "the conversation was deleted" };
      const waitedAt = await durable.now();
      await waiter.wait(Math.max(1000, created.expiresAt - waitedAt)); // APR1
      // APR2, APR4: whatever woke the call, the store says what was decided.
      const settled = await durable.step("approval:settle", async () => {
        let record = await store.getApproval(id);
        if (record === undefined) return { state: "denied" as const, by: null };
        if (record.state === "pending") {
          const outcome = await store.settleApproval(id, {
            state: "expired",
            decidedBy: null,
            at: clock(),
          }); // APR5
          record = outcome?.approval ?? record;
          if (outcome?.changed === true)
            await store.audit({
              accountId: record.accountId,
              action: "approval.expire",
              target: id,
              detail: { tool: record.tool, timeoutMs },
            });
        }
        await store.markApprovalReleased(id);
        if ((await store.getConversation(record.conversationId)) !== undefined)
          await saveStep(record, `${context.callId}:approval:settled`); // APR7
        return { state: record.state, by: record.decidedBy };
      });
      if (settled.state === "approved") return { decision: "allow" };
      if (settled.state === "expired")
        return {
          decision: "deny",
          reason: `no one answered the approval request within ${Math.round(timeoutMs / 60_000) || 1} minute(s), so it was denied (${call.reason}); ask the owner in your reply if it is still needed`,
        };
      return {
        decision: "deny",
        reason: `the owner denied it (${call.reason}); do not try it another way without asking`,
      };
    },

    toolPolicy: policyView,

    async setToolPolicy(botId, accountId, input) {
      const policy = parseToolPolicy(input); // POL4
      if (policy.reviewModel !== null && policy.reviewModel !== "demo") {
        try {
          deps.checkModel(policy.reviewModel);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          throw new InvalidRequestError(
            `reviewModel: ${message} (use "demo", a configured provider:model, or null)`,
            { issues: [{ path: "reviewModel", message }] },
          );
        }
      }
      await store.setToolPolicy(botId, policy);
      await store.audit({
        accountId,
        action: "bot.tool_policy",
        target: botId,
        detail: { policy },
      });
      return policyView(botId);
    },

    async list(accountId, state) {
      return (await store.listApprovals(accountId, state === undefined ? {} : { state })).map(
        approvalView,
      );
    },

    async get(accountId, id) {
      return approvalView(await visible(accountId, id));
    },

    async decide(accountId, id, input) {
      const record = await visible(accountId, id); // APR3
      const remember = input.remember === undefined ? null : parseRememberPattern(input.remember);
      if (remember !== null && (await store.getBot(record.botId))?.accountId !== accountId)
        // ROUTE3: a teammate answers for their own credentials, but the bot's policy is its owner's.
        throw new RoostError(
          "forbidden",
          "only the bot's owner can remember a rule in its policy; answer without remember",
        );
      if (record.state !== "pending") throw new ApprovalSettledError(id, record.state);
      const state = input.decision === "approve" ? "approved" : "denied";
      const outcome = await store.settleApproval(id, {
        state,
        decidedBy: accountId,
        remembered: remember,
        at: clock(),
      });
      if (outcome === undefined) throw new NotFoundError("approval", id);
      // APR4: someone (or the timeout) was first.
      if (!outcome.changed) throw new ApprovalSettledError(id, outcome.approval.state);
      if (remember !== null) {
        const policy = await policyOf(record.botId);
        const rule: Api.ToolPolicyRule = {
          tool: record.tool,
          match: remember,
          decision: state === "approved" ? "allow" : "deny",
        };
        await store.setToolPolicy(record.botId, {
          ...policy,
          rules: [...policy.rules, rule].slice(-100),
        });
        await store.audit({
          accountId,
          action: "bot.tool_policy",
          target: record.botId,
          detail: { remembered: rule, approvalId: id },
        });
      }
      await store.audit({
        accountId,
        action: "approval.decide",
        target: id,
        detail: { decision: state, tool: record.tool, remembered: remember },
      });
      await release(outcome.approval);
      return approvalView(outcome.approval);
    },

    async stopPending(conversationId) {
      for (const record of await store.pendingApprovalsOf(conversationId)) {
        const outcome = await store.settleApproval(record.id, {
          state: "denied",
          decidedBy: record.accountId,
          at: clock(),
        });
        if (outcome?.changed === true) {
          await store.audit({
            accountId: record.accountId,
            action: "approval.decide",
            target: record.id,
            detail: { decision: "denied", tool: record.tool, by: "stop" },
          });
          await release(outcome.approval);
        }
      }
    },

    async sweep() {
      let released = 0;
      const now = clock();
      // APR5: an approval whose turn is gone (its conversation deleted) expires here; a live turn's
      // own timer got there first, or reads the same expiry.
      for (const record of await store.listOverdueApprovals(now - overdueGraceMs, sweepBatch)) {
        const outcome = await store.settleApproval(record.id, {
          state: "expired",
          decidedBy: null,
          at: now,
        });
        if (outcome?.changed === true)
          await store.audit({
            accountId: record.accountId,
            action: "approval.expire",
            target: record.id,
            detail: { tool: record.tool, timeoutMs, by: "sweep" },
          });
      }
      for (const record of await store.listUnreleasedApprovals(sweepBatch)) {
        if ((record.decidedAt ?? now) < now - releaseRetryMs) {
          // Its turn has long gone on or gone away: stop trying.
          await store.markApprovalReleased(record.id);
          continue;
        }
        try {
          await deps.release(record.waiterId, record.state); // APR6
          released++;
        } catch (error) {
          logger.warn("could not wake a call waiting for approval", {
            approval: record.id,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }
      return released;
    },
  };
}
