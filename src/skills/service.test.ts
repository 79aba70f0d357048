/** SKILL.md (skill-document.ts) and the skill service's rules (service.ts, SKL1–SKL3), on a real SQLite store. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { skillDigest, skillLimits } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createSkillService, type SkillService } from "./service.ts";
import { parseSkillDocument, renderSkillDocument } from "./skill-document.ts";
import { skillMarkdown, tarArchive, zipArchive } from "./testing/archives.ts";

describe("SKILL.md", () => {
  it("reads name, description and body, quoted and folded values, and keeps other keys", () => {
    const document = parseSkillDocument(
      [
        "---",
        "name: pdf-tools",
        "description: >",
        "  Extract text and tables",
        "  from PDF files.",
        "license: MIT",
        "metadata:",
        "  version: 2",
        "---",
        "",
        "# PDF tools",
        "Run it.",
        "",
      ].join("\r\n"),
    );
    expect(document).toEqual({
      name: "pdf-tools",
      description: "Extract text and tables from PDF files.",
      body: "# PDF tools\nRun it.",
      extra: ["license: MIT", "metadata:", "  version: 2"],
    });
    expect(
      parseSkillDocument("---\nname: \"a-b\"\ndescription: 'It''s: fine'\n---\nx"),
    ).toMatchObject({
      name: "a-b",
      description: "It's: fine",
    });
    expect(
      parseSkillDocument("---\nname: x\ndescription: plain # a comment\n---\nbody"),
    ).toMatchObject({
      description: "plain",
    });
  });

  it("renders a document that reads back the same, quoting descriptions YAML would misread", () => {
    for (const description of [
      "Plain words",
      "key: value inside",
      "- starts like a list",
      "yes",
      "ends with a colon:",
      'has "quotes" and # hash',
    ]) {
      const document = {
        name: "round-trip",
        description,
        body: "# Body\n\ntext",
        extra: ["license: MIT"],
      };
      expect(parseSkillDocument(renderSkillDocument(document))).toEqual(document);
    }
  });

  it("says how to fix a document without front matter, name or description", () => {
    expect(() => parseSkillDocument("# just markdown")).toThrow(
      /no front matter: SKILL\.md starts with/,
    );
    expect(() => parseSkillDocument("---\nname: x\n")).toThrow(/no closing `---`/);
    expect(() => parseSkillDocument("---\ndescription: d\n---\nb")).toThrow(/has no name/);
    expect(() => parseSkillDocument("---\nname: x\n---\nb")).toThrow(/has no description/);
    expect(() => parseSkillDocument("---\nname: Bad Name\ndescription: d\n---\nb")).toThrow(
      /not a skill name: use 1–64 lowercase letters/,
    );
    expect(() => parseSkillDocument("---\nname: x\nname: y\ndescription: d\n---\nb")).toThrow(
      /twice/,
    );
  });
});

describe("skill service", () => {
  let dir: string;
  let store: Store;
  let skills: SkillService;
  let actor: { accountId: string; actorAccountId: string };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-skills-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    skills = createSkillService(store);
    const account = await store.createAccount({ name: "ada", isAdmin: false });
    actor = { accountId: account.id, actorAccountId: account.id };
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates SKILL.md from fields, with a digest of its files", async () => {
    const skill = await skills.create(actor, {
      name: "weekly-report",
      description: "Writes the weekly report",
      body: "# Weekly report\nCollect the numbers.\n\n",
    });
    expect(skill).toMatchObject({ body: "# Weekly report\nCollect the numbers.", fileCount: 1 });
    const { files } = await skills.get(actor.accountId, "weekly-report");
    expect(skill.digest).toBe(skillDigest(files));
    const document = await skills.readFile(actor.accountId, "weekly-report", "SKILL.md");
    expect(parseSkillDocument(Buffer.from(document.content).toString("utf8"))).toMatchObject({
      name: "weekly-report",
      description: "Writes the weekly report",
    });
  });

  it("refuses bad fields with a message that says how to fix them, storing nothing (SKL1)", async () => {
    const base = { name: "ok-name", description: "fine", body: "do it" };
    await expect(skills.create(actor, { ...base, name: "Not OK" })).rejects.toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/use 1–64 lowercase letters/) as unknown,
    });
    await expect(skills.create(actor, { ...base, description: "two\nlines" })).rejects.toThrow(
      /one line/,
    );
    await expect(
      skills.create(actor, {
        ...base,
        description: "d".repeat(skillLimits.maxDescriptionChars + 1),
      }),
    ).rejects.toThrow(/at most 300 characters/);
    await expect(skills.create(actor, { ...base, body: "   " })).rejects.toThrow(
      /must not be empty/,
    );
    await expect(
      skills.create(actor, { ...base, body: "é".repeat(skillLimits.maxBodyBytes / 2 + 1) }),
    ).rejects.toThrow(/at most 100000 bytes/);
    expect(await store.listSkills(actor.accountId)).toEqual([]);
  });

  it("takes an archive's name from SKILL.md, and refuses one that disagrees with the address (SKL2)", async () => {
    const archive = tarArchive([
      { path: "SKILL.md", data: skillMarkdown("from-archive", "From an archive") },
      { path: "run.sh", data: "echo hi", mode: 0o755 },
    ]);
    const { skill, created } = await skills.putArchive(actor, {
      bytes: archive,
      kind: "tar",
      mode: "create",
    });
    expect({ name: skill.name, created, files: skill.fileCount }).toEqual({
      name: "from-archive",
      created: true,
      files: 2,
    });
    await expect(
      skills.putArchive(actor, { bytes: archive, kind: "tar", mode: "upsert", name: "other" }),
    ).rejects.toThrow(/names the skill "from-archive", but the address names "other"/);
    await expect(
      skills.putArchive(actor, { bytes: archive, kind: "tar", mode: "create" }),
    ).rejects.toMatchObject({ code: "conflict" });
    const replaced = await skills.putArchive(actor, {
      bytes: zipArchive([{ path: "SKILL.md", data: skillMarkdown("from-archive", "Now zipped") }]),
      kind: "zip",
      mode: "upsert",
      name: "from-archive",
    });
    expect(replaced).toMatchObject({
      created: false,
      skill: { description: "Now zipped", fileCount: 1 },
    });
  });

  it("refuses an archive whose SKILL.md is not UTF-8 or has no front matter", async () => {
    await expect(
      skills.putArchive(actor, {
        bytes: tarArchive([{ path: "SKILL.md", data: new Uint8Array([0xff, 0xfe, 0x00]) }]),
        kind: "tar",
        mode: "create",
      }),
    ).rejects.toThrow(/not UTF-8/);
    await expect(
      skills.putArchive(actor, {
        bytes: tarArchive([{ path: "SKILL.md", data: "# no front matter" }]),
        kind: "tar",
        mode: "create",
      }),
    ).rejects.toThrow(/no front matter/);
  });

  it("an edit rewrites SKILL.md only, keeping the other files and front-matter lines (SKL3)", async () => {
    await skills.putArchive(actor, {
      bytes: tarArchive([
        {
          path: "SKILL.md",
          data: "---\nname: kept\ndescription: old\nlicense: MIT\n---\nold body\n",
        },
        { path: "tool.py", data: "print('tool')" },
      ]),
      kind: "tar",
      mode: "create",
    });
    const edited = await skills.update(actor, "kept", { body: "new body" });
    expect(edited).toMatchObject({ description: "old", body: "new body" });
    const { files } = await skills.get(actor.accountId, "kept");
    expect(files.map((file) => file.path)).toEqual(["SKILL.md", "tool.py"]);
    const text = Buffer.from(
      (await skills.readFile(actor.accountId, "kept", "SKILL.md")).content,
    ).toString("utf8");
    expect(text).toContain("license: MIT");
    expect(parseSkillDocument(text).body).toBe("new body");
    expect(edited.digest).toBe(skillDigest(files));
  });

  it("another account's skill reads as missing, for every operation", async () => {
    await skills.create(actor, { name: "private", description: "mine", body: "secret steps" });
    const eve = await store.createAccount({ name: "eve", isAdmin: false });
    const other = { accountId: eve.id, actorAccountId: eve.id };
    await expect(skills.get(eve.id, "private")).rejects.toMatchObject({ code: "not_found" });
    await expect(skills.readFile(eve.id, "private", "SKILL.md")).rejects.toMatchObject({
      code: "not_found",
    });
    await expect(skills.update(other, "private", { body: "mine now" })).rejects.toMatchObject({
      code: "not_found",
    });
    await expect(skills.remove(other, "private")).rejects.toMatchObject({ code: "not_found" });
    expect((await skills.get(actor.accountId, "private")).skill.body).toBe("secret steps");
  });

  it("lists what a bot may use: all skills, or those of its list that exist", async () => {
    for (const name of ["alpha", "beta", "gamma"])
      await skills.create(actor, { name, description: name, body: name });
    expect((await skills.available(actor.accountId, null)).map((skill) => skill.name)).toEqual([
      "alpha",
      "beta",
      "gamma",
    ]);
    expect(
      (await skills.available(actor.accountId, ["gamma", "missing", "alpha"])).map(
        (skill) => skill.name,
      ),
    ).toEqual(["alpha", "gamma"]);
    expect(await skills.available(actor.accountId, [])).toEqual([]);
  });
});
