/**
 * API1: what a caller may touch is their own. Another account's bot answers 404 exactly like one
 * that does not exist, so ids of other accounts cannot be probed.
 */
import { NotFoundError } from "../errors/index.ts";
import type { Bot, Store } from "../store/index.ts";

/** The account's own bot with this id; `NotFoundError` for a missing bot or another account's. */
export async function ownBotOf(
  store: Pick<Store, "getBot">,
  accountId: string,
  id: string,
): Promise<Bot> {
  const bot = await store.getBot(id);
  if (bot === undefined || bot.accountId !== accountId) throw new NotFoundError("bot", id);
  return bot;
}
