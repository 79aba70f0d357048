/**
 * The skill library in Debian's Chromium against the real platform: create a skill from its
 * fields, edit it, look at its files, replace them with an uploaded archive, delete it; and limit
 * a bot to some skills in its settings.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import type { Api } from "../../src/protocol/index.ts";
import { skillMarkdown, tarArchive } from "../../src/skills/testing/archives.ts";
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
  `the skill library in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let token = "";
    let files: string;
    const api = () => apiClient(roost.url, () => token);

    beforeAll(async () => {
      roost = await startWebRoost();
      browser = await launchBrowser();
      token = await roost.token();
      files = mkdtempSync(join(tmpdir(), "roost-web-skills-"));
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
      rmSync(files, { recursive: true, force: true });
    });

    async function open(path: string): Promise<Page> {
      const page = await browser.newPage();
      await page.goto(`${roost.url}${path}`);
      return page;
    }

    it("creates a skill from its fields, edits it, shows its files, replaces them with an archive, and deletes it", async () => {
      const page = await open("/");
      await page.getByRole("link", { name: "Skills" }).click();
      await page.waitForURL(/\/skills$/);
      await expect
        .poll(() => page.getByRole("heading", { name: "No skills yet" }).isVisible())
        .toBe(true);

      await page.getByRole("button", { name: "New skill" }).click();
      const form = page.getByRole("form", { name: "New skill" });
      await form.getByLabel("Name").fill("Weekly-Report");
      // Typed in capitals; the field keeps names lowercase.
      expect(await form.getByLabel("Name").inputValue()).toBe("weekly-report");
      await form.getByLabel("Description").fill("Writes the weekly report");
      await form.getByLabel("Instructions").fill("# Weekly report\nCollect the numbers.");
      await screenshot(page, "skills-new");
      await form.getByRole("button", { name: "Create skill" }).click();
      await page.waitForURL(/\/skills\/weekly-report$/);
      await expect
        .poll(() => page.getByRole("heading", { name: "weekly-report" }).isVisible())
        .toBe(true);

      const editor = page.getByRole("form", { name: "Edit weekly-report" });
      await editor.getByLabel("Description").fill("Writes the weekly report for the team");
      await editor.getByRole("button", { name: "Save changes" }).click();
      await expect
        .poll(() => page.getByRole("status").textContent())
        .toMatch(/Saved\. Bots use the new version/);
      const stored = await api().call<Api.SkillDetail>("GET", "/v1/skills/weekly-report");
      expect(stored).toMatchObject({
        description: "Writes the weekly report for the team",
        body: "# Weekly report\nCollect the numbers.",
      });

      // Its SKILL.md, as the computer gets it.
      await page.getByRole("button", { name: /SKILL\.md/ }).click();
      await expect
        .poll(() => page.getByLabel("Content of SKILL.md").textContent())
        .toContain("description: Writes the weekly report for the team");

      // New files from an archive of the folder.
      const archive = join(files, "weekly-report.tar.gz");
      writeFileSync(
        archive,
        gzipSync(
          tarArchive([
            { path: "weekly-report/", type: "5" },
            {
              path: "weekly-report/SKILL.md",
              data: skillMarkdown("weekly-report", "From the archive", "# From the archive"),
            },
            { path: "weekly-report/collect.sh", data: "echo numbers\n", mode: 0o755 },
          ]),
        ),
      );
      await page.getByLabel("Replace files").setInputFiles(archive);
      await expect
        .poll(() => page.getByRole("status").textContent())
        .toMatch(/Replaced the files with weekly-report\.tar\.gz/);
      expect(await editor.getByLabel("Description").inputValue()).toBe("From the archive");
      const script = page.getByRole("button", { name: /collect\.sh/ });
      expect(await script.textContent()).toContain("executable");
      await script.click();
      await expect
        .poll(() => page.getByLabel("Content of collect.sh").textContent())
        .toBe("echo numbers\n");
      await screenshot(page, "skills-detail");

      await page.getByRole("button", { name: "Delete skill" }).click();
      await page
        .getByRole("group", { name: "Confirm delete" })
        .getByRole("button", { name: "Delete" })
        .click();
      await page.waitForURL(/\/skills$/);
      await expect
        .poll(() => page.getByRole("heading", { name: "No skills yet" }).isVisible())
        .toBe(true);
      expect((await api().call<Api.SkillList>("GET", "/v1/skills")).skills).toEqual([]);
      await page.close();
    });

    it("uploads a new skill's folder, and shows why a bad archive is refused", async () => {
      const page = await open("/skills");
      const bad = join(files, "bad.tar");
      writeFileSync(
        bad,
        tarArchive([
          { path: "SKILL.md", data: skillMarkdown("bad", "Climbs out") },
          { path: "../../escape.sh", data: "x" },
        ]),
      );
      await page.getByLabel("Upload a folder").setInputFiles(bad);
      await expect
        .poll(() => page.getByRole("alert").textContent())
        .toMatch(/Could not upload bad\.tar: .*`\.\.` component/);

      const good = join(files, "uploaded.tar");
      writeFileSync(
        good,
        tarArchive([{ path: "SKILL.md", data: skillMarkdown("uploaded", "Came in a tar") }]),
      );
      await page.getByLabel("Upload a folder").setInputFiles(good);
      await page.waitForURL(/\/skills\/uploaded$/);
      await page.getByRole("link", { name: "All skills" }).click();
      await expect
        .poll(() => page.getByRole("list", { name: "Your skills" }).textContent())
        .toContain("Came in a tar");
      await page.close();
    });

    it("limits a bot to some skills in its settings, and back to all of them", async () => {
      for (const name of ["charts", "invoices"])
        await api().call("POST", "/v1/skills", {
          name,
          description: `${name} skill`,
          body: `# ${name}`,
        });
      const bot = await api().createBot("Limited");
      const page = await open(`/bots/${bot.id}/edit`);
      await page.getByRole("radio", { name: "Only the ones ticked below" }).check();
      const group = page.getByRole("group", { name: "Skills this bot may use" });
      await group.getByRole("checkbox", { name: /charts/ }).check();
      await screenshot(page, "skills-bot-limit");
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.waitForURL(new RegExp(`/bots/${bot.id}$`));
      expect((await api().call<Api.Bot>("GET", `/v1/bots/${bot.id}`)).skills).toEqual(["charts"]);

      await page.goto(`${roost.url}/bots/${bot.id}/edit`);
      expect(
        await page
          .getByRole("group", { name: "Skills this bot may use" })
          .getByRole("checkbox", { name: /charts/ })
          .isChecked(),
      ).toBe(true);
      await page.getByRole("radio", { name: /All of your skills/ }).check();
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.waitForURL(new RegExp(`/bots/${bot.id}$`));
      expect((await api().call<Api.Bot>("GET", `/v1/bots/${bot.id}`)).skills).toBeNull();
      await page.close();
    });
  },
);
