/**
 * An emoji reaction as a result (issue 14 §2 "Out"): the `react` tool, offered only in a Slack
 * conversation, adds a reaction (`reactions.add`) to the Slack message the turn answers.
 *
 *   SLK18 the tool is offered only when the conversation has a Slack place; it reacts only to a
 *         message of that conversation (its newest one from Slack), never to one the model names.
 */
import { z } from "zod";
import type { Store } from "../store/index.ts";
import { defineToolSource, serverTool, type ToolSource } from "../tools/index.ts";
import { SlackCallError } from "./client.ts";
import { teamOfPlace, type SlackLinks } from "./service.ts";

const input = z.strictObject({
  emoji: z
    .string()
    .regex(/^:?[a-z0-9_+'-]{1,100}:?$/, {
      error: 'emoji is a Slack emoji name such as "white_check_mark" or "eyes"',
    })
    .describe('A Slack emoji name, e.g. "white_check_mark", "eyes", "tada"'),
});

/** How far back the newest Slack message is looked for. */
const window = 200;

export function createSlackReactTool(deps: { store: Store; links: SlackLinks }): ToolSource {
  const { store, links } = deps;
  const tool = serverTool({
    name: "react",
    description:
      "Add an emoji reaction to the Slack message you are answering (for example white_check_mark when a task is done, eyes when you are on it). Use it instead of a reply when a reaction says it all.",
    input,
    async run(request, context) {
      const conversation = await store.getConversation(context.conversationId);
      const place = await store.slackPlaceOfConversation(context.conversationId);
      const opened =
        place === undefined ? undefined : await links.open(context.botId, teamOfPlace(place)); // SLK27
      if (
        conversation === undefined ||
        place === undefined ||
        opened === undefined ||
        opened.token === ""
      )
        return {
          output: "This conversation is not in Slack; there is nothing to react to.",
          isError: true,
        };
      const messages = await store.listMessages(conversation.id, {
        afterSeq: Math.max(0, conversation.lastSeq - window),
        limit: window,
      });
      // SLK18: the newest message that came from Slack (its id names its channel and ts).
      const target = messages
        .map((message) => /^slack:([A-Z0-9]+):(\d+\.\d+)$/.exec(message.clientMessageId))
        .filter((match) => match !== null)
        .at(-1);
      if (target === undefined)
        return { output: "No Slack message to react to in this conversation.", isError: true };
      const name = request.emoji.replace(/^:|:$/g, "");
      try {
        await links
          .clientOf(opened.link, opened.token)
          .call("reactions.add", { channel: target[1], timestamp: target[2], name });
      } catch (error) {
        if (error instanceof SlackCallError && error.slackError === "already_reacted")
          return { output: `Already reacted with :${name}:.`, isError: false };
        if (error instanceof SlackCallError && !error.retryable)
          return { output: `Slack refused the reaction: ${error.message}`, isError: true };
        throw error;
      }
      return { output: `Reacted with :${name}:.`, isError: false, details: { emoji: name } };
    },
  });
  const source = defineToolSource("slack", [tool]);
  return {
    ...source,
    // SLK18: offered only in a Slack conversation.
    async specs(context) {
      return (await store.slackPlaceOfConversation(context.conversationId)) === undefined
        ? []
        : source.specs(context);
    },
  };
}
