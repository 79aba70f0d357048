/**
 * The chat's daily-driver actions (issue 16 §2) in Debian's Chromium against the real platform:
 * titles, "thinking…" with elapsed time, regenerate, edit with the branch switcher, ↑ to edit,
 * Esc to stop (and the computer popover leaving "In use" at once), rename, search with
 * Ctrl/Cmd-K, and delete.
 */
import { existsSync } from "node:fs";
import type { Page } from "playwright-core";
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

/** The model thinks this long before its first token when the last message asks it to. */
const slowThinkMs = 3500;

describe.skipIf(!existsSync(chromiumPath))(
  `chat actions in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let token = "";
    let page: Page;
    let botId = "";
    let conversationId = "";

    beforeAll(async () => {
      roost = await startWebRoost({
        thinkMs: (request) => {
          const last = request.messages.findLast((message) => message.role === "user");
          return last?.role === "user" && last.text.includes("think slowly") ? slowThinkMs : 0;
        },
      });
      browser = await launchBrowser();
      token = await roost.token();
      botId = (await apiClient(roost.url, () => token).createBot("Echo")).id;
      page = await browser.newPage();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
    });

    const box = () => page.getByRole("textbox", { name: "Message" });
    const finalReplies = () => page.locator(".row-bot:not([data-streaming]):not(.row-thinking)");
    const idle = () =>
      expect
        .poll(() => page.locator(".state-pill").getAttribute("data-state"), { timeout: 20_000 })
        .toBe("idle");
    const steps = () => apiClient(roost.url, () => token).steps(conversationId);

    it("a slow model shows thinking… with elapsed seconds until its first token; the title is made from the message", async () => {
      await page.goto(`${roost.url}/bots/${botId}`);
      await box().fill("$ think slowly about boiled eggs");
      await box().press("Enter");
      await page.waitForURL(/\/c\/[^/]+$/);
      conversationId = page.url().split("/c/")[1]!;
      const thinking = page.getByTestId("thinking");
      await thinking.waitFor({ timeout: 10_000 });
      await expect
        .poll(() => thinking.getByRole("timer").textContent(), { timeout: 10_000 })
        .toMatch(/^Thinking… [1-9] s$/);
      expect(await page.locator("[data-streaming]").count()).toBe(0);
      await screenshot(page, "desktop-chat-thinking");
      // The first token replaces it.
      await finalReplies().first().waitFor({ timeout: 30_000 });
      expect(await thinking.count()).toBe(0);
      await idle();
      // The rule's title: never the raw message with its "$ ".
      const title = page.getByRole("heading", { level: 1 });
      await expect.poll(() => title.textContent()).toBe("Run think slowly about boiled eggs");
      await expect
        .poll(() =>
          page.locator(`[data-conversation="${conversationId}"] .nav-label`).first().textContent(),
        )
        .toBe("Run think slowly about boiled eggs");
    });

    it("regenerate: a new reply, the earlier one behind ‹ 1/2 ›", async () => {
      await page.getByRole("button", { name: "Regenerate" }).click();
      const switcher = page.getByTestId("version-switcher");
      await expect.poll(() => switcher.locator(".version-count").textContent()).toBe("2/2");
      await idle();
      await expect
        .poll(async () => (await steps()).filter((step) => step.kind === "reply").length)
        .toBe(2);
      expect(await finalReplies().count()).toBe(1); // only the active branch is shown
      await page.getByRole("button", { name: "Earlier version" }).click();
      await expect.poll(() => switcher.locator(".version-count").textContent()).toBe("1/2");
      await expect.poll(() => switcher.textContent()).toContain("earlier version");
      // No actions on an earlier branch: it is the record as it was.
      await expect.poll(() => page.getByRole("button", { name: "Regenerate" }).count()).toBe(0);
      await page.getByRole("button", { name: "Later version" }).click();
      await expect.poll(() => switcher.locator(".version-count").textContent()).toBe("2/2");
    });

    it("edit and resend: the conversation branches, the earlier branch stays visible", async () => {
      await page.locator(".row-user").last().hover();
      await page.getByRole("button", { name: "Edit message" }).click();
      const editor = page.getByRole("textbox", { name: "Edit message" });
      await editor.fill("tell me about scrambled eggs");
      await screenshot(page, "desktop-chat-editing");
      await page.getByRole("button", { name: "Save & send" }).click();
      await finalReplies()
        .filter({ hasText: 'You said: "tell me about scrambled eggs"' })
        .waitFor({ timeout: 30_000 });
      await idle();
      const switcher = page.getByTestId("version-switcher");
      await expect.poll(() => switcher.locator(".version-count").textContent()).toBe("3/3");
      await expect.poll(() => page.getByText("$ think slowly about boiled eggs").count()).toBe(0);
      await screenshot(page, "desktop-chat-branch-current");
      const earlier = page.getByRole("button", { name: "Earlier version" });
      const later = page.getByRole("button", { name: "Later version" });
      await earlier.click(); // the regenerated version
      await expect.poll(() => switcher.locator(".version-count").textContent()).toBe("2/3");
      await page.getByText("$ think slowly about boiled eggs").waitFor();
      await expect.poll(() => page.getByText("tell me about scrambled eggs").count()).toBe(0);
      await earlier.click(); // the first
      await expect.poll(() => switcher.locator(".version-count").textContent()).toBe("1/3");
      await expect.poll(() => earlier.isDisabled()).toBe(true);
      await screenshot(page, "desktop-chat-branch-earlier");
      await page.setViewportSize({ width: 390, height: 844 });
      await screenshot(page, "phone-chat-branch-earlier");
      await page.setViewportSize({ width: 1280, height: 800 });
      await later.click();
      await expect.poll(() => switcher.locator(".version-count").textContent()).toBe("2/3");
      await later.click();
      await expect.poll(() => switcher.locator(".version-count").textContent()).toBe("3/3");
      await expect.poll(() => later.isDisabled()).toBe(true);
      await page.getByText("tell me about scrambled eggs").first().waitFor();
      // The record keeps every version.
      const messages = (await steps()).filter((step) => step.kind === "message");
      expect(messages.map((step) => step.payload.text)).toEqual([
        "$ think slowly about boiled eggs",
        "$ think slowly about boiled eggs",
        "tell me about scrambled eggs",
      ]);
    });

    it("↑ in an empty message box edits the last message; Esc cancels", async () => {
      await box().click();
      await box().press("ArrowUp");
      const editor = page.getByRole("textbox", { name: "Edit message" });
      await editor.waitFor();
      expect(await editor.inputValue()).toBe("tell me about scrambled eggs");
      await editor.press("Escape");
      expect(await editor.count()).toBe(0);
      // With words in the box, ↑ moves the caret as usual.
      await box().fill("draft");
      await box().press("ArrowUp");
      expect(await editor.count()).toBe(0);
      await box().fill("");
    });

    it("Esc stops the bot, and the computer popover stops saying In use without waiting for a poll", async () => {
      await box().fill("$ sleep 47.25; echo done");
      await box().press("Enter");
      const card = page.locator(".tool-card[data-tool=shell]").last();
      await expect
        .poll(() => card.getAttribute("data-status"), { timeout: 60_000 })
        .toBe("running");
      await page.getByRole("button", { name: /^Computer/ }).click();
      const popover = page.getByRole("dialog", { name: "Computer" });
      await expect.poll(() => popover.textContent(), { timeout: 10_000 }).toContain("In use");
      await page.keyboard.press("Escape"); // closes the popover (it has the focus)
      await box().focus();
      await box().press("Escape");
      await page
        .locator(".row-interrupted", { hasText: "Stopped by you" })
        .waitFor({ timeout: 20_000 });
      await idle();
      if (!(await popover.isVisible()))
        await page.getByRole("button", { name: /^Computer/ }).click();
      // The 20 s poll would take far longer than this.
      await expect.poll(() => popover.textContent(), { timeout: 6_000 }).not.toContain("In use");
      await page.keyboard.press("Escape");
    });

    it("rename in the sidebar", async () => {
      const row = page.locator(`[data-conversation="${conversationId}"]`);
      await row.hover();
      await row.getByRole("button", { name: /^Conversation actions/ }).click();
      await row.getByRole("button", { name: "Rename" }).click();
      const input = row.getByRole("textbox", { name: "New title" });
      await input.fill("Egg research");
      await input.press("Enter");
      await expect.poll(() => row.locator(".nav-label").first().textContent()).toBe("Egg research");
      await expect
        .poll(() => page.getByRole("heading", { level: 1 }).textContent())
        .toBe("Egg research");
    });

    it("Ctrl-K opens the switcher, which searches titles and messages", async () => {
      // A second conversation, to switch away from and back.
      await page.goto(`${roost.url}/bots/${botId}`);
      await box().fill("what about pancakes?");
      await box().press("Enter");
      await page.waitForURL(
        (url) => !url.pathname.includes(conversationId) && url.pathname.startsWith("/c/"),
      );
      await finalReplies().first().waitFor({ timeout: 30_000 });
      await page.keyboard.press("Control+K");
      const dialog = page.getByRole("dialog", { name: "Search chats" });
      await dialog.waitFor();
      const search = dialog.getByRole("combobox", { name: "Search chats" });
      await search.fill("scrambled");
      const results = dialog.getByRole("option");
      await expect.poll(() => results.count(), { timeout: 5000 }).toBe(1);
      expect(await results.first().textContent()).toContain("Egg research");
      expect(await results.first().textContent()).toContain("scrambled eggs");
      await screenshot(page, "desktop-chat-switcher");
      await search.press("Enter");
      await page.waitForURL(new RegExp(`/c/${conversationId}$`));
      expect(await dialog.count()).toBe(0);
      // Nothing matches: it says so.
      await page.keyboard.press("Control+K");
      await dialog.getByRole("combobox").fill("zeppelin");
      await dialog.getByText("No chat mentions “zeppelin”.").waitFor();
      await page.keyboard.press("Escape");
      expect(await dialog.count()).toBe(0);
      // The sidebar's button opens it too, on a phone as well.
      await page.setViewportSize({ width: 390, height: 844 });
      await page
        .getByRole("button", { name: "Open the list" })
        .click()
        .catch(() => undefined);
      await page.getByRole("button", { name: /Search chats/ }).click();
      await dialog.waitFor();
      await dialog.getByRole("combobox").fill("pancakes");
      await expect.poll(() => results.count(), { timeout: 5000 }).toBe(1);
      await screenshot(page, "phone-chat-switcher");
      await page.keyboard.press("Escape");
      await page.setViewportSize({ width: 1280, height: 800 });
    });

    it("delete in the sidebar: the chat is gone and the app leaves it", async () => {
      const row = page.locator(`[data-conversation="${conversationId}"]`);
      await row.hover();
      await row.getByRole("button", { name: /^Conversation actions/ }).click();
      await row.getByRole("button", { name: "Delete" }).click();
      await screenshot(page, "desktop-chat-delete-confirm");
      await row.getByRole("button", { name: "Delete" }).click();
      await expect.poll(() => row.count()).toBe(0);
      await page.waitForURL(new RegExp(`/bots/${botId}$`));
      const answer = await fetch(`${roost.url}/v1/conversations/${conversationId}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(answer.status).toBe(404);
    });
  },
);
