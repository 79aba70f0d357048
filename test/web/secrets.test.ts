/**
 * Secrets in the web app (docs/secrets.md), in Debian's Chromium against the real platform: a
 * `request_secret` card takes the value in a password field and sends it straight to the store;
 * the page then shows only that it was provided, and the shell's output shows `[REDACTED]`.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Api } from "../../src/protocol/index.ts";
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
  `secrets in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
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

    it("a request_secret card saves the value to the store and then shows only that it was provided", async () => {
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Keeper", "demo");
      const value = "sk-web-7d1e4c9a2b6f";
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}`);
      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill("request secret STRIPE_KEY to charge the card");
      await box.press("Enter");
      await page.waitForURL(/\/c\/[^/]+$/);
      const card = page.getByRole("article", { name: "Secret STRIPE_KEY" });
      await card.getByText("Waiting for you").waitFor();
      await card.getByLabel("Value of STRIPE_KEY").fill(value);
      await card.getByRole("button", { name: "Save for this bot" }).click();
      await card.getByText("Provided", { exact: true }).waitFor();
      await screenshot(page, "secrets-request-provided");
      const list = await api.call<Api.SecretList>("GET", `/v1/bots/${bot.id}/secrets`);
      expect(list.secrets.map((secret) => secret.name)).toEqual(["STRIPE_KEY"]);

      await box.fill('$ echo "key: $STRIPE_KEY"');
      await box.press("Enter");
      await page.getByText("key: [REDACTED]").first().waitFor({ timeout: 60_000 });
      expect(await page.content()).not.toContain(value);
      await page.close();
    }, 120_000);
  },
);
