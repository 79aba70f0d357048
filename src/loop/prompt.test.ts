import { describe, expect, it } from "vitest";
import { assembleSystemPrompt, describeNow, loopSections, sectionOrder } from "./prompt.ts";

const base = loopSections({
  bot: { name: "helper", instructions: "Answer briefly." },
  tools: [{ name: "shell", description: "run", inputSchema: {} }],
  now: Date.UTC(2026, 11, 1, 9, 30),
  timezone: "Europe/Berlin",
});

describe("prompt sections", () => {
  it("keeps the fixed order whatever order modules supply sections in (PRM1)", () => {
    const { system, hashes } = assembleSystemPrompt([
      { name: "summary", text: "# Summary\nearlier we talked" },
      ...base,
      { name: "memory", text: "# Memory\n- likes tea" },
      { name: "skills-index", text: "# Skills\n- deploy: ship it" },
    ]);
    const names = hashes.map((hash) => hash.name);
    expect(names).toEqual([
      "platform-rules",
      "bot-instructions",
      "tool-names",
      "skills-index",
      "memory",
      "summary",
      "turn-context",
    ]);
    expect(names).toEqual(sectionOrder.filter((name) => names.includes(name)));
    expect(system.indexOf("# Skills")).toBeLessThan(system.indexOf("# Memory"));
    expect(system.indexOf("# Memory")).toBeLessThan(system.indexOf("# Summary"));
  });

  it("leaves empty sections out, so they do not shift the others", () => {
    const withEmpty = assembleSystemPrompt([...base, { name: "memory", text: "  " }]);
    expect(withEmpty).toEqual(assembleSystemPrompt(base));
  });

  it("a memory change moves only the sections from memory on (PRM2)", () => {
    const before = assembleSystemPrompt([...base, { name: "memory", text: "# Memory\n- a" }]);
    const after = assembleSystemPrompt([...base, { name: "memory", text: "# Memory\n- b" }]);
    const changed = before.hashes
      .map((hash, index) => (hash.hash === after.hashes[index]!.hash ? null : hash.name))
      .filter((name) => name !== null);
    expect(changed).toEqual(["memory"]);
    // Everything before the memory section is a byte-identical prefix.
    const prefixEnd = before.system.indexOf("# Memory");
    expect(after.system.slice(0, prefixEnd)).toBe(before.system.slice(0, prefixEnd));
  });

  it("tells the model what the computer is, the date and the user's timezone, and how to treat outside content", () => {
    const { system } = assembleSystemPrompt(base);
    expect(system).toContain("/workspace");
    expect(system).toMatch(/kept across sleeps/);
    expect(system).toMatch(/proxy/);
    expect(system).toContain("Tuesday, 1 December 2026");
    expect(system).toContain("Europe/Berlin");
    expect(system).toMatch(/untrusted/);
    const noComputer = assembleSystemPrompt(
      loopSections({ bot: { name: "b", instructions: "" }, tools: [], now: 0, timezone: "UTC" }),
    );
    expect(noComputer.system).not.toContain("/workspace");
  });

  it("states the date in the user's timezone", () => {
    // 23:30 UTC on 30 November is already 1 December in Berlin.
    expect(describeNow(Date.UTC(2026, 10, 30, 23, 30), "Europe/Berlin")).toContain(
      "1 December 2026",
    );
    expect(describeNow(Date.UTC(2026, 10, 30, 23, 30), "UTC")).toContain("30 November 2026");
  });
});
