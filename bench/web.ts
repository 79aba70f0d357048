/**
 * Web app figures: gzip size of the built JavaScript and CSS; time to first render and to
 * interactive on a local server (cold browser cache, Debian's Chromium); and how long a
 * conversation of 1,000 steps takes to open and to scroll through.
 *
 *   node bench/web.ts [--runs 5] [--steps 1000]
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { apiClient } from "../test/support/api-client.ts";
import { launchBrowser, startWebRoost } from "../test/web/harness.ts";
import { defaultWebDistDir } from "../src/web/index.ts";
import { summarize } from "./support.ts";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "5" }, steps: { type: "string", default: "1000" } },
});
const runs = Number(values.runs);
const targetSteps = Number(values.steps);

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

// Code run in the page, as strings: the root tsconfig has no DOM types.
/** Interactive: signed in, the bot loaded, the composer takes input. */
const composerReady = `(() => {
  const box = document.querySelector(".composer textarea");
  return box !== null && !box.disabled && document.querySelector(".new-chat-hero h2")?.textContent?.includes("Bench") === true;
})()`;
const pageTimings = `(() => {
  const navigation = performance.getEntriesByType("navigation")[0];
  const paint = performance.getEntriesByType("paint").find((entry) => entry.name === "first-contentful-paint");
  return { fcp: paint?.startTime ?? Number.NaN, dcl: navigation.domContentLoadedEventEnd, now: performance.now() };
})()`;
/** Client-side navigation, as a click on a link in the app does. */
const openInApp = (path: string) => `(() => {
  window.history.pushState(null, "", ${JSON.stringify(path)});
  window.dispatchEvent(new PopStateEvent("popstate"));
})()`;
const conversationShown = `document.querySelectorAll(".timeline .row").length > 50 && document.querySelector(".state-pill[data-state=idle]") !== null`;
const timelineAtBottom = `(() => {
  const timeline = document.querySelector(".timeline");
  return timeline !== null && timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 2;
})()`;
/** Scrolls up a screen per frame until the first step is loaded and on screen. */
const scrollToFirstStep = `(async () => {
  const timeline = document.querySelector(".timeline");
  const t0 = performance.now();
  let last = t0, worst = 0, frames = 0;
  for (;;) {
    frames++;
    timeline.scrollTop = Math.max(0, timeline.scrollTop - timeline.clientHeight);
    await new Promise((resolve) => requestAnimationFrame(resolve));
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
    if (timeline.scrollTop === 0 && document.querySelector(".load-earlier") === null) break;
    if (now - t0 > 120000) break;
  }
  return { ms: performance.now() - t0, worst, frames, rows: document.querySelectorAll(".timeline .row").length };
})()`;

const roost = await startWebRoost({ pieceDelayMs: 0 }); // builds web/dist when stale
try {
  // ── Sizes ──────────────────────────────────────────────────────────────────────────────────
  const index = readFileSync(join(defaultWebDistDir, "index.html"), "utf8");
  const entry = new Set(
    [...index.matchAll(/(?:src|href)="\/assets\/([^"]+)"/g)].map((match) => match[1]),
  );
  let initial = 0;
  let lazy = 0;
  console.log("built assets (gzip -9):");
  for (const name of readdirSync(join(defaultWebDistDir, "assets")).sort()) {
    const raw = readFileSync(join(defaultWebDistDir, "assets", name));
    const gz = gzipSync(raw, { level: 9 }).byteLength;
    const loaded = entry.has(name) ? "initial" : "lazy";
    if (entry.has(name)) initial += gz;
    else lazy += gz;
    console.log(
      `  ${name.padEnd(32)} ${kib(raw.byteLength).padStart(10)} raw ${kib(gz).padStart(10)} gzip  (${loaded})`,
    );
  }
  console.log(
    `  total: ${kib(initial)} gzip loaded first, ${kib(lazy)} gzip loaded after the first render`,
  );

  // ── First render and interactive ───────────────────────────────────────────────────────────
  const token = await roost.token();
  const api = apiClient(roost.url, () => token);
  const bot = await api.createBot("Bench");
  const firstPaint: number[] = [];
  const interactive: number[] = [];
  const domContentLoaded: number[] = [];
  const repeatInteractive: number[] = [];
  const measure = async (page: import("playwright-core").Page) => {
    await page.waitForFunction(composerReady);
    return page.evaluate<{ fcp: number; dcl: number; now: number }>(pageTimings);
  };
  for (let run = 0; run < runs; run++) {
    const browser = await launchBrowser({ bypassCSP: true }); // a fresh profile: nothing cached
    try {
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}`);
      const timing = await measure(page);
      firstPaint.push(timing.fcp);
      domContentLoaded.push(timing.dcl);
      interactive.push(timing.now);
      // A repeat visit: the hashed assets come from the browser's cache, the token from storage.
      await page.goto(`${roost.url}/bots/${bot.id}`);
      repeatInteractive.push((await measure(page)).now);
    } finally {
      await browser.close();
    }
  }
  console.log(`\nfirst render and interactive (${runs} cold loads of a bot's page):`);
  console.log(`  ${summarize("DOMContentLoaded", domContentLoaded)}`);
  console.log(`  ${summarize("first contentful paint", firstPaint)}`);
  console.log(`  ${summarize("interactive (signed in, composer ready)", interactive)}`);
  console.log(
    `  ${summarize("interactive on a repeat visit (assets cached, token stored)", repeatInteractive)}`,
  );

  // ── A conversation of 1,000 steps ──────────────────────────────────────────────────────────
  // Each `$ …` turn stores 4 steps (message, model with a tool call, tool result, reply).
  const conversation = await api.createConversation(bot.id);
  const seedStarted = Date.now();
  let lastSeq = 0;
  for (let turn = 0; lastSeq < targetSteps; turn++) {
    const text =
      turn % 2 === 0
        ? `$ printf 'line %s of turn ${turn}\\n' $(seq 1 8)`
        : `Here is turn ${turn} with **markdown**, \`code\` and a list:\n\n- one\n- two\n\n\`\`\`ts\nconst turn = ${turn};\n\`\`\``;
    const ack = await api.send(conversation.id, text);
    for (;;) {
      const page = await api.call<{ steps: { seq: number; kind: string }[]; lastSeq: number }>(
        "GET",
        `/v1/conversations/${conversation.id}/steps?after=${ack.seq}&limit=10`,
      );
      if (page.steps.some((step) => step.kind === "reply" || step.kind === "error")) {
        lastSeq = page.lastSeq;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  console.log(
    `\nseeded ${lastSeq} steps through the API in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s`,
  );

  const open: number[] = [];
  const scrollUp: number[] = [];
  const worstFrame: number[] = [];
  const meanFrame: number[] = [];
  for (let run = 0; run < Math.min(runs, 3); run++) {
    const browser = await launchBrowser({ bypassCSP: true });
    try {
      const page = await browser.newPage();
      // Warm the app shell so the figure is about the conversation, not the first download.
      await page.goto(`${roost.url}/bots/${bot.id}`);
      await page.waitForSelector(".composer textarea");
      const started = Date.now();
      await page.evaluate(openInApp(`/c/${conversation.id}`));
      await page.waitForFunction(conversationShown);
      await page.waitForFunction(timelineAtBottom);
      open.push(Date.now() - started);

      const scrolled = await page.evaluate<{
        ms: number;
        worst: number;
        frames: number;
        rows: number;
      }>(scrollToFirstStep);
      scrollUp.push(scrolled.ms);
      worstFrame.push(scrolled.worst);
      meanFrame.push(scrolled.ms / scrolled.frames);
      if (run === 0)
        console.log(`  ${scrolled.rows} rows on the page after scrolling to the first message`);
    } finally {
      await browser.close();
    }
  }
  console.log(`conversation of ${lastSeq} steps:`);
  console.log(`  ${summarize("open (newest steps shown, bottom reached)", open)}`);
  console.log(
    `  ${summarize("scroll from the newest to the first step, a screen per frame (older pages load on the way)", scrollUp)}`,
  );
  console.log(`  ${summarize("mean frame while scrolling", meanFrame)}`);
  console.log(`  ${summarize("worst frame while scrolling", worstFrame)}`);
} finally {
  await roost.close();
}
