/**
 * The `skill` server tool: reads one skill's instructions (SKILL.md's body) and the list of its
 * files on demand, so the prompt carries only names and descriptions. Journaled like every server
 * tool (tools/define.ts). Offered only in turns of a bot that may use at least one skill.
 *
 * Invariants:
 *   SKT1 a bot limited to some skills reads only those: another skill of the account is refused
 *        with a message that says so and names the skills the bot may use.
 */
import { z } from "zod";
import { isRoostError } from "../errors/index.ts";
import { formatBytes } from "./format.ts";
import type { Store } from "../store/index.ts";
import { defineToolSource, serverTool, type ToolSource } from "../tools/index.ts";
import type { SkillService } from "./service.ts";

const input = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(100)
    .describe("The skill's name, as listed under Skills in the prompt"),
});

const description =
  "Read a skill: its instructions and the list of its files, which are in ~/skills/<name>/ on your computer. Read a skill before you use it, and follow its instructions.";

export function createSkillTools(deps: { store: Store; skills: SkillService }): ToolSource {
  const usable = async (accountId: string, botId: string) => {
    const bot = await deps.store.getBot(botId);
    return deps.skills.available(accountId, bot?.skills ?? null);
  };
  const source = defineToolSource("skills", [
    serverTool({
      name: "skill",
      description,
      input,
      async run(request, context) {
        const bot = await deps.store.getBot(context.botId);
        const allowed = bot?.skills ?? null;
        const available = await deps.skills.available(context.accountId, allowed);
        const skill = available.find((candidate) => candidate.name === request.name);
        if (skill === undefined) {
          const names = available.map((candidate) => candidate.name).join(", ");
          const mayUse =
            available.length === 0 ? "You may use no skills." : `The skills you may use: ${names}.`;
          const exists =
            allowed !== null &&
            (await deps.skills.available(context.accountId, null)).some(
              (candidate) => candidate.name === request.name,
            );
          return {
            output: exists
              ? `You may not use the skill ${JSON.stringify(request.name)}: this bot's settings limit it to some skills. ${mayUse} Ask the user to allow it in the bot's settings if you need it.` // SKT1
              : `There is no skill named ${JSON.stringify(request.name)}. ${mayUse}`,
            isError: true,
            details: { name: request.name, reason: exists ? "not_allowed" : "not_found" },
          };
        }
        const found = await deps.skills
          .get(context.accountId, skill.name)
          .catch((error: unknown) => {
            // Deleted since it was listed: the model hears so, like any missing skill.
            if (isRoostError(error) && error.code === "not_found") return undefined;
            throw error;
          });
        if (found === undefined)
          return {
            output: `There is no skill named ${JSON.stringify(request.name)} any more (it was just deleted).`,
            isError: true,
            details: { name: request.name, reason: "not_found" },
          };
        const { skill: full, files } = found;
        const listing = files
          .map(
            (file) =>
              `- ${file.path} (${formatBytes(file.size)}${file.mode & 0o111 ? ", executable" : ""})`,
          )
          .join("\n");
        return {
          output: [
            `# Skill ${full.name}`,
            full.description,
            "",
            `Files, in ~/skills/${full.name}/ on your computer:`,
            listing,
            "",
            "Instructions (SKILL.md):",
            full.body,
          ].join("\n"),
          isError: false,
          details: { name: full.name, digest: full.digest, files: files.length },
        };
      },
    }),
  ]);
  return {
    ...source,
    // Bots without skills are not offered the tool (its spec would cost every prompt).
    specs: async (context) =>
      (await usable(context.accountId, context.botId)).length > 0 ? source.specs(context) : [],
  };
}
