/**
 * The `escalate` tool (USG7, decision 0020): offered only in a routine run that has a triage
 * model. The triage model calls it when the run needs real work; the loop's next model call is
 * then the bot's own model, in the same turn, with everything the triage saw and did.
 */
import { z } from "zod";
import { defineToolSource, type ToolSource } from "../tools/index.ts";
import { escalateToolName, type UsageService } from "./service.ts";

const description = [
  "You are the routine's triage model: a cheaper model that looks first.",
  "If this run needs real work (anything beyond seeing that nothing needs doing), call escalate with a one-line reason:",
  "the bot's own model then takes over this run, with everything you saw.",
  "If nothing needs doing, do not call it: answer in one short line, or end without a reply.",
].join(" ");

export function createEscalateTool(usage: Pick<UsageService, "triageOf">): ToolSource {
  const source = defineToolSource("triage", [
    {
      name: escalateToolName,
      description,
      input: z.strictObject({
        reason: z
          .string()
          .min(1)
          .max(500)
          .describe("Why the run needs the bot's model, in one line"),
      }),
      async run(input, context) {
        const triage = await usage.triageOf(context.trigger);
        if (triage === null)
          return {
            output: "Nothing to escalate: this run already uses the bot's model.",
            isError: false,
          };
        return {
          output: `Escalated (${(input as { reason: string }).reason}): the bot's own model handles the rest of this run.`,
          isError: false,
          details: { escalated: true, from: triage },
        };
      },
    },
  ]);
  return {
    ...source,
    // Offered only where it means something: a routine run with a triage model (USG7).
    specs: async (context) =>
      (await usage.triageOf(context.trigger)) === null ? [] : source.specs(context),
  };
}
