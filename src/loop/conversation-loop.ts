/**
 * The conversation loop (ARCHITECTURE.md §4): one durable run per conversation at a time.
 *
 * Invariants:
 *   L1 every call to the outside world (store, model, tools) is a journaled step; this function
 *      itself only decides, so a replay after a crash takes the same path without redoing work.
 *   L2 step ids are derived from the invocation id and counters, so saving is idempotent (S2).
 *   L3 messages that arrive together form one turn; messages that arrive mid-turn join it at the
 *      next step boundary; none is lost, none is answered twice (takes are idempotent by id).
 *   L4 after a reply the loop waits up to the follow-up window for more messages, then exits.
 *   L5 a follow-up is never missed: the take before the wait records the waiter in the same
 *      transaction that message writers lock (S6), so a writer either had its message taken or
 *      sees the waiter and resolves it.
 *   L6 a step that fails for good ends its turn with an `error` step; the loop goes on.
 */
import { toRoostError, type RoostError } from "../errors/index.ts";
import type { EventHub } from "../events/index.ts";
import type { InferResult, ModelClient, ModelMessage, ToolCall } from "../models/index.ts";
import type { Message, Step, Store } from "../store/index.ts";
import type { ToolResult, ToolRouter } from "../tools/index.ts";
import {
  buildSystemPrompt,
  historyStepLimit,
  stepsToMessages,
  type TurnContext,
} from "./context.ts";
import { StepFailedError, type DurableContext } from "./durable.ts";

export interface LoopDependencies {
  store: Store;
  events: EventHub;
  /** Resolves a bot's model spec (null = platform default) to a client. */
  resolveModel(spec: string | null): ModelClient;
  tools: ToolRouter;
  /** @default 120000 */
  followUpWindowMs: number;
  /** A turn that has not replied after this many model calls ends with an error. @default 50 */
  maxModelCallsPerTurn?: number;
}

type InferOutcome =
  { ok: true; result: InferResult } | { ok: false; error: { code: string; message: string } };

interface SavedStep {
  seq: number;
}

/** Runs turns for one conversation until its inbox stays empty for the follow-up window. */
export async function runConversation(
  durable: DurableContext,
  deps: LoopDependencies,
  conversationId: string,
): Promise<{ turns: number }> {
  const { store, events } = deps;
  let takes = 0;
  let turns = 0;
  const take = (waiterId: string | null = null) => {
    const takeId = `${durable.invocationId}:take:${takes++}`; // L2, L3
    return durable.step("take-inbox", async () =>
      toInbox(await store.takeInbox(conversationId, takeId, waiterId)),
    );
  };
  const save = (step: Parameters<Store["appendStep"]>[0], name = "save-step") =>
    durable.step(name, async (): Promise<SavedStep> => {
      const saved = await store.appendStep(step);
      events.publish({ type: "changed", conversationId, seq: saved.seq });
      return { seq: saved.seq };
    });

  let batch = await take();
  if (batch.length === 0) return { turns };

  for (;;) {
    const turnId = `${durable.invocationId}:turn:${turns++}`;
    events.publish({ type: "turn", conversationId, state: "working", turnId });
    try {
      const turn = await runTurn(durable, deps, conversationId, turnId, take, save);
      if (turn.usedTools && deps.tools.endTurn !== undefined) {
        const endTurn = deps.tools.endTurn.bind(deps.tools);
        await durable.step("end-turn", () => endTurn({ accountId: turn.accountId, turnId }));
      }
    } catch (error) {
      // L6: a step that keeps failing ends the turn with an error the user sees, instead of the
      // engine retrying the whole conversation forever.
      if (!(error instanceof StepFailedError)) throw error;
      await save(
        {
          conversationId,
          id: `${turnId}:failed`,
          turnId,
          kind: "error",
          payload: {
            code: "step_failed",
            message: `${error.message} (send the message again to retry)`,
          },
        },
        "send-to-user",
      );
    } finally {
      events.publish({ type: "turn", conversationId, state: "idle", turnId });
    }

    // Messages that came in while the last model call ran start the next turn at once. L4
    batch = await take();
    if (batch.length > 0) continue;
    const woken = await durable.waitForMessage(deps.followUpWindowMs, (waiterId) => take(waiterId)); // L5
    if (woken === "timeout") return { turns };
    batch = woken;
    if (batch.length === 0) return { turns };
  }
}

interface InboxMessage {
  id: string;
  text: string;
  seq: number;
}

function toInbox(messages: Message[]): InboxMessage[] {
  return messages.map((message) => ({ id: message.id, text: message.text, seq: message.seq }));
}

async function runTurn(
  durable: DurableContext,
  deps: LoopDependencies,
  conversationId: string,
  turnId: string,
  take: (waiterId?: string | null) => Promise<InboxMessage[]>,
  save: (step: Parameters<Store["appendStep"]>[0], name?: string) => Promise<SavedStep>,
): Promise<{ accountId: string; usedTools: boolean }> {
  const { store, events } = deps;
  const context = await durable.step("load-context", async (): Promise<TurnContext> => {
    const conversation = await store.getConversation(conversationId);
    if (conversation === undefined) throw new Error(`conversation ${conversationId} is gone`);
    const bot = await store.getBot(conversation.botId);
    if (bot === undefined) throw new Error(`bot ${conversation.botId} is gone`);
    const fromSeq = Math.max(0, conversation.lastSeq - historyStepLimit);
    const [steps, pending, tools] = await Promise.all([
      store.listSteps(conversationId, { afterSeq: fromSeq, limit: historyStepLimit + 1 }),
      store.pendingMessages(conversationId),
      deps.tools.specs({ accountId: conversation.accountId, botId: bot.id }),
    ]);
    return {
      accountId: conversation.accountId,
      bot: { id: bot.id, name: bot.name, instructions: bot.instructions, model: bot.model },
      tools,
      history: stepsToMessages(steps satisfies Step[], pending),
    };
  });

  const system = buildSystemPrompt(context);
  const messages: ModelMessage[] = [...context.history];
  const maxCalls = deps.maxModelCallsPerTurn ?? 50;
  let usedTools = false;
  const fail = (index: number, error: { code: string; message: string }) =>
    save(
      { conversationId, id: `${turnId}:${index}:error`, turnId, kind: "error", payload: error },
      "send-to-user",
    );

  for (let index = 0; ; index++) {
    if (index >= maxCalls) {
      await fail(index, {
        code: "turn_too_long",
        message: `The bot stopped after ${maxCalls} model calls without replying. Send a message to let it continue.`,
      });
      return { accountId: context.accountId, usedTools };
    }

    let outcome: InferOutcome;
    try {
      outcome = await durable.step("infer", async (): Promise<InferOutcome> => {
        try {
          const model = deps.resolveModel(context.bot.model);
          const result = await model.infer({
            system,
            messages,
            tools: context.tools,
            onTextDelta: (text) => events.publish({ type: "delta", conversationId, turnId, text }),
            onRetry: () =>
              events.publish({ type: "delta", conversationId, turnId, text: "", reset: true }),
          });
          return { ok: true, result };
        } catch (error) {
          const roost = toRoostError(error);
          if (isReportable(roost))
            return { ok: false, error: { code: roost.code, message: roost.message } };
          throw error;
        }
      });
    } catch (error) {
      outcome = { ok: false, error: stepFailure(error) };
    }
    if (!outcome.ok) {
      await fail(index, outcome.error);
      return { accountId: context.accountId, usedTools };
    }

    const { result } = outcome;
    const usage = {
      inputTokens: result.usage.inputTokens,
      outputTokens: result.usage.outputTokens,
    };
    if (result.toolCalls.length === 0) {
      await save(
        {
          conversationId,
          id: `${turnId}:${index}:reply`,
          turnId,
          kind: "reply",
          payload: {
            text: result.text,
            model: result.model,
            usage,
            finishReason: result.finishReason,
          },
        },
        "send-to-user",
      );
      return { accountId: context.accountId, usedTools };
    }

    // Provider call ids differ between providers and attempts; ours come from the journal.
    const toolCalls: ToolCall[] = result.toolCalls.map((call, callIndex) => ({
      ...call,
      id: `${turnId}:${index}:${callIndex}`,
    }));
    await save({
      conversationId,
      id: `${turnId}:${index}:model`,
      turnId,
      kind: "model",
      payload: { text: result.text, toolCalls, model: result.model, usage },
    });
    messages.push({ role: "assistant", text: result.text, toolCalls });
    usedTools = true;

    for (const call of toolCalls) {
      let toolResult: ToolResult & { durationMs: number };
      try {
        toolResult = await durable.step(`tool:${call.name}`, async () => {
          const started = Date.now();
          const executed = await deps.tools.execute(call.name, call.input, {
            accountId: context.accountId,
            botId: context.bot.id,
            conversationId,
            turnId,
            callId: call.id,
          });
          return { ...executed, durationMs: Date.now() - started };
        });
      } catch (error) {
        toolResult = {
          output: `The tool failed: ${stepFailure(error).message}`,
          isError: true,
          durationMs: 0,
        };
      }
      await save({
        conversationId,
        id: `${call.id}:result`,
        turnId,
        kind: "tool",
        payload: {
          callId: call.id,
          name: call.name,
          input: call.input,
          output: toolResult.output,
          isError: toolResult.isError,
          details: toolResult.details ?? {},
          durationMs: toolResult.durationMs,
        },
      });
      messages.push({
        role: "tool",
        callId: call.id,
        name: call.name,
        output: toolResult.output,
        isError: toolResult.isError,
      });
    }

    // Step boundary: messages sent while the tools ran join this turn. L3
    const steer = await take();
    for (const message of steer) messages.push({ role: "user", text: message.text });
  }
}

/** Errors the user should read about, rather than ones the engine should retry. */
function isReportable(error: RoostError): boolean {
  return !error.retryable && error.code !== "internal";
}

function stepFailure(error: unknown): { code: string; message: string } {
  if (error instanceof StepFailedError) return { code: "step_failed", message: error.message };
  const roost = toRoostError(error);
  return { code: roost.code, message: roost.message };
}
