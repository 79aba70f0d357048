/**
 * The web app's stop button (issue 8 §4) in Debian's Chromium against the real platform.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { waitFor } from "../support/wait.ts";
import {
  chromiumPath,
  launchBrowser,
  screenshot,
  startWebRoost,
  type Browser,
  type WebRoost,
} from "./harness.ts";

/** Command lines of this machine's processes. */
function commandLines(): string[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        return [readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ")];
      } catch {
        return []; // it ended meanwhile
      }
    });
}

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `stop button in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
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

    it("stop button stops a running turn: the command is killed, the timeline says so, a message sent meanwhile does not stop it", async () => {
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Stoppable");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}`);
      const box = page.getByRole("textbox", { name: "Message" });
      // A command no other test runs, so its process can be looked for.
      await box.fill("$ sleep 61.5; echo finished");
      await box.press("Enter");
      await page.waitForURL(/\/c\/[^/]+$/);
      const card = page.locator(".tool-card[data-tool=shell]");
      await expect
        .poll(() => card.getAttribute("data-status"), { timeout: 60_000 })
        .toBe("running");
      await waitFor(() => commandLines().some((line) => line.includes("sleep 61.5")), {
        what: "the command to run on the computer",
      });

      // Typing while the bot works sends a normal message: the command keeps running.
      await box.fill("still there?");
      await box.press("Enter");
      await expect.poll(() => page.locator("[data-pending]").count(), { timeout: 10_000 }).toBe(0);
      expect(await card.getAttribute("data-status")).toBe("running");

      const stop = page.getByRole("button", { name: "Stop", exact: true });
      await screenshot(page, "desktop-stop-button");
      await stop.click();
      await page
        .locator(".row-interrupted", { hasText: "Stopped by you while running shell" })
        .waitFor({ timeout: 20_000 });
      await expect.poll(() => card.getAttribute("data-status")).toBe("stopped");
      await waitFor(() => !commandLines().some((line) => line.includes("sleep 61.5")), {
        what: "the stopped command's process to be gone",
      });
      await screenshot(page, "desktop-stopped");
      // The message sent meanwhile starts the next turn, which answers it.
      await page
        .locator(".row-bot:not([data-streaming])", { hasText: 'You said: "still there?"' })
        .waitFor({ timeout: 30_000 });
      await expect
        .poll(() => page.locator(".state-pill").getAttribute("data-state"), { timeout: 15_000 })
        .toBe("idle");
      expect(await stop.count()).toBe(0);
      // `finished` never appears: the command did not run to its end.
      const steps = await api.steps(page.url().split("/c/")[1]!);
      const outputs = steps.filter((step) => step.kind === "tool").map((step) => step.payload);
      expect(JSON.stringify(outputs)).not.toMatch(/finished\\n/);
      await page.close();
    });
  },
);
