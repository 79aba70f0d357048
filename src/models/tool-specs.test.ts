import { describe, expect, test } from "vitest";
import { z } from "zod";
import { toolInputSchemas, toolNames } from "../protocol/index.ts";
import { maxToolSpecChars, toolSpecChars } from "./tool-specs.ts";

/**
 * The computer tools' descriptions live with the tool source (src/tools/), which may also add a
 * field or two (the shell's timeout); each gets this much of the budget.
 */
const descriptionBudgetChars = 1200;

function inputJsonSchema(name: (typeof toolNames)[number]): Record<string, unknown> {
  return z.toJSONSchema(toolInputSchemas[name], { io: "input" });
}

describe("tool spec budget", () => {
  test("toolSpecChars counts the description and the schema's JSON", () => {
    const inputSchema = { type: "object", properties: { a: { type: "string" } } };
    expect(toolSpecChars({ name: "t", description: "abc", inputSchema })).toBe(
      3 + JSON.stringify(inputSchema).length,
    );
  });

  test.each(toolNames)(
    "%s: its input schema plus a 1,200-character description fits in 4,000 characters",
    (name) => {
      const schemaChars = JSON.stringify(inputJsonSchema(name)).length;
      expect(schemaChars + descriptionBudgetChars).toBeLessThanOrEqual(maxToolSpecChars);
    },
  );

  test.each(toolNames)("%s: every input field carries a description for the model", (name) => {
    const properties = inputJsonSchema(name).properties as Record<string, { description?: string }>;
    expect(Object.keys(properties).length).toBeGreaterThan(0);
    for (const [field, property] of Object.entries(properties)) {
      expect(property.description, `${name}.${field}`).toMatch(/\S{3,}/);
    }
  });

  test("a spec over the budget is measured as over it", () => {
    const huge = { name: "huge", description: "x".repeat(maxToolSpecChars), inputSchema: {} };
    expect(toolSpecChars(huge)).toBeGreaterThan(maxToolSpecChars);
  });
});
