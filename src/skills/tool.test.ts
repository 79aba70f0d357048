/** The skills index (section.ts) and the `skill` tool (tool.ts, SKT1), with and without a bot limit. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { assembleSystemPrompt } from "../loop/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter } from "../tools/index.ts";
import { createSkillsSection, skillsIndexIntro } from "./section.ts";
import { createSkillService, type SkillService } from "./service.ts";
import { tarArchive, skillMarkdown } from "./testing/archives.ts";
import { createSkillTools } from "./tool.ts";

let dir: string;
let store: Store;
let skills: SkillService;
let accountId: string;
let allBot: string;
let limitedBot: string;
let noneBot: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-skill-tool-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  skills = createSkillService(store);
  accountId = (await store.createAccount({ name: "ada", isAdmin: false })).id;
  const bot = async (name: string, limit: string[] | null) =>
    (await store.createBot({ accountId, name, instructions: "", model: null, skills: limit })).id;
  allBot = await bot("all", null);
  limitedBot = await bot("limited", ["charts"]);
  noneBot = await bot("none", []);
  const actor = { accountId, actorAccountId: accountId };
  await skills.create(actor, {
    name: "charts",
    description: "Draws charts from CSV files",
    body: "# Charts\nRun `python3 ~/skills/charts/plot.py <file.csv>`.",
  });
  await skills.putArchive(actor, {
    bytes: tarArchive([
      {
        path: "SKILL.md",
        data: skillMarkdown("invoices", "Files invoices", "# Invoices\nSECRET-BODY-TEXT"),
      },
      { path: "send.sh", data: "echo sent", mode: 0o755 },
    ]),
    kind: "tar",
    mode: "create",
  });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const turnOf = (botId: string) => ({
  accountId,
  botId,
  conversationId: "conv_1",
  turnId: "turn_1",
});

describe("the skills index", () => {
  const build = (botId: string) =>
    createSkillsSection({ store, skills }).build({
      ...turnOf(botId),
      newMessages: ["hello"],
      now: Date.now(),
    });

  it("lists every skill's name and one-line description, never a body", async () => {
    const text = await build(allBot);
    expect(text).toBe(
      [
        "# Skills",
        skillsIndexIntro,
        "- charts: Draws charts from CSV files",
        "- invoices: Files invoices",
      ].join("\n"),
    );
    expect(text).not.toContain("SECRET-BODY-TEXT");
    expect(skillsIndexIntro).toContain(
      "Read a skill's instructions with the skill tool before using it; its files are in ~/skills/<name>/ on your computer.",
    );
  });

  it("a limited bot's index lists only its skills; a bot limited to none has no section", async () => {
    expect(await build(limitedBot)).toBe(
      ["# Skills", skillsIndexIntro, "- charts: Draws charts from CSV files"].join("\n"),
    );
    expect(await build(noneBot)).toBeUndefined();
  });

  it("takes its place in the prompt's fixed order: after the tool names, before memory (PRM1)", async () => {
    const { system } = assembleSystemPrompt([
      { name: "memory", text: "# Memory\nfacts" },
      { name: "skills-index", text: (await build(allBot))! },
      { name: "tool-names", text: "# Tools\nshell, skill" },
    ]);
    expect(system.indexOf("# Tools")).toBeLessThan(system.indexOf("# Skills"));
    expect(system.indexOf("# Skills")).toBeLessThan(system.indexOf("# Memory"));
  });
});

describe("the skill tool", () => {
  const router = () => createToolRouter({ sources: [createSkillTools({ store, skills })] });
  const read = (botId: string, name: string, durable = createMemoryDurable()) =>
    router().execute(
      "skill",
      { name },
      { ...turnOf(botId), callId: "call_1", durable, signal: new AbortController().signal },
    );

  it("reads a body and the list of files on demand, journaled as one step", async () => {
    const durable = createMemoryDurable();
    const result = await read(allBot, "invoices", durable);
    expect(result.isError).toBe(false);
    expect(result.output).toContain("# Skill invoices\nFiles invoices");
    expect(result.output).toContain("Files, in ~/skills/invoices/ on your computer:");
    expect(result.output).toContain("- send.sh (9 bytes, executable)");
    expect(result.output).toContain("SECRET-BODY-TEXT");
    expect(durable.steps).toEqual(["tool:skill"]);
  });

  it("a limited bot is refused another skill with a message naming what it may use (SKT1)", async () => {
    const refused = await read(limitedBot, "invoices");
    expect(refused).toMatchObject({ isError: true, details: { reason: "not_allowed" } });
    expect(refused.output).toBe(
      "You may not use the skill \"invoices\": this bot's settings limit it to some skills. The skills you may use: charts. Ask the user to allow it in the bot's settings if you need it.",
    );
    expect(refused.output).not.toContain("SECRET-BODY-TEXT");
    expect((await read(limitedBot, "charts")).isError).toBe(false);
    expect((await read(allBot, "nope")).output).toBe(
      'There is no skill named "nope". The skills you may use: charts, invoices.',
    );
  });

  it("another account's skill does not exist for this bot", async () => {
    const eve = (await store.createAccount({ name: "eve", isAdmin: false })).id;
    await skills.create(
      { accountId: eve, actorAccountId: eve },
      { name: "eves-secret", description: "Eve's", body: "EVE-ONLY" },
    );
    const result = await read(allBot, "eves-secret");
    expect(result).toMatchObject({ isError: true, details: { reason: "not_found" } });
    expect(result.output).not.toContain("EVE-ONLY");
  });

  it("is offered only to bots that may use at least one skill", async () => {
    const names = async (botId: string) =>
      (await router().specs(turnOf(botId))).map((spec) => spec.name);
    expect(await names(allBot)).toEqual(["skill"]);
    expect(await names(limitedBot)).toEqual(["skill"]);
    expect(await names(noneBot)).toEqual([]);
  });
});
