/** The price table (PRICE1, PRICE2) and ROOST_PRICES (config). */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../config/index.ts";
import { createPriceTable, defaultPrices } from "./prices.ts";

describe("the price table", () => {
  it("prices a call by its exact spec: input, cached input and output per million tokens", () => {
    const table = createPriceTable();
    // 1,000 input of which 400 cached, 100 output on gpt-4.1-mini (0.4 / 0.1 / 1.6 per million).
    expect(
      table.costOf("openai:gpt-4.1-mini", {
        inputTokens: 1000,
        outputTokens: 100,
        cachedTokens: 400,
      }),
    ).toBeCloseTo((600 * 0.4 + 400 * 0.1 + 100 * 1.6) / 1e6, 15);
    expect(table.costOf("demo", { inputTokens: 10_000, outputTokens: 10_000 })).toBe(0);
  });

  it("PRICE1, PRICE2: an unknown model, or a near-miss of a known one, has no price (null), never a guess", () => {
    const table = createPriceTable();
    expect(
      table.costOf("openai-compatible:llama3", { inputTokens: 1, outputTokens: 1 }),
    ).toBeNull();
    expect(
      table.costOf("openai:gpt-4.1-mini-2025-04-14", { inputTokens: 1, outputTokens: 1 }),
    ).toBeNull();
    expect(table.costOf("anthropic:claude-sonnet-4-5", { inputTokens: 1e6, outputTokens: 0 })).toBe(
      3,
    );
  });

  it("configured prices replace and extend the defaults; null removes one", () => {
    const config = resolveConfig(
      {},
      {
        ROOST_PRICES: JSON.stringify({
          currency: "EUR",
          models: {
            "openai-compatible:llama3": { input: 0.2, output: 0.2 },
            "openai:gpt-4.1-mini": null,
          },
        }),
      },
    );
    const table = createPriceTable(config.prices);
    expect(table.currency).toBe("EUR");
    expect(
      table.costOf("openai-compatible:llama3", { inputTokens: 1e6, outputTokens: 1e6 }),
    ).toBeCloseTo(0.4, 12);
    expect(table.priceOf("openai:gpt-4.1-mini")).toBeNull();
    expect(table.priceOf("openai:gpt-4.1")).toEqual(defaultPrices["openai:gpt-4.1"]);
  });

  it("ROOST_PRICES may name a JSON file", () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-prices-"));
    try {
      const file = join(dir, "prices.json");
      writeFileSync(file, JSON.stringify({ models: { "xai:grok-5": { input: 1, output: 2 } } }));
      const config = resolveConfig({}, { ROOST_PRICES: file });
      expect(config.prices.models["xai:grok-5"]).toEqual({ input: 1, output: 2 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("bad ROOST_PRICES fails start-up with a message that says how to fix it", () => {
    const cases: [string, string][] = [
      ["{nope", "is not valid JSON"],
      ["/no/such/prices.json", "cannot read the price file"],
      [JSON.stringify({ model: {} }), 'unknown key "model"'],
      [JSON.stringify({ currency: "dollars" }), "three-letter code"],
      [JSON.stringify({ models: { demo: { input: -1, output: 0 } } }), "input must be a number"],
      [JSON.stringify({ models: { demo: { input: 1 } } }), "output must be a number"],
      [
        JSON.stringify({ models: { demo: { input: 1, output: 1, perCall: 1 } } }),
        'unknown field "perCall"',
      ],
      [JSON.stringify({ models: { demo: 5 } }), "must be {input, output, cachedInput?} or null"],
    ];
    for (const [value, says] of cases)
      expect(() => resolveConfig({}, { ROOST_PRICES: value }), value).toThrow(says);
  });
});
