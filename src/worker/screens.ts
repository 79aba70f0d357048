/**
 * Screens (issue 13 §1, docs/browser.md): one virtual X display per bot on the computer, created on
 * the bot's first `browser` or `computer` call, each with an x11vnc server on the computer's
 * loopback for the live view, and the bot's Chromium (browser-session.ts) on it.
 *
 * Invariants:
 *   SCR1 at most `max` screens per computer; a bot without a screen when all are taken gets exactly
 *        screensInUseMessage (code `busy`), and so does a second call on a bot's own busy screen.
 *   SCR2 while a controller is set and its `until` is in the future, the bot's calls on that screen
 *        answer personOnScreenMessage (code `busy`); the worker never decides leases, it is told.
 *   SCR3 the VNC server listens on 127.0.0.1 only (`-localhost`): it is reached only through the
 *        worker's tunnel, which the gateway opens for the screen's owner.
 *   SCR4 every process a screen starts (Xvfb, x11vnc, Chromium) is stopped when the manager
 *        closes (the worker stops); the sandbox's pid namespace takes them on a kill.
 *   SCR5 those processes source the job prelude before they start, like a bot's commands: they
 *        count against the computer's user limits, and an out-of-memory browser cannot take the
 *        worker with it.
 *   SCR7 a screen whose Xvfb or x11vnc died is replaced by a new one at the bot's next call.
 *   SCR6 a worker that restarts while its computer stays awake first stops the screens the last
 *        one left (their pids are kept in the runtime folder; Chromium exits with its display),
 *        and a bot's Chromium is started only when no other process uses its profile
 *        (browser-session.ts, BRW5): two browsers never share one profile.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  personOnScreenMessage,
  screensInUseMessage,
  type Screen,
  type ScreenController,
} from "../protocol/index.ts";
import { listListeningPorts } from "./ports.ts";
import { ToolFailure } from "./tool-context.ts";
import { BrowserSession, type BrowserSessionOptions } from "./browser-session.ts";

/** Defaults of a screen (ROOST_SCREENS_MAX, the display size). */
export const screenDefaults = { max: 4, width: 1280, height: 800, firstDisplay: 10 } as const;

export interface ScreenManagerOptions {
  /** @default screenDefaults.max */
  max?: number;
  width?: number;
  height?: number;
  /** The durable home folder (browser profiles live under it). */
  home: string;
  /** Downloads land in `<workspace>/downloads`. */
  workspace: string;
  /** The computer's environment (HTTP_PROXY and friends). */
  env: Readonly<Record<string, string>>;
  /** Where the framebuffer files go. @default /tmp/roost-screens */
  runtimeDir?: string;
  /** Folder of the X sockets and lock files. @default /tmp */
  xTmp?: string;
  /** @default /usr/bin/chromium */
  chromiumPath?: string;
  /**
   * SCR5: the worker's job prelude; a screen's programs source it first, so they run in the
   * computer's `user` cgroup (its memory and process limits), not in the worker's. @default none
   */
  jobPrelude?: string | undefined;
  now?: () => number;
  log?: (line: string) => void;
}

export interface ScreenHandle {
  readonly id: string;
  readonly botId: string;
  readonly display: number;
  readonly width: number;
  readonly height: number;
  readonly vncPort: number;
  /** The framebuffer of the display as an XWD file (Xvfb -fbdir). */
  readonly framebufferFile: string;
  /** The bot's Chromium on this screen, started on first use. */
  browser(): Promise<BrowserSession>;
}

interface ScreenState extends ScreenHandle {
  busy: boolean;
  controller: ScreenController | null;
  processes: ChildProcess[];
  session: Promise<BrowserSession> | undefined;
  started: BrowserSession | undefined;
}

export interface ScreenManager {
  /** SCR1, SCR2: runs `task` on the bot's screen (created on first use), marked busy meanwhile. */
  use<T>(botId: string, task: (screen: ScreenHandle) => Promise<T>): Promise<T>;
  list(): Screen[];
  /** SCR2 */
  control(screenId: string, controller: ScreenController | null): void;
  /** A fresh snapshot of the screen's browser (for a person's hand-back). */
  snapshot(screenId: string): Promise<{ text: string; url: string; title: string }>;
  close(): Promise<void>;
}

/** The screen id of a bot (stable: the live view's URLs use it). */
export const screenIdOf = (botId: string) => `s-${botId}`;

/** The packages a screen needs, by program, for the error that names the apt command. */
const programs = [
  ["Xvfb", "xvfb"],
  ["x11vnc", "x11vnc"],
  ["xdotool", "xdotool"],
] as const;

function findProgram(name: string, env: Readonly<Record<string, string>>): string | undefined {
  const folders = (env.PATH ?? "/usr/local/bin:/usr/bin:/bin").split(":");
  for (const folder of [...folders, "/usr/bin", "/bin"]) {
    const candidate = path.join(folder, name);
    if (folder !== "" && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Checks the programs a screen needs; the error says exactly what to install. */
export function missingScreenPrograms(
  env: Readonly<Record<string, string>>,
  chromiumPath: string,
): string | undefined {
  const missing: string[] = programs
    .filter(([program]) => findProgram(program, env) === undefined)
    .map(([, pkg]) => pkg);
  if (!existsSync(chromiumPath)) missing.push("chromium");
  if (missing.length === 0) return undefined;
  return `the browser needs ${missing.join(", ")} on the computer's host, which ${missing.length === 1 ? "is" : "are"} not installed: run \`sudo apt-get install -y ${missing.join(" ")}\` on the host (docs/browser.md), then try again`;
}

export function createScreenManager(options: ScreenManagerOptions): ScreenManager {
  const max = options.max ?? screenDefaults.max;
  const width = options.width ?? screenDefaults.width;
  const height = options.height ?? screenDefaults.height;
  // os.tmpdir(): the computer's /tmp in a sandbox, the computer's own TMPDIR with `process`.
  const runtimeDir = options.runtimeDir ?? path.join(os.tmpdir(), "roost-screens");
  const xTmp = options.xTmp ?? "/tmp";
  const chromiumPath = options.chromiumPath ?? "/usr/bin/chromium";
  const now = options.now ?? Date.now;
  const log = options.log ?? (() => undefined);
  const screens = new Map<string, ScreenState>();
  const creating = new Map<string, Promise<ScreenState>>();
  let closed = false;

  /** Whether a display number is used; the lock and socket of a dead server are removed. */
  async function displayTaken(display: number): Promise<boolean> {
    if ([...screens.values()].some((screen) => screen.display === display)) return true;
    const lock = path.join(xTmp, `.X${display}-lock`);
    const socket = path.join(xTmp, ".X11-unix", `X${display}`);
    if (!existsSync(lock)) return existsSync(socket);
    const pid = Number((await readFile(lock, "utf8").catch(() => "")).trim());
    if (Number.isInteger(pid) && pid > 0 && existsSync(`/proc/${pid}`)) return true;
    // A server killed with SIGKILL (a previous worker's, SCR6) leaves both behind.
    await rm(lock, { force: true }).catch(() => undefined);
    await rm(socket, { force: true }).catch(() => undefined);
    return existsSync(lock) || existsSync(socket);
  }

  async function waitUntil(
    what: string,
    check: () => Promise<boolean> | boolean,
    child: ChildProcess,
  ) {
    const deadline = now() + 15_000;
    while (!(await check())) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new ToolFailure(
          "io_error",
          `${what} exited at start (code ${child.exitCode ?? child.signalCode})`,
        );
      if (now() > deadline) throw new ToolFailure("timeout", `${what} did not start within 15 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  function startProcess(
    command: string,
    args: string[],
    env: Record<string, string>,
  ): ChildProcess {
    // SCR5: `. prelude; exec program …` keeps the pid, so killing the child kills the program.
    const child =
      options.jobPrelude === undefined
        ? spawn(command, args, { env, stdio: ["ignore", "ignore", "pipe"] })
        : spawn("/bin/bash", ["-c", '. "$0"; exec "$@"', options.jobPrelude, command, ...args], {
            env,
            stdio: ["ignore", "ignore", "pipe"],
          });
    let tail = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      tail = (tail + chunk.toString("utf8")).slice(-2000);
    });
    child.once("exit", (code, signal) => {
      if (!closed)
        log(
          `screens: ${path.basename(command)} exited (${code ?? signal}): ${tail.trim().split("\n").at(-1) ?? ""}`,
        );
    });
    child.once("error", () => undefined);
    return child;
  }

  /**
   * Starts Xvfb on the first free display from 10 up. Another program (a second worker on the
   * host, with `process`) may take the same number at the same moment: then the next one.
   */
  async function startDisplay(): Promise<{
    display: number;
    xvfb: ChildProcess;
    framebufferDir: string;
  }> {
    let display: number = screenDefaults.firstDisplay;
    for (let attempt = 0; ; attempt++) {
      while (await displayTaken(display)) display++;
      const framebufferDir = path.join(runtimeDir, String(display));
      await mkdir(framebufferDir, { recursive: true });
      const xvfb = startProcess(
        findProgram("Xvfb", options.env)!,
        [
          `:${display}`,
          "-screen",
          "0",
          `${width}x${height}x24`,
          "-nolisten",
          "tcp",
          "-fbdir",
          framebufferDir,
          "-noreset",
        ],
        { ...options.env, DISPLAY: `:${display}` },
      );
      try {
        // Ours, not another server's that took the number meanwhile: its lock file names our pid.
        await waitUntil(
          "Xvfb",
          async () =>
            existsSync(path.join(xTmp, ".X11-unix", `X${display}`)) &&
            (
              await readFile(path.join(xTmp, `.X${display}-lock`), "utf8").catch(() => "")
            ).trim() === String(xvfb.pid),
          xvfb,
        );
        return { display, xvfb, framebufferDir };
      } catch (error) {
        xvfb.kill("SIGKILL");
        await rm(framebufferDir, { recursive: true, force: true });
        const lost = existsSync(path.join(xTmp, `.X${display}-lock`));
        if (!lost || attempt >= 10) throw error;
        display++; // taken by another server meanwhile
      }
    }
  }

  let swept: Promise<void> | undefined;

  async function create(botId: string): Promise<ScreenState> {
    const missing = missingScreenPrograms(options.env, chromiumPath);
    if (missing !== undefined) throw new ToolFailure("unavailable", missing);
    await (swept ??= sweepLeftovers(runtimeDir, log)); // SCR6
    const { display, xvfb, framebufferDir } = await startDisplay();
    const env = { ...options.env, DISPLAY: `:${display}` };
    const processes: ChildProcess[] = [xvfb];
    try {
      const vncPort = 5900 + display;
      const vnc = startProcess(
        findProgram("x11vnc", options.env)!,
        // SCR3: loopback only; -shared lets viewers watch together (input is the server's call).
        [
          "-display",
          `:${display}`,
          "-localhost",
          "-rfbport",
          String(vncPort),
          "-shared",
          "-forever",
          "-nopw",
          "-quiet",
          "-noxdamage",
        ],
        env,
      );
      processes.push(vnc);
      await writeFile(
        path.join(framebufferDir, "pids"),
        processes.map((child) => child.pid).join("\n"),
      ); // SCR6
      await waitUntil(
        "x11vnc",
        async () => (await listListeningPorts()).ports.some((entry) => entry.port === vncPort),
        vnc,
      );
      const sessionOptions: BrowserSessionOptions = {
        chromiumPath: await chromiumLauncher(),
        display,
        width,
        height,
        env,
        profileDir: path.join(options.home, ".config", "roost-browser", botId),
        downloadsDir: path.join(options.workspace, "downloads"),
        log,
      };
      const screen: ScreenState = {
        id: screenIdOf(botId),
        botId,
        display,
        width,
        height,
        vncPort,
        framebufferFile: path.join(framebufferDir, "Xvfb_screen0"),
        busy: false,
        controller: null,
        processes,
        session: undefined,
        started: undefined,
        async browser() {
          const launched = await launch();
          if (await launched.ensurePage()) return launched;
          // Every window was closed (a person on the live view) and Chromium is exiting: again.
          await launched.close();
          return launch();
        },
      };
      const launch = () => {
        if (screen.started?.isClosed() === true) {
          screen.session = undefined;
          screen.started = undefined;
        }
        screen.session ??= BrowserSession.launch(sessionOptions).then(
          (session) => {
            screen.started = session;
            return session;
          },
          (error: unknown) => {
            screen.session = undefined;
            throw error;
          },
        );
        return screen.session;
      };
      return screen;
    } catch (error) {
      for (const child of processes) child.kill("SIGKILL");
      throw error;
    }
  }

  /** SCR5: Playwright starts Chromium itself, so the prelude goes in a launcher script. */
  async function chromiumLauncher(): Promise<string> {
    if (options.jobPrelude === undefined) return chromiumPath;
    const launcher = path.join(runtimeDir, "chromium");
    await writeFile(
      launcher,
      `#!/bin/bash\n. ${shellQuote(options.jobPrelude)}\nexec ${shellQuote(chromiumPath)} "$@"\n`,
    );
    await chmod(launcher, 0o755);
    return launcher;
  }

  function find(screenId: string): ScreenState {
    const screen = [...screens.values()].find((entry) => entry.id === screenId);
    if (screen === undefined)
      throw new ToolFailure(
        "not_found",
        `there is no screen ${screenId} (screens.list shows the screens)`,
      );
    return screen;
  }

  const alive = (screen: ScreenState) =>
    screen.processes.every((child) => child.exitCode === null && child.signalCode === null);

  /** SCR4: the browser first (it writes its profile), then the display's servers. */
  async function dispose(screen: ScreenState): Promise<void> {
    await screen.started?.close().catch(() => undefined);
    for (const child of [...screen.processes].reverse()) await stopChild(child);
  }

  const controlled = (screen: ScreenState) =>
    screen.controller !== null && screen.controller.until > now();

  return {
    async use(botId, task) {
      if (closed) throw new ToolFailure("cancelled", "the worker is stopping");
      let screen = screens.get(botId);
      if (screen !== undefined && !screen.busy && !alive(screen)) {
        // SCR7: its display or VNC server died (an out-of-memory kill, say): a new screen.
        log(`screens: the screen of ${botId} lost a program; starting it again`);
        screens.delete(botId);
        await dispose(screen);
        screen = undefined;
      }
      if (screen === undefined) {
        let pending = creating.get(botId);
        if (pending === undefined) {
          if (screens.size + creating.size >= max)
            throw new ToolFailure("busy", screensInUseMessage); // SCR1
          pending = create(botId);
          creating.set(botId, pending);
          try {
            screen = await pending;
            screens.set(botId, screen);
          } finally {
            creating.delete(botId);
          }
        } else {
          await pending.catch(() => undefined);
          throw new ToolFailure("busy", screensInUseMessage); // SCR1: another call is setting it up
        }
      }
      if (controlled(screen)) throw new ToolFailure("busy", personOnScreenMessage); // SCR2
      if (screen.busy) throw new ToolFailure("busy", screensInUseMessage); // SCR1
      screen.busy = true;
      try {
        return await task(screen);
      } finally {
        screen.busy = false;
      }
    },
    list() {
      return [...screens.values()].map((screen) => ({
        id: screen.id,
        botId: screen.botId,
        width: screen.width,
        height: screen.height,
        busy: screen.busy,
        vncPort: screen.vncPort,
        controller: controlled(screen) ? screen.controller : null,
      }));
    },
    control(screenId, controller) {
      find(screenId).controller = controller; // SCR2: the server decides
    },
    async snapshot(screenId) {
      const screen = find(screenId);
      const session = await screen.browser();
      return session.snapshotText();
    },
    async close() {
      closed = true;
      await Promise.allSettled([...creating.values()]);
      for (const screen of screens.values()) await dispose(screen); // SCR4
      screens.clear();
      await rm(runtimeDir, { recursive: true, force: true }).catch(() => undefined);
    },
  };
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** SCR6: stops the Xvfb and x11vnc processes a previous worker started, then forgets them. */
async function sweepLeftovers(runtimeDir: string, log: (line: string) => void): Promise<void> {
  const entries = await readdir(runtimeDir).catch(() => [] as string[]);
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const folder = path.join(runtimeDir, entry);
    const pids = (await readFile(path.join(folder, "pids"), "utf8").catch(() => ""))
      .split("\n")
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid > 1);
    for (const pid of pids) {
      const command = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
      // Only our programs: a pid reused by something else is left alone.
      const program = path.basename(command.split("\0")[0] ?? "");
      if (program !== "Xvfb" && program !== "x11vnc" && !command.includes('exec "$@"')) continue;
      try {
        process.kill(pid, "SIGKILL");
        log(
          `screens: stopped ${command.split("\u0000")[0]} (pid ${pid}) left by a previous worker`,
        );
      } catch {
        // already gone
      }
    }
    await rm(folder, { recursive: true, force: true });
  }
}

/** SIGTERM, then SIGKILL after 2 s; resolves when the process has exited. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
  await exited;
  clearTimeout(timer);
}
