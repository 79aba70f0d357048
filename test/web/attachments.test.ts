/**
 * Attachments in the web app (docs/web-tools.md), in Debian's Chromium against the real platform:
 * an image `read` from the computer shows under its tool card as a preview loaded through the
 * attachments API with the session's token, and downloads with its name.
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

// A 2x2 red PNG.
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==",
  "base64",
);

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `attachments in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
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

    it("an image read from the computer is previewed under its card and downloads by name", async () => {
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Viewer", "demo");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}`);
      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill(
        `$ printf '%s' '${png.toString("base64")}' | base64 -d > red.png && echo made`,
      );
      await box.press("Enter");
      await page.waitForURL(/\/c\/[^/]+$/);
      await page.getByText("made").first().waitFor({ timeout: 60_000 });
      await box.fill("read red.png");
      await box.press("Enter");
      const preview = page.getByRole("img", { name: "image: red.png" });
      await preview.waitFor({ timeout: 60_000 });
      // Loaded and decoded: the API answered the bytes with the session's token.
      await expect
        .poll(() =>
          preview.evaluate(
            (element) => (element as unknown as { naturalWidth: number }).naturalWidth,
          ),
        )
        .toBe(2);
      await screenshot(page, "attachments-image-preview");
      const conversationId = /\/c\/([^/]+)$/.exec(page.url())?.[1] ?? "";
      const listed = await api.call<Api.AttachmentList>(
        "GET",
        `/v1/conversations/${conversationId}/attachments`,
      );
      expect(listed.attachments.map((item) => [item.kind, item.name, item.size])).toEqual([
        ["image", "red.png", png.length],
      ]);
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: `red.png (${png.length} B)` }).click(),
      ]);
      expect(download.suggestedFilename()).toBe("red.png");
      await page.close();
    }, 120_000);
  },
);
