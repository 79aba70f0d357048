/**
 * Settings in the web app (issue 16 §1 and §5, docs/models.md "From the web app") in Debian's
 * Chromium against the real platform, with bots' models resolved as `roost up` resolves them: the
 * admin adds an OpenAI-compatible server pointed at a fake one on 127.0.0.1 (which checks the key
 * as the real one does), tests the connection, the bot form's picker lists its models, and a bot
 * made with one answers through it; API tokens are created and revoked; the admin makes an
 * account whose first token signs in; another account sees no admin settings. Screenshots at
 * desktop and phone sizes.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeTextReply, startFakeOpenAiServer } from "../../src/models/testing/index.ts";
import type { FakeOpenAiServer } from "../../src/models/testing/index.ts";
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

const serverKey = "sk-fake-local-server-7Q2Z";
const axePath = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/** axe-core's serious and critical violations on the page as it is now. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: axePath });
  const result = await page.evaluate<{
    violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
  }>("axe.run(document, { resultTypes: ['violations'] })");
  return result.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${JSON.stringify(violation.nodes.map((node) => node.target))}`,
    );
}
const phone = { width: 390, height: 844 };

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `settings in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let fake: FakeOpenAiServer;
    let token = "";

    beforeAll(async () => {
      fake = await startFakeOpenAiServer(() => fakeTextReply("Hello from ", "the fake server."), {
        apiKey: serverKey,
        models: ["llama-test", "qwen-test"],
      });
      roost = await startWebRoost({ realModels: true });
      browser = await launchBrowser();
      token = await roost.token();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
      await fake?.close();
    });

    it("admin adds a compatible server, tests it, picks its model for a bot, and the bot answers through it", async () => {
      const page = await browser.newPage();
      await page.goto(`${roost.url}/settings/models`);
      await page.getByText("No provider yet").waitFor({ timeout: 60_000 });
      await page.getByRole("button", { name: "Add a provider" }).click();
      const form = page.getByRole("form", { name: "Add a provider" });
      await form.getByLabel("Provider").selectOption("openai-compatible");
      await form.getByLabel("Name").fill("local");
      await form.getByLabel("Label (optional)").fill("Local fake");
      await form.getByLabel("Base URL").fill(fake.baseUrl);
      await form.getByLabel("API key (optional)").fill(serverKey);
      await form.getByRole("button", { name: "Save provider" }).click();

      const row = page.getByRole("listitem", { name: "Local fake (settings)" });
      await row.waitFor({ timeout: 30_000 });
      expect(await row.textContent()).toContain("set (ends in 7Q2Z)");
      await row.getByRole("button", { name: "Test connection" }).click();
      await row
        .getByRole("status")
        .filter({ hasText: "Connected to Local fake: 2 models listed." })
        .waitFor({ timeout: 30_000 });
      expect(fake.requests.find((request) => request.path === "/v1/models")?.headers).toMatchObject(
        { authorization: `Bearer ${serverKey}` },
      );
      expect(await page.content()).not.toContain(serverKey); // never shown again
      await screenshot(page, "desktop-settings-models");
      await page.setViewportSize(phone);
      await screenshot(page, "phone-settings-models");
      await page.setViewportSize({ width: 1280, height: 800 });

      // A bad base URL: the server's words, nothing stored.
      await page.getByRole("button", { name: "Add a provider" }).click();
      const bad = page.getByRole("form", { name: "Add a provider" });
      await bad.getByLabel("Name").fill("broken");
      await bad.getByLabel("Base URL").fill("http://me:pw@127.0.0.1:1/v1");
      await bad.getByRole("button", { name: "Save provider" }).click();
      await bad
        .getByRole("alert")
        .filter({ hasText: "must not hold a user name or password" })
        .waitFor({ timeout: 10_000 });
      await bad.getByRole("button", { name: "Cancel" }).click();

      // The picker: "Platform default" once (the demo model here), the server's models.
      await page.goto(`${roost.url}/bots/new`);
      const picker = page.getByLabel("Model", { exact: true });
      await picker.locator("option[value='local:llama-test']").waitFor({
        state: "attached",
        timeout: 30_000,
      });
      const options = await picker.locator("option").allTextContents();
      expect(options.filter((text) => text.startsWith("Platform default"))).toEqual([
        "Platform default (demo model, offline)",
      ]);
      expect(options.filter((text) => /demo/i.test(text))).toHaveLength(1);
      expect(options).toContain("llama-test — local:llama-test");
      expect(await picker.locator("optgroup[label='Local fake']").count()).toBe(1);
      await page.getByLabel("Name").fill("Through the fake");
      await picker.selectOption("local:llama-test");
      await screenshot(page, "desktop-bot-form-model-picker");
      await page.setViewportSize(phone);
      await screenshot(page, "phone-bot-form-model-picker");
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.getByRole("button", { name: "Create bot" }).click();
      await page.waitForURL(/\/bots\/[^/]+$/, { timeout: 30_000 });

      const box = page.getByRole("textbox", { name: "Message" });
      // The new bot's chat: on the loaded CI machine it took over 30 s once, and the whole test
      // over 60 s once (3.5 s alone); hence the long waits, as the other Chromium tests have.
      await box.waitFor({ timeout: 90_000 });
      await box.fill("hi there");
      await box.press("Enter");
      await page
        .locator(".row-bot:not([data-streaming])", { hasText: "Hello from the fake server." })
        .waitFor({ timeout: 60_000 });
      const chat = fake.requests.find((request) => request.path === "/v1/chat/completions");
      expect(chat?.headers.authorization).toBe(`Bearer ${serverKey}`);
      expect(chat?.body?.model).toBe("llama-test");
      await page.close();
    }, 180_000);

    it("a model whose provider is gone: the bot form says what to do in the web app's terms", async () => {
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/new`);
      await page.getByLabel("Name").fill("Wants OpenAI");
      await page
        .getByLabel("Model", { exact: true })
        .selectOption({ label: "Another model (type provider:model)…" });
      await page.getByLabel("Model, as provider:model").fill("openai:gpt-4.1-mini");
      await page.getByRole("button", { name: "Create bot" }).click();
      const alert = page.getByRole("alert");
      await expect
        .poll(() => alert.textContent(), { timeout: 15_000 })
        .toBe("No OpenAI key is configured. An admin can add one in Settings → Models.");
      await page.close();
    });

    it("a bot made with the demo model through the API shows it as the demo model in its form", async () => {
      // The platform default is the demo model here, so the picker offers no demo option of its
      // own; the bot's explicit "demo" must still read as the demo model, not a typed-in spec.
      const bot = await apiClient(roost.url, () => token).createBot("Named demo", "demo");
      const page = await browser.newPage();
      await page.goto(`${roost.url}/bots/${bot.id}/edit`);
      const picker = page.getByLabel("Model", { exact: true });
      await expect.poll(() => picker.inputValue(), { timeout: 30_000 }).toBe("demo");
      expect(await page.getByLabel("Model, as provider:model").count()).toBe(0);
      expect(await picker.locator("option:checked").textContent()).toMatch(/^Demo model/);
      await page.close();
    });

    it("API tokens: create one (shown once, it works), revoke it (it stops working)", async () => {
      const page = await browser.newPage();
      await page.goto(`${roost.url}/settings/tokens`);
      await page.getByRole("textbox", { name: "New token's name" }).fill("laptop CLI");
      await page.getByRole("button", { name: "Create token" }).click();
      const shown = page.getByRole("textbox", { name: 'Token "laptop CLI"' });
      await shown.waitFor({ timeout: 30_000 });
      const created = await shown.inputValue();
      const me = (bearer: string) =>
        fetch(`${roost.url}/v1/me`, { headers: { authorization: `Bearer ${bearer}` } });
      expect((await me(created)).status).toBe(200);
      const table = page.getByRole("table", { name: "Your API tokens" });
      await table.getByRole("cell", { name: "laptop CLI", exact: true }).waitFor();
      await screenshot(page, "desktop-settings-tokens");
      await page.setViewportSize(phone);
      await screenshot(page, "phone-settings-tokens");
      await page.setViewportSize({ width: 1280, height: 800 });

      page.once("dialog", (dialog) => void dialog.accept());
      await page.getByRole("button", { name: "Revoke laptop CLI" }).click();
      await expect
        .poll(() => table.getByRole("cell", { name: "laptop CLI", exact: true }).count(), {
          timeout: 15_000,
        })
        .toBe(0);
      expect((await me(created)).status).toBe(401);
      expect((await me(token)).status).toBe(200); // the page's own token is untouched
      await page.close();
    });

    it("the admin makes an account and its first token; that account sees no admin settings", async () => {
      const page = await browser.newPage();
      await page.goto(`${roost.url}/settings/accounts`);
      await page.getByRole("textbox", { name: "New account's name" }).fill("nia");
      await page.getByRole("button", { name: "Create account" }).click();
      const shown = page.getByRole("textbox", { name: "Token for nia" });
      await shown.waitFor({ timeout: 30_000 });
      const niaToken = await shown.inputValue();
      await page.getByRole("table", { name: "Accounts" }).getByText("nia").waitFor();
      await screenshot(page, "desktop-settings-accounts");
      await page.setViewportSize(phone);
      await screenshot(page, "phone-settings-accounts");
      await page.close();

      const nia = apiClient(roost.url, () => niaToken);
      expect((await nia.call<Api.Me>("GET", "/v1/me")).name).toBe("nia");
      const niaBrowser = await launchBrowser();
      try {
        await niaBrowser.context.addInitScript(
          `localStorage.setItem("roost.token", ${JSON.stringify(niaToken)})`,
        );
        const niaPage = await niaBrowser.newPage();
        await niaPage.goto(`${roost.url}/settings/models`);
        await niaPage
          .getByText("Only an admin account manages models.")
          .waitFor({ timeout: 60_000 });
        const tabs = niaPage.getByRole("navigation", { name: "Settings sections" });
        expect(await tabs.getByRole("link").allTextContents()).toEqual([
          "API tokens",
          "Notifications",
        ]);
        const refused = await fetch(`${roost.url}/v1/admin/providers`, {
          headers: { authorization: `Bearer ${niaToken}` },
        });
        expect(refused.status).toBe(403);
        await niaPage.goto(`${roost.url}/settings/notifications`);
        await niaPage
          .getByRole("heading", { name: "Notifications", exact: true })
          .waitFor({ timeout: 30_000 });
        await niaPage.getByText("No webhook is set.").waitFor({ timeout: 30_000 });
        await screenshot(niaPage, "desktop-settings-notifications");
        await niaPage.setViewportSize(phone);
        await screenshot(niaPage, "phone-settings-notifications");
        // Sign out from Settings.
        await niaPage
          .getByRole("navigation", { name: "Settings sections" })
          .getByRole("button", { name: "Sign out" })
          .click();
        await niaPage.getByRole("textbox").first().waitFor({ timeout: 30_000 });
        expect(await niaPage.evaluate(() => localStorage.getItem("roost.token"))).toBeNull();
      } finally {
        await niaBrowser.close();
      }
    });

    it("a hosted key: add it, replace it (the old one is never shown), remove it", async () => {
      const page = await browser.newPage();
      await page.goto(`${roost.url}/settings/models`);
      await page.getByRole("button", { name: "Add a provider" }).click();
      const form = page.getByRole("form", { name: "Add a provider" });
      await form.getByLabel("Provider").selectOption("xai");
      await form.getByLabel("API key", { exact: true }).fill("xai-first-key-AAAA");
      await form.getByRole("button", { name: "Save provider" }).click();
      const row = page.getByRole("listitem", { name: "xAI (settings)" });
      await row.getByText("set (ends in AAAA)").waitFor({ timeout: 30_000 });
      await row.getByRole("button", { name: "Edit" }).click();
      const edit = page.getByRole("form", { name: "Edit xAI" });
      expect(await edit.getByLabel(/API key/).inputValue()).toBe(""); // never filled back in
      await edit.getByLabel(/API key/).fill("xai-second-key-BBBB");
      await edit.getByRole("button", { name: "Save provider" }).click();
      await row.getByText("set (ends in BBBB)").waitFor({ timeout: 30_000 });
      expect(await page.content()).not.toContain("xai-second-key");
      // The platform default follows the stored key (no ROOST_MODEL): xAI's fallback model.
      await page.reload();
      await page.getByText("Platform default: xai:grok-4").waitFor({ timeout: 30_000 });
      page.once("dialog", (dialog) => void dialog.accept());
      await page
        .getByRole("listitem", { name: "xAI (settings)" })
        .getByRole("button", { name: "Remove" })
        .click();
      await expect
        .poll(() => page.getByRole("listitem", { name: "xAI (settings)" }).count(), {
          timeout: 15_000,
        })
        .toBe(0);
      await page.getByText("Platform default: demo").waitFor({ timeout: 30_000 });
      await page.close();
    });

    it("accessibility: the settings screens and the model picker have no serious or critical axe violations", async () => {
      const axeBrowser = await launchBrowser({ bypassCSP: true }); // axe is injected and run by eval
      try {
        const page = await axeBrowser.newPage();
        for (const [path, ready] of [
          ["/settings/models", "Model providers"],
          ["/settings/tokens", "API tokens"],
          ["/settings/notifications", "Notifications"],
          ["/settings/accounts", "Accounts"],
        ] as const) {
          await page.goto(`${roost.url}${path}`);
          await page
            .getByRole("heading", { name: ready, exact: true })
            .waitFor({ timeout: 60_000 });
          await expect.poll(() => page.getByText("Loading…").count(), { timeout: 15_000 }).toBe(0);
          expect(await seriousViolations(page), path).toEqual([]);
        }
        await page.goto(`${roost.url}/bots/new`);
        await page.getByLabel("Model", { exact: true }).waitFor({ timeout: 30_000 });
        expect(await seriousViolations(page), "/bots/new").toEqual([]);
      } finally {
        await axeBrowser.close();
      }
    });
  },
);
