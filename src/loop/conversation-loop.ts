/**
 * The conversation loop (ARCHITECTURE.md §4): one durable run per conversation at a time.
 *
 * Invariants:
 *   LOOP1 every call to the outside world (store, model, tools, other objects) is journaled; this
 *         function itself only decides, so a replay after a crash takes the same path without
 *         redoing work. Every decision depends only on journaled results.
 *   LOOP2 step ids are derived from the invocation id and counters, so saving is idempotent (S2);
 *         tool call ids sent to providers are short hashes of those ids (providerSafeCallId), so a replay
 *         sends the same ids and every provider accepts them.
 *   LOOP3 messages that arrive together form one turn; messages that arrive mid-turn join it at
 *         the next step boundary; none is lost, none is answered twice (takes are idempotent).
 *         Messages that arrive during the turn's last model call start the next turn at once.
 *   LOOP4 after a reply the loop waits up to the follow-up window for more messages, then exits.
 *   LOOP5 a follow-up is never missed: the take before the wait records the waiter in the same
 *         transaction that message writers lock (S6), so a writer either had its message taken or
 *         sees the waiter and resolves it.
 *   LOOP6 a step that fails for good ends its turn with an `error` step; the loop goes on.
 *         Infrastructure outages never fail a step (DUR1): the turn waits them out.
 *   LOOP7 the owner's interrupt stops the running model call or tool call at once; the turn ends
 *         with an `interrupted` step, and every tool call the model made gets a result, so the
 *         history stays valid for every provider.
 *   LOOP8 a conversation deleted while its loop runs ends the loop quietly.
 *   LOOP9 a history past its token budget is compacted at a step boundary (compaction.ts): at a
 *         turn's start, after the provider refused a call as too long (then the call is tried once
 *         more), and after the follow-up window with a lower budget. Compaction never fails a turn.
 *   LOOP10 a turn knows what started it (its first message's source: chat, routine, webhook, another
 *         bot) and whom it works for; every hook and tool call of the turn is told.
 *   LOOP11 every model call passes the `beforeModelCall` hooks first (a budget may park the turn
 *         there, durably, and the same turn continues when it is let go, or ends as interrupted
 *         when the owner stopped it while parked) and the `afterModelCall` hooks after (usage
 *         records); both run in durable code, so they journal what they do.
 *   LOOP12 a tool result may end the turn deliberately (`no_reply`): the turn's remaining calls of
 *         that model call still run and get results, then a `no_reply` step ends the turn.
 *   LOOP13 a turn acts as the route its conversation's place and talking person give (teams/
 *         routing.ts): its tools, computer, memory and skills are the route's computer account's;
 *         a talking person who may no longer use the conversation gets an error and nothing runs.
 *   LOOP14 a message's uploads are copied into the turn's computer in one journaled step
 *         (`copy-attachments`) before the model call that reads the message, so a replay copies
 *         nothing again; a copy that fails is said to the model in a note, never fails the turn.
 */
import { StepFailedError, waitForMessages, type DurableContext } from "../engine/index.ts";
import { NotFoundError, RoostError, toRoostError } from "../errors/index.ts";
import type { EventHub } from "../events/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import {
  contextWindowOf,
  defaultContextWindowTokens,
  estimateTokens,
  isContextOverflow,
  providerSafeCallId,
  type InferResult,
  type MediaPart,
  type ModelClient,
  type ModelMessage,
  type ToolCall,
} from "../models/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Bot, Conversation, Message, Store } from "../store/index.ts";
import { mayUseConversation, routeTurn, teamShouldKnowPattern } from "../teams/index.ts";
import type { ToolResult, ToolRouter, TurnRoute, TurnTrigger } from "../tools/index.ts";
import {
  compact,
  defaultCompaction,
  historyBudget,
  type CompactionDependencies,
  type CompactionSettings,
} from "./compaction.ts";
import {
  historyStepLimit,
  renderMessageText,
  stepsToMessages,
  type TurnContext,
} from "./context.ts";
import type { TurnInterrupts } from "./interrupts.ts";
import {
  assembleSystemPrompt,
  hashMessages,
  loopSections,
  offersComputer,
  type PromptSection,
  type PromptSectionSource,
} from "./prompt.ts";

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
  /** The owner's interrupts, on this node (LOOP7). */
  interrupts: TurnInterrupts;
  /** Sections other modules add to the prompt (memory, skills, summary…). @default none */
  promptSections?: readonly PromptSectionSource[];
  /** The users' timezone until accounts have their own. @default "UTC" */
  timezone?: string;
  /** Which computer an account's computer tools work on (the prompt says). @default "hosted" */
  computerKind?: (accountId: string) => Promise<"hosted" | "self-hosted">;
  /**
   * Told once when the conversation goes idle (the follow-up window passed), with the span of the
   * turns it answered since its loop started; from durable code, so only journaled sends may go
   * out (the memory pass is one: one pass per burst of turns, not one per turn). @default none
   */
  afterIdle?: readonly ((durable: DurableContext, turns: EndedTurn) => void)[];
  /** When and how to compact long conversations. @default defaultCompaction */
  compaction?: CompactionSettings;
  /** Compaction's first step: commit what the summarised part taught (the memory pass). */
  beforeCompaction?: CompactionDependencies["beforeSummary"];
  /** Whether something (a routine) is about to wake the conversation: idle compaction waits. */
  wakesSoon?: (conversationId: string) => Promise<boolean>;
  /**
   * LOOP11: told before every model call, in durable code. May wait (durably: a budget parks the
   * turn until it is raised) and may choose the call's model (a routine's cheaper triage model);
   * the last hook that names a model wins. A hook that answers `stop` ends the turn as interrupted
   * without the call (the owner stopped a parked turn). @default none
   */
  beforeModelCall?: readonly ((
    durable: DurableContext,
    call: ModelCallInfo,
  ) => Promise<{ model?: string | null; stop?: true } | undefined>)[];
  /** LOOP11: told after every model call that answered, with what it used. @default none */
  afterModelCall?: readonly ((durable: DurableContext, call: ModelCallDone) => Promise<void>)[];
  /** Told when a turn settles, however it ended (a routine run finishing). @default none */
  afterTurn?: readonly ((durable: DurableContext, turn: SettledTurn) => Promise<void>)[];
  /** Uploads attached to messages (docs/uploads.md, LOOP14). @default none: not copied */
  uploads?: LoopUploads;
  /** @default silent */
  logger?: Logger;
}

/** LOOP14: what the loop needs of uploads; both run inside journaled steps. */
export interface LoopUploads {
  /** Copies the files into the account's computer at their paths; says which could not be. */
  copy(
    accountId: string,
    attachments: readonly Api.MessageAttachment[],
    signal: AbortSignal,
  ): Promise<{ failed: { path: string; reason: string }[] }>;
  /** The images among them a model may be sent (HIS6), small enough to journal. */
  images(attachments: readonly Api.MessageAttachment[]): Promise<MediaPart[]>;
}

/** Turns that ended, and the steps they span (their first message through their last step). */
export interface EndedTurn {
  accountId: string;
  botId: string;
  conversationId: string;
  turnId: string;
  fromSeq: number;
  toSeq: number;
}

/** How a turn ended: the kind of its last step. */
export type TurnOutcome = "reply" | "no_reply" | "error" | "interrupted";

/** One turn that settled (LOOP10). */
export interface SettledTurn extends EndedTurn {
  trigger: TurnTrigger;
  outcome: TurnOutcome;
}

/** One model call about to be made (LOOP11). */
export interface ModelCallInfo {
  accountId: string;
  botId: string;
  conversationId: string;
  turnId: string;
  /** The call's index within its turn (0 = the turn's first call). */
  index: number;
  trigger: TurnTrigger;
  /** The bot's model spec (null = the platform default). */
  botModel: string | null;
}

/** One model call that answered (LOOP11). */
export interface ModelCallDone extends ModelCallInfo {
  /** The spec the call used, after the hooks chose. */
  spec: string | null;
  /** The model the provider reported. */
  model: string;
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens?: number };
}

type InferOutcome =
  | { ok: true; result: InferResult }
  | { ok: false; interrupted: true }
  | {
      ok: false;
      interrupted?: false;
      error: { code: string; message: string };
      /** The provider refused the call as longer than the model takes (compact and retry). */
      contextOverflow?: boolean;
    };

type StepInput = Parameters<Store["appendStep"]>[0];

class ConversationGone extends Error {}

/** Runs turns for one conversation until its inbox stays empty for the follow-up window. */
export async function runConversation(
  durable: DurableContext,
  deps: LoopDependencies,
  conversationId: string,
): Promise<{ turns: number }> {
  const { store, events } = deps;
  const logger = (deps.logger ?? silentLogger).child({ conversationId });
  let takes = 0;
  let turns = 0;
  const take = (waiterId: string | null = null) => {
    const takeId = `${durable.invocationId}:take:${takes++}`; // LOOP2, LOOP3
    return durable.step("take-inbox", async () =>
      toInbox(await store.takeInbox(conversationId, takeId, waiterId)),
    );
  };
  const save = (step: StepInput, name = "save-step") =>
    durable.step(name, async () => {
      try {
        const saved = await store.appendStep(step);
        events.publish({ type: "changed", conversationId, seq: saved.seq });
        return { seq: saved.seq, gone: false };
      } catch (error) {
        if (error instanceof NotFoundError) return { seq: 0, gone: true }; // LOOP8
        throw error;
      }
    });
  const saveOrStop = async (step: StepInput, name?: string) => {
    const saved = await save(step, name);
    if (saved.gone) throw new ConversationGone();
    return saved;
  };

  // The turns this loop answered, for the hooks told when the conversation goes idle.
  let answered: EndedTurn | undefined;
  const idle = () => {
    if (answered === undefined) return;
    for (const hook of deps.afterIdle ?? []) hook(durable, answered);
  };

  try {
    let batch = await take();
    if (batch.length === 0) return { turns };

    for (;;) {
      const turnId = `${durable.invocationId}:turn:${turns++}`;
      const turnLogger = logger.child({ turnId });
      const trigger = triggerOf(batch);
      let settledTurn: SettledTurn | undefined;
      events.publish({ type: "turn", conversationId, state: "working", turnId });
      let settled = false;
      try {
        const { outcome, ...ended } = await runTurn(
          durable,
          deps,
          turnLogger,
          conversationId,
          turnId,
          batch,
          trigger,
          take,
          saveOrStop,
        );
        settledTurn = { ...ended, trigger, outcome };
        answered =
          answered === undefined
            ? ended
            : {
                ...answered,
                fromSeq: Math.min(answered.fromSeq, ended.fromSeq),
                toSeq: Math.max(answered.toSeq, ended.toSeq),
              };
        settled = true;
      } catch (error) {
        // LOOP6: a step that keeps failing ends the turn with an error the user sees, instead of
        // the engine retrying the whole conversation forever.
        if (!(error instanceof StepFailedError)) throw error;
        turnLogger.error("turn failed", { step: error.stepName, error: error.message });
        const failed = await saveOrStop(
          {
            conversationId,
            id: `${turnId}:failed`,
            turnId,
            kind: "error",
            payload: {
              code: "step_failed",
              message: `${error.message} (send the message again to retry)`,
            } satisfies Api.ErrorPayload,
          },
          "send-to-user",
        );
        const fromSeq = Math.min(...batch.map((message) => message.seq));
        const owner = await durable.step("turn-owner", async () => {
          const conversation = await store.getConversation(conversationId);
          return conversation === undefined
            ? null
            : { accountId: conversation.accountId, botId: conversation.botId };
        });
        if (owner !== null)
          settledTurn = {
            ...owner,
            conversationId,
            turnId,
            fromSeq,
            toSeq: Math.max(failed.seq, fromSeq),
            trigger,
            outcome: "error",
          };
        settled = true;
      } finally {
        // A failed attempt that the engine retries is still the same working turn: only a settled
        // turn goes idle (otherwise live views would see idle mid-turn).
        if (settled) events.publish({ type: "turn", conversationId, state: "idle", turnId });
      }
      if (settledTurn !== undefined)
        for (const hook of deps.afterTurn ?? []) await hook(durable, settledTurn);

      // LOOP3: messages that came in while the last model call ran start the next turn at once.
      batch = await take();
      if (batch.length > 0) continue;
      const woken = await waitForMessages(durable, deps.followUpWindowMs, (waiterId) =>
        take(waiterId),
      ); // LOOP4, LOOP5
      if (woken === "timeout" || woken.length === 0) {
        idle(); // before compaction: a compaction's own pass then waits for this one
        if (woken === "timeout")
          await compactWhenIdle(
            durable,
            deps,
            logger,
            conversationId,
            `${durable.invocationId}:idle:${turns}`,
          );
        return { turns };
      }
      batch = woken;
    }
  } catch (error) {
    if (error instanceof ConversationGone) {
      logger.info("conversation deleted while its loop ran; the loop ends");
      return { turns };
    }
    throw error;
  }
}

interface InboxMessage {
  id: string;
  text: string;
  seq: number;
  authorAccountId: string;
  source?: Api.MessageSource;
  attachments?: Api.MessageAttachment[];
}

function toInbox(messages: Message[]): InboxMessage[] {
  return messages.map((message) => ({
    id: message.id,
    text: message.text,
    seq: message.seq,
    authorAccountId: message.authorAccountId,
    ...(message.source === undefined ? {} : { source: message.source }),
    ...(message.attachments === undefined ? {} : { attachments: message.attachments }),
  }));
}

/**
 * LOOP14: copies the uploads of `messages` into the turn's computer, journaled; the note for the
 * model when some could not be copied (undefined when all were, or there were none).
 */
async function copyUploads(
  durable: DurableContext,
  deps: LoopDependencies,
  accountId: string,
  messages: readonly InboxMessage[],
): Promise<string | undefined> {
  const attachments = messages.flatMap((message) => message.attachments ?? []);
  if (attachments.length === 0 || deps.uploads === undefined) return undefined;
  const uploads = deps.uploads;
  const copied = await durable.step("copy-attachments", (signal) =>
    uploads.copy(accountId, attachments, signal),
  );
  if (copied.failed.length === 0) return undefined;
  return `[Some attached files could not be copied into the computer: ${copied.failed.map((failure) => `${failure.path}: ${failure.reason}`).join("; ")}. Tell the person, and ask them to attach them again.]`;
}

/** LOOP10: a turn is started by its first message. */
function triggerOf(batch: readonly InboxMessage[]): TurnTrigger {
  const first = batch[0];
  if (first === undefined) throw new Error("a turn needs a message");
  return { source: first.source ?? { kind: "chat" }, authorAccountId: first.authorAccountId };
}

/** What the model reads for a message that joined a turn (the history renders stored ones). */
function inboxToModel(message: InboxMessage): ModelMessage {
  return {
    role: "user",
    text: renderMessageText(message.text, message.source, message.attachments),
  };
}

/**
 * LOOP13: whose computer and credentials the turn uses (teams/ routing), read at every turn: a
 * talking person who may no longer use the conversation (removed from the bot's team) ends the
 * turn with an error saying so (TACC3), and nothing runs for them.
 */
async function routeOf(
  store: LoopDependencies["store"],
  conversation: Conversation,
  bot: Bot,
  batch: readonly InboxMessage[],
): Promise<TurnRoute> {
  const talkerAccountId = triggerOf(batch).authorAccountId;
  // MEMT1: only a person's own words (not a routine's or a webhook's) open the team memory.
  const saysTeamShouldKnow = batch.some(
    (message) =>
      (message.source === undefined || message.source.kind === "chat") &&
      teamShouldKnowPattern.test(message.text),
  );
  if (!(await mayUseConversation(store, talkerAccountId, conversation)))
    throw new RoostError(
      "forbidden",
      "the person who sent this message may no longer use this bot (they left its team or it was unpublished); nothing was run",
    );
  const sharedAccountId =
    conversation.place === "shared"
      ? await store.ensureBotSharedAccount({ botId: bot.id, botName: bot.name })
      : undefined;
  return routeTurn({ bot, conversation, talkerAccountId, sharedAccountId, saysTeamShouldKnow });
}

/** `load-context`: everything the turn's model calls see, journaled (PRM3). */
function loadTurnContext(
  durable: DurableContext,
  deps: LoopDependencies,
  conversationId: string,
  turnId: string,
  batch: readonly InboxMessage[],
  startedAt: number,
): Promise<TurnContext | null> {
  const { store } = deps;
  return durable.step("load-context", async (): Promise<TurnContext | null> => {
    const conversation = await store.getConversation(conversationId);
    if (conversation === undefined) return null; // LOOP8
    const bot = await store.getBot(conversation.botId);
    if (bot === undefined) return null;
    const route = await routeOf(store, conversation, bot, batch);
    const summary = await store.latestStepOfKind(conversationId, "summary");
    const covered =
      summary === undefined
        ? 0
        : (summary.payload as unknown as Api.SummaryPayload).coversThroughSeq;
    const fromSeq = Math.max(covered, conversation.lastSeq - historyStepLimit);
    const turn = {
      accountId: route.computerAccountId, // LOOP13
      route,
      botId: bot.id,
      conversationId,
      turnId,
      trigger: triggerOf(batch), // LOOP10: a source may offer tools by trigger (a triage's escalate)
    };
    const [steps, messages, tools] = await Promise.all([
      store.listSteps(conversationId, { afterSeq: fromSeq, limit: historyStepLimit + 1 }),
      store.listMessages(conversationId, { afterSeq: fromSeq, limit: historyStepLimit + 1 }),
      deps.tools.specs(turn),
    ]);
    const sectionInput = {
      accountId: route.computerAccountId,
      route,
      botId: bot.id,
      conversationId,
      newMessages: batch.map((message) => message.text),
      now: startedAt,
    };
    const contributed = await Promise.all(
      (deps.promptSections ?? []).map(async (source): Promise<PromptSection | undefined> => {
        const text = await source.build(sectionInput);
        return text === undefined ? undefined : { name: source.section, text };
      }),
    );
    const computer =
      deps.computerKind !== undefined && offersComputer(tools)
        ? await deps.computerKind(route.computerAccountId)
        : "hosted";
    const sections = [
      ...loopSections({ bot, tools, now: startedAt, timezone: deps.timezone ?? "UTC", computer }),
      ...contributed.filter((section): section is PromptSection => section !== undefined),
    ];
    if (summary !== undefined)
      sections.push({
        name: "summary",
        text: `# Summary of the conversation so far\n${(summary.payload as unknown as Api.SummaryPayload).text}`,
      });
    const { system, hashes, stableChars } = assembleSystemPrompt(sections);
    const media = new Map<string, MediaPart[]>();
    if (deps.uploads !== undefined)
      for (const message of batch) {
        if (message.attachments === undefined || message.attachments.length === 0) continue;
        const images = await deps.uploads.images(message.attachments); // HIS6
        if (images.length > 0) media.set(message.id, images);
      }
    const history = stepsToMessages(steps, messages, media);
    return {
      accountId: route.computerAccountId,
      route,
      bot: { id: bot.id, name: bot.name, instructions: bot.instructions, model: bot.model },
      tools,
      history,
      system,
      stableSystemChars: stableChars,
      // PRM2: what was sent before this turn's new work began.
      promptHashes: [...hashes, hashMessages(history)],
      startedAt,
      historyTokens: estimateTokens(system) + estimateTokens(JSON.stringify(history)),
      historyCut: conversation.lastSeq - covered > historyStepLimit,
      contextWindowTokens: windowOf(deps, bot.model),
    };
  });
}

async function runTurn(
  durable: DurableContext,
  deps: LoopDependencies,
  logger: Logger,
  conversationId: string,
  turnId: string,
  batch: readonly InboxMessage[],
  trigger: TurnTrigger,
  take: (waiterId?: string | null) => Promise<InboxMessage[]>,
  save: (step: StepInput, name?: string) => Promise<{ seq: number }>,
): Promise<EndedTurn & { outcome: TurnOutcome }> {
  const startedAt = await durable.now();
  const load = async () => {
    const loaded = await loadTurnContext(durable, deps, conversationId, turnId, batch, startedAt);
    if (loaded === null) throw new ConversationGone(); // LOOP8
    return loaded;
  };
  let context = await load();
  const copyNote = await copyUploads(durable, deps, context.accountId, batch); // LOOP14
  if (copyNote !== undefined)
    context = { ...context, history: [...context.history, { role: "user", text: copyNote }] };
  // LOOP9: a history over its budget is compacted at the turn's first step boundary.
  if (
    context.historyCut ||
    context.historyTokens >
      historyBudget(compactionOf(deps), { contextWindowTokens: context.contextWindowTokens })
  ) {
    if (await compactConversation(durable, deps, logger, context, conversationId, turnId))
      context = await load();
  }

  const running = deps.interrupts.begin(conversationId, startedAt);
  let lastSeq = 0;
  const tracked = async (step: StepInput, name?: string) => {
    const saved = await save(step, name);
    lastSeq = Math.max(lastSeq, saved.seq);
    return saved;
  };
  let ended: unknown;
  let outcome: TurnOutcome = "error";
  try {
    outcome = await turnCalls(
      durable,
      deps,
      logger,
      conversationId,
      turnId,
      trigger,
      context,
      running.signal,
      take,
      tracked,
      async () => {
        // LOOP9: the provider said the conversation is too long: compact now, whatever the budget.
        await compactConversation(durable, deps, logger, context, conversationId, turnId);
        context = await load();
        return context;
      },
    );
  } catch (error) {
    running.end();
    // An attempt the engine will retry stops here; the retry runs the turn again from the journal.
    if (!(error instanceof StepFailedError || error instanceof ConversationGone)) throw error;
    ended = error;
  }
  running.end();
  // The turn is over, however it ended: sources release what they held (the computer's hold).
  await deps.tools.endTurn({
    accountId: context.accountId,
    botId: context.bot.id,
    conversationId,
    turnId,
    trigger,
    durable,
  });
  if (ended !== undefined) throw ended;
  const fromSeq = Math.min(...batch.map((message) => message.seq));
  return {
    accountId: context.accountId,
    botId: context.bot.id,
    conversationId,
    turnId,
    fromSeq,
    toSeq: Math.max(lastSeq, fromSeq),
    outcome,
  };
}

async function turnCalls(
  durable: DurableContext,
  deps: LoopDependencies,
  logger: Logger,
  conversationId: string,
  turnId: string,
  trigger: TurnTrigger,
  initialContext: TurnContext,
  interrupt: AbortSignal,
  take: (waiterId?: string | null) => Promise<InboxMessage[]>,
  save: (step: StepInput, name?: string) => Promise<{ seq: number }>,
  compactAndReload: () => Promise<TurnContext>,
): Promise<TurnOutcome> {
  const { events } = deps;
  let context = initialContext;
  let messages: ModelMessage[] = [...context.history];
  let retriedAfterOverflow = false;
  const maxCalls = deps.maxModelCallsPerTurn ?? 50;
  const fail = (index: number, error: { code: string; message: string }) =>
    save(
      {
        conversationId,
        id: `${turnId}:${index}:error`,
        turnId,
        kind: "error",
        payload: error satisfies Api.ErrorPayload,
      },
      "send-to-user",
    );
  const stop = (index: number, stopped: Api.InterruptedPayload["stopped"]) =>
    save(
      {
        conversationId,
        id: `${turnId}:${index}:interrupted`,
        turnId,
        kind: "interrupted",
        payload: { reason: "owner", stopped } satisfies Api.InterruptedPayload,
      },
      "send-to-user",
    );

  for (let index = 0; ; index++) {
    if (index >= maxCalls) {
      await fail(index, {
        code: "turn_too_long",
        message: `The bot stopped after ${maxCalls} model calls without replying. Send a message to let it continue.`,
      });
      return "error";
    }

    const call: ModelCallInfo = {
      accountId: context.accountId,
      botId: context.bot.id,
      conversationId,
      turnId,
      index,
      trigger,
      botModel: context.bot.model,
    };
    let spec = context.bot.model;
    let stopBeforeCall = false;
    for (const hook of deps.beforeModelCall ?? []) {
      const chosen = await hook(durable, call); // LOOP11
      if (chosen?.model !== undefined) spec = chosen.model;
      if (chosen?.stop === true) {
        stopBeforeCall = true;
        break;
      }
    }
    if (stopBeforeCall) {
      await stop(index, []); // LOOP7: nothing was running; the turn ends here
      return "interrupted";
    }

    const outcome = await infer(
      durable,
      deps,
      logger,
      conversationId,
      turnId,
      context,
      spec,
      messages,
      interrupt,
      index,
    );
    if (
      !outcome.ok &&
      outcome.interrupted !== true &&
      outcome.contextOverflow === true &&
      !retriedAfterOverflow
    ) {
      // LOOP9: compact, then ask once more with the shorter history (the turn's own steps are
      // in the store, so the reloaded history has them).
      retriedAfterOverflow = true;
      context = await compactAndReload();
      messages = [...context.history];
      index--;
      continue;
    }
    if (!outcome.ok) {
      if (outcome.interrupted === true) {
        // The streamed text of the stopped call belongs to nothing now.
        events.publish({ type: "delta", conversationId, turnId, text: "", reset: true });
        await stop(index, [{ kind: "model" }]); // LOOP7
        return "interrupted";
      }
      await fail(index, outcome.error);
      return "error";
    }

    const { result } = outcome;
    const usage = {
      inputTokens: result.usage.inputTokens,
      outputTokens: result.usage.outputTokens,
    };
    const cached = result.usage.cachedInputTokens;
    for (const hook of deps.afterModelCall ?? [])
      await hook(durable, {
        ...call,
        spec,
        model: result.model,
        usage: cached === undefined ? usage : { ...usage, cachedInputTokens: cached },
      }); // LOOP11
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
            prompt: context.promptHashes,
          } satisfies Api.ReplyPayload,
        },
        "send-to-user",
      );
      return "reply";
    }

    // Provider call ids differ between providers and attempts; ours come from the journal (LOOP2).
    const toolCalls: ToolCall[] = result.toolCalls.map((call, callIndex) => ({
      ...call,
      id: providerSafeCallId(`${turnId}:${index}:${callIndex}`),
    }));
    await save({
      conversationId,
      id: `${turnId}:${index}:model`,
      turnId,
      kind: "model",
      payload: {
        text: result.text,
        toolCalls,
        model: result.model,
        usage,
        prompt: context.promptHashes,
      } satisfies Api.ModelPayload,
    });
    messages.push({ role: "assistant", text: result.text, toolCalls });

    const stopped: Api.InterruptedPayload["stopped"] = [];
    let noReply: string | undefined;
    for (const call of toolCalls) {
      let toolResult: ToolResult;
      try {
        toolResult = await deps.tools.execute(call.name, call.input, {
          accountId: context.accountId,
          route: context.route,
          botId: context.bot.id,
          conversationId,
          turnId,
          trigger,
          callId: call.id,
          durable,
          signal: interrupt,
        });
      } catch (error) {
        if (!(error instanceof StepFailedError)) throw error;
        toolResult = { output: `The tool failed: ${error.message}`, isError: true };
      }
      if (toolResult.details?.interrupted === true)
        stopped.push({ kind: "tool", callId: call.id, name: call.name });
      if (toolResult.endTurn?.kind === "no_reply") noReply ??= toolResult.endTurn.reason; // LOOP12
      if (toolResult.isError && toolResult.details?.interrupted !== true)
        logger.warn("tool call failed", {
          tool: call.name,
          callId: call.id,
          output: toolResult.output.slice(0, 500),
        });
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
          durationMs: toolResult.durationMs ?? 0,
        } satisfies Api.ToolPayload,
      });
      messages.push({
        role: "tool",
        callId: call.id,
        name: call.name,
        output: toolResult.output,
        isError: toolResult.isError,
        ...(toolResult.media === undefined ? {} : { media: toolResult.media }),
      });
    }
    if (stopped.length > 0) {
      await stop(index, stopped); // LOOP7
      return "interrupted";
    }
    if (noReply !== undefined) {
      await save(
        {
          conversationId,
          id: `${turnId}:${index}:no_reply`,
          turnId,
          kind: "no_reply",
          payload: { reason: noReply } satisfies Api.NoReplyPayload,
        },
        "send-to-user",
      ); // LOOP12
      return "no_reply";
    }

    // Step boundary: messages sent while the tools ran join this turn. LOOP3
    const steer = await take();
    for (const message of steer) messages.push(inboxToModel(message));
    const steerNote = await copyUploads(durable, deps, context.accountId, steer); // LOOP14
    if (steerNote !== undefined) messages.push({ role: "user", text: steerNote });
  }
}

async function infer(
  durable: DurableContext,
  deps: LoopDependencies,
  logger: Logger,
  conversationId: string,
  turnId: string,
  context: TurnContext,
  spec: string | null,
  messages: readonly ModelMessage[],
  interrupt: AbortSignal,
  index: number,
): Promise<InferOutcome> {
  const { events } = deps;
  try {
    return await durable.step("infer", async (attempt): Promise<InferOutcome> => {
      if (interrupt.aborted) return { ok: false, interrupted: true }; // LOOP7
      try {
        const model = deps.resolveModel(spec);
        const result = await model.infer({
          system: context.system,
          stableSystemChars: context.stableSystemChars,
          messages: [...messages],
          tools: context.tools,
          signal: AbortSignal.any([attempt, interrupt]),
          onTextDelta: (text) => events.publish({ type: "delta", conversationId, turnId, text }),
          onRetry: (info) => {
            logger.warn("model call failed; retrying", { call: index, ...info });
            events.publish({ type: "delta", conversationId, turnId, text: "", reset: true });
          },
        });
        return { ok: true, result };
      } catch (error) {
        if (interrupt.aborted) return { ok: false, interrupted: true }; // LOOP7
        const roost = toRoostError(error);
        if (isReportable(roost)) {
          logger.error("model call failed", {
            call: index,
            code: roost.code,
            error: roost.message,
          });
          return {
            ok: false,
            error: { code: roost.code, message: roost.message },
            ...(isContextOverflow(roost) ? { contextOverflow: true } : {}),
          };
        }
        throw error;
      }
    });
  } catch (error) {
    if (!(error instanceof StepFailedError)) throw error;
    logger.error("model call failed for good", { call: index, error: error.message });
    return { ok: false, error: { code: "step_failed", message: error.message } };
  }
}

/** Errors the user should read about, rather than ones the engine should retry. */
function isReportable(error: RoostError): boolean {
  return !error.retryable && error.code !== "internal";
}

/** The model's context window; the default when the model cannot be resolved (infer reports why). */
function windowOf(deps: LoopDependencies, spec: string | null): number {
  try {
    return contextWindowOf(deps.resolveModel(spec));
  } catch {
    return defaultContextWindowTokens;
  }
}

function compactionOf(deps: LoopDependencies): CompactionSettings {
  return deps.compaction ?? defaultCompaction;
}

/** LOOP9, CMP1–CMP3 (compaction.ts); never throws for a model failure. */
function compactConversation(
  durable: DurableContext,
  deps: LoopDependencies,
  logger: Logger,
  context: TurnContext,
  conversationId: string,
  turnId: string,
): Promise<boolean> {
  return compact(
    durable,
    {
      store: deps.store,
      resolveModel: (spec) => deps.resolveModel(spec),
      ...(deps.beforeCompaction === undefined ? {} : { beforeSummary: deps.beforeCompaction }),
      logger,
    },
    compactionOf(deps),
    {
      accountId: context.accountId,
      botId: context.bot.id,
      model: context.bot.model,
      conversationId,
      turnId,
    },
    // Each part folded into the summary must fit the model with room to answer.
    Math.max(2000, Math.floor(context.contextWindowTokens * 0.4)),
  );
}

/**
 * After the follow-up window, while the provider's cache is still warm, a conversation past its
 * idle budget is compacted, unless something is about to wake it (LOOP9).
 */
async function compactWhenIdle(
  durable: DurableContext,
  deps: LoopDependencies,
  logger: Logger,
  conversationId: string,
  key: string,
): Promise<void> {
  const due = await durable.step("compact:check", async () => {
    if ((await deps.wakesSoon?.(conversationId)) === true) return null;
    const conversation = await deps.store.getConversation(conversationId);
    if (conversation === undefined) return null;
    const bot = await deps.store.getBot(conversation.botId);
    if (bot === undefined) return null;
    const summary = await deps.store.latestStepOfKind(conversationId, "summary");
    const covered =
      summary === undefined
        ? 0
        : (summary.payload as unknown as Api.SummaryPayload).coversThroughSeq;
    const steps = await deps.store.listSteps(conversationId, {
      afterSeq: Math.max(covered, conversation.lastSeq - historyStepLimit),
      limit: historyStepLimit + 1,
    });
    const tokens = estimateTokens(JSON.stringify(steps.map((step) => step.payload)));
    const window = windowOf(deps, bot.model);
    if (tokens <= historyBudget(compactionOf(deps), { contextWindowTokens: window }, true))
      return null;
    return { accountId: conversation.accountId, botId: bot.id, model: bot.model, window };
  });
  if (due === null) return;
  await compact(
    durable,
    {
      store: deps.store,
      resolveModel: (spec) => deps.resolveModel(spec),
      ...(deps.beforeCompaction === undefined ? {} : { beforeSummary: deps.beforeCompaction }),
      logger,
    },
    compactionOf(deps),
    { ...due, conversationId, turnId: key },
    Math.max(2000, Math.floor(due.window * 0.4)),
  );
}
