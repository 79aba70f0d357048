/**
 * The `message_bot` server tool (issue 11 §2): a bot sends a message, asynchronously, to another
 * of the same account's bots. The receiver wakes in a conversation of its own, one per sender
 * (store RES1, titled "From <sender>"), and may answer back the same way: a message to the bot
 * that started the turn goes into the conversation that bot wrote from, so a question and its
 * answer stay together on both sides.
 *
 * Invariants:
 *   BOT1 only the account's own bots are reachable: a name or id of another account's bot reads
 *        exactly like one that does not exist (the store finds bots by account).
 *   BOT2 every message carries its hop: one more than the highest hop of the bot messages the
 *        sender has read since a person (or a routine) last wrote in its conversation, and than
 *        its turn's trigger's; 1 when a person started the chain. Bot messages that join a
 *        running turn count too, so a turn that keeps absorbing answers cannot restart the
 *        count. A message past ROOST_BOT_MESSAGE_MAX_HOPS is refused with a result telling the
 *        bot to stop, so two bots can never loop forever.
 *   BOT3 a replayed call sends nothing twice: the delivery is idempotent by the call id (its
 *        client message id), and the thread is made once (RES1).
 *   BOT4 the message works for whoever the sending turn works for (its author), never for the
 *        bot, so usage and the receiver's trigger name that person.
 */
import { z } from "zod";
import type { Store } from "../store/index.ts";
import type { DeliveredMessage } from "./types.ts";
import type { Bot, Message } from "../store/index.ts";
import { serverTool, type AnyServerTool, type ToolCallContext } from "../tools/index.ts";

export const botMessageLimits = { textChars: 20_000 } as const;

const input = z.strictObject({
  to: z.string().min(1).max(100).describe("The other bot's name (or id)"),
  text: z.string().min(1).max(botMessageLimits.textChars).describe("The message"),
});

export interface MessageBotDependencies {
  store: Store;
  /** Kicker.deliver: stores the message and hands it to the receiver's loop. */
  deliver(message: DeliveredMessage): Promise<{ message: Message; created: boolean }>;
  /** BOT2 @default 4 */
  maxHops: number;
}

/** How many messages back the chain is looked for (a chain is far shorter than this). */
const chainWindow = 200;

/** BOT2: the highest hop among bot messages read since a person (or routine) last wrote. */
async function chainHop(store: Store, conversationId: string): Promise<number> {
  const conversation = await store.getConversation(conversationId);
  if (conversation === undefined) return 0;
  const messages = await store.listMessages(conversationId, {
    afterSeq: Math.max(0, conversation.lastSeq - chainWindow),
    limit: chainWindow,
  });
  let hop = 0;
  for (const message of messages) {
    if (message.takenBy === null) continue; // not read yet
    hop = message.source?.kind === "bot" ? Math.max(hop, message.source.hop) : 0;
  }
  return hop;
}

/** BOT1: the account's bot by id or name. */
async function findBot(
  store: Store,
  accountId: string,
  nameOrId: string,
): Promise<Bot | undefined> {
  const byId = await store.getBot(nameOrId);
  if (byId !== undefined) return byId.accountId === accountId ? byId : undefined;
  return store.findBotByName(accountId, nameOrId.trim());
}

/** Where the message goes: back into the conversation the receiver wrote from, or its thread. */
async function destination(
  store: Store,
  context: ToolCallContext,
  sender: Bot,
  receiver: Bot,
): Promise<string> {
  const source = context.trigger?.source;
  if (source?.kind === "bot" && source.fromBotId === receiver.id) {
    const origin = await store.getConversation(source.fromConversationId);
    if (
      origin !== undefined &&
      origin.accountId === context.accountId &&
      origin.botId === receiver.id
    )
      return origin.id;
  }
  const thread = await store.ensureBotThread({
    accountId: context.accountId,
    fromBotId: sender.id,
    toBotId: receiver.id,
    title: `From ${sender.name}`,
  });
  return thread.conversationId;
}

export function messageBotTool(deps: MessageBotDependencies): AnyServerTool {
  return serverTool({
    name: "message_bot",
    description: `Send a message to another of the user's bots (by name). It wakes in its own conversation and may answer back; an answer arrives here as a message. Chains of bot messages stop after ${deps.maxHops} hops, so answer only when there is something to say (use no_reply otherwise).`,
    input,
    async run(request, context) {
      const source = context.trigger?.source;
      const hop =
        Math.max(
          source?.kind === "bot" ? source.hop : 0,
          await chainHop(deps.store, context.conversationId),
        ) + 1; // BOT2
      if (hop > deps.maxHops)
        return {
          output: `Not sent: this chain of bot-to-bot messages has reached its limit of ${deps.maxHops} hops. Do not message another bot about it again; finish here (reply to the user, or use no_reply).`,
          isError: true,
          details: { code: "hop_limit", hop, maxHops: deps.maxHops },
        };
      const receiver = await findBot(deps.store, context.accountId, request.to);
      if (receiver === undefined) {
        const names = (await deps.store.listBots(context.accountId))
          .filter((bot) => bot.id !== context.botId)
          .map((bot) => JSON.stringify(bot.name));
        return {
          output: `There is no bot ${JSON.stringify(request.to)} among the user's bots.${names.length === 0 ? " The user has no other bot." : ` Their other bots: ${names.join(", ")}.`}`,
          isError: true,
          details: { code: "no_such_bot" },
        };
      }
      if (receiver.id === context.botId)
        return {
          output: "That is you; message another bot.",
          isError: true,
          details: { code: "self" },
        };
      const sender = await deps.store.getBot(context.botId);
      if (sender === undefined) return { output: "This bot is gone.", isError: true };
      const conversationId = await destination(deps.store, context, sender, receiver);
      const { message } = await deps.deliver({
        conversationId,
        clientMessageId: `bot:${context.callId}`, // BOT3
        authorAccountId: context.trigger?.authorAccountId ?? context.accountId, // BOT4
        text: request.text,
        source: {
          kind: "bot",
          fromBotId: sender.id,
          fromConversationId: context.conversationId,
          hop,
        },
      });
      return {
        output: `Sent to ${receiver.name} (hop ${hop} of at most ${deps.maxHops}). It answers in its own time; if it answers back, its message arrives in this conversation.`,
        isError: false,
        details: {
          toBotId: receiver.id,
          toBotName: receiver.name,
          conversationId,
          messageId: message.id,
          hop,
        },
      };
    },
  });
}
