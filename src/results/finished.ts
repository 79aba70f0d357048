/**
 * The bot's "notify me when this bot finishes or needs input" setting (Bot.notify): an afterTurn
 * hook (LOOP11) that tells the owner when a turn of such a bot settles.
 *
 *   reply     → `finished`, with the start of the reply;
 *   error     → `needs_input`: the bot stopped and waits for the owner;
 *   no_reply  → nothing (the bot decided nothing needs saying);
 *   interrupted → nothing (the owner stopped it themselves).
 * Drafts tell the owner as they are made (drafts/tool.ts).
 *
 * Invariants:
 *   NTF1 one notification per turn: its id is the turn's (`turn:<turnId>`), and it is sent from a
 *        journaled step, so a replay of the turn's end notifies once.
 */
import type { DurableContext } from "../engine/index.ts";
import type { SettledTurn } from "../loop/index.ts";
import type { Notifier } from "../notifications/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Store } from "../store/index.ts";

export function createFinishedHook(deps: { store: Store; notifier: Notifier }) {
  return async (durable: DurableContext, turn: SettledTurn): Promise<void> => {
    if (turn.outcome !== "reply" && turn.outcome !== "error") return;
    await durable.step("notify-settled", async () => {
      const bot = await deps.store.getBot(turn.botId);
      if (bot?.notify !== true) return null;
      const last = await deps.store.latestStepOfKind(turn.conversationId, turn.outcome);
      const text =
        last === undefined
          ? ""
          : turn.outcome === "reply"
            ? (last.payload as unknown as Api.ReplyPayload).text
            : (last.payload as unknown as Api.ErrorPayload).message;
      await deps.notifier.notify({
        id: `turn:${turn.turnId}`, // NTF1
        accountId: turn.accountId,
        kind: turn.outcome === "reply" ? "finished" : "needs_input",
        title:
          turn.outcome === "reply" ? `${bot.name} finished` : `${bot.name} stopped and needs you`,
        body: text.slice(0, 300),
        botId: bot.id,
        conversationId: turn.conversationId,
      });
      return null;
    });
  };
}
