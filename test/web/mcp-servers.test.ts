/**
 * A bot's MCP servers in its settings (docs/mcp.md), in Debian's Chromium against the real
 * platform: the owner sees each server with the error its last listing met (here an HTTP server
 * at the metadata address, refused by the egress rules), a hidden value stays hidden, and Remove
 * deletes the server.
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
  `MCP servers in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let roost: WebRoost;
    let browser: Browser;
    let token = "";
    const api = () => apiClient(roost.url, () => token);

    beforeAll(async () => {
      roost = await startWebRoost();
      browser = await launchBrowser();
      token = await roost.token();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await roost?.close();
    });

    it("shows each server's last error, never a value, and removes one", async () => {
      const bot = await api().createBot("tools", "demo");
      await api().call("PUT", `/v1/bots/${bot.id}/mcp-servers/metadata`, {
        url: "http://169.254.169.254/mcp",
        headers: { Authorization: "Bearer hidden-literal-value" },
      });
      await api().call("PUT", "/v1/me/mcp-servers/shared", {
        command: "my-mcp-server",
        args: ["--stdio"],
      });
      // A turn's start asks the HTTP server (refused) and records why.
      const conversation = await api().createConversation(bot.id);
      await api().send(conversation.id, "hello");
      await api().waitForSteps(conversation.id, "reply", 1, 60_000);

      const page = await browser.newPage();
      try {
        await page.goto(`${roost.url}/bots/${bot.id}/edit`);
        const metadata = page.getByRole("listitem", { name: "metadata" });
        await expect.poll(() => metadata.isVisible(), { timeout: 15_000 }).toBe(true);
        await expect
          .poll(() => metadata.textContent())
          .toMatch(/Last error: MCP server metadata was not contacted/);
        expect(await metadata.textContent()).toContain("uses secrets (your chats only)");
        const shared = page.getByRole("listitem", { name: "shared" });
        expect(await shared.textContent()).toMatch(
          /command: my-mcp-server --stdio · all your bots/,
        );
        expect(await shared.textContent()).toContain("Tools: not listed yet");
        expect(await page.content()).not.toContain("hidden-literal-value");
        await metadata.scrollIntoViewIfNeeded();
        await screenshot(page, "mcp-servers");

        // Connect is offered only to a server that asked for OAuth.
        expect(await metadata.getByRole("button", { name: "Connect" }).count()).toBe(0);
        await metadata.getByRole("button", { name: "Remove" }).click();
        await expect.poll(() => metadata.count()).toBe(0);
        const left = await api().call<Api.McpServerList>("GET", `/v1/bots/${bot.id}/mcp-servers`);
        expect(left.servers).toEqual([]);
      } finally {
        await page.close();
      }
    }, 120_000);
  },
);
