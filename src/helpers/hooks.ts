/**
 * How a helper's conversation differs from its parent's, through the loop's seams (no fork of
 * the loop): the tools it is offered and may run (a router wrapper), its task in the prompt (a
 * prompt section), its model (a beforeModelCall hook), and its result going back to the parent
 * (an afterTurn hook).
 *
 * Invariants:
 *   HLP7 the wrapper, the section and the model hook read the helper row outside a journaled step;
 *        HST2 makes that deterministic (a helper's row is written with its conversation and never
 *        changes in what they read, and a conversation made without one never gets one), so the
 *        answers are also cached on this node.
 *   HLP8 a helper's turn that settles with a reply (or an error) sends its result to the parent
 *        once: from a journaled step, idempotent by the turn's id (its client message id). The
 *        parent's loop takes it like any arriving message: a new turn when idle, or joining the
 *        running turn at its next step boundary (LOOP3). A stopped helper sends nothing.
 *   HLP9 see createHelperModelHook.
 */
import type { DurableContext } from "../engine/index.ts";
import { NotFoundError } from "../errors/index.ts";
import type { ModelCallInfo, PromptSectionSource, SettledTurn } from "../loop/index.ts";
import type { Api } from "../protocol/index.ts";
import type { DeliveredMessage } from "../results/index.ts";
import type { HelperRecord, HelperStatus, Message, Store } from "../store/index.ts";
import type { ToolRouter, ToolTurnContext } from "../tools/index.ts";
import { helperLimits, isHelperTool, type HelperSettings } from "./tools.ts";

/** HLP7: the helper row of a conversation, cached (positive and negative answers alike). */
export function createHelperLookup(store: Pick<Store, "helperOfConversation">, max = 10_000) {
  const cache = new Map<string, HelperRecord | null>();
  return async (conversationId: string): Promise<HelperRecord | undefined> => {
    const cached = cache.get(conversationId);
    if (cached !== undefined) return cached ?? undefined;
    const helper = (await store.helperOfConversation(conversationId)) ?? null;
    if (cache.size >= max) cache.delete(cache.keys().next().value as string);
    cache.set(conversationId, helper);
    return helper ?? undefined;
  };
}

type Lookup = ReturnType<typeof createHelperLookup>;

/** HLP2, HLP3: whether a conversation (its helper row, if any) may use a tool. */
export function mayUse(
  helper: HelperRecord | undefined,
  name: string,
  settings: HelperSettings,
): boolean {
  const depth = helper?.depth ?? 0;
  if (isHelperTool(name) && depth >= settings.maxDepth) return false; // HLP2
  if (helper === undefined || helper.tools === null) return true;
  return helper.tools.includes(name); // HLP3
}

/** The router the loop uses: a helper's conversation is offered, and may run, only its tools. */
export function withHelperTools(
  router: ToolRouter,
  lookup: Lookup,
  settings: HelperSettings,
): ToolRouter {
  return {
    async specs(context: ToolTurnContext) {
      const helper = await lookup(context.conversationId);
      return (await router.specs(context)).filter((spec) => mayUse(helper, spec.name, settings));
    },
    async execute(name, input, request) {
      const helper = await lookup(request.conversationId);
      if (!mayUse(helper, name, settings))
        return {
          output:
            helper === undefined
              ? `The tool ${JSON.stringify(name)} is not available here.`
              : `This helper was not given the tool ${JSON.stringify(name)}; use the tools you were offered.`,
          isError: true,
          details: { code: "tool_not_given" },
        };
      return router.execute(name, input, request);
    },
    endTurn: (context) => router.endTurn(context),
  };
}

/** The helper's task in its prompt (after the bot's own instructions). */
export function createHelperSection(lookup: Lookup): PromptSectionSource {
  return {
    section: "helper-task",
    async build(input) {
      const helper = await lookup(input.conversationId);
      if (helper === undefined) return undefined;
      const lines = [
        "# You are a helper",
        "Another conversation of this bot started you to do one task. Your reply is your result: it is sent back to that conversation (not to a person), so make it the complete result, with what you found or did.",
      ];
      if (helper.instructions !== null && helper.instructions.trim() !== "")
        lines.push("", "## Instructions for this task", helper.instructions.trim());
      lines.push("", "## Task", helper.task);
      return lines.join("\n");
    },
  };
}

/**
 * The helper's own model, when it was given one; and HLP9: a stopped helper makes no more model
 * calls (a turn that started after the stop, from a message that was waiting, ends at once as
 * interrupted). The status is read in a journaled step, only in helpers' conversations (HLP7:
 * whether a conversation is a helper's never changes, so every other journal is as before).
 */
export function createHelperModelHook(store: Pick<Store, "getHelper">, lookup: Lookup) {
  return async (
    durable: DurableContext,
    call: ModelCallInfo,
  ): Promise<{ model?: string | null; stop?: true } | undefined> => {
    const helper = await lookup(call.conversationId);
    if (helper === undefined) return undefined;
    const stopped = await durable.step(
      "helper-stopped",
      async () => (await store.getHelper(helper.accountId, helper.id))?.status === "stopped",
    );
    if (stopped) return { stop: true };
    return helper.model === null ? undefined : { model: helper.model };
  };
}

const settledStatus: Record<SettledTurn["outcome"], HelperStatus> = {
  reply: "done",
  error: "failed",
  no_reply: "idle",
  interrupted: "stopped",
};

/** HLP8 */
export function createHelperSettledHook(deps: {
  store: Store;
  lookup: Lookup;
  deliver(message: DeliveredMessage): Promise<{ message: Message; created: boolean }>;
}) {
  return async (durable: DurableContext, turn: SettledTurn): Promise<void> => {
    const helper = await deps.lookup(turn.conversationId);
    if (helper === undefined) return;
    await durable.step("helper-settled", async () => {
      const last =
        turn.outcome === "reply" || turn.outcome === "error"
          ? await deps.store.latestStepOfKind(turn.conversationId, turn.outcome)
          : undefined;
      const output =
        last === undefined
          ? undefined
          : turn.outcome === "reply"
            ? (last.payload as unknown as Api.ReplyPayload).text
            : `The helper stopped with an error: ${(last.payload as unknown as Api.ErrorPayload).message}`;
      const updated = await deps.store.setHelperStatus(
        helper.id,
        settledStatus[turn.outcome],
        output?.slice(0, helperLimits.outputChars * 4),
      );
      if (updated === undefined || updated.status === "stopped" || output === undefined)
        return null; // HST4: a stopped helper sends nothing
      try {
        await deps.deliver({
          conversationId: helper.parentConversationId,
          clientMessageId: `helper-result:${turn.turnId}`, // HLP8
          authorAccountId: turn.trigger.authorAccountId,
          text: output,
          source: {
            kind: "helper",
            helperId: helper.id,
            parentConversationId: helper.parentConversationId,
            direction: "result",
          },
        });
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error; // the parent was deleted meanwhile
      }
      return null;
    });
  };
}
