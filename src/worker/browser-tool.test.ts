/**
 * The browser and computer tools against real Chromium, Xvfb, x11vnc and xdotool on this host
 * (no sandbox: test/e2e/browser.test.ts runs them inside a real computer). Pages come from a
 * small real HTTP server on 127.0.0.1.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  browserInputSchema,
  browserLimits,
  personOnScreenMessage,
  screensInUseMessage,
  type BrowserInput,
  type DesktopInput,
} from "../protocol/index.ts";
import { browserTool } from "./browser-tool.ts";
import { desktopTool } from "./browser-desktop.ts";
import { pruneRecordings, recordingRetentionMs, safeDownloadName } from "./browser-session.ts";
import { encodePng, parseXwd } from "./browser-xwd.ts";
import { createScreenManager, missingScreenPrograms, type ScreenManager } from "./screens.ts";
import { ToolFailure, type ToolContext } from "./tool-context.ts";

const missing = missingScreenPrograms({ PATH: "/usr/bin:/bin" }, "/usr/bin/chromium");

const page = (body: string) =>
  `<!doctype html><html><head><title>Test page</title></head><body>${body}</body></html>`;
const pages: Record<string, string> = {
  "/": page(`<h1>Hello from the test host</h1>
<button onclick="document.getElementById('out').textContent='clicked!'">Press me</button>
<p id="out">not yet</p>
<form onsubmit="event.preventDefault(); document.getElementById('echo').textContent='name=' + document.getElementById('name').value">
<label for="name">Your name</label><input id="name" type="text"><button type="submit">Send</button></form>
<p id="echo"></p>
<a href="/evil-download">evil download</a>`),
  "/huge": page(
    `<ul>${Array.from({ length: 4000 }, (_, index) => `<li>item number ${index}</li>`).join("")}</ul>`,
  ),
  "/desktop": page(
    `<p id="keys">keys:</p><script>document.addEventListener('keydown', (e) => { document.getElementById('keys').textContent += e.key; });</script>`,
  ),
};

describe.skipIf(missing !== undefined)(
  "browser and computer tools on a real Chromium and Xvfb",
  () => {
    let root: string;
    let server: http.Server;
    let base: string;
    let screens: ScreenManager;
    let counter = 0;
    const controllers: AbortController[] = [];

    function context(botId: string | undefined): ToolContext {
      counter += 1;
      const controller = new AbortController();
      controllers.push(controller);
      return {
        callId: `call-${counter}`,
        botId,
        workspace: path.join(root, "workspace"),
        stateDir: path.join(root, "state"),
        commandEnv: { PATH: "/usr/bin:/bin", HOME: path.join(root, "home") },
        deadline: Date.now() + 120_000,
        signal: controller.signal,
        emit: () => undefined,
        markStarted: async () => undefined,
        afterRecorded: () => undefined,
        afterSent: () => undefined,
        previous: undefined,
        durable: false,
        now: Date.now,
      };
    }
    const browse = (
      input: Omit<BrowserInput, "action"> & { action: BrowserInput["action"] },
      botId?: string,
    ) => browserTool(browserInputSchema.parse(input), context(botId ?? "bot_a"), screens);
    const desk = (input: DesktopInput, botId?: string) =>
      desktopTool(input, context(botId ?? "bot_a"), screens);
    const refOf = (snapshot: string, pattern: RegExp) => {
      const line = snapshot.split("\n").find((entry) => pattern.test(entry));
      const ref = /\[ref=([a-z0-9]+)\]/.exec(line ?? "")?.[1];
      if (ref === undefined) throw new Error(`no ref for ${pattern} in:\n${snapshot}`);
      return ref;
    };

    beforeAll(async () => {
      root = mkdtempSync(path.join(os.tmpdir(), "roost-browser-"));
      for (const dir of ["workspace", "state", "home"]) mkdirSync(path.join(root, dir));
      server = http.createServer((request, response) => {
        if (request.url === "/evil-download") {
          response.setHeader("content-type", "application/octet-stream");
          response.setHeader("content-disposition", 'attachment; filename="../../../etc/evil.txt"');
          response.end("gotcha");
          return;
        }
        const body = pages[request.url ?? "/"];
        response.statusCode = body === undefined ? 404 : 200;
        response.setHeader("content-type", "text/html");
        response.end(body ?? "no such page");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      screens = createScreenManager({
        max: 2,
        home: path.join(root, "home"),
        workspace: path.join(root, "workspace"),
        env: { PATH: "/usr/bin:/bin", HOME: path.join(root, "home") },
        runtimeDir: path.join(root, "screens"),
      });
    }, 60_000);

    afterAll(async () => {
      await screens?.close();
      server?.close();
      rmSync(root, { recursive: true, force: true });
    });

    it("navigate returns the snapshot; a click by ref changes the page; typing fills a form", async () => {
      const opened = await browse({ action: "navigate", url: `${base}/` });
      expect(opened.title).toBe("Test page");
      expect(opened.text).toContain("Hello from the test host");
      expect(opened.text).toContain("not yet");
      const clicked = await browse({
        action: "click",
        ref: refOf(opened.text, /button "Press me"/),
      });
      expect(clicked.text).toContain("clicked!");
      const typed = await browse({
        action: "type",
        ref: refOf(clicked.text, /textbox "Your name"/),
        text: "Ada",
        submit: true,
      });
      expect(typed.text).toContain("name=Ada");
      const extracted = await browse({ action: "extract", format: "text" });
      expect(extracted.text).toContain("name=Ada");
    }, 120_000);

    it("a navigation right after a refused one loads: the error page's own navigation does not interrupt it", async () => {
      const closed = http.createServer();
      await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
      const refusedPort = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      for (let round = 0; round < 8; round += 1) {
        await expect(
          browse({ action: "navigate", url: `http://127.0.0.1:${refusedPort}/` }),
        ).rejects.toThrow(/ERR_CONNECTION_REFUSED/);
        const opened = await browse({ action: "navigate", url: `${base}/` });
        expect(opened.title).toBe("Test page");
      }
    }, 120_000);

    it("a huge page's snapshot is capped like shell output, keeping head and tail (flood)", async () => {
      const huge = await browse({ action: "navigate", url: `${base}/huge` });
      expect(huge.truncated).toBe(true);
      expect(Buffer.byteLength(huge.text)).toBeLessThanOrEqual(browserLimits.textBytes);
      expect(huge.text).toContain("item number 0");
      expect(huge.text).toContain("item number 3999");
      expect(huge.text).toMatch(/bytes cut/);
    }, 60_000);

    it("a stale ref answers not_found with advice", async () => {
      await expect(browse({ action: "click", ref: "e9999" })).rejects.toThrow(
        /take a new snapshot/,
      );
    }, 60_000);

    it("the screen is listed with its VNC port, which answers with an RFB banner on loopback", async () => {
      const [screen] = screens.list();
      expect(screen).toMatchObject({
        id: "s-bot_a",
        botId: "bot_a",
        width: 1280,
        height: 800,
        busy: false,
        controller: null,
      });
      const banner = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(screen!.vncPort, "127.0.0.1");
        socket.once("data", (data) => {
          resolve(data.toString("latin1"));
          socket.destroy();
        });
        socket.once("error", reject);
      });
      expect(banner).toMatch(/^RFB 003\.00\d\n/);
    }, 30_000);

    it("screenshot: the browser's is a PNG of the viewport; the computer's is a PNG of the whole screen", async () => {
      const shot = await browse({ action: "screenshot" });
      expect(shot.image?.mimeType).toBe("image/png");
      expect(Buffer.from(shot.image!.data, "base64").subarray(1, 4).toString()).toBe("PNG");
      const desktop = await desk({ action: "screenshot" });
      expect(desktop.image).toMatchObject({ mimeType: "image/png", width: 1280, height: 800 });
    }, 60_000);

    it("computer tool: a click and typing through xdotool reach the page", async () => {
      await browse({ action: "navigate", url: `${base}/desktop` });
      await desk({ action: "click", x: 640, y: 500 });
      await desk({ action: "type", text: "xyz" });
      await desk({ action: "key", key: "Return" });
      const after = await browse({ action: "extract" });
      expect(after.text).toContain("keys:xyzEnter");
    }, 60_000);

    it("a download with a path-traversal filename lands inside /workspace/downloads", async () => {
      const opened = await browse({ action: "navigate", url: `${base}/` });
      const clicked = await browse({
        action: "click",
        ref: refOf(opened.text, /link "evil download"/),
      });
      const listed =
        clicked.downloads.length > 0
          ? clicked.downloads
          : (await browse({ action: "downloads" })).downloads;
      // Chromium already flattens the name (…_etc_evil.txt); BRW3 keeps it a plain name either way.
      expect(listed).toHaveLength(1);
      expect(listed[0]!.name).toMatch(/evil\.txt$/);
      expect(listed[0]!.name).not.toContain("/");
      expect(listed[0]!.size).toBe(6);
      expect(path.dirname(listed[0]!.path)).toBe(path.join(root, "workspace", "downloads"));
      expect(readdirSync(path.join(root, "workspace", "downloads"))).toEqual([listed[0]!.name]);
      expect(existsSync(path.join(root, "etc", "evil.txt"))).toBe(false);
      expect(safeDownloadName("..\\..\\x\u0000y.txt")).toBe("xy.txt");
      expect(safeDownloadName("..")).toBe("download");
    }, 60_000);

    it("javascript:, file: and data: URLs are refused before they reach the browser", () => {
      for (const url of [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,hi",
        "chrome://settings",
      ])
        expect(browserInputSchema.safeParse({ action: "navigate", url }).success, url).toBe(false);
    });

    it("a second call on the bot's busy screen, and a bot without a screen when all are taken, get the sentence", async () => {
      let release!: () => void;
      const held = screens.use("bot_a", () => new Promise<void>((resolve) => (release = resolve)));
      await expect(browse({ action: "snapshot" })).rejects.toThrow(screensInUseMessage);
      release();
      await held;
      await browse({ action: "snapshot" }, "bot_b"); // the second of two screens
      const third = browse({ action: "snapshot" }, "bot_c");
      await expect(third).rejects.toThrow(new ToolFailure("busy", screensInUseMessage));
    }, 120_000);

    it("while a person controls the screen the bot's calls answer 'A person is using this screen'", async () => {
      const until = Date.now() + 60_000;
      screens.control("s-bot_a", { accountId: "acc_x", until });
      expect(screens.list().find((screen) => screen.id === "s-bot_a")?.controller).toEqual({
        accountId: "acc_x",
        until,
      });
      await expect(browse({ action: "snapshot" })).rejects.toThrow(personOnScreenMessage);
      await expect(desk({ action: "screenshot" })).rejects.toThrow(personOnScreenMessage);
      screens.control("s-bot_a", null);
      const handedBack = await screens.snapshot("s-bot_a");
      expect(handedBack.text).toContain("Page Snapshot");
      await browse({ action: "snapshot" });
      // A lease that ended is no lease.
      screens.control("s-bot_a", {
        accountId: "acc_x",
        until: Date.now() - 1000,
      });
      await browse({ action: "snapshot" });
    }, 60_000);

    it("record: frames are written to a file in the computer and counted", async () => {
      const recorded = await browse({ action: "navigate", url: `${base}/`, record: true });
      expect(recorded.recording?.frames).toBeGreaterThan(0);
      expect(existsSync(recorded.recording!.path)).toBe(true);
      // In Roost's own folder: old ones are pruned there, never in a folder the user keeps.
      expect(recorded.recording!.path).toContain(
        `${path.sep}.roost${path.sep}recordings${path.sep}`,
      );
    }, 60_000);

    it("a worker restarted while its computer stays awake stops the last one's screens and browser first (SCR6, BRW5)", async () => {
      const runtimeDir = path.join(root, "screens-restart");
      const make = () =>
        createScreenManager({
          max: 2,
          home: path.join(root, "home-restart"),
          workspace: path.join(root, "workspace"),
          env: { PATH: "/usr/bin:/bin", HOME: path.join(root, "home-restart") },
          runtimeDir,
        });
      const first = make();
      const second = make();
      try {
        const firstPids = await first.use("bot_r", async (screen) => {
          await (await screen.browser()).page.goto(`${base}/`);
          return readFileSync(path.join(runtimeDir, String(screen.display), "pids"), "utf8")
            .split("\n")
            .map(Number);
        });
        const profileUsers = () =>
          readdirSync("/proc")
            .filter((entry) => /^\d+$/.test(entry))
            .filter((entry) => {
              try {
                return readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(
                  `--user-data-dir=${path.join(root, "home-restart", ".config", "roost-browser", "bot_r")}\u0000`,
                );
              } catch {
                return false;
              }
            }).length;
        expect(profileUsers()).toBeGreaterThan(0);
        // The "crashed" first worker is never closed: the second finds its leftovers.
        const text = await second.use("bot_r", async (screen) => {
          const session = await screen.browser();
          await session.page.goto(`${base}/`);
          return (await session.snapshotText()).text;
        });
        expect(text).toContain("Hello from the test host");
        for (const pid of firstPids)
          expect(
            existsSync(`/proc/${pid}`) &&
              !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z "),
            `pid ${pid}`,
          ).toBe(false);
      } finally {
        await second.close();
        await first.close();
      }
    }, 120_000);

    it("when every tab was closed (a person on the live view), the next call opens one", async () => {
      await screens.use("bot_a", async (screen) => {
        const session = await screen.browser();
        for (const tab of session.context.pages()) await tab.close();
      });
      const opened = await browse({ action: "navigate", url: `${base}/` });
      expect(opened.text).toContain("Hello from the test host");
    }, 60_000);

    it("a screen whose display died is started again at the bot's next call (SCR7)", async () => {
      const pids = await screens.use("bot_a", async (screen) =>
        readFileSync(path.join(root, "screens", String(screen.display), "pids"), "utf8")
          .split("\n")
          .map(Number),
      );
      process.kill(pids[0]!, "SIGKILL"); // Xvfb
      // Reaped, not just a zombie: the worker has seen the exit by then.
      const deadline = Date.now() + 10_000;
      while (existsSync(`/proc/${pids[0]}`) && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setImmediate(resolve));
      const opened = await browse({ action: "navigate", url: `${base}/` });
      expect(opened.text).toContain("Hello from the test host");
    }, 60_000);

    it("two workers on one host starting screens at the same moment get different displays", async () => {
      const make = (name: string) =>
        createScreenManager({
          home: path.join(root, `home-${name}`),
          workspace: path.join(root, "workspace"),
          env: { PATH: "/usr/bin:/bin" },
          runtimeDir: path.join(root, `race-${name}`),
        });
      const [a, b] = [make("a"), make("b")];
      try {
        const displays = await Promise.all([
          a.use("bot_x", async (screen) => screen.display),
          b.use("bot_y", async (screen) => screen.display),
        ]);
        expect(new Set(displays).size).toBe(2);
      } finally {
        await a.close();
        await b.close();
      }
    }, 60_000);

    it("recordings older than a day are removed when a new one starts", async () => {
      const folder = path.join(root, "recordings");
      mkdirSync(folder, { recursive: true });
      writeFileSync(path.join(folder, "old.jsonl"), "{}\n");
      writeFileSync(path.join(folder, "new.jsonl"), "{}\n");
      writeFileSync(path.join(folder, "keep.txt"), "not a recording");
      const dayAgo = (Date.now() - recordingRetentionMs - 60_000) / 1000;
      utimesSync(path.join(folder, "old.jsonl"), dayAgo, dayAgo);
      await pruneRecordings(folder, Date.now() - recordingRetentionMs);
      expect(readdirSync(folder).sort()).toEqual(["keep.txt", "new.jsonl"]);
    });

    it("without a bot id the tools refuse clearly", async () => {
      await expect(
        browserTool(browserInputSchema.parse({ action: "snapshot" }), context(undefined), screens),
      ).rejects.toThrow(/bot id/);
    });

    it("parseXwd reads Xvfb's 32-bit ZPixmap and encodePng writes those pixels", () => {
      // A 2x1 little-endian XWD: header of 25 CARD32 + a 4-byte name, no colormap, BGRX pixels.
      const header = Buffer.alloc(104);
      const fields = [
        104, 7, 2, 24, 2, 1, 0, 0, 32, 0, 32, 32, 8, 4, 0xff0000, 0xff00, 0xff, 8, 0, 0, 2, 1, 0, 0,
        0,
      ];
      fields.forEach((value, index) => header.writeUInt32LE(value, index * 4));
      const pixels = Buffer.from([0x00, 0x00, 0xff, 0x00, 0xff, 0x80, 0x00, 0x00]); // red, then blue+half green
      const image = parseXwd(Buffer.concat([header, pixels]));
      expect(image).toMatchObject({ width: 2, height: 1 });
      expect([...image.rgb]).toEqual([0xff, 0x00, 0x00, 0x00, 0x80, 0xff]);
      const png = encodePng(image);
      expect(png.subarray(0, 8)).toEqual(
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      );
      expect(png.readUInt32BE(16)).toBe(2);
    });

    it("parseXwd refuses what is not an XWD file", () => {
      expect(() => parseXwd(Buffer.alloc(200))).toThrow(/XWD/);
    });
  },
);
