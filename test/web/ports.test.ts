/**
 * Port previews in Debian's Chromium against the real platform (process provider): a server a
 * bot started is listed in the computer panel, and its Open button opens the preview in a new
 * tab on a host of its own (`p<port>-….localhost`), where the page's relative requests work with
 * the link's cookie alone and nothing of Roost's origin (its token, its storage) is reachable.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findFreePort } from "../../src/engine/index.ts";
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

// Needs Debian's Chromium (apt-get install chromium; .ci/run installs it). Skipped with this
// reason on a machine without it, never in CI.
if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `port previews in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
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

    it("the computer panel lists a server a bot started, and Open shows its page on a host of its own, relative requests included", async () => {
      const token = await roost.token();
      const api = apiClient(roost.url, () => token);
      const port = await findFreePort([roost.platform.port]);
      const put = (path: string, body: string) =>
        fetch(`${roost.url}/v1/computers/me/files/content?path=${encodeURIComponent(path)}`, {
          method: "PUT",
          headers: { authorization: `Bearer ${token}` },
          body,
        });
      // The page reads a file of its own with a relative URL, and reports what it can see of
      // Roost: the web app's token and the cookie must both be out of its reach.
      const page = `<!doctype html><title>preview</title><h1>preview-works</h1>
<script>
fetch("data.json").then((r) => r.text()).then((t) => { document.body.dataset.fetched = t.trim(); });
document.body.dataset.token = String(localStorage.getItem("roost.token"));
document.body.dataset.cookie = document.cookie;
</script>`;
      expect((await put("/workspace/site/index.html", page)).status).toBe(201);
      expect((await put("/workspace/site/data.json", '{"from":"inside"}\n')).status).toBe(201);
      const conversation = (await api.createConversation((await api.createBot("ports")).id)).id;
      await api.send(
        conversation,
        `bg cd site && exec python3 -m http.server ${port} --bind 127.0.0.1`,
      );
      await waitFor(
        async () => {
          const response = await fetch(`${roost.url}/v1/computers/me/ports`, {
            headers: { authorization: `Bearer ${token}` },
          });
          const body = (await response.json()) as { ports?: { port: number }[] };
          return body.ports?.some((entry) => entry.port === port) === true;
        },
        { timeoutMs: 60_000, what: "the server to listen" },
      );

      const app = await browser.newPage();
      await app.goto(`${roost.url}/`);
      // As after "remember me": Roost's origin holds the token, which a preview must not read.
      await app.evaluate(`localStorage.setItem("roost.token", ${JSON.stringify(token)})`);
      await app.locator(".computer-chip[data-state=awake]").waitFor({ timeout: 30_000 });
      await app.locator(".computer-chip").click();
      const row = app.locator(`.port-row[data-port="${port}"]`);
      await row.waitFor({ timeout: 20_000 });
      await screenshot(app, "desktop-ports");
      const [preview] = await Promise.all([
        browser.context.waitForEvent("page"),
        row.getByRole("button", { name: `Open port ${port}` }).click(),
      ]);
      await preview.locator("h1", { hasText: "preview-works" }).waitFor({ timeout: 30_000 });
      const previewUrl = new URL(preview.url());
      expect(previewUrl.hostname).toMatch(new RegExp(`^p${port}-[a-z2-7]{16}\\.localhost$`));
      // The link's token left the address at once.
      expect(previewUrl.search).toBe("");
      await expect
        .poll(() => preview.locator("body").getAttribute("data-fetched"), { timeout: 15_000 })
        .toBe('{"from":"inside"}');
      expect(await preview.locator("body").getAttribute("data-token")).toBe("null");
      expect(await preview.locator("body").getAttribute("data-cookie")).toBe("");
      await preview.close();
      await app.close();
    });
  },
);
