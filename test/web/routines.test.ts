/**
 * A bot's routines in Debian's Chromium against the real platform: make a daily routine from a
 * preset and run it now (its run is answered and listed), make a webhook routine and see its
 * key once, and switch a routine off.
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
  `routines in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let token = "";
    const api = () => apiClient(roost.url, () => token);

    beforeAll(async () => {
      roost = await startWebRoost();
      browser = await launchBrowser();
      token = await roost.token();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
    });

    it("makes a daily routine from a preset, runs it now, lists the answered run, and makes a webhook routine whose key shows once", async () => {
      const bot = await api().createBot("scheduler", "demo");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}/edit`);
      const form = page.getByRole("form", { name: "New routine" });
      await form.getByLabel("Name").fill("Morning brief");
      await form.getByLabel("Instruction").fill("Summarise the news.");
      await form.getByLabel("When").selectOption("weekdays");
      await form.getByLabel("Time").fill("07:30");
      await form.getByRole("button", { name: "Add routine" }).click();
      await expect.poll(() => page.getByText("weekdays at 07:30").isVisible()).toBe(true);
      const [routine] = (await api().call<Api.RoutineList>("GET", `/v1/bots/${bot.id}/routines`))
        .routines;
      expect(routine!.trigger).toEqual({ type: "schedule", preset: "weekdays", at: "07:30" });

      await page.getByRole("button", { name: "Run now" }).click();
      await expect
        .poll(
          async () =>
            (await api().call<Api.RoutineRunList>("GET", `/v1/routines/${routine!.id}/runs`))
              .runs[0]?.status,
          { timeout: 20_000 },
        )
        .toBe("replied");
      await page.getByRole("button", { name: "Runs" }).click();
      await expect.poll(() => page.getByRole("link", { name: "replied" }).isVisible()).toBe(true);
      await screenshot(page, "routines-runs");

      await form.getByLabel("Name").fill("Alerts");
      await form.getByLabel("Instruction").fill("Triage the alert.");
      await form.getByLabel("When").selectOption("webhook");
      await form.getByRole("button", { name: "Add routine" }).click();
      const key = page.getByRole("status", { name: "Webhook key" });
      await expect.poll(() => key.textContent()).toMatch(/rwk_/);
      await key.getByRole("button", { name: "I saved it" }).click();
      await expect.poll(() => key.isVisible()).toBe(false);

      // The box follows the server: it changes once the PATCH is answered and the list reloaded.
      await page.getByLabel("Morning brief enabled").click();
      await expect
        .poll(
          async () => (await api().call<Api.Routine>("GET", `/v1/routines/${routine!.id}`)).enabled,
        )
        .toBe(false);
      await expect.poll(() => page.getByLabel("Morning brief enabled").isChecked()).toBe(false);
      await page.close();
    }, 90_000);
  },
);
