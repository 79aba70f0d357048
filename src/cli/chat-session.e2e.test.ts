/**
 * `roost chat` as a session, end to end: the real platform in-process (embedded Restate, the demo
 * model, SQLite), the CLI as a child process fed line by line through a pipe, and on a real
 * terminal (a pseudo-terminal made by util-linux `script`).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { waitFor } from "../../test/support/wait.ts";
import { defineToolSource, serverTool, type ToolSource } from "../tools/index.ts";
import { createClient, type RoostClient } from "./client.ts";
import { startCliPlatform, type CliPlatform } from "./testing/index.ts";

const mainPath = fileURLToPath(new URL("./main.ts", import.meta.url));

/** Commands that are running now, so a test can wait for one; calling the value lets it finish. */
const runningCommands = new Map<string, () => void>();

/** `shell`: `echo X` answers X; `wait X` waits until released, the turn is stopped or 30 s passed, then answers X. */
const testShell: ToolSource = defineToolSource("test", [
  serverTool({
    name: "shell",
    description: "Run a shell command.",
    input: z.object({ command: z.string() }),
    run: async ({ command }, _context, signal) => {
      if (command.startsWith("wait ")) {
        try {
          await new Promise<void>((resolve) => {
            runningCommands.set(command, resolve);
            const timer = setTimeout(resolve, 30_000);
            signal.addEventListener("abort", () => {
              clearTimeout(timer);
              resolve();
            });
          });
        } finally {
          runningCommands.delete(command);
        }
      }
      return {
        output: `${command.replace(/^(echo|wait) /, "")}\n`,
        isError: false,
        details: { exitCode: 0 },
      };
    },
  }),
]);

let roost: CliPlatform | undefined;
let admin: RoostClient;

beforeAll(async () => {
  roost = await startCliPlatform({ toolSources: [testShell] });
  admin = createClient({ url: roost.url, token: roost.adminToken });
}, 120_000);
afterAll(async () => {
  await roost?.close();
});

interface Session {
  child: ChildProcessWithoutNullStreams;
  readonly stdout: string;
  readonly stderr: string;
  closed: Promise<number | null>;
}

function startSession(args: string[], env: Record<string, string> = {}): Session {
  const child = spawn(process.execPath, [mainPath, ...args], {
    env: {
      PATH: process.env.PATH ?? "",
      ROOST_URL: roost!.url,
      ROOST_TOKEN: roost!.adminToken,
      ...env,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const closed = new Promise<number | null>((resolve) =>
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve(code);
    }),
  );
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    closed,
  };
}

async function ensureBot(name: string): Promise<{ id: string; name: string }> {
  const existing = (await admin.listBots()).find((bot) => bot.name === name);
  return existing ?? admin.createBot({ name });
}

async function messagesOf(conversationId: string): Promise<string[]> {
  const { steps } = await admin.listSteps(conversationId);
  return steps.flatMap((step) => (step.kind === "message" ? [step.payload.text] : []));
}

describe("roost chat --interactive with a piped stdin", () => {
  it("sends each line as a message, one after the other's reply, in one conversation", async () => {
    const bot = await ensureBot("piped");
    const session = startSession(["chat", "--bot", "piped", "--new", "--interactive"]);
    session.child.stdin.end("first line\n\nsecond line\n");
    const code = await session.closed;
    expect({ code, stderr: session.stderr }).toMatchObject({ code: 0 });
    const replies = session.stdout.trimEnd().split("\n");
    expect(replies).toHaveLength(2);
    expect(replies[0]).toContain('You said: "first line"');
    expect(replies[1]).toContain('You said: "second line"');
    const [conversation, ...others] = await admin.listConversations({ botId: bot.id });
    expect(others).toEqual([]);
    expect(await messagesOf(conversation!.id)).toEqual(["first line", "second line"]);
    expect(session.stderr).toContain(`chatting with piped, conversation`);
  });

  it("/new starts a conversation, /bot NAME switches bot; an unknown bot or command is said and skipped", async () => {
    const one = await ensureBot("switch-a");
    const two = await ensureBot("switch-b");
    const session = startSession(["chat", "--bot", "switch-a", "--new", "-i"]);
    session.child.stdin.end(
      "one\n/new\ntwo\n/bot switch-b\nthree\n/bot nobody\n/frobnicate\n//slash\n/help\n",
    );
    const code = await session.closed;
    // The unknown bot failed: the session went on, and exits 1 at the end.
    expect(code).toBe(1);
    expect(session.stderr).toContain('no bot named "nobody"');
    expect(session.stderr).toContain("unknown command /frobnicate (/help lists them");
    // Notes and help are decoration: on stderr when stdout is not a terminal.
    expect(session.stderr).toContain("/bot NAME     switch to the bot NAME");
    expect(session.stdout).not.toContain("/bot NAME");
    const first = await admin.listConversations({ botId: one.id });
    expect(first).toHaveLength(2);
    expect(await messagesOf(first[1]!.id)).toEqual(["one"]);
    expect(await messagesOf(first[0]!.id)).toEqual(["two"]);
    const second = await admin.listConversations({ botId: two.id });
    expect(second).toHaveLength(1);
    // `//slash` is the message "/slash", sent to the bot it was switched to.
    expect(await messagesOf(second[0]!.id)).toEqual(["three", "/slash"]);
  });

  it("a stdin that closes mid-turn: the turn's reply is printed whole, then the session ends (0)", async () => {
    await ensureBot("closer");
    const session = startSession(["chat", "--bot", "closer", "--new", "-i"]);
    session.child.stdin.write("$ wait closing\n");
    await waitFor(() => runningCommands.has("wait closing"), { what: "the tool to run" });
    session.child.stdin.end();
    // The pipe is closed while the tool still runs; the session must not end before its reply.
    expect(session.child.exitCode).toBeNull();
    runningCommands.get("wait closing")?.();
    const code = await session.closed;
    expect({ code, stderr: session.stderr }).toMatchObject({ code: 0 });
    expect(session.stderr).toContain("⚙ shell: wait closing → exit 0");
    expect(session.stdout).toMatch(/closing/);
  });

  it("Ctrl-C stops the running turn and the session goes on with the next line", async () => {
    await ensureBot("stopper");
    const session = startSession(["chat", "--bot", "stopper", "--new", "-i"]);
    try {
      session.child.stdin.write("$ wait for ctrl-c\n");
      await waitFor(() => runningCommands.has("wait for ctrl-c"), { what: "the tool to run" });
      session.child.kill("SIGINT");
      await waitFor(() => session.stderr.includes("⏹ stopped by you"), {
        what: "the turn to stop",
      });
      session.child.stdin.end("after the stop\n");
      const code = await session.closed;
      expect({ code, stderr: session.stderr }).toMatchObject({ code: 0 });
      expect(session.stdout).toContain('You said: "after the stop"');
    } finally {
      if (session.child.exitCode === null) session.child.kill("SIGKILL");
    }
  });
});

describe("roost chat --interactive: the conversation deleted meanwhile", () => {
  it("says it is gone and how to go on; /new goes on", async () => {
    const bot = await ensureBot("vanishing");
    const session = startSession(["chat", "--bot", "vanishing", "--new", "-i"]);
    try {
      session.child.stdin.write("before\n");
      await waitFor(() => session.stdout.includes('You said: "before"'), { what: "the reply" });
      const [conversation] = await admin.listConversations({ botId: bot.id });
      const response = await fetch(`${roost!.url}/v1/conversations/${conversation!.id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${roost!.adminToken}` },
      });
      expect(response.status).toBe(204);
      session.child.stdin.end("after\n/new\nagain\n");
      const code = await session.closed;
      expect(code).toBe(1);
      expect(session.stderr).toContain(
        `(conversation ${conversation!.id} is gone; /new starts another)`,
      );
      expect(session.stdout).toContain('You said: "again"');
    } finally {
      if (session.child.exitCode === null) session.child.kill("SIGKILL");
    }
  });
});

/** `roost chat ARGS` on a new pseudo-terminal (util-linux `script` copies our pipe to it). */
function startTerminal(args: string[], env: Record<string, string> = {}) {
  // `exec`: no shell stays between, so the chat's exit status is the one `script` reports (a
  // shell that got the terminal's SIGINT during a turn could otherwise die of it afterwards).
  const command = `exec ${[process.execPath, mainPath, ...args].map((word) => `'${word}'`).join(" ")}`;
  const session = spawn("script", ["-qfec", command, "/dev/null"], {
    env: {
      PATH: process.env.PATH ?? "",
      ROOST_URL: roost!.url,
      ROOST_TOKEN: roost!.adminToken,
      ROOST_CHAT_HISTORY: "off",
      NO_COLOR: "1",
      TERM: "xterm",
      ...env,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let screen = "";
  session.stdout.setEncoding("utf8").on("data", (chunk: string) => (screen += chunk));
  const timer = setTimeout(() => session.kill("SIGKILL"), 60_000);
  const closed = new Promise<number | null>((resolve) =>
    session.once("close", (code) => {
      clearTimeout(timer);
      resolve(code);
    }),
  );
  return {
    session,
    closed,
    get screen() {
      return screen;
    },
    /** How many prompts were shown so far (readline redraws the line, and the prompt, on ↑). */
    prompts: () => screen.split("you ›").length - 1,
    /** Whether a prompt shows after the last occurrence of `text`. */
    promptAfter: (text: string) => {
      const at = screen.lastIndexOf(text);
      return at >= 0 && screen.indexOf("you ›", at) > at;
    },
  };
}

describe("roost chat on a terminal", () => {
  it("Ctrl-C during a turn stops it and the prompt comes back; Ctrl-C twice at the prompt quits", async () => {
    await ensureBot("terminal-stop");
    const terminal = startTerminal(["chat", "--bot", "terminal-stop", "--new"]);
    try {
      await waitFor(() => terminal.prompts() >= 1, { what: "the prompt" });
      terminal.session.stdin.write("$ wait on the terminal\r");
      await waitFor(() => runningCommands.has("wait on the terminal"), { what: "the tool to run" });
      terminal.session.stdin.write("\x03"); // the terminal's Ctrl-C: SIGINT to the chat (SES4)
      await waitFor(() => terminal.screen.includes("⏹ stopped by you"), { what: "the stop" });
      await waitFor(() => terminal.promptAfter("⏹ stopped by you"), {
        what: "the prompt after the stop",
      });
      terminal.session.stdin.write("\x03");
      await waitFor(() => terminal.screen.includes("(Ctrl-C again or Ctrl-D to quit)"), {
        what: "the hint",
      });
      terminal.session.stdin.write("\x03");
      expect(await terminal.closed).toBe(0);
    } finally {
      if (terminal.session.exitCode === null) terminal.session.kill("SIGKILL");
    }
  });

  it("prompts, streams replies, recalls the last line with ↑, quits on Ctrl-D and keeps a 0600 history", async () => {
    await ensureBot("terminal");
    const home = mkdtempSync(join(tmpdir(), "roost-chat-history-"));
    const historyFile = join(home, "state", "history");
    try {
      const terminal = startTerminal(["chat", "--bot", "terminal", "--new"], {
        ROOST_CHAT_HISTORY: historyFile,
      });
      try {
        await waitFor(() => terminal.prompts() >= 1, { what: "the prompt" });
        terminal.session.stdin.write("hello terminal\r");
        await waitFor(() => terminal.screen.includes('You said: "hello terminal"'), {
          what: "the first reply",
        });
        await waitFor(() => terminal.promptAfter('You said: "hello terminal"'), {
          what: "the next prompt",
        });
        terminal.session.stdin.write("\x1b[A\r"); // ↑ then Enter: the same line again
        await waitFor(() => terminal.screen.split('You said: "hello terminal"').length === 3, {
          what: "the recalled line's reply",
        });
        await waitFor(() => terminal.promptAfter('You said: "hello terminal"'), {
          what: "the third prompt",
        });
        terminal.session.stdin.write("\x04"); // Ctrl-D at an empty prompt
        expect(await terminal.closed).toBe(0);
      } finally {
        if (terminal.session.exitCode === null) terminal.session.kill("SIGKILL");
      }
      expect(readFileSync(historyFile, "utf8")).toBe("hello terminal\nhello terminal\n");
      expect(statSync(historyFile).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
