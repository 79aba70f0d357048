/**
 * Conversation titles (issue 16 §2, docs/chat.md "Titles"): a conversation started without one
 * gets a short rule's title from its first message at once, and, for a real model, the bot's
 * model's own short title after its first reply.
 *
 * Invariants:
 *   TTL1 only an automatic title is ever replaced: the default one (`defaultConversationTitle`)
 *        or the rule's title of the first message. A title a person chose is never touched.
 *   TTL2 a title is one line of at most `maxTitleChars` characters, never the raw message: a
 *        shell prompt (`$ `), quote marks, markdown and a trailing full stop are taken off.
 *   TTL3 the model's title is journaled (LOOP1) and failing to get one never fails the turn: the
 *        rule's title stays.
 */
import type { DurableContext } from "../engine/index.ts";
import type { EventHub } from "../events/index.ts";
import type { ModelClient } from "../models/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Store } from "../store/index.ts";
import type { SettledTurn } from "./conversation-loop.ts";

/** @default 60 */
export const maxTitleChars = 60;

/** The title of a conversation created without one (POST /v1/conversations). */
export function defaultConversationTitle(botName: string): string {
  return `Chat with ${botName}`;
}

/** TTL2: one clean line, cut at a word. */
export function cleanTitle(text: string): string {
  let line =
    text
      .split("\n")
      .map((part) => part.trim())
      .find((part) => part !== "") ?? "";
  line = line
    .replace(/^(title:\s*)/i, "")
    .replace(/[`*_~#>]+/g, "")
    .replace(/^["'“‘]+|["'”’]+$/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/[.。]$/, "");
  if (line.length > maxTitleChars) {
    const cut = line.slice(0, maxTitleChars - 1);
    const space = cut.lastIndexOf(" ");
    line = `${(space > maxTitleChars / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
  }
  return line === "" ? "" : line[0]!.toUpperCase() + line.slice(1);
}

/** TTL2: the rule's title for a first message (the demo model's, and every title until a better one). */
export function ruleTitle(message: string): string {
  const first = message.trim().split("\n")[0]?.trim() ?? "";
  const command = /^\$\s*(.+)$/.exec(first); // the demo model's shell prompt
  const title = cleanTitle(command === null ? message : `Run ${command[1]!}`);
  return title === "" ? "New chat" : title;
}

/** TTL1: whether `title` is still one the platform chose. */
export function isAutomaticTitle(title: string, botName: string, firstMessage: string): boolean {
  return title === defaultConversationTitle(botName) || title === ruleTitle(firstMessage);
}

/**
 * The rule's title, set when the first message of a conversation with the default title is
 * stored (ask.ts postMessage). Answers the new title, or undefined when it kept its own.
 */
export async function titleFirstMessage(
  store: Store,
  conversationId: string,
  text: string,
): Promise<string | undefined> {
  const conversation = await store.getConversation(conversationId);
  if (conversation === undefined) return undefined;
  const bot = await store.getBot(conversation.botId);
  if (bot === undefined || conversation.title !== defaultConversationTitle(bot.name)) return; // TTL1
  const title = ruleTitle(text);
  await store.renameConversation({ id: conversationId, title, actorAccountId: null });
  return title;
}

/** TTL3: a model that cannot be resolved (no key) makes no title request; the rule's title stays. */
function isDemoOrMissing(resolve: (spec: string | null) => ModelClient, spec: string | null) {
  try {
    return resolve(spec).isDemo;
  } catch {
    return true;
  }
}

const titleInstructions =
  "Write a title for this conversation: at most six words, in the language of the user's message, " +
  "no quotes, no full stop. Answer with the title only.";

/**
 * TTL1–TTL3: after a conversation's first reply, a real model's short title replaces the
 * automatic one; the `renamed` event tells open clients.
 */
export function createTitleHook(deps: {
  store: Store;
  events: EventHub;
  resolveModel(spec: string | null): ModelClient;
}): (durable: DurableContext, turn: SettledTurn) => Promise<void> {
  return async (durable, turn) => {
    if (turn.outcome !== "reply") return;
    const plan = await durable.step("title:plan", async () => {
      const conversation = await deps.store.getConversation(turn.conversationId);
      if (conversation === undefined) return null;
      const bot = await deps.store.getBot(conversation.botId);
      if (bot === undefined || isDemoOrMissing((spec) => deps.resolveModel(spec), bot.model))
        return null;
      const steps = await deps.store.listSteps(turn.conversationId, { limit: 200 });
      const message = steps.find((step) => step.kind === "message");
      const reply = steps.find((step) => step.kind === "reply");
      if (message === undefined || reply === undefined || reply.seq > turn.toSeq) return null;
      // Only the first reply: a later turn finds an earlier reply than its own.
      if (reply.seq < turn.fromSeq) return null;
      const text = (message.payload as unknown as Api.MessagePayload).text;
      if (!isAutomaticTitle(conversation.title, bot.name, text)) return null; // TTL1
      return {
        model: bot.model,
        botName: bot.name,
        text: text.slice(0, 2000),
        reply: (reply.payload as unknown as Api.ReplyPayload).text.slice(0, 2000),
      };
    });
    if (plan === null) return;
    const title = await durable.step("title:ask", async () => {
      try {
        const result = await deps.resolveModel(plan.model).infer({
          system: titleInstructions,
          messages: [
            { role: "user", text: plan.text },
            { role: "assistant", text: plan.reply, toolCalls: [] },
            { role: "user", text: "Title for the conversation above?" },
          ],
          tools: [],
        });
        return cleanTitle(result.text);
      } catch {
        return ""; // TTL3: the rule's title stays
      }
    });
    if (title === "") return;
    await durable.step("title:save", async () => {
      const conversation = await deps.store.getConversation(turn.conversationId);
      if (
        conversation === undefined ||
        !isAutomaticTitle(conversation.title, plan.botName, plan.text) // TTL1: renamed meanwhile
      )
        return;
      await deps.store.renameConversation({
        id: turn.conversationId,
        title,
        actorAccountId: null,
      });
      deps.events.publish({ type: "renamed", conversationId: turn.conversationId, title });
    });
  };
}
