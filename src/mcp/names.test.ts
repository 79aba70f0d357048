/**
 * Tool names and spec sizes of MCP tools (names.ts MCPN1–MCPN3), against the model providers'
 * rule for tool names (OpenAI and Anthropic: ^[a-zA-Z0-9_-]{1,64}$).
 */
import { describe, expect, it } from "vitest";
import { maxToolSpecChars, toolSpecChars } from "../models/index.ts";
import { capTools, maxMcpPartChars, modelToolNames } from "./names.ts";

const providerRule = /^[a-zA-Z0-9_-]{1,64}$/;

describe("MCP tool names", () => {
  it("MCPN1: mcp__<server>__<tool>, other characters become _", () => {
    expect(modelToolNames("github", ["create_issue", "search.code", "a:b/c d"])).toEqual([
      "mcp__github__create_issue",
      "mcp__github__search_code",
      "mcp__github__a_b_c_d",
    ]);
  });

  it("MCPN1 attack: a 200-character name, colons, unicode and an empty name all fit the providers' rule", () => {
    const names = modelToolNames("a-server-name-of-24-char", [
      "n".repeat(200),
      "::::",
      "émoji🙂name",
      "",
      "x".repeat(64),
    ]);
    for (const name of names) expect(name).toMatch(providerRule);
    expect(names[0]).toMatch(/^mcp__a-server-name-of-24-char__n+_[0-9a-f]{6}$/);
    // Stable between turns (the hash is of the tool's own name).
    expect(modelToolNames("a-server-name-of-24-char", ["n".repeat(200)])).toEqual([names[0]]);
  });

  it("MCPN2: tools that sanitise to the same name get distinct names", () => {
    const names = modelToolNames("s", ["a.b", "a:b", "a_b", "a b"]);
    expect(new Set(names).size).toBe(4);
    for (const name of names) expect(name).toMatch(providerRule);
    expect(names[0]).toBe("mcp__s__a_b"); // the first keeps the plain name
  });

  it("MCPN3: a huge description and a huge schema are capped with a note, within TOOL4", () => {
    const [capped] = capTools("s", [
      {
        name: "huge",
        description: "blah ".repeat(3000),
        inputSchema: {
          type: "object",
          properties: Object.fromEntries(
            Array.from({ length: 300 }, (_, index) => [
              `f${index}`,
              { type: "string", description: "d".repeat(50) },
            ]),
          ),
        },
      },
    ]);
    expect(capped!.description.length).toBeLessThanOrEqual(maxMcpPartChars);
    expect(capped!.description).toMatch(/cut/);
    expect(JSON.stringify(capped!.inputSchema).length).toBeLessThanOrEqual(maxMcpPartChars);
    expect(String(capped!.inputSchema.description)).toMatch(/over the 4,000 limit/);
    expect(toolSpecChars(capped!)).toBeLessThanOrEqual(maxToolSpecChars);
    expect(capped!.tool).toBe("huge");
  });

  it("MCPN3: a description and schema each under 4,000 but together over are cut to fit", () => {
    const schema = { type: "object", description: "s".repeat(3000) };
    const [capped] = capTools("s", [
      { name: "t", description: "d".repeat(3000), inputSchema: schema },
    ]);
    expect(toolSpecChars(capped!)).toBeLessThanOrEqual(maxToolSpecChars);
    expect(capped!.inputSchema).toEqual(schema);
  });
});
