/**
 * The Usage panel and the timeline's budget row in Debian's Chromium against the real platform
 * (embedded Restate, the demo model): a turn parks at its bot's budget, the timeline says so and
 * links to the panel, the panel shows today's usage and the parked turn, refuses a bad limit with
 * the server's message, and raising the limit lets the same turn finish.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BotBudgetView } from "../../src/protocol/api.ts";
import { apiClient } from "../support/api-client.ts";
import {
  chromiumPath,
  launchBrowser,
  screenshot,
  startWebRoost,
  type Browser,
  type WebRoost,
} from "./harness.ts";

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `usage panel in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let token = "";
    const api = () => apiClient(roost.url, () => token);

    beforeAll(async () => {
      roost = await startWebRoost({ env: { ROOST_MEMORY_PASS: "off" } });
      browser = await launchBrowser();
      token = await roost.token();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
    });

    it("a parked turn shows a budget row; the panel refuses a bad limit, and a raise lets the turn finish", async () => {
      const bot = await api().createBot("Frugal");
      // The demo model's first call (a memory write) runs; it counts the prompt's words as
      // tokens, far more than 10, so the second call parks.
      await api().call("PUT", `/v1/bots/${bot.id}/budget`, { tokensPerDay: 10 });
      const conversation = await api().createConversation(bot.id);
      await api().send(conversation.id, "remember note: buy milk");
      await api().waitForSteps(conversation.id, "budget_reached");

      const page = await browser.newPage({ width: 1280, height: 800 });
      try {
        await page.goto(`${roost.url}/c/${conversation.id}`);
        const row = page.locator('[data-step="budget_reached"]');
        await expect.poll(() => row.textContent()).toContain("Paused: budget reached.");
        expect(await row.textContent()).toContain("daily token limit");
        await screenshot(page, "desktop-budget-reached");
        await row.getByRole("link", { name: "Raise the budget" }).click();
        await page.waitForURL(/\/usage$/);

        const today = page.getByRole("region", { name: "Today" });
        await expect.poll(() => today.textContent()).toMatch(/[\d,]+ tokens/);
        expect(await page.getByRole("status").first().textContent()).toContain("1 turn is paused");
        const field = page.getByRole("textbox", { name: "Tokens per day" });
        expect(await field.inputValue()).toBe("10");

        // A bad value: the server's message, and the stored budget is unchanged.
        await field.fill("-5");
        await page.getByRole("button", { name: "Save budget" }).click();
        await expect
          .poll(() => page.getByRole("alert").textContent())
          .toContain("tokensPerDay must be a whole number of tokens");
        expect(
          (await api().call<BotBudgetView>("GET", `/v1/bots/${bot.id}/budget`)).budget,
        ).toEqual({
          tokensPerDay: 10,
        });
        await screenshot(page, "desktop-usage-panel-error");

        await field.fill("100000000");
        await page.getByRole("button", { name: "Save budget" }).click();
        await expect.poll(() => page.getByText("Budget saved.").count()).toBe(1);
        const steps = await api().waitForSteps(conversation.id, "reply");
        expect(steps.map((step) => step.kind)).toEqual([
          "message",
          "model",
          "tool",
          "budget_reached",
          "reply",
        ]);
        await screenshot(page, "desktop-usage-panel");

        // The header of the chat links to the panel too.
        await page.goto(`${roost.url}/c/${conversation.id}`);
        await page.getByRole("link", { name: "Usage and budget of Frugal" }).click();
        await page.waitForURL(/\/usage$/);
      } finally {
        await page.close();
      }
    });
  },
);
