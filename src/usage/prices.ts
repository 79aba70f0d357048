/**
 * The price table: what one model call cost, from the model spec it used and its tokens
 * (docs/usage.md#prices). Defaults for common models, replaced or extended by ROOST_PRICES.
 *
 * Invariants:
 *   PRICE1 a model without a price gets cost null, never a guess: its tokens are still counted,
 *          and every sum says how many calls it could not price (USE2).
 *   PRICE2 a price is looked up by the exact model spec (`openai:gpt-4.1-mini`), so a model the
 *          table does not name is never priced like one it does.
 */
import type { ModelPrice, PricesConfig } from "../config/index.ts";

/**
 * List prices per million tokens, in USD, of the models Roost's providers default to and their
 * common siblings (checked against the providers' price pages; override with ROOST_PRICES).
 * The demo model runs offline and costs nothing.
 */
export const defaultPrices: Readonly<Record<string, ModelPrice>> = {
  demo: { input: 0, output: 0 },
  "openai:gpt-4.1": { input: 2, output: 8, cachedInput: 0.5 },
  "openai:gpt-4.1-mini": { input: 0.4, output: 1.6, cachedInput: 0.1 },
  "openai:gpt-4.1-nano": { input: 0.1, output: 0.4, cachedInput: 0.025 },
  "openai:gpt-4o": { input: 2.5, output: 10, cachedInput: 1.25 },
  "openai:gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
  "anthropic:claude-opus-4-1": { input: 15, output: 75, cachedInput: 1.5 },
  "anthropic:claude-sonnet-4-5": { input: 3, output: 15, cachedInput: 0.3 },
  "anthropic:claude-sonnet-4-0": { input: 3, output: 15, cachedInput: 0.3 },
  "anthropic:claude-haiku-4-5": { input: 1, output: 5, cachedInput: 0.1 },
  "anthropic:claude-3-5-haiku-latest": { input: 0.8, output: 4, cachedInput: 0.08 },
  "xai:grok-4": { input: 3, output: 15, cachedInput: 0.75 },
  "xai:grok-3-mini": { input: 0.3, output: 0.5, cachedInput: 0.075 },
};

export interface PriceTable {
  /** @default "USD" */
  readonly currency: string;
  /** PRICE1, PRICE2: null when the spec has no price. */
  costOf(
    spec: string,
    usage: { inputTokens: number; outputTokens: number; cachedTokens?: number | null },
  ): number | null;
  priceOf(spec: string): ModelPrice | null;
}

/** The defaults with the configured prices over them (a `null` price removes a default). */
export function createPriceTable(
  config: PricesConfig = { currency: "USD", models: {} },
): PriceTable {
  const prices = new Map<string, ModelPrice>(Object.entries(defaultPrices));
  for (const [spec, price] of Object.entries(config.models)) {
    if (price === null) prices.delete(spec);
    else prices.set(spec, price);
  }
  const priceOf = (spec: string) => prices.get(spec.trim()) ?? null; // PRICE2
  return {
    currency: config.currency,
    priceOf,
    costOf(spec, usage) {
      const price = priceOf(spec);
      if (price === null) return null; // PRICE1
      // Cached input tokens are part of the input; they are billed at the cached price when known.
      const cached = Math.min(usage.cachedTokens ?? 0, usage.inputTokens);
      const cachedPrice = price.cachedInput ?? price.input;
      return (
        ((usage.inputTokens - cached) * price.input +
          cached * cachedPrice +
          usage.outputTokens * price.output) /
        1_000_000
      );
    },
  };
}
