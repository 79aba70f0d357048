/**
 * A conversation of 10,000 steps in Debian's Chromium (issue 16 §7: opens in p50 ≤ 500 ms, no
 * frame over 50 ms while scrolling; web/src/components/virtual-list.tsx). The steps are written
 * straight into the store (test/web/long-conversation.ts). Figures:
 *   - open: from a click-equivalent navigation inside the app (the shell already loaded) until
 *     the newest reply is on screen at the bottom; and a cold page load to the same point;
 *   - scrolling from the newest step to step 1, a screen per frame, older pages loading on the
 *     way: every frame's time (requestAnimationFrame deltas) and the longest main-thread task
 *     (PerformanceObserver "longtask");
 *   - rows in the page at the end.
 *
 *   node bench/web-timeline.ts [--steps 10000] [--runs 5]
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { apiClient } from "../test/support/api-client.ts";
import { launchBrowser, startWebRoost } from "../test/web/harness.ts";
import { seedLongConversation } from "../test/web/long-conversation.ts";
import { percentile, summarize } from "./support.ts";

const { values } = parseArgs({
  options: { steps: { type: "string", default: "10000" }, runs: { type: "string", default: "5" } },
});
const stepCount = Number(values.steps);
const runs = Number(values.runs);
const lastTurn = Math.ceil(stepCount / 4) - 1;

// Code run in the page, as strings: the root tsconfig has no DOM types.
const openInApp = (path: string) => `(() => {
  window.history.pushState(null, "", ${JSON.stringify(path)});
  window.dispatchEvent(new PopStateEvent("popstate"));
})()`;
const newestShown = `(() => {
  const timeline = document.querySelector(".timeline");
  if (timeline === null) return false;
  const box = timeline.getBoundingClientRect();
  const atBottom = timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 2;
  return atBottom && [...timeline.querySelectorAll(".row-bot")].some((row) => {
    const rowBox = row.getBoundingClientRect();
    return row.textContent.includes(${JSON.stringify(`Answer to question ${lastTurn}:`)}) && rowBox.top < box.bottom && rowBox.bottom > box.top;
  });
})()`;
/** Scrolls up a screen per frame until step 1 is on screen; every frame's duration. */
const scrollToFirst = `(async () => {
  const timeline = document.querySelector(".timeline");
  const longTasks = [];
  const observer = new PerformanceObserver((list) => { for (const entry of list.getEntries()) longTasks.push(entry.duration); });
  observer.observe({ type: "longtask" });
  const frames = [];
  const frameEnds = [];
  const started = performance.now();
  let last = started;
  for (;;) {
    timeline.scrollTop = Math.max(0, timeline.scrollTop - timeline.clientHeight);
    await new Promise((resolve) => requestAnimationFrame(resolve));
    const now = performance.now();
    frames.push(now - last);
    frameEnds.push(now);
    last = now;
    const first = [...timeline.querySelectorAll(".row-user")].some((row) => row.textContent.includes("The very first message"));
    if (first && timeline.scrollTop === 0) break;
    if (now - started > 180000) break;
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
  observer.disconnect();
  // Which slow frames had a page of older steps arrive in them (its response ended in the frame).
  const arrivals = performance.getEntriesByType("resource").filter((entry) => entry.name.includes("/steps?")).map((entry) => entry.responseEnd);
  const slowWithPage = frames.filter((ms, index) => ms > 50 && arrivals.some((at) => at <= frameEnds[index] && at > frameEnds[index] - ms - 50)).length;
  return { ms: performance.now() - started, frames, longTasks, slowWithPage, rows: timeline.querySelectorAll(".virtual-item").length };
})()`;

const roost = await startWebRoost({ pieceDelayMs: 0 });
try {
  const token = await roost.token();
  const api = apiClient(roost.url, () => token);
  const me = await api.call<{ id: string }>("GET", "/v1/me");
  const bot = await api.createBot("Bench");
  const conversation = await api.createConversation(bot.id);
  const seeded = Date.now();
  await seedLongConversation(roost.platform, {
    conversationId: conversation.id,
    authorAccountId: me.id,
    steps: stepCount,
  });
  console.log(
    `seeded ${stepCount} steps into the store in ${((Date.now() - seeded) / 1000).toFixed(1)} s; load average ${loadavg()
      .map((load) => load.toFixed(2))
      .join(" ")}`,
  );

  const openInAppMs: number[] = [];
  const openColdMs: number[] = [];
  const frameMs: number[] = [];
  const worstFrameMs: number[] = [];
  const longTaskMs: number[] = [];
  let rows = 0;
  let slowFrames = 0;
  let slowFramesWithPage = 0;
  let scrollFrames = 0;
  for (let run = 0; run < runs; run++) {
    const browser = await launchBrowser({ bypassCSP: true }); // a fresh profile each run
    try {
      const page = await browser.newPage({ width: 1280, height: 800 });
      // Cold: the page itself is opened on the conversation (nothing cached).
      const coldStarted = Date.now();
      await page.goto(`${roost.url}/c/${conversation.id}`);
      await page.waitForFunction(newestShown, undefined, { timeout: 60_000, polling: "raf" });
      openColdMs.push(Date.now() - coldStarted);
      // In the app: from the bot's page to the conversation, as a click in the sidebar does.
      await page.evaluate(openInApp(`/bots/${bot.id}`));
      await page.waitForSelector(".composer textarea");
      const started = Date.now();
      await page.evaluate(openInApp(`/c/${conversation.id}`));
      await page.waitForFunction(newestShown, undefined, { timeout: 60_000, polling: "raf" });
      openInAppMs.push(Date.now() - started);

      if (run < 3) {
        const scrolled = await page.evaluate<{
          ms: number;
          frames: number[];
          longTasks: number[];
          slowWithPage: number;
          rows: number;
        }>(scrollToFirst);
        slowFrames += scrolled.frames.filter((ms) => ms > 50).length;
        slowFramesWithPage += scrolled.slowWithPage;
        frameMs.push(...scrolled.frames);
        worstFrameMs.push(Math.max(...scrolled.frames));
        longTaskMs.push(...scrolled.longTasks);
        rows = scrolled.rows;
        scrollFrames = scrolled.frames.length;
      }
    } finally {
      await browser.close();
    }
  }
  console.log(`conversation of ${stepCount} steps, viewport 1280×800:`);
  // Frame times on a shared machine follow its load: print it with them.
  console.log(
    `  load average at the end: ${loadavg()
      .map((load) => load.toFixed(2))
      .join(" ")}`,
  );
  console.log(
    `  ${summarize("open in the app (newest reply on screen, at the bottom)", openInAppMs)}`,
  );
  console.log(`  ${summarize("open by a cold page load (fresh browser profile)", openColdMs)}`);
  console.log(
    `scrolling from the newest step to step 1, a screen per frame (${scrollFrames} frames a run, ${worstFrameMs.length} runs, all ${Math.round(stepCount / 300)} older pages loading on the way):`,
  );
  const sorted = [...frameMs].sort((a, b) => a - b);
  console.log(
    `  frame time: p50=${percentile(sorted, 0.5).toFixed(1)} ms p95=${percentile(sorted, 0.95).toFixed(1)} ms p99=${percentile(sorted, 0.99).toFixed(1)} ms max=${(sorted.at(-1) ?? Number.NaN).toFixed(1)} ms`,
  );
  console.log(`  ${summarize("worst frame per run", worstFrameMs)}`);
  console.log(
    `  long tasks (over 50 ms): ${longTaskMs.length}${longTaskMs.length === 0 ? "" : `, longest ${Math.max(...longTaskMs).toFixed(1)} ms`}`,
  );
  console.log(
    `  frames over 50 ms: ${slowFrames} of ${frameMs.length}, ${slowFramesWithPage} of them while a page of older steps arrived`,
  );
  console.log(`  rows in the page at step 1: ${rows}`);
} finally {
  await roost.close();
}
