/**
 * A conversation of 10,000 steps in Chromium (issue 16 §7, the virtualised timeline,
 * web/src/components/virtual-list.tsx): it opens at the newest step with only a window of rows in
 * the page, scrolls back to step 1 through every older page while the reading position holds as
 * pages arrive, and a reply streamed afterwards is followed at the bottom. Timings are figures
 * in `node bench/web-timeline.ts`, not assertions here.
 */
import { existsSync } from "node:fs";
import type { Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { waitFor } from "../support/wait.ts";
import {
  chromiumPath,
  launchBrowser,
  startWebRoost,
  type Browser,
  type WebRoost,
} from "./harness.ts";
import { firstMessageText, seedLongConversation, turnText } from "./long-conversation.ts";

const stepCount = 10_000;

// Code run in the page, as strings: the root tsconfig has no DOM types.
const twoFrames = `new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))`;
const scrollHeight = `document.querySelector(".timeline").scrollHeight`;
const domRows = `document.querySelectorAll(".timeline .virtual-item").length`;
const fromBottom = `(() => {
  const timeline = document.querySelector(".timeline");
  return timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight;
})()`;
/** The row at the top edge of the timeline's viewport: its key and its distance from the edge. */
const topRow = `(() => {
  const timeline = document.querySelector(".timeline");
  const { top: edge, bottom } = timeline.getBoundingClientRect();
  for (const row of timeline.querySelectorAll(".virtual-item")) {
    const box = row.getBoundingClientRect();
    if (box.bottom > edge + 1 && box.top < bottom) return { key: row.dataset.virtualKey, top: box.top - edge };
  }
  return undefined;
})()`;
const rowTop = (key: string) => `(() => {
  const timeline = document.querySelector(".timeline");
  const row = timeline.querySelector(${JSON.stringify(`[data-virtual-key="${key}"]`)});
  return row === null ? undefined : row.getBoundingClientRect().top - timeline.getBoundingClientRect().top;
})()`;
/** Whether an element holding `text` is inside the timeline's viewport. */
const onScreen = (selector: string, text: string) => `(() => {
  const timeline = document.querySelector(".timeline").getBoundingClientRect();
  return [...document.querySelectorAll(${JSON.stringify(selector)})].some((element) => {
    const box = element.getBoundingClientRect();
    return element.textContent.includes(${JSON.stringify(text)}) && box.bottom > timeline.top && box.top < timeline.bottom;
  });
})()`;

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `a ${stepCount}-step conversation${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let page: Page;
    let conversationId: string;

    beforeAll(async () => {
      roost = await startWebRoost();
      browser = await launchBrowser();
      const token = await roost.token();
      const api = apiClient(roost.url, () => token);
      const me = await api.call<{ id: string }>("GET", "/v1/me");
      const bot = await api.createBot("Longtalk");
      conversationId = (await api.createConversation(bot.id)).id;
      const { lastSeq } = await seedLongConversation(roost.platform, {
        conversationId,
        authorAccountId: me.id,
        steps: stepCount,
      });
      expect(lastSeq).toBe(stepCount);
      page = await browser.newPage({ width: 1280, height: 800 });
    }, 180_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
    });

    it("opens at the newest step with only a window of rows in the page", async () => {
      await page.goto(`${roost.url}/c/${conversationId}`);
      const lastTurn = stepCount / 4 - 1;
      await page
        .locator(".timeline .row-bot", { hasText: `Answer to question ${lastTurn}:` })
        .waitFor({ timeout: 30_000 });
      await expect.poll(() => page.evaluate<number>(fromBottom)).toBeLessThan(2);
      expect(
        await page.evaluate<boolean>(onScreen(".row-bot", `Answer to question ${lastTurn}:`)),
      ).toBe(true);
      const rows = await page.evaluate<number>(domRows);
      // The feed holds the newest 300 steps (about 300 rows); only those near the viewport are drawn.
      expect(rows).toBeGreaterThan(3);
      expect(rows).toBeLessThan(80);
      // The rest of the list is there as height: the scrollbar spans all loaded rows.
      expect(
        await page.evaluate<number>(`document.querySelector(".timeline").scrollHeight`),
      ).toBeGreaterThan(300 * 40);
      // Rows enter as plain text and get their markdown when the browser is idle
      // (markdown-lazy.tsx): the newest reply ends up rendered (bold, inline code), and still at
      // the bottom after its height changed.
      const newest = page.locator(".timeline .row-bot", {
        hasText: `Answer to question ${lastTurn}:`,
      });
      await newest.locator(".markdown:not(.markdown-plain) strong").first().waitFor();
      expect(await newest.locator(".markdown-plain").count()).toBe(0);
      expect(await newest.locator(".markdown code").count()).toBeGreaterThan(0);
      await expect.poll(() => page.evaluate<number>(fromBottom)).toBeLessThan(2);
    });

    it("scrolls back to step 1 through every older page, keeping the reading position as each arrives", async () => {
      // Each older page is held until the row on screen was noted, then let through.
      const held: Route[] = [];
      const stepsPath = (url: URL) => url.pathname === `/v1/conversations/${conversationId}/steps`;
      await page.route(stepsPath, (route) => void held.push(route));
      const shifts: number[] = [];
      let maxRows = 0;
      try {
        for (let pageNumber = 1; pageNumber <= 100; pageNumber++) {
          if ((await page.locator(".load-earlier").count()) === 0) break;
          // At the top, the next older page is asked for by itself.
          await page.evaluate(`document.querySelector(".timeline").scrollTop = 0`);
          const askedAt = Date.now();
          await waitFor(
            async () => {
              if (held.length > 0) return true;
              // Once, in a full CI run, page 29 was not asked for within 20 s of this scroll; a
              // reader scrolls again, so after 3 s the test does too (down a little, then up).
              if (Date.now() - askedAt > 3000) {
                await page.evaluate(`document.querySelector(".timeline").scrollTop = 40`);
                await page.evaluate(twoFrames);
                await page.evaluate(`document.querySelector(".timeline").scrollTop = 0`);
              }
              return held.length > 0;
            },
            { what: `older page ${pageNumber} to be asked for`, intervalMs: 250 },
          );
          await page.evaluate(twoFrames);
          const anchor = await page.evaluate<{ key: string; top: number } | undefined>(topRow);
          const height = await page.evaluate<number>(scrollHeight);
          expect(anchor, "a row is on screen at the top").toBeDefined();
          await held.shift()!.continue();
          await expect
            .poll(() => page.evaluate<number>(scrollHeight), { timeout: 15_000 })
            .toBeGreaterThan(height);
          await page.evaluate(twoFrames);
          const after = await page.evaluate<number | undefined>(rowTop(anchor!.key));
          expect(after, `row ${anchor!.key} is still drawn after the page arrived`).toBeDefined();
          shifts.push(Math.abs(after! - anchor!.top));
          maxRows = Math.max(maxRows, await page.evaluate<number>(domRows));
        }
      } finally {
        await page.unroute(stepsPath);
        for (const route of held) await route.continue();
      }
      // 10,000 steps: the newest 300 at first, then every older page of 300 on the way up.
      expect(shifts.length).toBe(Math.ceil((stepCount - 300) / 300));
      // The row that was on screen stayed where it was as each page arrived above it.
      expect(Math.max(...shifts)).toBeLessThanOrEqual(1);
      await page.evaluate(`document.querySelector(".timeline").scrollTop = 0`);
      await page.getByText(firstMessageText).waitFor();
      expect(await page.evaluate<boolean>(onScreen(".row-user", firstMessageText))).toBe(true);
      // All 10,000 steps are loaded now (7,500 rows), and the page still holds only a window.
      expect(maxRows).toBeLessThan(80);
      expect(await page.evaluate<number>(domRows)).toBeLessThan(80);
      expect(await page.getByText(turnText(1), { exact: true }).count()).toBe(1);
    });

    it("scrolled away, the newest stays put; back at the bottom, a streamed reply is followed", async () => {
      // Jump to the newest from the top, through the "Latest" button.
      await page.evaluate(`document.querySelector(".timeline").scrollTop = 3000`);
      await page.getByRole("button", { name: "Latest" }).click();
      await expect.poll(() => page.evaluate<number>(fromBottom)).toBeLessThan(2);

      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill("a new message at step ten thousand and one");
      await box.press("Enter");
      // The reply streams in at the bottom and stays in view while it grows.
      await page.locator("[data-streaming]").waitFor({ timeout: 60_000 });
      expect(await page.evaluate<number>(fromBottom)).toBeLessThan(100);
      const reply = page.locator(".row-bot:not([data-streaming])", {
        hasText: "a new message at step ten thousand and one",
      });
      await reply.waitFor({ timeout: 60_000 });
      await expect.poll(() => page.evaluate<number>(fromBottom)).toBeLessThan(2);
      expect(
        await page.evaluate<boolean>(
          onScreen(".row-bot", "a new message at step ten thousand and one"),
        ),
      ).toBe(true);
      expect(await page.evaluate<number>(domRows)).toBeLessThan(80);
    });
  },
);
