/**
 * Who may use a bot and a conversation (docs/teams.md "Access"): the one check every route and
 * the loop make, so a removed member loses access everywhere at once.
 *
 *   TACC1 a bot is usable by its owner and, while it is published to a team, by that team's
 *         members; to anyone else it does not exist (404, like a missing one).
 *   TACC2 a direct conversation is its starter's alone, and only while they may use its bot;
 *         a shared one is open to everyone who may use its bot.
 *   TACC3 membership is read at every request and at every turn (never cached), so removing a
 *         member ends their access at the next request and their running conversation's next turn.
 */
import { NotFoundError } from "../errors/index.ts";
import type { Bot, Conversation, Store } from "../store/index.ts";

export type BotAccess = "owner" | "teammate";

type AccessStore = Pick<Store, "getBot" | "getTeamRole">;

/** TACC1: how `accountId` may use `bot`; undefined when not at all. */
export async function botAccessOf(
  store: Pick<Store, "getTeamRole">,
  accountId: string,
  bot: Bot,
): Promise<BotAccess | undefined> {
  if (bot.accountId === accountId) return "owner";
  if (bot.teamId === null) return undefined;
  return (await store.getTeamRole(bot.teamId, accountId)) === undefined ? undefined : "teammate"; // TACC3
}

/** TACC1: the bot with this id if `accountId` may use it; NotFoundError otherwise. */
export async function usableBotOf(
  store: AccessStore,
  accountId: string,
  id: string,
): Promise<{ bot: Bot; access: BotAccess }> {
  const bot = await store.getBot(id);
  const access = bot === undefined ? undefined : await botAccessOf(store, accountId, bot);
  if (bot === undefined || access === undefined) throw new NotFoundError("bot", id);
  return { bot, access };
}

/** TACC2: may `accountId` read and write `conversation`? */
export async function mayUseConversation(
  store: AccessStore,
  accountId: string,
  conversation: Conversation,
): Promise<boolean> {
  if (conversation.place === "direct" && conversation.accountId !== accountId) return false;
  const bot = await store.getBot(conversation.botId);
  return bot !== undefined && (await botAccessOf(store, accountId, bot)) !== undefined;
}
