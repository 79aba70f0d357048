/** The worker's skill operations (skill-operations.ts, SKW1–SKW5) on a real home folder. */
import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { skillDigest, type SkillOperationName } from "../protocol/index.ts";
import { createSkillOperations, type SkillOperations } from "./skill-operations.ts";

let root: string;
let home: string;
let skills: SkillOperations;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "roost-skill-ops-"));
  home = join(root, "home");
  mkdirSync(home);
  skills = createSkillOperations({ home, fsync: false });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

let calls = 0;
async function run(tool: SkillOperationName, input: unknown) {
  return skills.run({
    callId: `skills_${++calls}`,
    tool,
    input,
    signal: new AbortController().signal,
  });
}

function skill(name: string, files: Record<string, string>, executable: string[] = []) {
  const list = Object.entries(files).map(([path, text]) => ({
    path,
    mode: executable.includes(path) ? 0o755 : 0o644,
    data: Buffer.from(text).toString("base64"),
    sha256: createHash("sha256").update(text).digest("hex"),
  }));
  return {
    name,
    digest: skillDigest(list),
    files: list.map(({ path, mode, data }) => ({ path, mode, data })),
  };
}

const listed = (...entries: { name: string; digest: string }[]) => ({
  skills: entries.map(({ name, digest }) => ({ name, digest })),
});

describe("skill operations", () => {
  it("puts a skill's folder with its modes, and a repeat writes nothing (SKW2, SKW4)", async () => {
    const demo = skill("demo", { "SKILL.md": "# demo", "bin/run.sh": "echo hi" }, ["bin/run.sh"]);
    expect(await run("skills.sync", listed(demo))).toEqual({
      ok: true,
      output: { stale: ["demo"], removed: [] },
    });
    expect(await run("skills.put", demo)).toMatchObject({
      ok: true,
      output: { written: true, files: 2, bytes: 13 },
    });
    expect(readFileSync(join(home, "skills", "demo", "bin", "run.sh"), "utf8")).toBe("echo hi");
    expect(statSync(join(home, "skills", "demo", "bin", "run.sh")).mode & 0o777).toBe(0o755);
    expect(statSync(join(home, "skills", "demo", "SKILL.md")).mode & 0o777).toBe(0o644);
    expect(await run("skills.put", demo)).toMatchObject({ ok: true, output: { written: false } });
    expect(await run("skills.sync", listed(demo))).toEqual({
      ok: true,
      output: { stale: [], removed: [] },
    });
    // Only the skill and the worker's state are in ~/skills: no stage or trash left over.
    expect(readdirSync(join(home, "skills")).sort()).toEqual([".roost-skills.json", "demo"]);
  });

  it("a changed skill is stale and is replaced whole; a deleted one is removed", async () => {
    const v1 = skill("tool", { "SKILL.md": "# v1", "old.txt": "old" });
    await run("skills.put", v1);
    const v2 = skill("tool", { "SKILL.md": "# v2", "new.txt": "new" });
    expect(await run("skills.sync", listed(v2))).toMatchObject({ output: { stale: ["tool"] } });
    await run("skills.put", v2);
    expect(readdirSync(join(home, "skills", "tool")).sort()).toEqual(["SKILL.md", "new.txt"]);
    expect(await run("skills.sync", listed())).toEqual({
      ok: true,
      output: { stale: [], removed: ["tool"] },
    });
    expect(existsSync(join(home, "skills", "tool"))).toBe(false);
  });

  it("a skill folder removed on the computer is sent again", async () => {
    const demo = skill("demo", { "SKILL.md": "# demo" });
    await run("skills.put", demo);
    rmSync(join(home, "skills", "demo"), { recursive: true });
    expect(await run("skills.sync", listed(demo))).toMatchObject({ output: { stale: ["demo"] } });
  });

  it("folders the worker did not write are never removed (SKW3)", async () => {
    mkdirSync(join(home, "skills", "my-own"), { recursive: true });
    writeFileSync(join(home, "skills", "my-own", "notes.txt"), "mine");
    expect(await run("skills.sync", listed())).toEqual({
      ok: true,
      output: { stale: [], removed: [] },
    });
    expect(readFileSync(join(home, "skills", "my-own", "notes.txt"), "utf8")).toBe("mine");
  });

  it("~/skills as a symbolic link is refused, never followed (SKW1)", async () => {
    const elsewhere = join(root, "elsewhere");
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(home, "skills"));
    const answer = await run("skills.put", skill("demo", { "SKILL.md": "# demo" }));
    expect(answer).toMatchObject({ ok: false, error: { code: "is_symlink" } });
    expect((answer as { error: { message: string } }).error.message).toMatch(/move it away/);
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it("a skill folder the bot replaced with a link is replaced, and the link's target is untouched", async () => {
    const target = join(root, "important");
    mkdirSync(target);
    writeFileSync(join(target, "keep.txt"), "keep");
    const demo = skill("demo", { "SKILL.md": "# demo" });
    await run("skills.put", demo);
    rmSync(join(home, "skills", "demo"), { recursive: true });
    symlinkSync(target, join(home, "skills", "demo"));
    expect(await run("skills.sync", listed(demo))).toMatchObject({ output: { stale: ["demo"] } });
    await run("skills.put", demo);
    expect(lstatSync(join(home, "skills", "demo")).isDirectory()).toBe(true);
    expect(readdirSync(target)).toEqual(["keep.txt"]);
  });

  it("removing a skill does not follow links planted inside its folder", async () => {
    const target = join(root, "precious");
    mkdirSync(target);
    writeFileSync(join(target, "data.txt"), "precious");
    const demo = skill("demo", { "SKILL.md": "# demo" });
    await run("skills.put", demo);
    symlinkSync(target, join(home, "skills", "demo", "link"));
    await run("skills.sync", listed());
    expect(existsSync(join(home, "skills", "demo"))).toBe(false);
    expect(readFileSync(join(target, "data.txt"), "utf8")).toBe("precious");
  });

  it("files that do not match their digest are refused and nothing becomes visible (SKW2)", async () => {
    const demo = skill("demo", { "SKILL.md": "# demo" });
    const tampered = {
      ...demo,
      files: [{ ...demo.files[0]!, data: Buffer.from("# evil").toString("base64") }],
    };
    expect(await run("skills.put", tampered)).toMatchObject({
      ok: false,
      error: { code: "invalid_input" },
    });
    expect(existsSync(join(home, "skills", "demo"))).toBe(false);
  });

  it("paths that climb out and names that are not skill names are refused by the schema", async () => {
    for (const path of ["../escape", "/etc/passwd", "a/../../b", "a\\b"]) {
      const answer = await run("skills.put", {
        name: "demo",
        digest: "0".repeat(64),
        files: [{ path, mode: 0o644, data: "" }],
      });
      expect(answer).toMatchObject({ ok: false, error: { code: "invalid_input" } });
    }
    expect(
      await run("skills.put", {
        ...skill("demo", { "SKILL.md": "x" }),
        name: "../home",
      }),
    ).toMatchObject({ ok: false, error: { code: "invalid_input" } });
    expect(
      await run("skills.sync", {
        skills: [{ name: ".roost-skills.json", digest: "0".repeat(64) }],
      }),
    ).toMatchObject({
      ok: false,
      error: { code: "invalid_input" },
    });
    expect(existsSync(join(root, "escape"))).toBe(false);
  });

  it("leftovers of an interrupted put are swept by the next operation (SKW5)", async () => {
    mkdirSync(join(home, "skills", ".roost-stage-0123456789abcdef", "half"), { recursive: true });
    mkdirSync(join(home, "skills", ".roost-trash-0123456789abcdef"), { recursive: true });
    await run("skills.sync", listed());
    expect(readdirSync(join(home, "skills"))).toEqual([]);
  });

  it("concurrent puts and syncs of one skill run one at a time and end in one whole folder (SKW4)", async () => {
    const versions = Array.from({ length: 5 }, (_, index) =>
      skill("raced", { "SKILL.md": `# v${index}`, [`only-${index}.txt`]: String(index) }),
    );
    const answers = await Promise.all(
      versions.flatMap((version) => [
        run("skills.put", version),
        run("skills.sync", listed(version)),
      ]),
    );
    expect(answers.every((answer) => answer.ok)).toBe(true);
    const last = versions.at(-1)!;
    expect(readdirSync(join(home, "skills", "raced")).sort()).toEqual(["SKILL.md", "only-4.txt"]);
    expect(await run("skills.sync", listed(last))).toMatchObject({ output: { stale: [] } });
    expect(readdirSync(join(home, "skills")).sort()).toEqual([".roost-skills.json", "raced"]);
  });
});
