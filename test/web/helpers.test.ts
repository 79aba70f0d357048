/**
 * The web app's helpers list (issue 15 §1, docs/helpers.md) in Debian's Chromium against the real
 * platform and the demo model: a conversation's helpers appear under its timeline, live, with
 * their status, and each opens its own conversation.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  `helpers list in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let token = "";

    beforeAll(async () => {
      roost = await startWebRoost();
      browser = await launchBrowser();
      token = await roost.token();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
    });

    it("helpers started from the page appear under the timeline with their status, live, and link to their own conversations", async () => {
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Delegator");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}`);
      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill("helpers hi | there");
      await box.press("Enter");
      await page.waitForURL(/\/c\/[^/]+$/);
      const panel = page.getByTestId("helpers-panel");
      await panel.waitFor({ timeout: 30_000 });
      const items = panel.locator(".helper-item");
      await expect.poll(() => items.count(), { timeout: 30_000 }).toBe(2);
      await expect
        .poll(
          async () =>
            Promise.all((await items.all()).map((item) => item.getAttribute("data-helper-status"))),
          { timeout: 30_000 },
        )
        .toEqual(["done", "done"]);
      expect(await items.locator("a").allTextContents()).toEqual(["hi", "there"]);
      // Their results are shown as a helper's, not as the person's.
      await expect
        .poll(() => page.locator(".row-user[data-source=other]", { hasText: "You said" }).count())
        .toBe(2);
      await page
        .getByText(/From helper hlp_/)
        .first()
        .waitFor();
      await screenshot(page, "desktop-helpers");

      const parentUrl = page.url();
      await items.locator("a", { hasText: "there" }).click();
      await page.waitForURL((url) => url.href !== parentUrl && /\/c\/conv_hlp_/.test(url.href));
      await page.getByText('You said: "there"').first().waitFor({ timeout: 20_000 });
      await page.getByTestId("helper-origin").getByText("A helper (done)").waitFor();
      // The helper's task links back to the conversation that started it.
      await page
        .getByRole("link", { name: "Task from the conversation that started this helper" })
        .click();
      await page.waitForURL(parentUrl);
      await page.close();
    });

    it("while helpers run, the list offers to stop them, and they stop", async () => {
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Sleeper");
      const chat = await api.createConversation(bot.id);
      await api.send(chat.id, "helper $ sleep 62.5");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/c/${chat.id}`);
      const item = page.getByTestId("helpers-panel").locator(".helper-item");
      await expect
        .poll(() => item.getAttribute("data-helper-status"), { timeout: 30_000 })
        .toBe("running");
      await page.getByRole("button", { name: /Stop the (bot and its )?helpers/ }).click();
      await expect
        .poll(() => item.getAttribute("data-helper-status"), { timeout: 20_000 })
        .toBe("stopped");
      expect(await page.getByRole("button", { name: /Stop the/ }).count()).toBe(0);
      await page.close();
    });
  },
);
