/**
 * Attachments in the message box (docs/uploads.md), in Debian's Chromium against the real
 * platform: files attached by the paperclip, dropped on the box and pasted into it are uploaded,
 * sent with the message, copied into the computer at /workspace/attachments/<conversation>/ (the
 * bot's `ls` lists them), and shown in the timeline with an image preview. A seventh file is
 * refused with the limit. A new chat takes files too.
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
import { fileTransfer, pasteInto } from "./page-files.ts";

// A 2x2 red PNG.
const pngBase64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==";

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `attachments in the message box, in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
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

    it("attach by button, drop and paste; the files reach the computer and show in the timeline", async () => {
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Attacher", "demo");
      const conversation = await api.createConversation(bot.id);
      const page = await browser.newPage();
      await page.goto(`${roost.url}/c/${conversation.id}`);
      const box = page.getByRole("textbox", { name: "Message" });
      await box.waitFor();

      // 1. The paperclip opens the file chooser.
      const [chooser] = await Promise.all([
        page.waitForEvent("filechooser"),
        page.getByRole("button", { name: "Attach files" }).click(),
      ]);
      await chooser.setFiles({
        name: "red.png",
        mimeType: "image/png",
        buffer: Buffer.from(pngBase64, "base64"),
      });
      // 2. A file dropped on the box.
      const dropped = await fileTransfer(page, "dropped.txt", "dropped on the box\n");
      await page.dispatchEvent("form.composer", "dragover", { dataTransfer: dropped });
      await page.dispatchEvent("form.composer", "drop", { dataTransfer: dropped });
      // 3. A file pasted into the text box.
      const pasted = await fileTransfer(page, "pasted.txt", "pasted in\n");
      await pasteInto(box, pasted);

      const tray = page.getByRole("list", { name: "Files to send" });
      await expect.poll(() => tray.getByRole("listitem").count()).toBe(3);
      await expect.poll(() => page.getByLabel("Uploading").count(), { timeout: 30_000 }).toBe(0);
      await screenshot(page, "uploads-tray");

      // The harness's `process` computer runs commands on the host, in its workspace folder: the
      // path is relative to it (a sandboxed computer has it at /workspace, test/e2e/uploads.test.ts).
      await box.fill(`$ ls attachments/${conversation.id}/`);
      await box.press("Enter");
      // The bot's ls lists the three files: they were copied before it ran.
      await page
        .locator(".tool-card")
        .getByText("ls attachments/")
        .first()
        .waitFor({ timeout: 60_000 });
      await expect
        .poll(
          async () => {
            const steps = await api.steps(conversation.id);
            const tool = steps.filter((step) => step.kind === "tool").at(-1);
            return (tool?.payload.details as { stdout?: string } | undefined)?.stdout;
          },
          { timeout: 60_000 },
        )
        .toBe("dropped.txt\npasted.txt\nred.png\n");
      // The message's image is previewed in its bubble, loaded with the session's token.
      const preview = page.locator(".bubble-user").getByRole("img", { name: "upload: red.png" });
      await preview.waitFor({ timeout: 30_000 });
      await expect
        .poll(() =>
          preview.evaluate(
            (element) => (element as unknown as { naturalWidth: number }).naturalWidth,
          ),
        )
        .toBe(2);
      await expect(
        page
          .locator(".bubble-user")
          .getByRole("button", { name: /dropped\.txt/ })
          .count(),
      ).resolves.toBe(1);
      // Sent: the box is empty again.
      expect(await tray.count()).toBe(0);
      await screenshot(page, "uploads-timeline");
      await page.setViewportSize({ width: 390, height: 844 });
      await screenshot(page, "uploads-timeline-phone");
      await page.close();
    }, 180_000);

    it("a seventh file is refused with the limit; six stay in the tray", async () => {
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Limits", "demo");
      const conversation = await api.createConversation(bot.id);
      const page = await browser.newPage();
      await page.goto(`${roost.url}/c/${conversation.id}`);
      await page.getByRole("textbox", { name: "Message" }).waitFor();
      const [chooser] = await Promise.all([
        page.waitForEvent("filechooser"),
        page.getByRole("button", { name: "Attach files" }).click(),
      ]);
      await chooser.setFiles(
        Array.from({ length: 7 }, (_, index) => ({
          name: `f${index}.txt`,
          mimeType: "text/plain",
          buffer: Buffer.from(`file ${index}\n`),
        })),
      );
      await page
        .getByRole("alert")
        .filter({ hasText: "A message takes at most 6 files; 1 not added." })
        .waitFor();
      const tray = page.getByRole("list", { name: "Files to send" });
      expect(await tray.getByRole("listitem").count()).toBe(6);
      await screenshot(page, "uploads-limit");
      await page.close();
    }, 120_000);

    it("a new chat takes files too: the first one makes the conversation, the message goes to it", async () => {
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Newcomer", "demo");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}`);
      const box = page.getByRole("textbox", { name: "Message" });
      await box.waitFor();
      const [chooser] = await Promise.all([
        page.waitForEvent("filechooser"),
        page.getByRole("button", { name: "Attach files" }).click(),
      ]);
      await chooser.setFiles({
        name: "brief.txt",
        mimeType: "text/plain",
        buffer: Buffer.from("the brief\n"),
      });
      await expect.poll(() => page.getByLabel("Uploading").count(), { timeout: 30_000 }).toBe(0);
      await box.fill("$ cat attachments/*/brief.txt");
      await box.press("Enter");
      await page.waitForURL(/\/c\/[^/]+$/);
      const conversationId = /\/c\/([^/]+)$/.exec(page.url())?.[1] ?? "";
      await page
        .locator(".bubble-user")
        .getByRole("button", { name: /brief\.txt/ })
        .waitFor({ timeout: 30_000 });
      const steps = await api.waitForSteps(conversationId, "reply", 1, 60_000);
      const tool = steps.find((step) => step.kind === "tool");
      expect((tool?.payload.details as { stdout?: string } | undefined)?.stdout).toBe(
        "the brief\n",
      );
      // One conversation: the one the file made, which the message went to.
      const listed = await api.call<{ conversations: { id: string }[] }>(
        "GET",
        `/v1/conversations?botId=${bot.id}`,
      );
      expect(listed.conversations.map((conversation) => conversation.id)).toEqual([conversationId]);
      await page.close();
    }, 120_000);
  },
);
