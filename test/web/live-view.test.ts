/**
 * The live view in Debian's Chromium: the web app's noVNC view of a bot's screen, against the
 * real API and live view on a real HTTP server, a real gateway and worker process, tunnelled to a
 * real x11vnc over a real Xvfb. The worker's `screens.*` operations are answered by the test (the
 * screen manager is the browser's worker code). The page watches view-only; after Take control
 * its click moves the real display's pointer; Hand back makes it view-only again.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApi, createLiveView, type LiveView } from "../../src/api/index.ts";
import { issueApiToken } from "../../src/auth/index.ts";
import { createEventHub } from "../../src/events/index.ts";
import {
  makeComputerDirs,
  spawnWorker,
  startTestGateway,
  waitForWorkerProcess,
  type TestComputerDirs,
  type TestGateway,
  type WorkerProcess,
} from "../../src/gateway/testing/index.ts";
import type { ScreensControlInput } from "../../src/protocol/index.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { createWebHandler, defaultWebDistDir } from "../../src/web/index.ts";
import { startVncDisplay, type VncDisplay } from "../support/vnc-display.ts";
import { waitFor } from "../support/wait.ts";
import {
  chromiumPath,
  ensureWebBuilt,
  launchBrowser,
  screenshot,
  type Browser,
} from "./harness.ts";

// Needs Debian's Chromium (apt-get install chromium; .ci/run installs it). Skipped with this
// reason on a machine without it, never in CI.
if (!existsSync(chromiumPath) && process.env.CI === "true")
  throw new Error(`CI needs Chromium at ${chromiumPath}`);
describe.skipIf(!existsSync(chromiumPath))(
  `the live view in Chromium${existsSync(chromiumPath) ? "" : ` [skipped: no ${chromiumPath}]`}`,
  () => {
    let display: VncDisplay;
    let gw: TestGateway;
    let store: Store;
    let dir: string;
    let liveView: LiveView;
    let server: ServerType;
    let url: string;
    let browser: Browser;
    let worker: WorkerProcess;
    let dirs: TestComputerDirs;
    let conversationId: string;
    const controls: ScreensControlInput[] = [];

    beforeAll(async () => {
      ensureWebBuilt();
      display = await startVncDisplay();
      gw = await startTestGateway();
      dir = mkdtempSync(join(tmpdir(), "roost-live-view-web-"));
      store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
      const account = await store.createAccount({ name: "owner", isAdmin: true });
      const token = (await issueApiToken(store, account.id, "web")).token;
      const tokenFile = join(dir, "admin-token");
      writeFileSync(tokenFile, token);
      const computer = await store.ensureComputer(account.id, "process");
      const bot = await store.createBot({
        accountId: account.id,
        name: "Browser bot",
        instructions: "",
        model: null,
      });
      conversationId = (
        await store.createConversation({ accountId: account.id, botId: bot.id, title: "Logins" })
      ).id;
      dirs = makeComputerDirs();
      gw.tokens.set("token", computer.id);
      worker = spawnWorker({ gatewayUrl: gw.url, token: "token", dirs });
      await waitForWorkerProcess(gw.gateway, computer.id, worker);
      liveView = createLiveView(
        {
          computerOf: async () => computer.id,
          state: async () => "awake",
          touch: async () => undefined,
          gateway: {
            isConnected: (computerId) => gw.gateway.isConnected(computerId),
            call: async (computerId, request, options) => {
              if (request.tool === "screens.list")
                return {
                  ok: true,
                  output: {
                    screens: [
                      {
                        id: `s-${bot.id}`,
                        botId: bot.id,
                        width: display.width,
                        height: display.height,
                        busy: true,
                        vncPort: display.vncPort,
                        controller: null,
                      },
                    ],
                  },
                };
              if (request.tool === "screens.control") {
                controls.push(request.input as ScreensControlInput);
                return { ok: true, output: { ok: true } };
              }
              return gw.gateway.call(computerId, request, options);
            },
            openTunnel: (computerId, port, options) =>
              gw.gateway.openTunnel(computerId, port, options),
          },
          ticketSecret: randomBytes(32),
        },
        store,
      );
      const api = createApi({
        store,
        events: createEventHub(),
        kick: async () => undefined,
        interrupt: () => false,
        health: async () => ({ ok: true, checks: {} }),
        checkModel: () => undefined,
        defaultModel: () => ({ id: "demo", isDemo: true }),
        maxBodyBytes: 1024 * 1024,
        liveView,
        limits: { requestsPerMinute: 0 },
      });
      const app = new Hono();
      app.all("/v1/*", (context) => api.fetch(context.req.raw, context.env));
      app.route("/", createWebHandler({ distDir: defaultWebDistDir, localSignIn: { tokenFile } }));
      server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
      (server as http.Server).on("upgrade", (request, socket, head) =>
        liveView.handleUpgrade(request, socket, head),
      );
      await new Promise<void>((resolve) => server.once("listening", () => resolve()));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      browser = await launchBrowser();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await liveView?.close();
      if (server !== undefined) {
        (server as http.Server).closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      await worker?.stop();
      dirs?.remove();
      await gw?.close();
      await store?.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      await display?.close();
    });

    it("watches the bot's screen view-only, takes control (a click moves the real pointer), and hands back", async () => {
      const page = await browser.newPage();
      await page.goto(`${url}/c/${conversationId}`);
      await page.getByTitle("Watch the bot's screen live").click();
      const view = page.locator('.live-view-panel .live-view[data-status="connected"]');
      await view.waitFor({ timeout: 20_000 });
      const canvas = view.locator("canvas");
      await canvas.waitFor();
      await display.xdotool("mousemove", "5", "5");
      await waitFor(async () => (await display.pointer()).x === 5);

      // View-only: a click on the canvas sends nothing, so the pointer stays.
      const box = (await canvas.boundingBox())!;
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await page.getByRole("button", { name: "Take control" }).waitFor();
      expect(await display.pointer()).toEqual({ x: 5, y: 5 });

      await page.getByRole("button", { name: "Take control" }).click();
      await page.locator('.live-view-panel .live-view[data-control="mine"]').waitFor();
      await expect
        .poll(() => page.locator(".live-view-state").textContent())
        .toMatch(/You have control · \d:\d\d left/);
      expect(controls.at(-1)?.controller).not.toBeNull();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.move(box.x + box.width / 4, box.y + box.height / 4);
      // The canvas is scaled to the panel: a quarter of its width is a quarter of the screen's.
      const moved = await waitFor(
        async () => {
          const pointer = await display.pointer();
          return Math.abs(pointer.x - display.width / 4) < 40 ? pointer : undefined;
        },
        { what: "the controller's mouse move to reach the display" },
      );
      expect(Math.abs(moved.y - display.height / 4)).toBeLessThan(40);
      await screenshot(page, "live-view-control");

      await page.getByRole("button", { name: "Hand back" }).click();
      await page.locator('.live-view-panel .live-view[data-control="view-only"]').waitFor();
      await waitFor(() => controls.at(-1)?.controller === null, { what: "the worker told" });
      await page.mouse.move(box.x + 10, box.y + 10);
      await page.getByRole("button", { name: "Take control" }).waitFor();
      expect(await display.pointer()).toEqual(moved);
      await page.close();
    });
  },
);
