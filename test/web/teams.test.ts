/**
 * Teams in the web app (docs/teams.md), in Debian's Chromium against the real platform: the owner
 * makes a team on the Teams page and an invitation link; a second person opens the link in their
 * own browser and joins; the owner shares a bot with the team in its settings, and the teammate
 * sees it in the sidebar with the team's marker and no settings link.
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

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `teams in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let ownerBrowser: Browser;
    let mateBrowser: Browser;
    let token = "";

    beforeAll(async () => {
      roost = await startWebRoost();
      ownerBrowser = await launchBrowser();
      mateBrowser = await launchBrowser();
      token = await roost.token();
    }, 120_000);
    afterAll(async () => {
      await ownerBrowser?.close();
      await mateBrowser?.close();
      await roost?.close();
    });

    it("make a team, invite by link, join in another browser, share a bot with the team", async () => {
      const api = apiClient(roost.url, () => token);
      const mate = await api.call<Api.CreatedAccount>("POST", "/v1/accounts", { name: "mia" });
      const bot = await api.createBot("Ops helper", "demo");

      const page = await ownerBrowser.newPage();
      await page.goto(`${roost.url}/teams`);
      await page.getByRole("textbox", { name: "New team's name" }).fill("Ops");
      await page.getByRole("button", { name: "Create team" }).click();
      const panel = page.getByRole("region", { name: "Team Ops" });
      await panel.getByRole("heading", { name: "Ops" }).waitFor({ timeout: 60_000 });
      await panel.getByRole("button", { name: /Invitation link/ }).click();
      const link = await panel.getByRole("textbox", { name: "Invitation link" }).inputValue();
      expect(link).toMatch(/\/teams\/join#rti_/);
      await screenshot(page, "teams-invitation");

      // Mia's browser holds her token before the app's first script runs (else the app could sign
      // in with this computer's local admin token first).
      await mateBrowser.context.addInitScript(
        `localStorage.setItem("roost.token", ${JSON.stringify(mate.token)})`,
      );
      const matePage = await mateBrowser.newPage();
      await matePage.goto(link.replace(/^https?:\/\/[^/]+/, roost.url));
      await matePage.locator(".sidebar-footer").getByText("mia").waitFor({ timeout: 60_000 });
      await matePage.getByRole("button", { name: "Join the team" }).click();
      await matePage.waitForURL(/\/teams$/, { timeout: 60_000 });
      await matePage
        .getByRole("region", { name: "Team Ops" })
        .getByText("mia")
        .waitFor({ timeout: 60_000 });
      // The link worked once.
      const again = await fetch(`${roost.url}/v1/invitations/${link.split("#")[1]}/accept`, {
        method: "POST",
        headers: { authorization: `Bearer ${mate.token}` },
      });
      expect(again.status).toBe(404);

      await page.goto(`${roost.url}/bots/${bot.id}/edit`);
      await page.locator("select[name=teamId]").selectOption({ label: "Ops" });
      await page.getByRole("button", { name: /Save/ }).click();
      await page.waitForURL(new RegExp(`/bots/${bot.id}$`), { timeout: 60_000 });
      expect((await api.call<Api.Bot>("GET", `/v1/bots/${bot.id}`)).teamId).not.toBeNull();

      await matePage.goto(`${roost.url}/bots/${bot.id}`);
      const entry = matePage.getByRole("link", { name: /Ops helper/ });
      await entry.getByText("Ops", { exact: true }).waitFor({ timeout: 60_000 });
      expect(await matePage.getByRole("link", { name: "Edit Ops helper" }).count()).toBe(0);
      await screenshot(matePage, "teams-team-bot");
      await page.close();
      await matePage.close();
    }, 180_000);
  },
);
