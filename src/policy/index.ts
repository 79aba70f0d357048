/**
 * policy/: which tool calls a bot may make on its own, which need a person's approval and which
 * it may never make; the approvals that park a turn durably; the independent review model
 * (issue 12 §1, docs/approvals.md, decision 0022). Plugs into the tool router's policy and ask
 * hooks (TOOL2).
 */
export {
  approvalIdOf,
  approvalView,
  ApprovalSettledError,
  createApprovals,
  defaultApprovalTimeoutMs,
  type ApprovalsDependencies,
  type ApprovalsService,
} from "./approvals.ts";
export { createModelReviewer, demoReview, isReviewed, type Reviewer } from "./review.ts";
export {
  defaultToolRules,
  describeRule,
  judgeCall,
  parseToolPolicy,
  type PolicyVerdict,
} from "./rules.ts";
