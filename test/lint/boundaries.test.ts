/**
 * The boundary rule (scripts/eslint/boundaries.js) refuses what CONVENTIONS.md forbids, including
 * from nested folders, and lets through what is allowed. Linted as virtual files at real paths.
 */
import path from "node:path";
import { ESLint } from "eslint";
import tseslint from "typescript-eslint";
import { describe, expect, it } from "vitest";
import roost from "../../scripts/eslint/boundaries.js";

const root = path.resolve(import.meta.dirname, "../..");
const eslint = new ESLint({
  cwd: root,
  overrideConfigFile: true,
  overrideConfig: [
    {
      files: ["**/*.ts", "**/*.tsx"],
      languageOptions: { parser: tseslint.parser },
      plugins: { roost },
      rules: { "roost/boundaries": "error" },
    },
  ],
});

async function problems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return (result?.messages ?? []).map((message) => message.message);
}

describe("roost/boundaries", () => {
  it.each([
    ["src/computers/local/x.ts", 'import { a } from "../../loop/conversation-loop.ts";', "B1"],
    ["src/tools/x.ts", 'import { a } from "../loop/context.ts";', "B1"],
    ["src/tools/x.ts", 'import { a } from "../models/testing/index.ts";', "B2"],
    ["src/models/x.ts", 'import { a } from "./testing/scripted.ts";', "B2"],
    ["src/protocol/x.ts", 'import { a } from "../errors/index.ts";', "B3"],
    ["src/worker/x.ts", 'import { a } from "../store/index.ts";', "B3"],
    ["src/loop/x.ts", 'import { a } from "../api/index.ts";', "B3"],
    ["src/loop/x.ts", 'import { a } from "../platform/index.ts";', "B3"],
    ["src/platform/x.ts", 'import { a } from "../cli/main.ts";', "B1"],
    ["src/platform/x.ts", 'import { a } from "../cli/index.ts";', "B3"],
    ["web/src/x.tsx", 'import { a } from "../../src/store/index.ts";', "B4"],
    ["src/loop/x.ts", 'export { a } from "../tools/computer-tools.ts";', "B1"],
  ])("refuses %s: %s", async (file, code, invariant) => {
    const found = await problems(file, code);
    expect(found.length, found.join("\n")).toBe(1);
    expect(found[0]).toMatch(new RegExp(`^${invariant} `));
  });

  it.each([
    ["src/computers/local/x.ts", 'import { a } from "../../errors/index.ts";'],
    ["src/computers/local/x.ts", 'import { a } from "../provider.ts";'],
    ["src/worker/x.ts", 'import { a } from "../protocol/index.ts";'],
    ["src/platform/x.ts", 'import { a } from "../api/index.ts";'],
    ["src/cli/x.ts", 'import { a } from "../platform/index.ts";'],
    ["src/loop/x.test.ts", 'import { a } from "./testing/index.ts";'],
    ["src/loop/x.test.ts", 'import { a } from "../models/testing/scripted.ts";'],
    ["test/e2e/x.test.ts", 'import { a } from "../../src/gateway/testing/index.ts";'],
    ["web/src/x.tsx", 'import type { a } from "../../src/protocol/index.ts";'],
  ])("allows %s: %s", async (file, code) => {
    expect(await problems(file, code)).toEqual([]);
  });
});
