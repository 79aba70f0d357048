/**
 * The `no_reply` server tool (issue 11 §3, LOOP12): the bot decides that nothing needs saying
 * (a routine found nothing new, another bot's message needs no answer). The turn ends with a
 * `no_reply` step, shown as "No reply needed", instead of a reply.
 */
import { z } from "zod";
import { serverTool, type AnyServerTool } from "../tools/index.ts";

const input = z.strictObject({
  reason: z.string().min(1).max(500).describe("Why nothing needs saying, in a few words"),
});

export function noReplyTool(): AnyServerTool {
  return serverTool({
    name: "no_reply",
    description:
      "End this turn without a reply, when nothing needs saying (a routine with nothing new, another bot's message that needs no answer). Never use it for a question a person asked you.",
    input,
    async run(request) {
      return {
        output: "Ending the turn without a reply.",
        isError: false,
        details: { reason: request.reason },
        endTurn: { kind: "no_reply", reason: request.reason },
      };
    },
  });
}
