/**
 * The files panel (issue 16 §4), in Debian's Chromium against the real platform and a real
 * computer: a text file previews highlighted and is edited and saved in place; an image and a
 * PDF preview; a folder is made, a file renamed and deleted, a dropped file uploaded; a folder
 * of 250 entries comes in pages; and the bot's write and edit cards show what changed (a write over
 * an existing file against the text it replaced, secrets redacted).
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
import { fileTransfer } from "./page-files.ts";

const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==",
  "base64",
);
const pdf = Buffer.from(
  "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/MediaBox[0 0 200 200]/Parent 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n",
);

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `the files panel in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let token = "";
    let api: ReturnType<typeof apiClient>;
    let conversationId = "";

    const put = async (path: string, body: Buffer | string) => {
      const response = await fetch(
        `${roost.url}/v1/computers/me/files/content?path=${encodeURIComponent(path)}`,
        { method: "PUT", headers: { authorization: `Bearer ${token}` }, body },
      );
      expect(response.status).toBe(201);
    };
    const content = async (path: string) => {
      const response = await fetch(
        `${roost.url}/v1/computers/me/files/content?path=${encodeURIComponent(path)}`,
        { headers: { authorization: `Bearer ${token}` } },
      );
      return response.status === 200 ? await response.text() : undefined;
    };
    const names = async (path: string) =>
      (
        await api.call<Api.Listing>(
          "GET",
          `/v1/computers/me/files?path=${encodeURIComponent(path)}`,
        )
      ).entries.map((entry) => entry.name);
    const turn = async (text: string) => {
      const replies = (await api.steps(conversationId)).filter((s) => s.kind === "reply").length;
      await api.send(conversationId, text);
      await api.waitForSteps(conversationId, "reply", replies + 1, 60_000);
    };

    beforeAll(async () => {
      roost = await startWebRoost();
      browser = await launchBrowser();
      token = await roost.token();
      api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Filer", "demo");
      await api.call("PUT", `/v1/bots/${bot.id}/tool-policy`, {
        rules: [],
        useDefaults: false,
        reviewModel: null,
      });
      conversationId = (await api.createConversation(bot.id)).id;
      await put(
        "/workspace/app.ts",
        'export function greet(name: string) {\n  return "hi " + name;\n}\n',
      );
      await put("/workspace/notes.txt", "first notes\n");
      await put("/workspace/red.png", png);
      await put("/workspace/doc.pdf", pdf);
      await turn(
        "$ mkdir -p big && cd big && for i in $(seq 1 250); do : > f$i; done && echo made",
      );
    }, 180_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
    });

    const openPanel = async () => {
      const page = await browser.newPage();
      await page.goto(`${roost.url}/c/${conversationId}`);
      await page.getByRole("button", { name: "Files on the computer" }).click();
      const panel = page.getByRole("dialog", { name: "Files on your computer" });
      await panel
        .getByRole("button", { name: /app\.ts/ })
        .first()
        .waitFor({ timeout: 30_000 });
      return { page, panel };
    };

    it("previews text highlighted, edits and saves it; previews an image and a PDF", async () => {
      const { page, panel } = await openPanel();
      await panel.getByRole("button", { name: "app.ts", exact: false }).first().click();
      const viewer = panel.getByRole("region", { name: "Preview of app.ts" });
      await viewer.locator(".hljs-keyword").first().waitFor({ timeout: 30_000 });
      expect(await viewer.locator(".hljs-keyword").first().textContent()).toBe("export");
      await screenshot(page, "files-preview-text");
      await viewer.getByRole("button", { name: "Edit" }).click();
      const editor = viewer.getByRole("textbox", { name: "Contents of app.ts" });
      await editor.fill("export const answer = 42;\n");
      // The bot rewrites the file meanwhile: a save says so instead of overwriting it.
      await put("/workspace/app.ts", "// the bot's version\n");
      await viewer.getByRole("button", { name: "Save" }).click();
      await viewer.getByRole("status").filter({ hasText: "changed on the computer" }).waitFor();
      expect(await content("/workspace/app.ts")).toBe("// the bot's version\n");
      await viewer.getByRole("button", { name: "Save anyway" }).click();
      await viewer.getByRole("status").filter({ hasText: "Saved app.ts." }).waitFor();
      expect(await content("/workspace/app.ts")).toBe("export const answer = 42;\n");
      await viewer.getByRole("button", { name: "Back to the folder" }).click();

      await panel
        .getByRole("button", { name: /red\.png/ })
        .first()
        .click();
      const image = panel.getByRole("img", { name: "red.png" });
      await image.waitFor();
      await expect
        .poll(() =>
          image.evaluate(
            (element) => (element as unknown as { naturalWidth: number }).naturalWidth,
          ),
        )
        .toBe(2);
      await screenshot(page, "files-preview-image");
      await panel.getByRole("button", { name: "Back to the folder" }).click();

      await panel
        .getByRole("button", { name: /doc\.pdf/ })
        .first()
        .click();
      const frame = panel.locator('iframe[title="PDF: doc.pdf"]');
      await frame.waitFor();
      expect(await frame.getAttribute("src")).toMatch(/^blob:/);
      // The frame's document is a PDF: its type is the viewer's choice, not the file's.
      const document = await (await frame.elementHandle())?.contentFrame();
      await expect
        .poll(
          () =>
            document?.evaluate(
              () =>
                (globalThis as unknown as { document: { contentType: string } }).document
                  .contentType,
            ),
          { timeout: 15_000 },
        )
        .toBe("application/pdf");
      await screenshot(page, "files-preview-pdf");
      await page.close();
    }, 120_000);

    it("makes a folder, renames and deletes a file, uploads a dropped one", async () => {
      const { page, panel } = await openPanel();
      await panel.getByRole("button", { name: "New folder" }).click();
      await panel.getByRole("textbox", { name: "New folder name" }).fill("reports");
      await panel.getByRole("button", { name: "Make", exact: true }).click();
      await panel.getByRole("status").filter({ hasText: "Made the folder reports." }).waitFor();
      expect(await names("/workspace")).toContain("reports");

      await panel.getByRole("button", { name: "Rename notes.txt" }).click();
      await panel.getByRole("textbox", { name: "New name for notes.txt" }).fill("renamed.txt");
      await panel.getByRole("button", { name: "Rename", exact: true }).click();
      await panel
        .getByRole("button", { name: /renamed\.txt/ })
        .first()
        .waitFor();
      expect(await content("/workspace/renamed.txt")).toBe("first notes\n");
      expect(await names("/workspace")).not.toContain("notes.txt");

      await panel.getByRole("button", { name: "Delete renamed.txt" }).click();
      await panel
        .getByRole("group", { name: "Delete renamed.txt?" })
        .getByRole("button", { name: "Delete" })
        .click();
      await panel.getByRole("status").filter({ hasText: "Deleted renamed.txt." }).waitFor();
      expect(await names("/workspace")).not.toContain("renamed.txt");

      const transfer = await fileTransfer(page, "dropped.txt", "dropped\n");
      await panel.dispatchEvent("dragover", { dataTransfer: transfer });
      await panel.dispatchEvent("drop", { dataTransfer: transfer });
      await panel.getByRole("status").filter({ hasText: "Uploaded dropped.txt." }).waitFor();
      expect(await content("/workspace/dropped.txt")).toBe("dropped\n");
      await screenshot(page, "files-panel");
      await page.setViewportSize({ width: 390, height: 844 });
      await screenshot(page, "files-panel-phone");
      await page.close();
    }, 120_000);

    it("a folder of 250 entries comes in pages", async () => {
      const { page, panel } = await openPanel();
      await panel.getByRole("button", { name: /^big/ }).first().click();
      const rows = panel.locator(".file-list > li");
      await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(200);
      await panel.getByRole("button", { name: "Show more" }).click();
      await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(250);
      expect(await panel.getByRole("button", { name: "Show more" }).count()).toBe(0);
      await page.close();
    }, 120_000);

    it("the bot's write and edit cards show a line diff of what changed", async () => {
      // Relative paths: the harness's `process` computer works in its workspace folder on the host.
      await turn("write poem.txt roses are red\nviolets are blue");
      await turn("edit poem.txt violets are blue => tulips are yellow");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/c/${conversationId}`);
      const write = page.locator('.tool-card[data-tool="write"]').last();
      await write.locator(".tool-head").click();
      const writeDiff = write.getByRole("figure", { name: "Changes" });
      await writeDiff.waitFor({ timeout: 30_000 });
      expect(await writeDiff.locator("tr.diff-added").allTextContents()).toEqual([
        "1+added: roses are red",
        "2+added: violets are blue",
      ]);
      const edit = page.locator('.tool-card[data-tool="edit"]').last();
      await edit.locator(".tool-head").click();
      const editDiff = edit.getByRole("figure", { name: "Changes" });
      await editDiff.waitFor();
      expect(await editDiff.locator("tr.diff-removed").allTextContents()).toEqual([
        "1−removed: violets are blue",
      ]);
      expect(await editDiff.locator("tr.diff-added").allTextContents()).toEqual([
        "1+added: tulips are yellow",
      ]);
      expect(await content("/workspace/poem.txt")).toBe("roses are red\ntulips are yellow");
      await edit.scrollIntoViewIfNeeded();
      await screenshot(page, "files-diff-cards");
      await page.close();
    }, 120_000);

    it("a write over an existing file diffs against what it replaced, with secrets redacted", async () => {
      const value = `sk-poem-${Date.now()}-abcdef123456`;
      await api.call("PUT", "/v1/me/secrets/POEM_KEY", { value });
      await put("/workspace/keys.env", `KEY=${value}\nMODE=old\nKEEP=1`);
      await turn("write keys.env MODE=new\nKEEP=1");
      expect(await content("/workspace/keys.env")).toBe("MODE=new\nKEEP=1");
      const steps = await api.steps(conversationId);
      // The stored step has the replaced text, redacted; the model's text does not have it at all.
      expect(JSON.stringify(steps)).not.toContain(value);
      const step = steps.filter((s) => s.kind === "tool" && s.payload.name === "write").at(-1);
      if (step?.kind !== "tool") throw new Error("no write step");
      expect(step.payload.details).toMatchObject({
        created: false,
        previous: "KEY=[REDACTED]\nMODE=old\nKEEP=1",
      });
      expect(step.payload.output).not.toContain("MODE=old");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/c/${conversationId}`);
      const write = page.locator('.tool-card[data-tool="write"]').last();
      await write.locator(".tool-head").click();
      const diff = write.getByRole("figure", { name: "Changes" });
      await diff.waitFor({ timeout: 30_000 });
      expect(await diff.locator("tr.diff-removed").allTextContents()).toEqual([
        "1−removed: KEY=[REDACTED]",
        "2−removed: MODE=old",
      ]);
      expect(await diff.locator("tr.diff-added").allTextContents()).toEqual(["1+added: MODE=new"]);
      expect(await diff.textContent()).not.toContain("every line shows as new");
      // The replaced text is the diff, not also a row of the details list.
      expect(await write.locator(".tool-details").textContent()).not.toContain("MODE=old");
      expect(await page.content()).not.toContain(value);
      await write.scrollIntoViewIfNeeded();
      await screenshot(page, "files-write-diff");
      await page.close();
    }, 120_000);

    it("a write over a file too large to record says so and shows every line as new", async () => {
      await put("/workspace/huge.txt", "x".repeat(70 * 1024));
      await turn("write huge.txt small now");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/c/${conversationId}`);
      const write = page.locator('.tool-card[data-tool="write"]').last();
      await write.locator(".tool-head").click();
      const diff = write.getByRole("figure", { name: "Changes" });
      await diff.waitFor({ timeout: 30_000 });
      expect(await diff.locator(".diff-caption").textContent()).toContain(
        "Replaced a file over 64 KiB; its earlier content was not recorded, so every line shows as new.",
      );
      expect(await diff.locator("tr.diff-removed").count()).toBe(0);
      expect(await diff.locator("tr.diff-added").allTextContents()).toEqual(["1+added: small now"]);
      await page.close();
    }, 120_000);
  },
);
