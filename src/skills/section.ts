/**
 * The skills index of the prompt (loop/prompt.ts order: … tool names → skills index → memory …):
 * the name and one-line description of every skill the bot may use, and where to find the rest.
 * Bodies are never in the prompt; the `skill` tool reads one on demand. Built once per turn.
 */
import type { PromptSectionSource } from "../loop/index.ts";
import type { Store } from "../store/index.ts";
import type { SkillService } from "./service.ts";

/** What the index says before the list (docs/skills.md quotes it). */
export const skillsIndexIntro =
  "Skills are instructions and files the user keeps for particular tasks. Read a skill's instructions with the skill tool before using it; its files are in ~/skills/<name>/ on your computer.";

export function createSkillsSection(deps: {
  store: Store;
  skills: SkillService;
}): PromptSectionSource {
  return {
    section: "skills-index",
    async build({ accountId, botId }) {
      const bot = await deps.store.getBot(botId);
      const usable = await deps.skills.available(accountId, bot?.skills ?? null);
      if (usable.length === 0) return undefined;
      const lines = usable.map((skill) => `- ${skill.name}: ${skill.description}`);
      return `# Skills\n${skillsIndexIntro}\n${lines.join("\n")}`;
    },
  };
}
