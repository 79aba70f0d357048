/**
 * The approval card in Debian's Chromium against the real platform (embedded Restate, the demo
 * model): a call the bot's policy asks about shows a card with the tool, the call, the reason and
 * Approve / Deny; Approve (with "remember") lets the same turn run it, the card says Approved and
 * the bot's policy gains the remembered rule.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Approval, ApprovalList } from "../../src/protocol/api.ts";
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
  `approval card in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
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

    it("a waiting call shows a card; Approve runs it in the same turn and the card says so", async () => {
      const bot = await api().createBot("Careful");
      await api().call("PUT", `/v1/bots/${bot.id}/tool-policy`, {
        rules: [{ tool: "memory", decision: "ask" }],
      });
      const conversation = await api().createConversation(bot.id);
      await api().send(conversation.id, "because you asked: remember note: buy milk");
      await api().waitForSteps(conversation.id, "approval");

      const page = await browser.newPage({ width: 1280, height: 800 });
      try {
        await page.goto(`${roost.url}/c/${conversation.id}`);
        const card = page.locator('[data-step="approval"]');
        await expect.poll(() => card.textContent()).toContain("Waiting for your approval");
        const text = (await card.textContent()) ?? "";
        expect(text).toContain("memory");
        expect(text).toContain("this bot's policy asks before every memory call");
        await expect.poll(() => card.textContent()).toContain("The bot says: you asked");
        expect(await page.locator(".tool-status-text").first().textContent()).toBe(
          "Waiting for approval",
        );
        await screenshot(page, "desktop-approval-card");
        await card.getByRole("checkbox").check();
        await card.getByRole("textbox", { name: "Pattern to remember" }).fill('*"tier":"note"*');
        await card.getByRole("button", { name: "Approve" }).click();
        await expect.poll(() => card.textContent(), { timeout: 20_000 }).toContain("Approved");
        await api().waitForSteps(conversation.id, "reply");
        const list = await api().call<ApprovalList>("GET", "/v1/approvals");
        expect(list.approvals.map((approval: Approval) => approval.state)).toEqual(["approved"]);
        expect(await card.getByRole("button", { name: "Approve" }).count()).toBe(0);
        await expect.poll(() => card.textContent()).toContain("Remembered for calls matching");
        const policy = await api().call<{ rules: unknown[] }>(
          "GET",
          `/v1/bots/${bot.id}/tool-policy`,
        );
        expect(policy.rules).toContainEqual({
          tool: "memory",
          match: '*"tier":"note"*',
          decision: "allow",
        });
      } finally {
        await page.close();
      }
    });
  },
);
