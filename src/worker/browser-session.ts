/**
 * The bot's Chromium on its screen (docs/browser.md, decision 0025): Debian's /usr/bin/chromium,
 * launched by playwright-core with a persistent profile in the home folder, driven over CDP.
 *
 * Invariants:
 *   BRW1 all traffic goes through the computer's egress proxy (HTTP_PROXY): `--proxy-server`, QUIC
 *        off, WebRTC limited to proxied TCP. Loopback (the computer's own servers) is direct; the
 *        sandbox's network namespace holds nothing else, so there is no way around the proxy.
 *   BRW2 one profile per bot, `~/.config/roost-browser/<botId>` on the durable home: Chromium locks
 *        a profile per process, and bots keep their logins apart. The cookie jar is also written
 *        to `roost-cookies.json` (0600) after every call, and restored at launch, because a
 *        computer goes to sleep by SIGKILL and Chromium flushes its own cookie file only every
 *        ~30 s.
 *   BRW3 downloads land in `/workspace/downloads` under their suggested name reduced to a plain
 *        file name (no folders, no `..`, no control characters), never overwriting: a page cannot
 *        choose where a file goes.
 *   BRW4 only http(s) URLs are navigated to by the tool (the schema refuses javascript:, file:,
 *        data:, chrome:).
 *   BRW5 Chromium starts on a profile only when no process of the computer uses it: a browser a
 *        previous worker left is stopped first (then its lock files are removed).
 */
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { BrowserContext, CDPSession, Download, Page } from "playwright-core";
import { browserLimits, type DownloadedFile } from "../protocol/index.ts";
import { ToolFailure } from "./tool-context.ts";

export interface BrowserSessionOptions {
  chromiumPath: string;
  display: number;
  width: number;
  height: number;
  /** The computer's environment with DISPLAY set. */
  env: Readonly<Record<string, string>>;
  profileDir: string;
  downloadsDir: string;
  log: (line: string) => void;
}

const cookiesFile = "roost-cookies.json";
/** Recordings are copied off the computer right after their call; older ones are removed. */
export const recordingRetentionMs = 24 * 60 * 60 * 1000;

/** The proxy the computer's programs use (BRW1), as Chromium's --proxy-server wants it. */
export function proxyServerOf(env: Readonly<Record<string, string>>): string | undefined {
  const value = env.HTTPS_PROXY ?? env.https_proxy ?? env.HTTP_PROXY ?? env.http_proxy;
  if (value === undefined || value === "") return undefined;
  try {
    const url = new URL(value);
    return `${url.protocol}//${url.host}`;
  } catch {
    return undefined;
  }
}

/** BRW3: a download's suggested name as a plain file name. */
export function safeDownloadName(suggested: string): string {
  const base = suggested.replaceAll("\\", "/").split("/").at(-1) ?? "";
  const cleaned = [...base]
    .filter((character) => character.charCodeAt(0) >= 0x20 && character.charCodeAt(0) !== 0x7f)
    .join("")
    .replace(/^\.+/, "")
    .trim()
    .slice(0, 200);
  return cleaned === "" ? "download" : cleaned;
}

/** Text cut to `limit` bytes, keeping head and tail (like shell output). */
export function capText(
  text: string,
  limit: number = browserLimits.textBytes,
): { text: string; truncated: boolean } {
  const bytes = Buffer.byteLength(text);
  if (bytes <= limit) return { text, truncated: false };
  const half = Math.floor((limit - 100) / 2);
  const buffer = Buffer.from(text);
  const head = buffer
    .subarray(0, half)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  const tail = buffer
    .subarray(bytes - half)
    .toString("utf8")
    .replace(/^\uFFFD/, "");
  return { text: `${head}\n… (${bytes - 2 * half} bytes cut) …\n${tail}`, truncated: true };
}

interface Recorder {
  stop(): Promise<{ path: string; frames: number }>;
}

export class BrowserSession {
  readonly context: BrowserContext;
  #page: Page;
  #options: BrowserSessionOptions;
  #closed = false;
  /** Files downloaded since the last takeDownloads(). */
  #recent: DownloadedFile[] = [];
  #saving: Promise<unknown>[] = [];

  private constructor(context: BrowserContext, page: Page, options: BrowserSessionOptions) {
    this.context = context;
    this.#page = page;
    this.#options = options;
    context.on("close", () => {
      this.#closed = true;
    });
    context.on("page", (opened) => this.#watch(opened));
    for (const existing of context.pages()) this.#watch(existing);
  }

  static async launch(options: BrowserSessionOptions): Promise<BrowserSession> {
    await mkdir(options.profileDir, { recursive: true, mode: 0o700 });
    await mkdir(options.downloadsDir, { recursive: true });
    await stopProfileUsers(options.profileDir, options.log); // BRW5
    // BRW2: a previous Chromium killed with the computer leaves its lock, naming a pid that may be
    // alive again in a new sandbox; this bot's profile is only ever used by this worker.
    for (const name of ["SingletonLock", "SingletonSocket", "SingletonCookie"])
      await rm(path.join(options.profileDir, name), { force: true });
    const proxy = proxyServerOf(options.env);
    const args = [
      `--window-size=${options.width},${options.height}`,
      "--window-position=0,0",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-quic", // BRW1
      "--force-webrtc-ip-handling-policy=disable_non_proxied_udp", // BRW1
      "--webrtc-ip-handling-policy=disable_non_proxied_udp",
      "--disable-background-networking",
      "--password-store=basic",
      // A virtual display has no GPU; Chromium's software GL process would cost ~100 MiB for nothing.
      "--disable-gpu",
      "--renderer-process-limit=4",
      "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
      ...(proxy === undefined ? [] : [`--proxy-server=${proxy}`]), // BRW1
    ];
    let context: BrowserContext;
    try {
      // Loaded on first use: playwright-core costs an idle worker ~47 MiB (issue 9's memory
      // target counts every awake computer's worker), and most computers never open a browser.
      const { chromium } = await import("playwright-core");
      context = await chromium.launchPersistentContext(options.profileDir, {
        executablePath: options.chromiumPath,
        headless: false,
        // The computer is the sandbox (decision 0025): its seccomp filter forbids the user
        // namespaces Chromium's own sandbox needs.
        chromiumSandbox: false,
        env: { ...options.env },
        args,
        viewport: null,
        acceptDownloads: true,
        timeout: 60_000,
      });
    } catch (error) {
      throw new ToolFailure(
        "io_error",
        `Chromium did not start: ${(error as Error).message.split("\n")[0]}`,
      );
    }
    await restoreCookies(context, options.profileDir, options.log);
    const page = context.pages()[0] ?? (await context.newPage());
    return new BrowserSession(context, page, options);
  }

  isClosed(): boolean {
    return this.#closed;
  }

  get page(): Page {
    if (this.#page.isClosed()) {
      const open = this.context.pages().filter((page) => !page.isClosed());
      const last = open.at(-1);
      if (last !== undefined) this.#page = last;
    }
    return this.#page;
  }

  /**
   * A tab to act on, opening one when every tab was closed (by a person on the live view, say).
   * False when Chromium cannot open one (its last window closed, so it is exiting).
   */
  async ensurePage(): Promise<boolean> {
    if (!this.page.isClosed()) return true;
    try {
      this.#page = await this.context.newPage();
      return true;
    } catch {
      return false;
    }
  }

  set page(page: Page) {
    this.#page = page;
  }

  #watch(page: Page) {
    page.on("download", (download) => {
      this.#saving.push(this.#save(download));
    });
  }

  async #save(download: Download): Promise<void> {
    const dir = this.#options.downloadsDir;
    const name = safeDownloadName(download.suggestedFilename());
    const extension = path.extname(name);
    const stem = name.slice(0, name.length - extension.length);
    let target = path.join(dir, name);
    for (let copy = 1; await exists(target); copy++)
      target = path.join(dir, `${stem} (${copy})${extension}`);
    // BRW3: the name is a plain file name; the check is belt and braces.
    if (path.dirname(target) !== dir) throw new Error("download name escapes the downloads folder");
    try {
      await download.saveAs(target);
      const info = await stat(target);
      this.#recent.push({ path: target, name: path.basename(target), size: info.size });
    } catch (error) {
      this.#options.log(`browser: a download failed: ${(error as Error).message}`);
    }
  }

  /** Downloads finished since the last call (waits for those in progress, up to `waitMs`). */
  async takeDownloads(waitMs = 5_000): Promise<DownloadedFile[]> {
    const pending = this.#saving.splice(0);
    if (pending.length > 0)
      await Promise.race([
        Promise.allSettled(pending),
        new Promise((resolve) => setTimeout(resolve, waitMs)),
      ]);
    return this.#recent.splice(0);
  }

  async listDownloads(): Promise<DownloadedFile[]> {
    const { readdir } = await import("node:fs/promises");
    const dir = this.#options.downloadsDir;
    const names = (await readdir(dir).catch(() => [] as string[]))
      .sort()
      .slice(0, browserLimits.downloadsListed);
    const files: DownloadedFile[] = [];
    for (const name of names) {
      const info = await stat(path.join(dir, name)).catch(() => undefined);
      if (info?.isFile() === true)
        files.push({ path: path.join(dir, name), name, size: info.size });
    }
    return files;
  }

  /** The accessibility tree with refs, as Playwright's MCP server shows it. */
  async snapshotText(): Promise<{ text: string; url: string; title: string }> {
    const page = this.page;
    const url = page.url();
    const title = await page.title().catch(() => "");
    const tree = await page.ariaSnapshot({ mode: "ai", timeout: 15_000 });
    return {
      text: `- Page URL: ${url}\n- Page Title: ${title}\n- Page Snapshot:\n\`\`\`yaml\n${tree}\n\`\`\``,
      url,
      title,
    };
  }

  /** BRW2: writes the cookie jar to the durable home (atomically, 0600). */
  async saveCookies(): Promise<void> {
    if (this.#closed) return;
    const cookies = await this.context.cookies();
    const file = path.join(this.#options.profileDir, cookiesFile);
    const temporary = `${file}.tmp`;
    await writeFile(temporary, JSON.stringify(cookies), { mode: 0o600 });
    await chmod(temporary, 0o600);
    await rename(temporary, file);
  }

  /** Records screencast frames (JPEG, a few per second, capped) as JSON lines until stopped. */
  async startRecording(file: string): Promise<Recorder> {
    await mkdir(path.dirname(file), { recursive: true });
    await pruneRecordings(path.dirname(file), Date.now() - recordingRetentionMs);
    const session: CDPSession = await this.context.newCDPSession(this.page);
    const lines: string[] = [];
    let bytes = 0;
    let lastAt = -Infinity;
    const startedAt = Date.now();
    session.on("Page.screencastFrame", (frame) => {
      void session
        .send("Page.screencastFrameAck", { sessionId: frame.sessionId })
        .catch(() => undefined);
      const at = Date.now() - startedAt;
      if (at - lastAt < 250) return; // ≤ 4 frames a second
      if (
        lines.length >= browserLimits.recordingMaxFrames ||
        bytes + frame.data.length > browserLimits.recordingMaxBytes
      )
        return;
      lastAt = at;
      bytes += frame.data.length;
      lines.push(JSON.stringify({ atMs: at, mimeType: "image/jpeg", data: frame.data }));
    });
    await session.send("Page.startScreencast", {
      format: "jpeg",
      quality: 50,
      maxWidth: 1280,
      maxHeight: 800,
      everyNthFrame: 1,
    });
    return {
      stop: async () => {
        if (lines.length === 0) {
          // A short action can end before the screencast's first frame (a busy machine): the
          // recording keeps at least how the page ended.
          const shot = await session
            .send("Page.captureScreenshot", { format: "jpeg", quality: 50 })
            .catch(() => undefined);
          if (shot !== undefined && shot.data.length <= browserLimits.recordingMaxBytes)
            lines.push(
              JSON.stringify({
                atMs: Date.now() - startedAt,
                mimeType: "image/jpeg",
                data: shot.data,
              }),
            );
        }
        await session.send("Page.stopScreencast").catch(() => undefined);
        await session.detach().catch(() => undefined);
        await writeFile(file, lines.length === 0 ? "" : `${lines.join("\n")}\n`, { mode: 0o600 });
        return { path: file, frames: lines.length };
      },
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.saveCookies().catch(() => undefined);
    await this.context.close().catch(() => undefined);
    this.#closed = true;
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

async function restoreCookies(
  context: BrowserContext,
  profileDir: string,
  log: (line: string) => void,
) {
  let text: string;
  try {
    text = await readFile(path.join(profileDir, cookiesFile), "utf8");
  } catch {
    return;
  }
  try {
    const cookies = JSON.parse(text) as Parameters<BrowserContext["addCookies"]>[0];
    if (Array.isArray(cookies) && cookies.length > 0) await context.addCookies(cookies);
  } catch (error) {
    log(`browser: the saved cookies could not be restored: ${(error as Error).message}`);
  }
}

/** BRW5: stops every process whose command line names this profile, and waits until they exit. */
async function stopProfileUsers(profileDir: string, log: (line: string) => void): Promise<void> {
  const marker = `--user-data-dir=${profileDir}\u0000`;
  const users = async () => {
    const found: number[] = [];
    for (const entry of await readdir("/proc").catch(() => [] as string[])) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      const command = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
      if (command.includes(marker)) found.push(Number(entry));
    }
    return found;
  };
  const pids = await users();
  if (pids.length === 0) return;
  log(`browser: stopping ${pids.length} process(es) of a browser left on ${profileDir}`);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + 10_000;
  while ((await users()).length > 0 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
}

/** Removes recordings (`*.jsonl`) last written before `before` (epoch ms). */
export async function pruneRecordings(folder: string, before: number): Promise<void> {
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    if (!name.endsWith(".jsonl")) continue;
    const file = path.join(folder, name);
    const info = await stat(file).catch(() => undefined);
    if (info !== undefined && info.isFile() && info.mtimeMs < before)
      await rm(file, { force: true });
  }
}
