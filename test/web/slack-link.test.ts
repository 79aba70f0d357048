/**
 * The Slack sign-in link in the web app (docs/slack.md "Linking"), in Debian's Chromium against
 * the real platform and the fake Slack: a Slack person asks the bot for a link, opens it signed
 * in, is shown a code, sends it to the bot from Slack, and is linked; the link works once.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient } from "../support/api-client.ts";
import { startFakeSlack, type FakeSlack } from "../support/fake-slack.ts";
import { waitFor } from "../support/wait.ts";
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
describe.skipIf(!existsSync(chromiumPath))(
  `the Slack sign-in link in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let slack: FakeSlack;

    beforeAll(async () => {
      slack = await startFakeSlack();
      roost = await startWebRoost({ env: { ROOST_SLACK_INSECURE_API_URL: "1" } });
      browser = await launchBrowser();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
      await slack?.close();
    });

    it("a Slack person opens the bot's link signed in, sends the code it shows, and is linked", async () => {
      const token = await roost.token();
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Slacker", "demo");
      const linked = await api.call<Api.SlackLinked>("PUT", `/v1/bots/${bot.id}/slack`, {
        botToken: slack.token,
        signingSecret: slack.signingSecret,
        apiUrl: slack.apiUrl,
      });
      const user = "U0WEB0001";
      const dm = (text: string) => ({
        type: "message",
        channel_type: "im",
        channel: "D0WEB0001",
        user,
        text,
        ts: `${Math.floor(Date.now() / 1000)}.${String(Math.floor(Math.random() * 1e6)).padStart(6, "0")}`,
      });
      expect((await slack.sendEvent(linked.eventsUrl, dm("link"))).status).toBe(200);
      const link = await waitFor(
        () =>
          slack
            .callsOf("chat.postMessage")
            .map(
              (call) =>
                /(https?:\/\/\S+\/slack\/link#rsl_[A-Za-z0-9_-]{43})/.exec(
                  call.args.text ?? "",
                )?.[1],
            )
            .find((found) => found !== undefined),
        { what: "the sign-in link in the DM" },
      );

      const page = await browser.newPage();
      await page.goto(link.replace(/^https?:\/\/[^/]+/, roost.url));
      await page.getByRole("button", { name: "Link my Slack account" }).click();
      const message = await page.getByLabel("Message to send").textContent({ timeout: 60_000 });
      expect(message).toMatch(/^confirm [A-Z0-9]{10}$/);
      expect(page.url()).not.toContain("rsl_"); // the spent token leaves the address bar
      await screenshot(page, "slack-link-code");

      expect((await slack.sendEvent(linked.eventsUrl, dm(message!))).status).toBe(200);
      const answer = await waitFor(
        () =>
          slack
            .callsOf("chat.postMessage")
            .find((call) => (call.args.text ?? "").startsWith("Linked:"))?.args.text,
        { what: "the bot to confirm the link" },
      );
      expect(answer).toContain("Linked: you are");

      // The link works once: opened again (a fresh page), the page says so.
      await page.close();
      const again = await browser.newPage();
      await again.goto(link.replace(/^https?:\/\/[^/]+/, roost.url));
      await again.getByRole("button", { name: "Link my Slack account" }).click();
      await again
        .getByRole("alert")
        .getByText(/used, has expired or is unknown/)
        .waitFor({ timeout: 60_000 });
      await again.close();
    }, 180_000);
    it("links a bot for many workspaces, installs it in one from its settings, lists and removes it", async () => {
      const token = await roost.token();
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("OAuth bot", "demo");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}/edit`);
      const section = page.getByRole("region", { name: "Slack" });
      await section.getByText("Not linked.").waitFor({ timeout: 60_000 });
      await section.getByLabel("Many workspaces (OAuth install)").check();
      await section.getByLabel("Client ID").fill(slack.clientId);
      await section.getByLabel("Client Secret").fill(slack.clientSecret);
      await section.getByLabel("Signing Secret").fill(slack.signingSecret);
      await section.getByLabel("API URL (optional)").fill(slack.apiUrl);
      await section.getByRole("button", { name: "Link to Slack" }).click();
      await section.getByText("Not installed in any workspace yet.").waitFor({ timeout: 60_000 });
      await section.getByText(`${roost.url}/v1/slack/${bot.id}/oauth/callback`).waitFor();
      expect(await page.content()).not.toContain(slack.clientSecret);

      // The button asks Roost for a fresh install URL and goes to Slack's page (the fake approves
      // at once), whose redirect lands on Roost's callback.
      await section.getByRole("button", { name: "Add to a Slack workspace" }).click();
      await page.getByText("installed in the Slack workspace Fake Co").waitFor({ timeout: 60_000 });
      expect(slack.callsOf("oauth.v2.access")).toHaveLength(1);

      await page.goto(`${roost.url}/bots/${bot.id}/edit`);
      const installed = section.getByRole("list", { name: "Installed workspaces" });
      await installed.getByText("Fake Co").waitFor({ timeout: 60_000 });
      expect(await page.content()).not.toContain(slack.installedToken(slack.teamId)!);
      await installed.scrollIntoViewIfNeeded();
      await screenshot(page, "slack-settings-oauth");
      await section.getByRole("button", { name: "Remove Fake Co" }).click();
      await section.getByText("Not installed in any workspace yet.").waitFor({ timeout: 60_000 });
      expect(
        (await api.call<Api.SlackLinkStatus>("GET", `/v1/bots/${bot.id}/slack`)).oauth?.workspaces,
      ).toEqual([]);
      await section.getByRole("button", { name: "Unlink" }).click();
      await section.getByText("Not linked.").waitFor({ timeout: 60_000 });
      await page.close();
    }, 180_000);

    it("the bot's settings link it to Slack and show the error a Slack call answered", async () => {
      const token = await roost.token();
      const api = apiClient(roost.url, () => token);
      const bot = await api.createBot("Settings bot", "demo");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}/edit`);
      const section = page.getByRole("region", { name: "Slack" });
      await section.getByText("Not linked.").waitFor({ timeout: 60_000 });
      await section.getByLabel("Bot User OAuth Token").fill(slack.token);
      await section.getByLabel("Signing Secret").fill(slack.signingSecret);
      await section.getByLabel("API URL (optional)").fill(slack.apiUrl);
      await section.getByRole("button", { name: "Link to Slack" }).click();
      await section.getByText("Linked to Fake Co").waitFor({ timeout: 60_000 });
      const eventsUrl = `${roost.url}/v1/slack/${bot.id}/events`;
      await section.getByText(eventsUrl).waitFor();
      expect(await page.content()).not.toContain(slack.token);

      // Slack revokes the token; the bot's next turn in Slack meets it, and the settings show it.
      slack.revoke(true);
      try {
        await slack.sendEvent(eventsUrl, {
          type: "message",
          channel_type: "im",
          channel: "D0WEB0002",
          user: "U0WEB0002",
          text: "hello",
          ts: `${Math.floor(Date.now() / 1000)}.000777`,
        });
        await waitFor(
          async () =>
            (await api.call<Api.SlackLinkStatus>("GET", `/v1/bots/${bot.id}/slack`)).state ===
            "error",
          { timeoutMs: 60_000, what: "the link's error" },
        );
        await section.getByRole("button", { name: "Refresh" }).click();
        await section
          .getByRole("status")
          .getByText(/token_revoked/)
          .waitFor({ timeout: 60_000 });
        await screenshot(page, "slack-settings-error");
      } finally {
        slack.revoke(false);
      }
      await section.getByRole("button", { name: "Unlink" }).click();
      await section.getByText("Not linked.").waitFor({ timeout: 60_000 });
      await page.close();
    }, 180_000);
  },
);
