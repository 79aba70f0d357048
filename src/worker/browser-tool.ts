/**
 * The `browser` tool (docs/browser.md): one action on the bot's Chromium, on the bot's screen
 * (screens.ts). Actions that change the page answer with its new snapshot, so the model's next
 * click or type can name a ref from it.
 */
import path from "node:path";
import type { Locator } from "playwright-core";
import {
  browserLimits,
  type BrowserInput,
  type BrowserOutput,
  type ScreenImage,
} from "../protocol/index.ts";
import { capText, type BrowserSession } from "./browser-session.ts";
import type { ScreenManager } from "./screens.ts";
import { ToolFailure, type ToolContext } from "./tool-context.ts";

const actionTimeoutMs = 15_000;

function need<T>(value: T | undefined, field: string, action: string): T {
  if (value === undefined)
    throw new ToolFailure(
      "invalid_input",
      `browser ${action} needs ${field} (see the tool's description)`,
    );
  return value;
}

function locate(session: BrowserSession, ref: string): Locator {
  return session.page.getByRef(ref);
}

/** Playwright's errors for a stale or unknown ref, made into advice. */
function refFailure(error: unknown, ref: string): never {
  const message = (error as Error).message ?? String(error);
  if (/not found|No element|does not match|aria-ref|strict mode|Timeout/i.test(message))
    throw new ToolFailure(
      "not_found",
      `ref ${ref} is not on the page now (take a new snapshot and use a ref from it): ${message.split("\n")[0]}`,
    );
  throw new ToolFailure("io_error", message.split("\n")[0] ?? message);
}

async function onRef<T>(
  session: BrowserSession,
  ref: string,
  act: (locator: Locator) => Promise<T>,
): Promise<T> {
  try {
    return await act(locate(session, ref));
  } catch (error) {
    if (error instanceof ToolFailure) throw error;
    return refFailure(error, ref);
  }
}

async function settle(session: BrowserSession): Promise<void> {
  await session.page
    .waitForLoadState("domcontentloaded", { timeout: 5_000 })
    .catch(() => undefined);
}

export async function browserTool(
  input: BrowserInput,
  context: ToolContext,
  screens: ScreenManager,
): Promise<BrowserOutput> {
  const botId = context.botId;
  if (botId === undefined)
    throw new ToolFailure(
      "invalid_input",
      "browser calls need the bot id (the server sends it with each call)",
    );
  await context.markStarted();
  return screens.use(botId, async (screen) => {
    const session = await screen.browser();
    const recorder =
      input.record === true
        ? await session.startRecording(
            // In the workspace (the server keeps it as an attachment through the files
            // operations, which reach the workspace only), in a folder of Roost's own: old
            // recordings are pruned there, so it must not be a folder the user might keep.
            path.join(
              context.workspace,
              ".roost",
              "recordings",
              `${context.callId.replace(/[^A-Za-z0-9_-]/g, "_")}.jsonl`,
            ),
          )
        : undefined;
    let result: Omit<BrowserOutput, "downloads" | "recording" | "url" | "title" | "action">;
    try {
      result = await runAction(input, session, screen.width, screen.height);
    } finally {
      await session.saveCookies().catch(() => undefined); // BRW2
    }
    const downloads =
      input.action === "downloads" ? await session.listDownloads() : await session.takeDownloads();
    const recording = recorder === undefined ? undefined : await recorder.stop();
    return {
      action: input.action,
      url: session.page.url(),
      title: await session.page.title().catch(() => ""),
      ...result,
      downloads,
      ...(recording === undefined ? {} : { recording }),
    };
  });
}

/**
 * Chromium's own navigation to its error page, which may commit after goto has already failed; or,
 * in the same race on a busy machine, the interrupted navigation to the same URL committing after
 * goto has given up on it.
 */
const interruption = /interrupted by another navigation to "([^"]*)"/;

/**
 * A failed navigation's error page commits a moment after goto rejects; a goto started in that
 * moment is interrupted by it. Waiting for the error page to load closes the window.
 */
async function settleErrorPage(session: BrowserSession): Promise<void> {
  await session.page.waitForLoadState("load", { timeout: 2_000 }).catch(() => undefined);
}

/** goto, again (at most twice) while the last failed navigation's error page interrupts it. */
async function gotoPastErrorPage(session: BrowserSession, url: string) {
  const go = () => session.page.goto(url, { waitUntil: "domcontentloaded", timeout: 30_000 });
  for (let attempt = 0; ; attempt++) {
    try {
      return await go();
    } catch (error) {
      const by = interruption.exec((error as Error).message)?.[1];
      const ours = by !== undefined && (by.startsWith("chrome-error:") || by === url);
      if (!ours || attempt >= 2) throw error;
      await settleErrorPage(session);
    }
  }
}

async function snapshotResult(session: BrowserSession, note?: string) {
  const snapshot = await session.snapshotText();
  const capped = capText(note === undefined ? snapshot.text : `${note}\n${snapshot.text}`);
  return { text: capped.text, truncated: capped.truncated };
}

async function runAction(
  input: BrowserInput,
  session: BrowserSession,
  width: number,
  height: number,
): Promise<Omit<BrowserOutput, "downloads" | "recording" | "url" | "title" | "action">> {
  const { action } = input;
  switch (action) {
    case "navigate": {
      const url = need(input.url, "url", action); // BRW4: the schema allows http(s) only
      let note: string | undefined;
      try {
        const response = await gotoPastErrorPage(session, url);
        if (response !== null && response.status() >= 400)
          note = `The server answered ${response.status()} ${response.statusText()}.`;
      } catch (error) {
        const message = (error as Error).message.split("\n")[0] ?? "";
        // A download answers a navigation with an abort; the file is listed in `downloads`.
        if (!/net::ERR_ABORTED|Download is starting/.test(message)) {
          await settleErrorPage(session);
          throw new ToolFailure("io_error", `navigation to ${url} failed: ${message}`);
        }
        note = "The URL started a download.";
      }
      return snapshotResult(session, note);
    }
    case "snapshot":
      return snapshotResult(session);
    case "click": {
      const ref = need(input.ref, "ref", action);
      await onRef(session, ref, (locator) => locator.click({ timeout: actionTimeoutMs }));
      await settle(session);
      return snapshotResult(session);
    }
    case "type": {
      const ref = need(input.ref, "ref", action);
      const text = need(input.text, "text", action);
      await onRef(session, ref, (locator) => locator.fill(text, { timeout: actionTimeoutMs }));
      if (input.submit === true)
        await onRef(session, ref, (locator) =>
          locator.press("Enter", { timeout: actionTimeoutMs }),
        );
      await settle(session);
      return snapshotResult(session);
    }
    case "press": {
      const key = need(input.key, "key", action);
      try {
        await session.page.keyboard.press(key);
      } catch (error) {
        throw new ToolFailure(
          "invalid_input",
          `cannot press ${JSON.stringify(key)}: ${(error as Error).message.split("\n")[0]} (use names like Enter, Escape, ArrowDown, Control+A)`,
        );
      }
      await settle(session);
      return snapshotResult(session);
    }
    case "hover": {
      const ref = need(input.ref, "ref", action);
      await onRef(session, ref, (locator) => locator.hover({ timeout: actionTimeoutMs }));
      return snapshotResult(session);
    }
    case "select": {
      const ref = need(input.ref, "ref", action);
      const values = need(input.values, "values", action);
      await onRef(session, ref, (locator) =>
        locator.selectOption(values, { timeout: actionTimeoutMs }),
      );
      await settle(session);
      return snapshotResult(session);
    }
    case "scroll": {
      if (input.ref !== undefined)
        await onRef(session, input.ref, (locator) =>
          locator.scrollIntoViewIfNeeded({ timeout: actionTimeoutMs }),
        );
      else await session.page.mouse.wheel(0, input.deltaY ?? Math.round(height * 0.8));
      return snapshotResult(session);
    }
    case "back":
    case "forward": {
      const moved =
        action === "back"
          ? await session.page.goBack({ waitUntil: "domcontentloaded", timeout: 30_000 })
          : await session.page.goForward({ waitUntil: "domcontentloaded", timeout: 30_000 });
      return snapshotResult(
        session,
        moved === null ? `There is no page to go ${action} to.` : undefined,
      );
    }
    case "tabs":
      return tabs(input, session);
    case "screenshot": {
      const data = await session.page.screenshot({ type: "png", timeout: 30_000 });
      let image: ScreenImage = {
        mimeType: "image/png",
        data: data.toString("base64"),
        width,
        height,
      };
      if (data.length > browserLimits.screenshotBytes) {
        const jpeg = await session.page.screenshot({ type: "jpeg", quality: 60, timeout: 30_000 });
        image = { mimeType: "image/jpeg", data: jpeg.toString("base64"), width, height };
      }
      const viewport = await session.page.evaluate(() => {
        const view = globalThis as unknown as { innerWidth: number; innerHeight: number };
        return { width: view.innerWidth, height: view.innerHeight };
      });
      image.width = viewport.width;
      image.height = viewport.height;
      return {
        text: `A screenshot of the page's viewport (${viewport.width}x${viewport.height}).`,
        truncated: false,
        image,
      };
    }
    case "extract": {
      const format = input.format ?? "text";
      let content: string;
      if (input.ref === undefined)
        content =
          format === "html"
            ? await session.page.content()
            : await session.page.locator("body").innerText({ timeout: actionTimeoutMs });
      else
        content = await onRef(session, input.ref, (locator) =>
          format === "html"
            ? locator.evaluate((element: { outerHTML: string }) => element.outerHTML)
            : locator.innerText({ timeout: actionTimeoutMs }),
        );
      const capped = capText(content);
      return { text: capped.text, truncated: capped.truncated };
    }
    case "wait": {
      const timeout = (input.timeoutSeconds ?? 10) * 1000;
      try {
        if (input.ref !== undefined)
          await locate(session, input.ref).waitFor({ state: "visible", timeout });
        else if (input.text !== undefined)
          await session.page.getByText(input.text).first().waitFor({ state: "visible", timeout });
        else await session.page.waitForLoadState("load", { timeout });
      } catch {
        throw new ToolFailure(
          "timeout",
          `waited ${timeout / 1000} s and ${input.ref !== undefined ? `ref ${input.ref}` : input.text !== undefined ? JSON.stringify(input.text) : "the page load"} did not appear`,
        );
      }
      return snapshotResult(session);
    }
    case "downloads":
      return { text: "Files in /workspace/downloads:", truncated: false };
  }
}

async function tabs(input: BrowserInput, session: BrowserSession) {
  const list = async () => {
    const pages = session.context.pages().filter((page) => !page.isClosed());
    return Promise.all(
      pages.map(async (page, index) => ({
        index,
        url: page.url(),
        title: await page.title().catch(() => ""),
        current: page === session.page,
      })),
    );
  };
  const choice = input.tab ?? "list";
  const pages = () => session.context.pages().filter((page) => !page.isClosed());
  switch (choice) {
    case "list":
      break;
    case "open": {
      const page = await session.context.newPage();
      session.page = page;
      if (input.url !== undefined)
        await page.goto(input.url, { waitUntil: "domcontentloaded", timeout: 30_000 });
      break;
    }
    case "switch":
    case "close": {
      const index = need(input.index, "index", `tabs ${choice}`);
      const page = pages()[index];
      if (page === undefined)
        throw new ToolFailure(
          "not_found",
          `there is no tab ${index} (tabs list shows ${pages().length})`,
        );
      if (choice === "switch") {
        session.page = page;
        await page.bringToFront();
      } else {
        if (pages().length === 1) await session.context.newPage();
        await page.close();
        session.page = pages().at(-1)!;
      }
      break;
    }
  }
  const tabsNow = await list();
  const text = tabsNow
    .map(
      (tab) =>
        `${tab.current ? "*" : " "} [${tab.index}] ${tab.title || "(no title)"} — ${tab.url}`,
    )
    .join("\n");
  return { text, truncated: false, tabs: tabsNow };
}
