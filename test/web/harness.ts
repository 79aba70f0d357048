/**
 * Browser tests' harness: the real platform in-process (embedded Restate, SQLite, the process
 * computer provider), the web app built from web/, and Debian's Chromium driven by
 * playwright-core (never a downloaded browser).
 *
 * Until startPlatform mounts the web handler itself, a small front server on 127.0.0.1:0 serves
 * it and passes `/v1/*` through to the platform unchanged (streams included). Once the platform
 * answers `/` with the app, the harness uses the platform's own URL.
 */
import { createMemoryLogger } from "../../src/log/testing/index.ts";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { resolveConfig } from "../../src/config/index.ts";
import { createDemoModel, type InferRequest, type ModelClient } from "../../src/models/index.ts";
import { findFreePort } from "../../src/engine/index.ts";
import { startPlatform, type Platform, type PlatformOptions } from "../../src/platform/index.ts";
import { createWebHandler, defaultWebDistDir } from "../../src/web/index.ts";

export const chromiumPath = process.env.ROOST_TEST_CHROMIUM ?? "/usr/bin/chromium";
export const screenshotDir = join(import.meta.dirname, "..", "..", "artifacts", "screenshots");

/** Flags a closed network needs (no Google services, no background fetches). */
export const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

/** Builds web/dist when it is missing or older than its sources (fast when up to date). */
export function ensureWebBuilt(): void {
  const script = join(import.meta.dirname, "..", "..", "scripts", "build-web-if-stale.mjs");
  const result = spawnSync(process.execPath, [script], { stdio: "inherit" });
  if (result.status !== 0)
    throw new Error("building the web app failed (npm run build:web shows why)");
}

export interface WebRoost {
  readonly url: string;
  readonly platform: Platform;
  readonly dataDir: string;
  token(): Promise<string>;
  /** Cuts every open browser connection (the events streams too), or is undefined when the platform serves the app itself. */
  dropConnections: (() => void) | undefined;
  close(): Promise<void>;
}

/**
 * The demo model answers in one burst of text deltas; a person's model streams over seconds.
 * This one re-emits the demo model's deltas `pieceDelayMs` apart, so tests see a reply stream.
 */
export function streamSlowly(
  model: ModelClient,
  pieceDelayMs: number,
  /** How long the model "thinks" before its first token, per request. @default none */
  thinkMs: (request: InferRequest) => number = () => 0,
): ModelClient {
  return {
    id: model.id,
    isDemo: model.isDemo,
    async infer(request) {
      const think = thinkMs(request);
      if (think > 0) await new Promise((resolve) => setTimeout(resolve, think));
      const pieces: string[] = [];
      const result = await model.infer({ ...request, onTextDelta: (delta) => pieces.push(delta) });
      for (const piece of pieces) {
        request.onTextDelta?.(piece);
        await new Promise((resolve) => setTimeout(resolve, pieceDelayMs));
      }
      return result;
    },
  };
}

export async function startWebRoost(
  options: {
    env?: Record<string, string>;
    flags?: Record<string, string>;
    /** Stream the demo model's replies a piece every this many ms. @default 15 */
    pieceDelayMs?: number;
    /** Drafts' channels and the owner's webhooks (platform/results.ts). */
    results?: PlatformOptions["results"];
    /** Resolve bots' models as `roost up` does (Settings → Models, env) instead of the demo model. @default false */
    realModels?: boolean;
    /** How long the model thinks before its first token, per request (streamSlowly). */
    thinkMs?: (request: InferRequest) => number;
  } = {},
): Promise<WebRoost> {
  ensureWebBuilt();
  const dataDir = mkdtempSync(join(tmpdir(), "roost-web-e2e-"));
  const ingress = await findFreePort();
  const admin = await findFreePort([ingress]);
  const node = await findFreePort([ingress, admin]);
  const logger = createMemoryLogger();
  const config = resolveConfig(
    {
      "data-dir": dataDir,
      port: "0",
      "service-port": "0",
      "restate-ingress-port": String(ingress),
      "restate-admin-port": String(admin),
      "restate-node-port": String(node),
      "follow-up-window-ms": "1000",
      ...options.flags,
    },
    { ROOST_COMPUTER_PROVIDER: "process", ...options.env },
  );
  const model = streamSlowly(createDemoModel(), options.pieceDelayMs ?? 15, options.thinkMs);
  const platform = await startPlatform(config, {
    logger,
    sweepIntervalMs: 1000,
    // Every bot in these tests uses the demo model (no provider is configured).
    ...(options.realModels === true ? {} : { resolveModel: () => model }),
    ...(options.results === undefined ? {} : { results: options.results }),
  });

  let front: ServerType | undefined;
  let url = platform.url;
  const served = await fetch(`${platform.url}/`).catch(() => undefined);
  if (!(served?.headers.get("content-type") ?? "").startsWith("text/html")) {
    await served?.body?.cancel();
    const app = new Hono();
    app.all("/v1/*", (context) => {
      const target = new URL(context.req.url);
      const headers = new Headers(context.req.raw.headers);
      headers.delete("host");
      const hasBody = context.req.method !== "GET" && context.req.method !== "HEAD";
      return fetch(`${platform.url}${target.pathname}${target.search}`, {
        method: context.req.method,
        headers,
        body: hasBody ? context.req.raw.body : undefined,
        signal: context.req.raw.signal,
        // Node's fetch needs duplex for a streamed request body.
        duplex: hasBody ? "half" : undefined,
      }).catch(() => new Response(null, { status: 502 })); // the browser went away mid-request
    });
    app.route(
      "/",
      createWebHandler({
        distDir: defaultWebDistDir,
        localSignIn: { tokenFile: platform.adminTokenFile },
      }),
    );
    front = await new Promise<ServerType>((resolve) => {
      const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () =>
        resolve(server),
      );
    });
    url = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  } else {
    await served?.body?.cancel();
  }

  return {
    url,
    platform,
    dataDir,
    dropConnections:
      front === undefined
        ? undefined
        : () => {
            const server = front;
            if (server !== undefined && "closeAllConnections" in server)
              server.closeAllConnections();
          },
    token: async () =>
      (await import("node:fs/promises"))
        .readFile(platform.adminTokenFile, "utf8")
        .then((text) => text.trim()),
    async close() {
      try {
        await sleepComputers(
          platform.url,
          (await import("node:fs/promises")).readFile(platform.adminTokenFile, "utf8"),
        );
        if (front !== undefined) {
          const server = front;
          await new Promise<void>((resolve) => {
            if ("closeAllConnections" in server) server.closeAllConnections();
            server.close(() => resolve());
          });
        }
        await platform.close();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Puts the admin's computer to sleep before the platform closes: platform.close() does not yet
 * finish while a computer's worker is connected (reported to the lead). A turn that still holds
 * the computer answers 409; wait for it.
 */
async function sleepComputers(url: string, tokenText: Promise<string>): Promise<void> {
  const token = (await tokenText).trim();
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const response = await fetch(`${url}/v1/computers/me/sleep`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    }).catch(() => undefined);
    if (response === undefined || response.status === 404) return;
    const body = (await response.json().catch(() => ({}))) as { state?: string };
    if (response.ok && body.state === "asleep") return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

export interface Browser {
  readonly context: BrowserContext;
  newPage(viewport?: { width: number; height: number }): Promise<Page>;
  close(): Promise<void>;
}

/** Debian's Chromium, headless, with a fresh profile directory. */
export async function launchBrowser(
  options: {
    colorScheme?: "light" | "dark";
    /** Lets page.waitForFunction take a string (the app's CSP forbids eval). */
    bypassCSP?: boolean;
  } = {},
): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "roost-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
    viewport: { width: 1280, height: 800 },
    colorScheme: options.colorScheme ?? "light",
    acceptDownloads: true,
    bypassCSP: options.bypassCSP ?? false,
  });
  return {
    context,
    async newPage(viewport) {
      const page = await context.newPage();
      if (viewport !== undefined) await page.setViewportSize(viewport);
      return page;
    },
    async close() {
      try {
        await context.close();
      } finally {
        rmSync(profile, { recursive: true, force: true });
      }
    },
  };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({
    path: join(screenshotDir, `${name}.png`),
    animations: "disabled",
    caret: "hide",
  });
}
