/**
 * The Memory panel (issue "Memory, skills and compaction" §2) in Debian's Chromium against the
 * real platform: facts by tier written through the API, edits and deletes in the panel as
 * revisions, the history's diffs and Revert, paging, the server's limit message, review mode's
 * inbox with Accept and Reject (proposals from the real memory pass and from the memory service),
 * markup in a fact, another account's bot, and screenshots (artifacts/screenshots/).
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { createMemoryService } from "../../src/memory/index.ts";
import type {
  Bot,
  BotMemory,
  Me,
  MemoryRevision,
  MemoryRevisionPage,
  UserMemory,
} from "../../src/protocol/api.ts";
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

const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `memory panel in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let token = "";
    let me: Me;
    const api = () => apiClient(roost.url, () => token);

    beforeAll(async () => {
      roost = await startWebRoost();
      browser = await launchBrowser();
      token = await roost.token();
      me = await api().call<Me>("GET", "/v1/me");
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
    });

    const memoryOf = (botId: string) => api().call<BotMemory>("GET", `/v1/bots/${botId}/memory`);
    const userFacts = async () =>
      (await api().call<UserMemory>("GET", "/v1/me/memory")).user.map((fact) => fact.text);
    const revisionsOf = async (path: string, query = "") =>
      (await api().call<MemoryRevisionPage>("GET", `${path}/revisions?limit=200${query}`))
        .revisions;
    const remember = (botId: string, tier: string, text: string, extra: object = {}) =>
      api().call("POST", `/v1/bots/${botId}/memory`, { tier, text, ...extra });

    /** A tier's section of the panel, found by its heading. */
    const tier = (page: Page, name: string) => page.getByRole("region", { name, exact: true });
    /** The revisions the page lists, in its order. */
    const revisionIds = async (page: Page) =>
      Promise.all(
        (await page.locator(".revision").all()).map((row) => row.getAttribute("data-revision-id")),
      );
    const factRow = (page: Page, tierName: string, text: string) =>
      tier(page, tierName).getByRole("listitem").filter({ hasText: text });

    it("shows facts by tier written through the API; an edit in the panel is a revision, Revert in the history restores the text, Delete removes a fact", async () => {
      const bot = await api().createBot("Keeper");
      await remember(bot.id, "profile", "The project is called Falcon.");
      await remember(bot.id, "note", "Call the dentist on Friday.", { expiresInHours: 48 });
      await remember(bot.id, "log", "Shipped version 1.");
      await api().call("POST", "/v1/me/memory", { text: "The user's name is Ada." });

      const page = await browser.newPage(desktop);
      try {
        // The bot's page links to its memory.
        await page.goto(`${roost.url}/bots/${bot.id}`);
        await page.getByRole("link", { name: "Memory of Keeper", exact: true }).click();
        await page.waitForURL(/\/memory$/);
        await expect
          .poll(() => tier(page, "Profile").textContent())
          .toContain("The project is called Falcon.");
        const user = await tier(page, "User facts").textContent();
        expect(user).toContain("The user's name is Ada.");
        expect(user).toContain("shared by all your bots");
        expect(await tier(page, "Notes").textContent()).toMatch(
          /Call the dentist on Friday\.expires in 2 days/,
        );
        expect(await tier(page, "Log").textContent()).toContain("Shipped version 1.");
        await screenshot(page, "desktop-memory-facts");

        // Edit the profile fact with the keyboard only: Edit, type, Enter.
        await factRow(page, "Profile", "Falcon").getByRole("button", { name: "Edit" }).focus();
        await page.keyboard.press("Enter");
        const box = tier(page, "Profile").getByRole("textbox", { name: "Edit this fact" });
        await box.fill("The project is called Heron.");
        await box.press("Enter");
        await expect.poll(() => tier(page, "Profile").textContent()).toContain("Heron");
        expect((await memoryOf(bot.id)).profile.map((fact) => fact.text)).toEqual([
          "The project is called Heron.",
        ]);
        const edited = (await revisionsOf(`/v1/bots/${bot.id}/memory`))[0]!;
        expect(edited).toMatchObject({
          action: "replace",
          author: "user",
          before: "The project is called Falcon.",
          after: "The project is called Heron.",
          status: "applied",
        });

        // A user fact is edited through /v1/me/memory: every bot sees the change.
        await factRow(page, "User facts", "Ada").getByRole("button", { name: "Edit" }).click();
        await tier(page, "User facts")
          .getByRole("textbox", { name: "Edit this fact" })
          .fill("The user's name is Ada Lovelace.");
        await tier(page, "User facts").getByRole("button", { name: "Save" }).click();
        await expect
          .poll(userFacts)
          .toEqual(expect.arrayContaining(["The user's name is Ada Lovelace."]));

        // The history shows the edit as a diff, by you, with Revert.
        await page
          .getByRole("navigation", { name: "Memory" })
          .getByRole("link", { name: "History" })
          .click();
        await page.waitForURL(/\/memory\/history$/);
        const revision = page.locator(`.revision[data-revision-id="${edited.id}"]`);
        await expect.poll(() => revision.locator("del").textContent()).toBe("Falcon.");
        expect(await revision.locator("ins").textContent()).toBe("Heron.");
        expect(await revision.locator(".revision-meta").textContent()).toContain("by you");
        // Newest first, the user fact's edit (made after) above the bot's.
        const order = await revisionIds(page);
        const userEdit = (await revisionsOf("/v1/me/memory"))[0]!;
        expect(order.indexOf(userEdit.id)).toBeLessThan(order.indexOf(edited.id));
        await screenshot(page, "desktop-memory-history");

        await revision.getByRole("button", { name: "Revert" }).click();
        await expect
          .poll(async () => (await memoryOf(bot.id)).profile.map((fact) => fact.text))
          .toEqual(["The project is called Falcon."]);
        // The revert is itself a revision, so the history grows by one, at the top.
        const after = await revisionsOf(`/v1/bots/${bot.id}/memory`);
        expect(after[0]).toMatchObject({
          revertOf: edited.id,
          author: "user",
          after: "The project is called Falcon.",
        });
        await expect
          .poll(() => page.locator(".revision").first().getAttribute("data-revision-id"))
          .toBe(after[0]!.id);
        expect(await page.locator(".revision").first().textContent()).toContain("Revert");

        // Delete a note from the facts; Undo brings it back (a revert too).
        await page.getByRole("link", { name: "Facts", exact: true }).click();
        await factRow(page, "Notes", "dentist").getByRole("button", { name: "Delete" }).click();
        await expect.poll(() => tier(page, "Notes").textContent()).toContain("Nothing yet.");
        expect((await memoryOf(bot.id)).note).toEqual([]);
        await page.getByRole("button", { name: "Undo" }).click();
        await expect
          .poll(async () => (await memoryOf(bot.id)).note.map((fact) => fact.text))
          .toEqual(["Call the dentist on Friday."]);

        // Add a note with its own expiry from the form.
        await page.getByLabel("Where").selectOption("note");
        await page.getByLabel("Expires in (hours)").fill("5");
        await page.getByLabel("What to remember").fill("Water the plants tonight.");
        const before = Date.now();
        await page.getByRole("button", { name: "Add", exact: true }).click();
        const added = await waitFor(
          async () =>
            (await memoryOf(bot.id)).note.find((fact) => fact.text === "Water the plants tonight."),
          { what: "the added note" },
        );
        const expiresInMs = Date.parse(added.expiresAt!) - before;
        expect(expiresInMs).toBeGreaterThan(5 * 3600_000 - 60_000);
        expect(expiresInMs).toBeLessThan(5 * 3600_000 + 60_000);
        await expect
          .poll(() => tier(page, "Notes").textContent())
          .toContain("Water the plants tonight.");

        // Phone width and the dark theme.
        await page.setViewportSize(phone);
        await screenshot(page, "phone-memory-facts");
        await page.emulateMedia({ colorScheme: "dark" });
        await page.setViewportSize(desktop);
        await screenshot(page, "desktop-memory-dark");
      } finally {
        await page.close();
      }
    });

    it("the history pages with Load more, the bot's and the user facts' revisions merged newest first", async () => {
      const bot = await api().createBot("Historian");
      // Interleaved, then more of the bot's than a page (20): the user facts' first page reaches
      // further back than the bot's, and must not be shown past the bot's oldest loaded entry.
      for (let index = 0; index < 25; index++) {
        await remember(bot.id, "log", `Log entry ${index}.`);
        if (index < 10) await api().call("POST", "/v1/me/memory", { text: `User fact ${index}.` });
      }
      const expected = [
        ...(await revisionsOf(`/v1/bots/${bot.id}/memory`)),
        ...(await revisionsOf("/v1/me/memory")),
      ]
        // The API's order: newest first by time, then by id (compared as bytes).
        .sort((a, b) => {
          const [x, y] = a.createdAt === b.createdAt ? [a.id, b.id] : [a.createdAt, b.createdAt];
          return x === y ? 0 : x < y ? 1 : -1;
        })
        .map((revision) => revision.id);

      const page = await browser.newPage(desktop);
      try {
        await page.goto(`${roost.url}/bots/${bot.id}/memory/history`);
        const shown = () => revisionIds(page);
        await expect.poll(async () => (await shown()).length).toBeGreaterThan(0);
        const first = await shown();
        // One page of each, shown only as far as both are known: a prefix of the merged order.
        expect(first.length).toBeGreaterThanOrEqual(20);
        expect(first.length).toBeLessThan(expected.length);
        expect(first).toEqual(expected.slice(0, first.length));

        const more = page.getByRole("button", { name: "Load more" });
        while (await more.isVisible()) {
          const count = (await shown()).length;
          await more.click();
          await expect.poll(async () => (await shown()).length).toBeGreaterThan(count);
        }
        expect(await shown()).toEqual(expected);
      } finally {
        await page.close();
      }
    });

    it("a full profile: adding one more shows the server's own message", async () => {
      const bot = await api().createBot("Full");
      for (let index = 0; index < 100; index++) await remember(bot.id, "profile", `Fact ${index}.`);
      const page = await browser.newPage(desktop);
      try {
        await page.goto(`${roost.url}/bots/${bot.id}/memory`);
        await expect.poll(() => tier(page, "Profile").textContent()).toContain("100 of 100");
        await page.getByLabel("Where").selectOption("profile");
        await page.getByLabel("What to remember").fill("One fact too many.");
        await page.getByRole("button", { name: "Add", exact: true }).click();
        await expect
          .poll(() => page.getByRole("alert").textContent())
          .toBe("profile is full (100 facts): replace or remove one");
        // What was typed stays, so it can be kept elsewhere; nothing was saved.
        expect(await page.getByLabel("What to remember").inputValue()).toBe("One fact too many.");
        expect((await memoryOf(bot.id)).profile).toHaveLength(100);
      } finally {
        await page.close();
      }
    });

    it("review mode: proposals from the memory pass wait in the inbox with a badge; Accept applies one, Reject drops one", async () => {
      const bot = await api().createBot("Reviewer");
      const other = await api().createBot("Bystander");
      const page = await browser.newPage(desktop);
      try {
        // Review mode is the bot form's toggle.
        await page.goto(`${roost.url}/bots/${bot.id}/edit`);
        await page.getByLabel("Review memory changes before they are saved").check();
        await page.getByRole("button", { name: "Save changes" }).click();
        await page.waitForURL(new RegExp(`/bots/${bot.id}$`));
        expect((await api().call<Bot>("GET", `/v1/bots/${bot.id}`)).memoryReview).toBe(true);

        // The real post-turn pass (the demo model's, PASS5) proposes after a chat ...
        const conversation = await api().createConversation(bot.id);
        await api().send(conversation.id, "my name is Zed");
        const fromPass = await waitFor(
          async () => {
            const proposed = [
              ...(await revisionsOf(`/v1/bots/${bot.id}/memory`, "&status=proposed")),
              ...(await revisionsOf("/v1/me/memory", "&status=proposed")),
            ];
            return proposed.length >= 2 ? proposed : undefined;
          },
          { timeoutMs: 60_000, what: "the memory pass's proposals" },
        );
        const name = fromPass.find((revision) => revision.after === "The user's name is Zed.")!;
        const log = fromPass.find((revision) => revision.after === "Asked: my name is Zed")!;
        expect(name).toMatchObject({
          scope: "user",
          author: "pass",
          conversationId: conversation.id,
        });
        expect(log).toMatchObject({ scope: "bot", tier: "log", author: "pass" });
        // ... and one more straight from the memory service, as the pass would.
        const { revision: profile } = await createMemoryService(roost.platform.store).change({
          accountId: me.id,
          botId: bot.id,
          tier: "profile",
          action: "add",
          text: "Prefers short answers.",
          author: "pass",
          propose: true,
        });
        expect(profile.status).toBe("proposed");
        // Nothing is saved yet.
        expect((await memoryOf(bot.id)).profile).toEqual([]);

        // The bot's page shows the count on its Memory link, which opens the inbox.
        await page.goto(`${roost.url}/bots/${bot.id}`);
        const link = page.getByRole("link", {
          name: "Memory of Reviewer: 3 changes wait for your review",
        });
        await link.waitFor();
        expect(await link.locator(".count-badge").textContent()).toBe("3");
        await screenshot(page, "desktop-memory-badge");
        await link.click();
        await page.waitForURL(/\/memory\/inbox$/);
        const tabs = page.getByRole("navigation", { name: "Memory" });
        await expect
          .poll(() => tabs.getByRole("link", { name: /Inbox/ }).textContent())
          .toBe("Inbox, waiting: 3");
        expect(await page.getByRole("region", { name: "Review mode" }).textContent()).toContain(
          "With review mode on it only proposes",
        );
        const item = (revision: Pick<MemoryRevision, "id">) =>
          page.locator(`.revision[data-revision-id="${revision.id}"]`);
        await item(profile).waitFor();
        expect(await page.locator(".memory-inbox .revision").count()).toBe(3);
        // The pass's proposal names the chat it came from, as a link to it.
        const chatLink = item(name).getByRole("link");
        expect(await chatLink.getAttribute("href")).toBe(`/c/${conversation.id}`);
        expect(await item(name).locator(".revision-meta").textContent()).toContain(
          "the memory pass after",
        );
        await screenshot(page, "desktop-memory-inbox");
        await page.setViewportSize(phone);
        await screenshot(page, "phone-memory-inbox");
        await page.setViewportSize(desktop);

        // A user-fact proposal from this bot's chat is not in another bot's inbox.
        const bystander = await browser.newPage(desktop);
        try {
          await bystander.goto(`${roost.url}/bots/${other.id}/memory/inbox`);
          await expect
            .poll(() => bystander.locator(".memory-inbox").textContent())
            .toContain("Nothing waits for review.");
        } finally {
          await bystander.close();
        }

        await item(profile).getByRole("button", { name: "Accept" }).click();
        await expect
          .poll(async () => (await memoryOf(bot.id)).profile.map((fact) => fact.text))
          .toEqual(["Prefers short answers."]);
        await expect.poll(() => page.locator(".memory-inbox .revision").count()).toBe(2);
        expect(await tabs.getByRole("link", { name: /Inbox/ }).textContent()).toBe(
          "Inbox, waiting: 2",
        );

        await item(name).getByRole("button", { name: "Reject" }).click();
        await expect.poll(() => page.locator(".memory-inbox .revision").count()).toBe(1);
        expect(await userFacts()).not.toContain("The user's name is Zed.");
        const rejected = (await revisionsOf("/v1/me/memory")).find(
          (revision) => revision.id === name.id,
        );
        expect(rejected?.status).toBe("rejected");

        await item(log).getByRole("button", { name: "Accept" }).click();
        await expect
          .poll(() => page.locator(".memory-inbox").textContent())
          .toContain("Nothing waits for review.");
        expect((await memoryOf(bot.id)).log.map((fact) => fact.text)).toContain(
          "Asked: my name is Zed",
        );
        // No badge left on the tab nor on the bot's Memory link.
        expect(await tabs.getByRole("link", { name: /Inbox/ }).textContent()).toBe("Inbox");
        await page.goto(`${roost.url}/bots/${bot.id}`);
        await page.getByRole("link", { name: "Memory of Reviewer", exact: true }).waitFor();
        expect(await page.locator(".memory-link .count-badge").count()).toBe(0);
      } finally {
        await page.close();
      }
    });

    it("a fact with HTML in it is shown as text, never run as markup", async () => {
      const bot = await api().createBot("Markup");
      const text = `<img src="x" onerror="window.__memoryPwned = 1"><b>bold</b>`;
      await remember(bot.id, "profile", text);
      const page = await browser.newPage(desktop);
      try {
        await page.goto(`${roost.url}/bots/${bot.id}/memory`);
        await expect.poll(() => factRow(page, "Profile", "onerror").count()).toBe(1);
        expect(await factRow(page, "Profile", "onerror").locator(".fact-text").textContent()).toBe(
          text,
        );
        await page.goto(`${roost.url}/bots/${bot.id}/memory/history`);
        await expect.poll(() => page.locator(".diff ins").first().textContent()).toBe(text);
        expect(await page.locator(".memory-page img, .memory-page b").count()).toBe(0);
        expect(await page.evaluate("window.__memoryPwned")).toBeUndefined();
      } finally {
        await page.close();
      }
    });

    it("another account's bot: its memory page says not found, asks the server nothing, and shows none of its facts", async () => {
      const created = await api().call<{ token: string }>("POST", "/v1/accounts", {
        name: "Mallory",
      });
      const mallory = apiClient(roost.url, () => created.token);
      const theirs = await mallory.createBot("Private");
      await mallory.call("POST", `/v1/bots/${theirs.id}/memory`, {
        tier: "profile",
        text: "The launch code is 0000.",
      });
      const page = await browser.newPage(desktop);
      const asked: string[] = [];
      page.on("request", (request) => {
        if (request.url().includes(theirs.id)) asked.push(request.url());
      });
      try {
        await page.goto(`${roost.url}/bots/${theirs.id}/memory`);
        await page.getByRole("heading", { name: "This bot does not exist" }).waitFor();
        expect(await page.content()).not.toContain("launch code");
        expect(asked.filter((url) => url.includes("/v1/"))).toEqual([]);
      } finally {
        await page.close();
      }
    });
  },
);
