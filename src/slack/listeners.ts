/**
 * Listener routines on Slack messages (docs/slack.md "Listeners"): a routine with the trigger
 * `{"type": "slack", "phrase"?}` runs for the messages of the channels the bot is in that it
 * hears: `phrase` matched case-insensitively as a substring, or, with no phrase, every new
 * top-level message.
 *
 *   SLK19 only messages sent after the routine was saved count (the message's `ts` against the
 *         routine's last save), and only while it is enabled.
 *   SLK20 a message starts a routine's run at most once: the run id is derived from the routine
 *         and the message (`channel`, `ts`), so Slack's retries and the twin events of one
 *         message start one run (the scheduler is idempotent per run id, RST3).
 *   SLK21 the message reaches the run as the webhook payload does: fenced as untrusted outside
 *         content (routines/ runs.ts), never as an instruction.
 *   SLK28 a run's answer goes back to the heard message's thread (its `thread_ts`, or the message
 *         itself when top-level), in its own workspace, once (turns.ts afterTurn, SLST4, SLST7).
 */
import { createHash } from "node:crypto";
import type { Logger } from "../log/index.ts";
import type { RoutineService } from "../routines/index.ts";
import type { Bot, Store } from "../store/index.ts";

export interface HeardMessage {
  /** The workspace it was said in (an OAuth link has many). */
  teamId: string;
  channel: string;
  user: string;
  text: string;
  ts: string;
  threadTs: string | null;
}

export function createSlackListeners(deps: {
  /** Known once the routines service exists (it is made after the Slack wiring). */
  routines: () => RoutineService | undefined;
  store: Store;
  logger: Logger;
}) {
  return async function hear(bot: Bot, message: HeardMessage): Promise<number> {
    const routines = deps.routines();
    if (routines === undefined) return 0;
    const sentAtMs = Math.floor(Number(message.ts) * 1000);
    const listening = (await routines.list(bot.accountId, bot.id)).filter(
      (routine) =>
        routine.enabled && routine.trigger.type === "slack" && sentAtMs > routine.updatedAt, // SLK19
    );
    let started = 0;
    for (const routine of listening) {
      if (routine.trigger.type !== "slack") continue;
      const phrase = routine.trigger.phrase;
      const hears =
        phrase === undefined
          ? message.threadTs === null || message.threadTs === message.ts
          : message.text.toLowerCase().includes(phrase.toLowerCase());
      if (!hears) continue;
      const runId = `rrun_slack_${createHash("sha256")
        .update(`${routine.id}:${message.channel}:${message.ts}`)
        .digest("hex")
        .slice(0, 24)}`; // SLK20
      // SLK28: recorded before the run starts, so its turn finds where to answer.
      await deps.store.putSlackRunReply({
        runId,
        botId: bot.id,
        slackTeamId: message.teamId,
        channel: message.channel,
        threadTs: message.threadTs ?? message.ts,
      });
      await routines.startWebhookRun(routine.id, {
        runId,
        kind: "webhook",
        scheduledAt: null,
        payload: {
          slack: {
            channel: message.channel,
            user: message.user,
            text: message.text,
            ts: message.ts,
            threadTs: message.threadTs,
          },
        }, // SLK21
      });
      started += 1;
    }
    if (started > 0)
      deps.logger.info("slack message started listener routines", { botId: bot.id, started });
    return started;
  };
}
