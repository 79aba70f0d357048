/**
 * Results in the web app (issue 11 §3), in Debian's Chromium against the real platform: a draft
 * card's Send and Discard, the sidebar's Unread activity and Needs attention, and browser
 * notifications after the owner turned them on.
 */
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Api } from "../../src/protocol/index.ts";
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

const publicHook = "93.184.216.34";

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `results in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let token = "";
    let hook: Server;
    let hookPort = 0;
    const posts: string[] = [];

    beforeAll(async () => {
      hook = createServer((request, response) => {
        let body = "";
        request.on("data", (chunk: Buffer) => (body += chunk.toString()));
        request.on("end", () => {
          posts.push(body);
          response.writeHead(200).end();
        });
      });
      await new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", resolve));
      hookPort = (hook.address() as AddressInfo).port;
      roost = await startWebRoost({
        results: {
          ownerWebhooks: {
            resolve: async () => [publicHook],
            connect: (address, port) =>
              connect(port, address === publicHook ? "127.0.0.1" : address),
          },
        },
      });
      browser = await launchBrowser();
      token = await roost.token();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
      await new Promise<void>((resolve) =>
        hook === undefined ? resolve() : hook.close(() => resolve()),
      );
    });

    it("a draft card: Send without a channel says why; Send again through the drafts webhook sends it once; Discard", async () => {
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Drafter", "demo");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}`);
      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill("draft email ada@example.com / Lunch: Dear Ada, lunch on Friday?");
      await box.press("Enter");
      await page.waitForURL(/\/c\/[^/]+$/);
      const card = page.getByRole("article", { name: "Email draft" });
      await card.getByText("Draft: waiting for you").waitFor();
      await expect.poll(() => card.getByText("Dear Ada, lunch on Friday?").isVisible()).toBe(true);
      expect(await card.getByText("Lunch", { exact: true }).isVisible()).toBe(true);
      // The conversation needs the owner while the draft waits.
      await page.locator(".nav-chat .attention-mark").first().waitFor();

      await card.getByRole("button", { name: "Send" }).click();
      await card.getByText("Not sent").waitFor();
      expect(await card.getByRole("alert").textContent()).toContain(
        "No email channel is configured",
      );
      await screenshot(page, "results-draft-failed");

      await api.call("PUT", "/v1/drafts/webhook", {
        url: `http://hooks.example.com:${hookPort}/drafts`,
      });
      await card.getByRole("button", { name: "Send again" }).click();
      await card.getByText("Sent", { exact: true }).waitFor();
      expect(await card.getByRole("button").count()).toBe(0);
      expect(posts.filter((body) => body.includes("Dear Ada"))).toHaveLength(1);
      await screenshot(page, "results-draft-sent");

      await box.fill("draft slack #general: standup in five");
      await box.press("Enter");
      const slack = page.getByRole("article", { name: "Slack message draft" });
      await slack.getByRole("button", { name: "Discard" }).click();
      await slack.getByText("Discarded").waitFor();
      expect(await slack.getByRole("button").count()).toBe(0);
      await page.close();
    }, 90_000);

    it("the sidebar shows Unread activity for a bot's message until the conversation is opened", async () => {
      const api = apiClient(roost.url, () => token);
      const sender = await api.createBot("Sender", "demo");
      const receiver = await api.createBot("Receiver", "demo");
      const chat = await api.createConversation(sender.id);
      await api.send(chat.id, "tell Receiver: the report is ready");
      const thread = await waitFor(async () => {
        const list = await api.call<Api.ConversationList>(
          "GET",
          `/v1/conversations?botId=${receiver.id}`,
        );
        const found = list.conversations.find(
          (conversation) => conversation.title === "From Sender",
        );
        return found !== undefined && found.lastSeq >= 2 && found.state === "idle"
          ? found
          : undefined;
      });
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${receiver.id}`);
      const item = page.locator(".nav-chat", { hasText: "From Sender" });
      await item.locator(".unread-dot").waitFor();
      await item.click();
      await page.waitForURL(new RegExp(`/c/${thread.id}$`));
      await page.getByText("the report is ready").first().waitFor();
      await expect.poll(() => item.locator(".unread-dot").count(), { timeout: 15_000 }).toBe(0);
      // Visible in both: the message links to the conversation the other bot wrote from.
      const from = page.getByRole("link", { name: "From Sender (bot, hop 1)" });
      await from.click();
      await page.waitForURL(new RegExp(`/c/${chat.id}$`));
      await page.locator(".tool-card[data-tool=message_bot]").first().waitFor();
      await page.close();
    }, 60_000);

    it("browser notifications: turned on by a click, shown for a notifying bot's finished turn", async () => {
      const api = apiClient(roost.url, () => token);
      const page = await browser.newPage();
      // Record what the page shows (the test cannot see the desktop's notifications).
      await page.addInitScript(() => {
        const shown: { title: string; body: string }[] = [];
        (globalThis as unknown as { shownNotifications: typeof shown }).shownNotifications = shown;
        let permission = "default";
        class RecordingNotification {
          static get permission() {
            return permission;
          }
          static async requestPermission() {
            permission = "granted";
            return permission;
          }
          onclick: (() => void) | null = null;
          constructor(title: string, options: { body?: string } = {}) {
            shown.push({ title, body: options.body ?? "" });
          }
          close() {}
        }
        (globalThis as unknown as { Notification: unknown }).Notification = RecordingNotification;
      });
      await page.goto(`${roost.url}/`);
      const turnOn = page.getByRole("button", { name: "Turn on browser notifications" });
      await turnOn.click();
      await expect.poll(() => turnOn.count()).toBe(0);

      const bot = await api.call<Api.Bot>("POST", "/v1/bots", {
        name: "Pinger",
        model: "demo",
        notify: true,
      });
      const chat = await api.createConversation(bot.id);
      await api.send(chat.id, "ping");
      const shown = await waitFor(
        async () => {
          const list = await page.evaluate(
            () =>
              (globalThis as unknown as { shownNotifications: { title: string; body: string }[] })
                .shownNotifications,
          );
          return list.length > 0 ? list : undefined;
        },
        { timeoutMs: 20_000, what: "a browser notification" },
      );
      expect(shown[0]).toMatchObject({ title: "Pinger finished" });
      expect(shown[0]?.body).toContain("ping");
      // The sidebar's list: the unread count, the notification, mark all read.
      const menu = page.getByRole("button", { name: /^Notifications/ });
      await menu.locator(".attention-mark").waitFor();
      await menu.click();
      const region = page.getByRole("region", { name: "Notifications" });
      await region.getByText("Pinger finished").first().waitFor();
      await region.getByRole("button", { name: "Mark all read" }).click();
      await expect.poll(() => menu.locator(".attention-mark").count()).toBe(0);
      expect(
        (await api.call<Api.NotificationList>("GET", "/v1/notifications?unread=true")).unread,
      ).toBe(0);
      await page.close();
    }, 60_000);
  },
);
