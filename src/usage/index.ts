/**
 * usage/: what model calls used and cost, and the spend caps that pause a turn before it spends
 * more (issue 11 §4, docs/usage.md, decision 0020). Plugs into the loop's model-call hooks.
 */
export { budgetLimits, parseBudget, periodsAt, reachedLimit, type ReachedLimit } from "./budget.ts";
export { createEscalateTool } from "./escalate-tool.ts";
export { createPriceTable, defaultPrices, type PriceTable } from "./prices.ts";
export {
  createUsageService,
  escalateToolName,
  type UsageDependencies,
  type UsageService,
} from "./service.ts";
export {
  noRoutineLookup,
  type RoutineLookup,
  type RoutineSettings,
  type RunUsage,
} from "./types.ts";
