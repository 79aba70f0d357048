/**
 * The web app in Debian's Chromium against the real platform: sign-in, bots, chat with streamed
 * replies, tool cards, reload mid-turn, messages while the bot works, readable errors, the
 * computer chip and files (and a self-hosted machine's), and screenshots at desktop and phone sizes (artifacts/screenshots/).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient } from "../support/api-client.ts";
import { startRoostWorker } from "../support/roost-worker.ts";
import {
  chromiumPath,
  launchBrowser,
  screenshot,
  startWebRoost,
  type Browser,
  type WebRoost,
} from "./harness.ts";

const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };

// Needs Debian's Chromium (apt-get install chromium; .ci/run installs it). Skipped with this
// reason on a machine without it, never in CI.
if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `web app in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;

    beforeAll(async () => {
      roost = await startWebRoost();
      browser = await launchBrowser();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
    });

    const api = () => apiClient(roost.url, () => token);
    let token = "";

    /** Opens the app signed in (the embedded install signs a page on this computer in by itself). */
    async function open(path = "/", viewport = desktop): Promise<Page> {
      const page = await browser.newPage(viewport);
      await page.goto(`${roost.url}${path}`);
      return page;
    }

    async function createBotViaApi(name: string): Promise<string> {
      token ||= await roost.token();
      return (await api().createBot(name)).id;
    }

    /** Sends a message from a bot's new-chat page and waits until the conversation page shows. */
    async function startChat(page: Page, botId: string, text: string): Promise<void> {
      await page.goto(`${roost.url}/bots/${botId}`);
      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill(text);
      await box.press("Enter");
      await page.waitForURL(/\/c\/[^/]+$/);
    }

    it("signs in by itself, creates a bot, sends a message and shows the reply as it streams", async () => {
      const page = await open("/");
      await expect
        .poll(() => page.getByRole("heading", { name: "Create your first bot" }).isVisible())
        .toBe(true);
      await screenshot(page, "desktop-welcome");
      await page.getByLabel("Name").fill("Echo");
      await page.getByLabel("Instructions").fill("Answer briefly.");
      await expect.poll(() => page.getByText("The demo model runs offline").isVisible()).toBe(true);
      await page.getByRole("button", { name: "Create bot" }).click();
      await page.waitForURL(/\/bots\/bot_/);
      await expect
        .poll(() => page.getByRole("heading", { name: "New chat with Echo" }).isVisible())
        .toBe(true);
      expect(await page.locator(".view-header .badge-demo").textContent()).toBe("Demo model");

      // Record whether a streaming preview ever appears before the final reply.
      // (Browser-side code is a string: the root tsconfig has no DOM types.)
      await page.evaluate(`
      window.seenStreaming = false;
      new MutationObserver(() => {
        if (document.querySelector("[data-streaming]") !== null) window.seenStreaming = true;
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    `);
      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill("hello **bold** world");
      await box.press("Enter");
      await page.waitForURL(/\/c\/conv_/);
      await page.locator("[data-streaming]").waitFor({ timeout: 30_000 });
      await screenshot(page, "desktop-streaming");
      const reply = page.locator(".row-bot:not([data-streaming])", { hasText: "You said" });
      await reply.waitFor({ timeout: 30_000 });
      expect(await page.evaluate<boolean>("window.seenStreaming")).toBe(true);
      // The user's text is shown as typed; the reply is rendered as markdown.
      expect(await page.locator(".bubble-user").first().textContent()).toBe("hello **bold** world");
      expect(await reply.locator(".markdown").count()).toBe(1);
      await expect
        .poll(() => page.locator(".state-pill").getAttribute("data-state"), { timeout: 15_000 })
        .toBe("idle");
      // The sidebar lists the conversation under a title made from its first message (its
      // markdown marks taken off, docs/chat.md "Titles").
      expect(await page.locator(".nav-chat").first().textContent()).toContain("Hello bold world");
      await screenshot(page, "desktop-chat");
      await page.close();
    });

    it("runs a shell command: its tool card shows the command, status, output and exit code", async () => {
      const botId = await createBotViaApi("Shell");
      const page = await open("/");
      await startChat(page, botId, "$ echo hello-from-the-computer; echo oops >&2; exit 3");
      const card = page.locator(".tool-card[data-tool=shell]");
      await card.waitFor({ timeout: 60_000 });
      await expect.poll(() => card.getAttribute("data-status"), { timeout: 60_000 }).toBe("failed");
      expect(await card.locator(".tool-summary").textContent()).toContain(
        "echo hello-from-the-computer",
      );
      expect(await card.locator(".tool-status").textContent()).toContain("Exit 3");
      await card.locator(".tool-head").click();
      await expect
        .poll(() => card.locator(".tool-output").first().textContent())
        .toContain("hello-from-the-computer");
      expect(await card.locator(".tool-stderr").textContent()).toContain("oops");
      expect(await card.locator(".tool-details").textContent()).toContain("Exit code3");
      await page
        .locator(".row-bot:not([data-streaming])", { hasText: "hello-from-the-computer" })
        .waitFor({ timeout: 30_000 });
      // The computer woke for the command.
      await expect
        .poll(() => page.locator(".computer-chip").getAttribute("data-state"), { timeout: 20_000 })
        .toBe("awake");
      await screenshot(page, "desktop-tool-card");
      await page.close();
    });

    it("reloaded in the middle of a turn, the page shows the running turn and follows it to the end", async () => {
      const botId = await createBotViaApi("Slow");
      const page = await open("/");
      await startChat(page, botId, "$ for i in 1 2 3 4 5 6; do echo tick-$i; sleep 1; done");
      const card = page.locator(".tool-card[data-tool=shell]");
      await expect
        .poll(() => card.getAttribute("data-status"), { timeout: 60_000 })
        .toBe("running");
      await page.locator(".tool-live", { hasText: "tick-1" }).waitFor({ timeout: 20_000 });
      await screenshot(page, "desktop-running");
      await page.reload();
      // Same state after the reload: the call is still running and the bot is working.
      await expect
        .poll(() => card.getAttribute("data-status"), { timeout: 20_000 })
        .toBe("running");
      await expect
        .poll(() => page.locator(".state-pill").getAttribute("data-state"))
        .toBe("working");
      await page.locator(".tool-live", { hasText: /tick-[3-6]/ }).waitFor({ timeout: 20_000 });
      await expect.poll(() => card.getAttribute("data-status"), { timeout: 30_000 }).toBe("done");
      await page
        .locator(".row-bot:not([data-streaming])", { hasText: "tick-6" })
        .waitFor({ timeout: 30_000 });
      await expect
        .poll(() => page.locator(".state-pill").getAttribute("data-state"), { timeout: 15_000 })
        .toBe("idle");
      await page.close();
    });

    it("takes a second message while the bot works, and the bot answers it", async () => {
      const botId = await createBotViaApi("Busy");
      const page = await open("/");
      await startChat(page, botId, "$ sleep 3; echo first-done");
      const card = page.locator(".tool-card[data-tool=shell]");
      await expect
        .poll(() => card.getAttribute("data-status"), { timeout: 60_000 })
        .toBe("running");
      const box = page.getByRole("textbox", { name: "Message" });
      expect(await box.isEnabled()).toBe(true);
      expect(await box.getAttribute("placeholder")).toContain("Add to what the bot is doing");
      await box.fill("and also this");
      await box.press("Enter");
      // Shown at once, then stored (it leaves the pending state) while the command still runs.
      await page.locator(".bubble-user", { hasText: "and also this" }).waitFor();
      await expect.poll(() => page.locator("[data-pending]").count(), { timeout: 10_000 }).toBe(0);
      await page
        .locator(".row-bot:not([data-streaming])", { hasText: 'You said: "and also this"' })
        .waitFor({ timeout: 45_000 });
      await expect.poll(() => card.getAttribute("data-status")).toBe("done");
      // Nothing is shown twice.
      expect(await page.locator(".bubble-user", { hasText: "and also this" }).count()).toBe(1);
      await page.close();
    });

    it("events stream cut: the page reconnects by itself and loads what it missed", async () => {
      if (roost.dropConnections === undefined) return; // the platform serves the app: no cut point here
      const botId = await createBotViaApi("Resilient");
      const page = await open("/");
      await startChat(page, botId, "first");
      await page
        .locator(".row-bot:not([data-streaming])", { hasText: 'You said: "first"' })
        .waitFor({ timeout: 30_000 });
      const conversationId = page.url().split("/c/")[1]!;
      roost.dropConnections();
      // While the page has no stream, a message arrives from another client.
      await api().send(conversationId, "sent from elsewhere");
      await page
        .locator(".bubble-user", { hasText: "sent from elsewhere" })
        .waitFor({ timeout: 30_000 });
      await page
        .locator(".row-bot:not([data-streaming])", { hasText: 'You said: "sent from elsewhere"' })
        .waitFor({ timeout: 30_000 });
      await expect
        .poll(() => page.locator(".state-pill").getAttribute("data-state"), { timeout: 15_000 })
        .toBe("idle");
      expect(await page.locator(".bubble-user", { hasText: "sent from elsewhere" }).count()).toBe(
        1,
      );
      await page.close();
    });

    it("shows API errors in plain words", async () => {
      const page = await open("/bots/new");
      await page.getByLabel("Name").fill("Broken");
      await page
        .getByLabel("Model", { exact: true })
        .selectOption({ label: "Another model (type provider:model)…" });
      await page.getByLabel("Model, as provider:model").fill("gpt-4");
      await page.getByRole("button", { name: "Create bot" }).click();
      const alert = page.getByRole("alert");
      await expect
        .poll(() => alert.textContent())
        .toContain('model must be "demo" or "provider:model"');
      await screenshot(page, "desktop-bot-form-error");

      // A name that is taken: the server's conflict message, not a status code.
      await page
        .getByLabel("Model", { exact: true })
        .selectOption({ label: "Platform default (demo model, offline)" });
      await page.getByLabel("Name").fill("Echo");
      await page.getByRole("button", { name: "Create bot" }).click();
      await expect.poll(() => alert.textContent()).toMatch(/Echo/);
      expect(await alert.textContent()).not.toMatch(/^\d{3}/);

      await page.goto(`${roost.url}/c/conv_does-not-exist`);
      await expect
        .poll(
          () => page.getByRole("heading", { name: "This conversation does not exist" }).isVisible(),
          { timeout: 15_000 },
        )
        .toBe(true);
      await page.close();
    });

    it("asks for a token when local sign-in is not possible, and accepts a valid one", async () => {
      const page = await browser.newPage(desktop);
      // localhost is a loopback name; the Host check passes but a forwarding header refuses it.
      await page.route("**/auth/local", (route) =>
        route.continue({
          headers: { ...route.request().headers(), "x-forwarded-for": "203.0.113.7" },
        }),
      );
      await page.evaluate("localStorage.clear()").catch(() => undefined);
      await page.goto(`${roost.url}/`);
      await page.evaluate("localStorage.clear()");
      await page.reload();
      const field = page.getByLabel("API token");
      await field.waitFor();
      await field.fill("roost_not-a-real-token");
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect.poll(() => page.getByRole("alert").textContent()).toContain("not valid");
      await screenshot(page, "desktop-sign-in");
      await field.fill(await roost.token());
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator(".sidebar .brand").waitFor();
      await page.close();
    });

    it("wakes and sleeps the computer, and browses, uploads and downloads workspace files", async () => {
      const page = await open("/");
      await page.locator(".computer-chip").waitFor();
      await page.locator(".computer-chip").click();
      const dialog = page.getByRole("dialog", { name: "Computer" });
      const state = await page.locator(".computer-chip").getAttribute("data-state");
      if (state === "awake") {
        await dialog.getByRole("button", { name: "Sleep" }).click();
        await expect
          .poll(() => page.locator(".computer-chip").getAttribute("data-state"), {
            timeout: 30_000,
          })
          .toBe("asleep");
      }
      await dialog.getByRole("button", { name: "Wake" }).click();
      await expect
        .poll(() => page.locator(".computer-chip").getAttribute("data-state"), { timeout: 30_000 })
        .toBe("awake");
      await dialog.getByRole("button", { name: "Files" }).click();

      const files = page.getByRole("dialog", { name: "Files on your computer" });
      await files.waitFor();
      await files.locator("input[type=file]").setInputFiles({
        name: "notes.md",
        mimeType: "text/markdown",
        buffer: Buffer.from("# Notes\nfrom the browser\n"),
      });
      await files.getByText("Uploaded notes.md.").waitFor();
      const row = files.locator(".file-row", { hasText: "notes.md" });
      await row.waitFor();
      await screenshot(page, "desktop-files");
      // A file's row opens its preview (files-panel.test.ts); its Download button downloads it.
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        files.getByRole("button", { name: "Download notes.md" }).click(),
      ]);
      expect(download.suggestedFilename()).toBe("notes.md");
      const stream = await download.createReadStream();
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe("# Notes\nfrom the browser\n");
      await page.keyboard.press("Escape");
      await expect.poll(() => files.isVisible()).toBe(false);
      await page.close();
    });

    it("shows a self-hosted machine as the computer: which kind, whether it is connected, no wake or sleep", async () => {
      token ||= await roost.token();
      const machine = mkdtempSync(join(tmpdir(), "roost-web-machine-"));
      const registration = await api().call<Api.SelfHostedRegistration>(
        "POST",
        "/v1/computers/me/self-hosted",
      );
      const worker = startRoostWorker({
        args: [
          "--server",
          roost.url,
          "--token",
          registration.token,
          "--workspace",
          machine,
          "--metrics-port",
          "0",
        ],
        home: machine,
      });
      const page = await open("/");
      try {
        const chip = page.locator(".computer-chip");
        await expect
          .poll(() => chip.getAttribute("data-kind"), { timeout: 20_000 })
          .toBe("self-hosted");
        await expect
          .poll(() => chip.getAttribute("data-state"), { timeout: 30_000 })
          .toBe("connected");
        expect(await chip.innerText()).toContain("Your machine");
        await chip.click();
        const dialog = page.getByRole("dialog", { name: "Computer" });
        await dialog.getByText("your own machine (self-hosted)").waitFor();
        expect(await dialog.getByRole("button", { name: "Wake" }).count()).toBe(0);
        expect(await dialog.getByRole("button", { name: "Sleep" }).count()).toBe(0);
        await page.keyboard.press("Escape");

        await worker.stop();
        await page.reload();
        await expect
          .poll(() => page.locator(".computer-chip").getAttribute("data-state"), {
            timeout: 30_000,
          })
          .toBe("disconnected");
        expect(await page.locator(".computer-chip").innerText()).toContain("Not connected");
      } finally {
        await page.close();
        await worker.stop();
        await api().call("DELETE", "/v1/computers/me/self-hosted");
        rmSync(machine, { recursive: true, force: true });
      }
    });

    it("works at phone size and in the dark theme (screenshots)", async () => {
      const page = await open("/", phone);
      await page.waitForURL(/\/c\//);
      await page.locator(".row-bot").first().waitFor();
      await screenshot(page, "phone-chat");
      await page.getByRole("button", { name: "Open the list of bots and chats" }).click();
      await expect.poll(() => page.locator(".sidebar").isVisible()).toBe(true);
      await screenshot(page, "phone-sidebar");
      await page.keyboard.press("Escape");
      await expect.poll(() => page.locator(".app[data-nav-open]").count()).toBe(0);

      // Tool cards at phone size.
      const shellChat = page.locator(".nav-chat").first();
      void shellChat;
      const conversations = await api().call<{ conversations: { id: string; title: string }[] }>(
        "GET",
        "/v1/conversations",
      );
      const withTool = conversations.conversations.find((conversation) =>
        conversation.title.startsWith("Run echo hello"),
      );
      if (withTool !== undefined) {
        await page.goto(`${roost.url}/c/${withTool.id}`);
        await page.locator(".tool-card").first().waitFor();
        await page.locator(".tool-head").first().click();
        await screenshot(page, "phone-tool-card");
      }

      // The theme toggle: system → light → dark.
      await page.getByRole("button", { name: "Open the list of bots and chats" }).click();
      await page.getByRole("button", { name: /Theme:/ }).click();
      await page.getByRole("button", { name: /Theme:/ }).click();
      expect(
        await page.evaluate<string | undefined>("document.documentElement.dataset.theme"),
      ).toBe("dark");
      await page.keyboard.press("Escape");
      await screenshot(page, "phone-dark");
      await page.setViewportSize(desktop);
      await screenshot(page, "desktop-dark");
      await page.close();
    });
  },
);
