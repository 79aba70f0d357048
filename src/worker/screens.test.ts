/**
 * The screens operations over the real wire (the interface the live view builds on): a real
 * gateway, a real worker process, real Xvfb, x11vnc and Chromium on this host. The server lists
 * screens, sets and clears a controller, asks for a hand-back snapshot, and opens a tunnel to a
 * screen's VNC port, which answers with an RFB banner.
 */
import http from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  makeComputerDirs,
  spawnWorker,
  startTestGateway,
  waitForWorkerProcess,
  type TestComputerDirs,
  type TestGateway,
  type WorkerProcess,
} from "../gateway/testing/index.ts";
import { personOnScreenMessage, type ScreensListOutput } from "../protocol/index.ts";
import { missingScreenPrograms } from "./screens.ts";

const missing = missingScreenPrograms({ PATH: "/usr/bin:/bin" }, "/usr/bin/chromium");

describe.skipIf(missing !== undefined)("screens.* through a real gateway and worker", () => {
  let gw: TestGateway;
  let dirs: TestComputerDirs;
  let worker: WorkerProcess;
  let server: http.Server;
  let base: string;
  let counter = 0;

  const call = (tool: string, input: unknown, botId?: string) =>
    gw.gateway.call("cmp_screens", {
      callId: `call-${++counter}`,
      tool,
      input,
      timeoutMs: 120_000,
      ...(botId === undefined ? {} : { botId }),
    });

  beforeAll(async () => {
    server = http.createServer((_request, response) => {
      response.setHeader("content-type", "text/html");
      response.end("<!doctype html><title>Wire</title><h1>Over the wire</h1>");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    gw = await startTestGateway();
    gw.tokens.set("screens-token", "cmp_screens");
    dirs = makeComputerDirs("roost-screens-");
    worker = spawnWorker({
      gatewayUrl: gw.url,
      token: "screens-token",
      dirs,
      env: { ROOST_SCREENS_MAX: "2" },
    });
    await waitForWorkerProcess(gw.gateway, "cmp_screens", worker);
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await gw?.close();
    server?.close();
    dirs?.remove();
  });

  it("lists no screen before a bot's first call, then the bot's screen", async () => {
    expect(await call("screens.list", {})).toEqual({ ok: true, output: { screens: [] } });
    const opened = await call("browser", { action: "navigate", url: `${base}/` }, "bot_w");
    expect(opened).toMatchObject({ ok: true, output: { title: "Wire" } });
    const listed = await call("screens.list", {});
    expect(listed.ok).toBe(true);
    const { screens } = (listed as { output: ScreensListOutput }).output;
    expect(screens).toEqual([
      {
        id: "s-bot_w",
        botId: "bot_w",
        width: 1280,
        height: 800,
        busy: false,
        vncPort: expect.any(Number) as number,
        controller: null,
      },
    ]);
  }, 120_000);

  it("a browser call without the bot id is refused with a clear message", async () => {
    expect(await call("browser", { action: "snapshot" })).toMatchObject({
      ok: false,
      error: { code: "invalid_input", message: expect.stringMatching(/bot id/) as string },
    });
  });

  it("screens.control sets a controller the bot's calls obey; clearing it and a hand-back snapshot give the screen back", async () => {
    const until = Date.now() + 120_000;
    expect(
      await call("screens.control", {
        screenId: "s-bot_w",
        controller: { accountId: "acc_1", until },
      }),
    ).toEqual({ ok: true, output: { ok: true } });
    const listed = (await call("screens.list", {})) as { output: ScreensListOutput };
    expect(listed.output.screens[0]!.controller).toEqual({ accountId: "acc_1", until });
    expect(await call("browser", { action: "snapshot" }, "bot_w")).toMatchObject({
      ok: false,
      error: { code: "busy", message: personOnScreenMessage },
    });
    expect(await call("computer", { action: "screenshot" }, "bot_w")).toMatchObject({
      ok: false,
      error: { code: "busy" },
    });
    expect(await call("screens.control", { screenId: "s-bot_w", controller: null })).toMatchObject({
      ok: true,
    });
    const snapshot = await call("screens.snapshot", { screenId: "s-bot_w" });
    expect(snapshot).toMatchObject({ ok: true, output: { title: "Wire" } });
    expect((snapshot as { output: { text: string } }).output.text).toContain("Over the wire");
    expect(await call("browser", { action: "snapshot" }, "bot_w")).toMatchObject({ ok: true });
  }, 120_000);

  it("an unknown screen is not_found", async () => {
    expect(await call("screens.snapshot", { screenId: "s-nobody" })).toMatchObject({
      ok: false,
      error: { code: "not_found" },
    });
  });

  it("a tunnel to the screen's VNC port answers with an RFB banner", async () => {
    const listed = (await call("screens.list", {})) as { output: ScreensListOutput };
    const tunnel = await gw.gateway.openTunnel("cmp_screens", listed.output.screens[0]!.vncPort);
    try {
      const banner = await new Promise<string>((resolve, reject) => {
        tunnel.once("data", (data: Buffer) => resolve(data.toString("latin1")));
        tunnel.once("error", reject);
      });
      expect(banner).toMatch(/^RFB 003\.00\d\n$/);
    } finally {
      tunnel.destroy();
    }
  }, 60_000);

  it("the worker's stop takes its screens with it (SCR4)", async () => {
    const listed = (await call("screens.list", {})) as { output: ScreensListOutput };
    const port = listed.output.screens[0]!.vncPort;
    await worker.stop();
    // The worker waits for its screen's programs before it exits (SCR4): refused at once.
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(false);
      });
      socket.once("error", () => resolve(true));
    });
    expect(refused).toBe(true);
  }, 60_000);
});
