/**
 * The helper tools (issue 15 §1, docs/helpers.md): a bot starts helpers, conversations of their
 * own that work on one task in parallel and send their result back here as a message.
 *
 *   start_helper   {task, instructions?, tools?, model?} → the helper's id, at once
 *   check_helper   {id} → its status and latest output
 *   message_helper {id, text} → more for it to do (it works again)
 *   stop_helper    {id} → stops it (and its own helpers), its running turn too
 *
 * Invariants:
 *   HLP1 a helper is reached only from the conversation that started it: another account's
 *        helper, or another conversation's, reads exactly like a missing one.
 *   HLP2 depth is limited: a conversation at depth d (0 for a person's) may start helpers only
 *        while d < maxDepth; the helper tools are neither offered nor run beyond it.
 *   HLP3 a helper gets a subset of its parent's tools: the names asked for that the parent has
 *        (all of them when none are named), never the helper tools unless HLP2 allows.
 *   HLP4 a replayed call makes nothing twice: the helper's id comes from the call id, the store
 *        makes it once (HST1) and its messages are delivered once per call (client message ids).
 *   HLP5 at most maxRunning helpers of a conversation run at once (HST5); more are refused with
 *        a result that says so.
 *   HLP6 what goes between a helper and its parent is marked as such (source `helper`), never as
 *        a person's message; it works for the person the parent's turn works for.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { EventHub } from "../events/index.ts";
import type { DeliveredMessage } from "../results/index.ts";
import type { HelperRecord, Message, Store } from "../store/index.ts";
import {
  serverTool,
  type AnyServerTool,
  type ToolCallContext,
  type ToolResult,
  type ToolRouter,
} from "../tools/index.ts";

export const helperToolNames = [
  "start_helper",
  "check_helper",
  "message_helper",
  "stop_helper",
] as const;
const helperTools = new Set<string>(helperToolNames);
export const isHelperTool = (name: string): boolean => helperTools.has(name);

/** Limits of helpers (ROOST_HELPERS_MAX_DEPTH, ROOST_HELPERS_MAX_RUNNING). */
export interface HelperSettings {
  /** HLP2 @default 1 (helpers cannot start helpers) */
  maxDepth: number;
  /** HLP5 @default 4 */
  maxRunning: number;
}

export const helperLimits = { taskChars: 20_000, instructionsChars: 10_000, outputChars: 8_000 };

export interface HelperToolDependencies {
  store: Store;
  events: EventHub;
  /** Kicker.deliver: stores a message and hands it to its conversation's loop. */
  deliver(message: DeliveredMessage): Promise<{ message: Message; created: boolean }>;
  settings: HelperSettings;
  /** The router the turn's tools come from (HLP3: what the parent may hand on). */
  router: () => ToolRouter | undefined;
  /** Throws a RoostError saying how to fix a model spec that cannot be used. */
  checkModel?: (spec: string) => void;
  /** The helper rows of conversations (HST2: cached, they never change). */
  helperOf: (conversationId: string) => Promise<HelperRecord | undefined>;
}

const startInput = z.strictObject({
  task: z.string().min(1).max(helperLimits.taskChars).describe("What the helper should do"),
  instructions: z
    .string()
    .max(helperLimits.instructionsChars)
    .optional()
    .describe("How it should work, beyond the bot's own instructions"),
  tools: z
    .array(z.string().min(1).max(200))
    .max(200)
    .optional()
    .describe("Names of your tools it may use (default: all of them but the helper tools)"),
  model: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("A model spec for it (default: this bot's model)"),
});
const idInput = z.strictObject({ id: z.string().min(1).max(100).describe("The helper's id") });
const messageInput = z.strictObject({
  id: z.string().min(1).max(100).describe("The helper's id"),
  text: z.string().min(1).max(helperLimits.taskChars).describe("The message"),
});

const hashOf = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 20);

const notFound = (id: string): ToolResult => ({
  output: `There is no helper ${JSON.stringify(id)} of this conversation. Use the id start_helper returned.`,
  isError: true,
  details: { code: "no_such_helper" },
});

/** HLP1: the helper, when this conversation started it. */
async function ownHelper(deps: HelperToolDependencies, context: ToolCallContext, id: string) {
  const helper = await deps.store.getHelper(context.accountId, id);
  if (helper === undefined || helper.parentConversationId !== context.conversationId)
    return undefined;
  return helper;
}

/** Stops a helper and its own helpers: marks them stopped and interrupts their running turns. */
export async function stopHelperTree(
  deps: Pick<HelperToolDependencies, "store" | "events">,
  accountId: string,
  id: string,
  now: number,
): Promise<HelperRecord | undefined> {
  const stopped = await deps.store.stopHelper(accountId, id);
  if (stopped === undefined) return undefined;
  deps.events.publish({
    type: "interrupt",
    conversationId: stopped.conversationId,
    requestedAt: now,
  });
  for (const child of await deps.store.listHelpers(accountId, stopped.conversationId))
    if (child.status !== "stopped") await stopHelperTree(deps, accountId, child.id, now);
  return stopped;
}

function describe(helper: HelperRecord): string {
  const output =
    helper.latestOutput === null
      ? "It has no output yet."
      : `Its latest output:\n${helper.latestOutput.slice(0, helperLimits.outputChars)}${helper.latestOutput.length > helperLimits.outputChars ? "\n[… cut]" : ""}`;
  return `Helper ${helper.id} is ${helper.status}. Task: ${JSON.stringify(helper.task.slice(0, 300))}.\n${output}`;
}

export function createHelperTools(deps: HelperToolDependencies): AnyServerTool[] {
  const { store, settings } = deps;

  const start = serverTool({
    name: "start_helper",
    description:
      "Start a helper: a copy of you that works on one task in its own conversation, in parallel, on the same computer. Returns its id at once; its result arrives here as a message when it finishes. Give it a complete, self-contained task.",
    input: startInput,
    async run(request, context) {
      const parent = await deps.helperOf(context.conversationId);
      const depth = (parent?.depth ?? 0) + 1;
      if (depth > settings.maxDepth)
        return {
          output: `Not started: helpers may be nested ${settings.maxDepth} deep, and this conversation is at that depth already. Do the task yourself.`,
          isError: true,
          details: { code: "depth_limit", depth, maxDepth: settings.maxDepth },
        };
      // HLP3: a helper's helper has at most what its parent has.
      let tools: string[] | null = parent?.tools ?? null;
      if (request.tools !== undefined) {
        // HLP3: only names the parent has; the helper tools only where HLP2 allows.
        const router = deps.router();
        const offered = new Set(
          router === undefined ? [] : (await router.specs(context)).map((spec) => spec.name),
        );
        const nested = depth < settings.maxDepth;
        const refused = request.tools.filter(
          (name) => !offered.has(name) || (isHelperTool(name) && !nested),
        );
        if (refused.length > 0) {
          const available = [...offered].filter((name) => nested || !isHelperTool(name));
          return {
            output: `Not started: you cannot give the helper ${refused.map((name) => JSON.stringify(name)).join(", ")}. Tools you can give it: ${available.join(", ")}.`,
            isError: true,
            details: { code: "unknown_tools", refused },
          };
        }
        tools = [...new Set(request.tools)];
      }
      if (request.model !== undefined && deps.checkModel !== undefined) {
        try {
          deps.checkModel(request.model);
        } catch (error) {
          return {
            output: `Not started: ${error instanceof Error ? error.message : String(error)}`,
            isError: true,
            details: { code: "bad_model" },
          };
        }
      }
      const key = hashOf(`${context.conversationId}\u0000${context.callId}`); // HLP4
      const made = await store.createHelper({
        id: `hlp_${key}`,
        conversationId: `conv_hlp_${key}`,
        accountId: context.accountId,
        parentConversationId: context.conversationId,
        botId: context.botId,
        depth,
        task: request.task,
        instructions: request.instructions ?? null,
        tools,
        model: request.model ?? null,
        title: `Helper: ${request.task.replace(/\s+/g, " ").slice(0, 80)}`,
        maxRunning: settings.maxRunning,
      });
      if ("capped" in made)
        return {
          output: `Not started: ${made.capped} helpers of this conversation are running, the most at once. Wait for one to finish (its result arrives as a message), or stop one with stop_helper.`,
          isError: true,
          details: { code: "helper_cap", running: made.capped, maxRunning: settings.maxRunning },
        };
      const { helper } = made;
      await deps.deliver({
        conversationId: helper.conversationId,
        clientMessageId: `helper-task:${helper.id}`, // HLP4
        authorAccountId: context.trigger?.authorAccountId ?? context.accountId, // HLP6
        text: helper.task,
        source: {
          kind: "helper",
          helperId: helper.id,
          parentConversationId: context.conversationId,
          direction: "task",
        },
      });
      return {
        output: `Started helper ${helper.id}. It works on its own; its result arrives in this conversation as a message when it finishes. check_helper, message_helper and stop_helper take this id.`,
        isError: false,
        details: { helperId: helper.id, conversationId: helper.conversationId, depth },
      };
    },
  });

  const check = serverTool({
    name: "check_helper",
    description: "A helper's status (running, idle, done, stopped or failed) and latest output.",
    input: idInput,
    async run(request, context) {
      const helper = await ownHelper(deps, context, request.id);
      if (helper === undefined) return notFound(request.id);
      return {
        output: describe(helper),
        isError: false,
        details: { helperId: helper.id, status: helper.status },
      };
    },
  });

  const message = serverTool({
    name: "message_helper",
    description:
      "Send a helper more to do or an answer to its question; it works again and its next result arrives here.",
    input: messageInput,
    async run(request, context) {
      const helper = await ownHelper(deps, context, request.id);
      if (helper === undefined) return notFound(request.id);
      if (helper.status === "stopped")
        return {
          output: `Helper ${helper.id} was stopped; start a new one instead.`,
          isError: true,
          details: { code: "helper_stopped" },
        };
      await deps.deliver({
        conversationId: helper.conversationId,
        clientMessageId: `helper-message:${context.callId}`, // HLP4
        authorAccountId: context.trigger?.authorAccountId ?? context.accountId, // HLP6
        text: request.text,
        source: {
          kind: "helper",
          helperId: helper.id,
          parentConversationId: context.conversationId,
          direction: "task",
        },
      });
      await store.setHelperStatus(helper.id, "running");
      return {
        output: `Sent to helper ${helper.id}; its answer arrives here as a message.`,
        isError: false,
        details: { helperId: helper.id },
      };
    },
  });

  const stop = serverTool({
    name: "stop_helper",
    description: "Stop a helper (and any helpers it started); it sends no result.",
    input: idInput,
    async run(request, context) {
      const helper = await ownHelper(deps, context, request.id);
      if (helper === undefined) return notFound(request.id);
      await stopHelperTree(deps, context.accountId, helper.id, Date.now());
      return {
        output: `Stopped helper ${helper.id}.`,
        isError: false,
        details: { helperId: helper.id, status: "stopped" },
      };
    },
  });

  return [start, check, message, stop];
}
