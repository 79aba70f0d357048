/**
 * helpers/: sub-agents as durable runs (issue 15 §1, docs/helpers.md). A helper is a conversation
 * of its own, run by the same durable loop on the parent's computer, with a subset of the
 * parent's tools; its result comes back to the parent as a message.
 */
import type { EventHub } from "../events/index.ts";
import type { PromptSectionSource } from "../loop/index.ts";
import type { DeliveredMessage } from "../results/index.ts";
import type { HelperRecord, Message, Store } from "../store/index.ts";
import { defineToolSource, type ToolRouter, type ToolSource } from "../tools/index.ts";
import {
  createHelperLookup,
  createHelperModelHook,
  createHelperSection,
  createHelperSettledHook,
  withHelperTools,
} from "./hooks.ts";
import { createHelperTools, stopHelperTree, type HelperSettings } from "./tools.ts";

export {
  createHelperTools,
  helperLimits,
  helperToolNames,
  isHelperTool,
  stopHelperTree,
  type HelperSettings,
} from "./tools.ts";
export { createHelperLookup, mayUse, withHelperTools } from "./hooks.ts";

/** @default maxDepth 1, maxRunning 4 */
export const defaultHelperSettings: HelperSettings = { maxDepth: 1, maxRunning: 4 };

/** What the API needs (GET …/helpers, POST …/interrupt {stopHelpers}). */
export interface HelpersService {
  list(accountId: string, conversationId: string): Promise<HelperRecord[]>;
  /** Stops the conversation's helpers that are not stopped yet; answers those it stopped. */
  stopAll(accountId: string, conversationId: string): Promise<HelperRecord[]>;
}

export function createHelpers(deps: {
  store: Store;
  events: EventHub;
  deliver(message: DeliveredMessage): Promise<{ message: Message; created: boolean }>;
  settings: HelperSettings;
  checkModel?: (spec: string) => void;
  clock?: () => number;
}) {
  const lookup = createHelperLookup(deps.store);
  let router: ToolRouter | undefined;
  const tools: ToolSource = defineToolSource(
    "helpers",
    createHelperTools({
      store: deps.store,
      events: deps.events,
      deliver: (message) => deps.deliver(message),
      settings: deps.settings,
      router: () => router,
      helperOf: lookup,
      ...(deps.checkModel === undefined ? {} : { checkModel: deps.checkModel }),
    }),
  );
  const clock = deps.clock ?? Date.now;
  const service: HelpersService = {
    list: (accountId, conversationId) => deps.store.listHelpers(accountId, conversationId),
    async stopAll(accountId, conversationId) {
      const stopped: HelperRecord[] = [];
      for (const helper of await deps.store.listHelpers(accountId, conversationId)) {
        if (helper.status === "stopped") continue;
        const done = await stopHelperTree(deps, accountId, helper.id, clock());
        if (done !== undefined) stopped.push(done);
      }
      return stopped;
    },
  };
  return {
    /** The four helper tools, as a source of the router. */
    tools,
    /** Wrap the router the loop uses (and start_helper reads the parent's tools from). */
    wrapRouter(inner: ToolRouter): ToolRouter {
      router = withHelperTools(inner, lookup, deps.settings);
      return router;
    },
    promptSection: createHelperSection(lookup) satisfies PromptSectionSource,
    beforeModelCall: createHelperModelHook(deps.store, lookup),
    afterTurn: createHelperSettledHook({
      store: deps.store,
      lookup,
      deliver: (message) => deps.deliver(message),
    }),
    service,
  };
}
