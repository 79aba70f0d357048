/**
 * Accessibility of each main screen (issue 16 §7): axe-core 4 in Debian's Chromium finds no
 * serious or critical violation on any screen of the web app, at desktop (1280×800) and phone
 * (390×844) sizes, in the light and the dark theme. Each screen is also photographed at both
 * sizes into artifacts/screenshots/a11y-<screen>-<size>.png.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import {
  chromiumPath,
  launchBrowser,
  screenshot,
  startWebRoost,
  type Browser,
  type WebRoost,
} from "./harness.ts";

const axePath = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/** Serious and critical violations on the page as it is now, one line each. */
async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate<boolean>(`typeof window.axe === "object"`)))
    await page.addScriptTag({ path: axePath });
  const violations = await page.evaluate<AxeViolation[]>(
    `axe.run(document, { resultTypes: ["violations"] }).then((result) => result.violations)`,
  );
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.impact} ${violation.id}: ${violation.help} at ${violation.nodes
          .slice(0, 4)
          .map(
            (node) =>
              `${node.target.join(" ")} (${node.failureSummary?.split("\n").slice(1).join(" ").trim()})`,
          )
          .join("; ")}`,
    );
}

interface Screen {
  name: string;
  /** Opens the screen on `page` and waits until it shows what it should. */
  open(page: Page): Promise<void>;
}

if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `accessibility of each screen${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let dark: Browser;
    let botId = "";
    let conversationId = "";
    const go = (page: Page, path: string) => page.goto(`${roost.url}${path}`);

    beforeAll(async () => {
      roost = await startWebRoost({ env: { ROOST_MEMORY_PASS: "off" } });
      // axe is added as a script: the app's CSP allows only its own.
      browser = await launchBrowser({ bypassCSP: true });
      dark = await launchBrowser({ bypassCSP: true, colorScheme: "dark" });
    }, 120_000);
    afterAll(async () => {
      await dark?.close();
      await browser?.close();
      await roost?.close();
    });

    async function prepare(): Promise<void> {
      if (botId !== "") return;
      const token = await roost.token();
      const api = apiClient(roost.url, () => token);
      botId = (await api.createBot("Helper", "demo")).id;
      await api.call("POST", "/v1/skills", {
        name: "weekly-report",
        description: "Writes the weekly report",
        body: "# Weekly report\n\nCollect the numbers, then write three lines.",
      });
      await api.call("PUT", `/v1/bots/${botId}/tool-policy`, {
        rules: [{ tool: "memory", decision: "ask" }],
      });
      // A conversation with a shell card, a secret request card and an approval card.
      conversationId = (await api.createConversation(botId)).id;
      await api.send(conversationId, "$ echo hello-from-the-computer; ls /");
      await api.waitForSteps(conversationId, "reply", 1, 60_000);
      await api.send(conversationId, "request secret STRIPE_KEY to charge the card");
      await api.waitForSteps(conversationId, "reply", 2, 60_000);
      await api.send(conversationId, "because you asked: remember note: buy milk");
      await api.waitForSteps(conversationId, "approval", 1, 60_000);
    }

    const screens: Screen[] = [
      {
        name: "sign-in",
        async open(page) {
          // A signed-out page: no stored token, and no signing in by itself after a sign-out.
          await page.addInitScript(
            `localStorage.removeItem("roost.token"); sessionStorage.setItem("roost.signed-out", "1");`,
          );
          await go(page, "/");
          await page.getByRole("button", { name: /Sign in/ }).waitFor();
        },
      },
      {
        name: "welcome",
        async open(page) {
          await go(page, "/");
          await page.getByRole("heading", { name: "Create your first bot" }).waitFor();
        },
      },
      {
        name: "new-bot",
        async open(page) {
          await go(page, "/bots/new");
          await page.getByRole("button", { name: "Create bot" }).waitFor();
        },
      },
      {
        name: "new-chat",
        async open(page) {
          await go(page, `/bots/${botId}`);
          await page.getByRole("textbox", { name: "Message" }).waitFor();
        },
      },
      {
        name: "chat-tool-cards",
        async open(page) {
          await go(page, `/c/${conversationId}`);
          await page.locator('[data-step="approval"]').waitFor();
          await page.getByRole("article", { name: "Secret STRIPE_KEY" }).waitFor();
          // The first turn's shell card, opened (the timeline draws only what is near the viewport).
          await page.evaluate(`document.querySelector(".timeline").scrollTop = 0`);
          await page.locator(".tool-card[data-tool=shell] .tool-head").first().click();
          await page.locator(".tool-output").first().waitFor();
        },
      },
      {
        name: "computer",
        async open(page) {
          await go(page, `/c/${conversationId}`);
          await page.locator(".computer-chip").click();
          await page.getByRole("dialog", { name: "Computer" }).waitFor();
        },
      },
      {
        name: "files",
        async open(page) {
          await go(page, `/c/${conversationId}`);
          await page.locator(".computer-chip").click();
          const dialog = page.getByRole("dialog", { name: "Computer" });
          await dialog.getByRole("button", { name: "Files" }).click();
          const files = page.getByRole("dialog", { name: "Files on your computer" });
          await files.getByRole("navigation", { name: "Folder" }).waitFor({ timeout: 30_000 });
        },
      },
      {
        name: "edit-bot",
        async open(page) {
          await go(page, `/bots/${botId}/edit`);
          await page.getByLabel("Instructions").waitFor();
        },
      },
      {
        name: "memory",
        async open(page) {
          await go(page, `/bots/${botId}/memory`);
          await page
            .getByRole("heading", { name: /Memory/ })
            .first()
            .waitFor();
          await page.locator(".memory-facts").first().waitFor();
        },
      },
      {
        name: "memory-history",
        async open(page) {
          await go(page, `/bots/${botId}/memory/history`);
          await page
            .getByRole("heading", { name: /Memory/ })
            .first()
            .waitFor();
        },
      },
      {
        name: "usage",
        async open(page) {
          await go(page, `/bots/${botId}/usage`);
          await page.getByText(/today/i).first().waitFor();
        },
      },
      {
        name: "skills",
        async open(page) {
          await go(page, "/skills");
          await page.getByText("weekly-report").first().waitFor();
        },
      },
      {
        name: "skill",
        async open(page) {
          await go(page, "/skills/weekly-report");
          await page.getByText("Collect the numbers").first().waitFor();
        },
      },
      {
        name: "teams",
        async open(page) {
          await go(page, "/teams");
          await page.getByRole("heading", { name: /Teams/ }).first().waitFor();
        },
      },
      {
        name: "not-found",
        async open(page) {
          await go(page, "/no/such/page");
          await page.getByText("There is nothing at this address").waitFor();
        },
      },
    ];

    for (const screen of screens) {
      it(`${screen.name}: no serious or critical axe violations, light and dark, desktop and phone`, async () => {
        if (screen.name !== "sign-in" && screen.name !== "welcome") await prepare();
        const problems: string[] = [];
        for (const [theme, which] of [
          ["light", browser],
          ["dark", dark],
        ] as const) {
          for (const [size, viewport] of [
            ["desktop", desktop],
            ["phone", phone],
          ] as const) {
            const page = await which.newPage(viewport);
            try {
              await screen.open(page);
              await page.evaluate(`document.fonts.ready`);
              if (theme === "light") await screenshot(page, `a11y-${screen.name}-${size}`);
              for (const problem of await seriousViolations(page))
                problems.push(`[${theme} ${size}] ${problem}`);
            } finally {
              await page.close();
            }
          }
        }
        expect(problems, problems.join("\n")).toEqual([]);
      }, 180_000);
    }
  },
);
