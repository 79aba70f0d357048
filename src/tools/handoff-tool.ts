/**
 * `ask_user_to_take_over` (issue 13 §2, docs/live-view.md): a bot asks its owner to take over its
 * screen (a login, a CAPTCHA). The call parks the turn on a durable promise, like an approval
 * (decision 0022), notifies the owner with a link to the live view, and resumes when the person
 * hands the screen back, answering a fresh snapshot of the screen.
 *
 * Invariants:
 *   HOF1 the call parks on a Restate awakeable with a durable timer: no process keeps it, and a
 *        restart (even a kill -9) keeps it parked until the hand-back or the timeout.
 *   HOF2 the handoff lives in the store (SCL4), keyed by the call, so a replay neither notifies
 *        twice nor makes a second one; after the wait a journaled step reads what happened.
 *   HOF3 a hand-back settles the handoff in the store before it wakes the call, so a lost wake
 *        still ends as a hand-back when the timer fires.
 *   HOF4 a bot refused its screen while a person held it (not a handoff it asked for) is told
 *        when they hand it back: the refused call leaves a notice (a handoff with no waiter), and
 *        the hand-back delivers one message to each such conversation (idempotent per notice).
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { Notifier } from "../notifications/index.ts";
import type { ScreenHandoff, Store } from "../store/index.ts";
import type { ToolSource } from "./router.ts";
import type { ToolCallContext, ToolResult } from "./types.ts";

export const handoffToolName = "ask_user_to_take_over";

/** @default 30 minutes */
export const defaultHandoffTimeoutMs = 30 * 60_000;

/** Calls the computer's worker (the gateway), for the fresh snapshot after a hand-back. */
export interface HandoffWorkerCaller {
  call(
    computerId: string,
    request: { callId: string; tool: string; input: unknown; timeoutMs: number },
  ): Promise<
    { ok: true; output: unknown } | { ok: false; error: { code: string; message: string } }
  >;
  isConnected(computerId: string): boolean;
}

const inputSchema = z.strictObject({
  reason: z
    .string()
    .min(1)
    .max(500)
    .describe("What the person should do, in one line, e.g. 'Log in to example.com'"),
  screen: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,100}$/)
    .optional()
    .describe("The screen's id; your own screen when left out"),
});

const description =
  "Ask your owner to take over your screen for something only a person should do: a login, a " +
  "CAPTCHA, a payment confirmation. Your turn waits until they hand the screen back (or " +
  "30 minutes pass); the result is a fresh snapshot of the screen. Do not ask for what you can " +
  "do yourself.";

export const handoffIdOf = (callId: string) =>
  `hof_${createHash("sha256").update(callId).digest("base64url").slice(0, 22)}`;

export function createHandoffTool(deps: {
  store: Store;
  notifier: Notifier;
  gateway: HandoffWorkerCaller;
  computerOf(accountId: string): Promise<string>;
  timeoutMs?: number;
}): ToolSource {
  const timeoutMs = deps.timeoutMs ?? defaultHandoffTimeoutMs;
  const spec = {
    name: handoffToolName,
    description,
    inputSchema: z.toJSONSchema(inputSchema, { io: "input" }),
  };

  async function snapshotOf(computerId: string, screenId: string, callId: string) {
    if (!deps.gateway.isConnected(computerId))
      return "(No fresh snapshot: the computer is asleep. Take a new snapshot when you go on.)";
    const result = await deps.gateway.call(computerId, {
      callId: `${callId}:snapshot`,
      tool: "screens.snapshot",
      input: { screenId },
      timeoutMs: 30_000,
    });
    if (!result.ok)
      return `(No fresh snapshot: ${result.error.message}. Take a new snapshot when you go on.)`;
    const output = result.output;
    if (typeof output === "string") return output;
    if (typeof output === "object" && output !== null && "text" in output)
      return String(output.text);
    return JSON.stringify(output);
  }

  return {
    name: "handoff",
    specs: async () => [spec],
    async execute(name, input, context: ToolCallContext): Promise<ToolResult> {
      if (name !== handoffToolName)
        return { output: `There is no tool named ${JSON.stringify(name)}.`, isError: true };
      const parsed = inputSchema.safeParse(input);
      if (!parsed.success)
        return {
          output: `Invalid input for ${name}: ${z.prettifyError(parsed.error)}`,
          isError: true,
        };
      const { reason } = parsed.data;
      const screenId = parsed.data.screen ?? `s-${context.botId}`;
      const id = handoffIdOf(context.callId);
      const durable = context.durable;
      const waiter = durable.awaitExternal<string>(); // HOF1
      const asked = await durable.step("handoff:ask", async () => {
        const computerId = await deps.computerOf(context.accountId);
        const bot = await deps.store.getBot(context.botId);
        const handoff = await deps.store.createScreenHandoff({
          id,
          accountId: context.accountId,
          botId: context.botId,
          conversationId: context.conversationId,
          computerId,
          screenId,
          waiterId: waiter.id,
          reason,
        }); // HOF2
        const link = `/c/${encodeURIComponent(context.conversationId)}?screen=${encodeURIComponent(screenId)}`;
        await deps.notifier.notify({
          id: `handoff:${id}`,
          accountId: context.accountId,
          kind: "needs_input",
          title: `${bot?.name ?? "A bot"} asks you to take over its screen`,
          body: `${reason}\nOpen the live view (${link}), press Take control, and press Hand back when you are done.`,
          botId: context.botId,
          conversationId: context.conversationId,
          subjectId: id,
        });
        await deps.store.audit({
          accountId: context.accountId,
          action: "screen.handoff_requested",
          target: `${computerId}/${screenId}`,
          detail: { handoffId: id, botId: context.botId, reason },
        });
        return { computerId, createdAt: handoff.createdAt };
      });
      const waitedAt = await durable.now();
      await waiter.wait(Math.max(1000, asked.createdAt + timeoutMs - waitedAt)); // HOF1
      const outcome = await durable.step("handoff:settle", async () => {
        // HOF2, HOF3: whatever woke the call, the store says what happened.
        let handoff = await deps.store.getScreenHandoff(id);
        if (handoff?.state === "pending")
          handoff = (await deps.store.settleScreenHandoff(id, "expired")).handoff;
        const state = handoff?.state ?? "expired";
        const snapshot =
          state === "handed_back"
            ? await snapshotOf(asked.computerId, screenId, context.callId)
            : "";
        return { state, snapshot };
      });
      if (outcome.state !== "handed_back")
        return {
          output: `Nobody took over the screen within ${Math.round(timeoutMs / 60_000)} minutes. Tell the user what you needed them to do, and end your turn.`,
          isError: true,
          details: { handoffId: id, screenId, state: outcome.state },
        };
      return {
        output: `The person handed the screen back. A fresh snapshot of it:\n\n${outcome.snapshot}`,
        isError: false,
        details: { handoffId: id, screenId, state: outcome.state },
      };
    },
  };
}

/**
 * HOF3: settles a screen's pending handoffs as handed back, then wakes their calls. Answers how
 * many there were.
 */
/** A notice's waiter: nothing is parked; the conversation is told with a message (HOF4). */
export const noticeWaiter = "";

/** The message a conversation gets when the screen its bot was refused is handed back (HOF4). */
export const handedBackNotice =
  "A person handed your screen back. You can use the browser and the computer tool on it again.";

/**
 * HOF4: the bot's `browser` or `computer` call was refused because a person held its screen:
 * remember to tell its conversation when they hand it back (idempotent per call).
 */
export async function recordScreenNotice(
  store: Store,
  notice: {
    callId: string;
    accountId: string;
    botId: string;
    conversationId: string;
    computerId: string;
  },
): Promise<void> {
  await store.createScreenHandoff({
    id: `notice_${notice.callId.replace(/[^A-Za-z0-9_-]/g, "_")}`,
    accountId: notice.accountId,
    botId: notice.botId,
    conversationId: notice.conversationId,
    computerId: notice.computerId,
    screenId: `s-${notice.botId}`,
    waiterId: noticeWaiter,
    reason: "a call was refused while a person held the screen",
  });
}

export async function handBackScreen(
  store: Store,
  wake: (waiterId: string, value: string) => Promise<void>,
  computerId: string,
  screenId: string,
  /** Tells a conversation whose bot was refused the screen meanwhile (a notice, HOF4). */
  tell?: (notice: ScreenHandoff) => Promise<void>,
): Promise<number> {
  const pending = await store.listPendingScreenHandoffs(computerId, screenId);
  let count = 0;
  const told = new Set<string>();
  for (const handoff of pending) {
    const { changed } = await store.settleScreenHandoff(handoff.id, "handed_back");
    if (!changed) continue;
    if (handoff.waiterId === noticeWaiter) {
      // HOF4: one message per conversation, however many of its calls were refused.
      if (tell !== undefined && !told.has(handoff.conversationId)) {
        told.add(handoff.conversationId);
        await tell(handoff);
      }
      continue;
    }
    count += 1;
    await store.audit({
      accountId: handoff.accountId,
      action: "screen.handed_back",
      target: `${computerId}/${screenId}`,
      detail: { handoffId: handoff.id, botId: handoff.botId },
    });
    await wake(handoff.waiterId, "handed_back");
  }
  return count;
}
