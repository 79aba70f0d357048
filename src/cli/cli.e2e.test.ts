/**
 * The `roost` command end to end: the platform runs in-process (embedded Restate, demo model,
 * SQLite in a temp dir) and every command runs as a child process against it, the way a user
 * runs them, configured only by ROOST_URL and ROOST_TOKEN.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Platform } from "../platform/index.ts";
import { z } from "zod";
import { defineToolSource, serverTool, type ToolSource } from "../tools/index.ts";
import type { Api } from "../protocol/index.ts";
import { createClient, type RoostClient } from "./client.ts";
import { runCli } from "./main.ts";
import { startCliPlatform, type CliPlatform } from "./testing/index.ts";

const mainPath = fileURLToPath(new URL("./main.ts", import.meta.url));
const launcherPath = fileURLToPath(new URL("../../bin/roost.js", import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let running: CliPlatform | undefined;
let platform: Platform | undefined;
let adminToken: string;
let admin: RoostClient;

/**
 * A one-tool router standing in for the computer, so tool steps are deterministic and no worker
 * process is started: `shell` answers `echo TEXT` with TEXT and exit code 0.
 */
const echoShell: ToolSource = defineToolSource("test", [
  serverTool({
    name: "shell",
    description: "Run a shell command.",
    input: z.object({ command: z.string() }),
    run: async ({ command }, context) => {
      // Like the computer's shell, stream the output as it comes (in two pieces, split mid-line).
      for (const data of ["live ", "output\n"]) {
        platform?.events.publish({
          type: "tool-output",
          conversationId: context.conversationId,
          callId: context.callId,
          stream: "stdout",
          data,
        });
      }
      return {
        output: `${command.replace(/^echo /, "")}\n`,
        isError: false,
        details: { exitCode: 0 },
      };
    },
  }),
]);

/** A bot of the admin account for one test, so tests do not depend on each other's bots. */
async function ensureBot(name: string): Promise<{ id: string; name: string }> {
  const existing = (await admin.listBots()).find((bot) => bot.name === name);
  return existing ?? admin.createBot({ name });
}

function roost(
  args: string[],
  options: { token?: string; stdin?: string; script?: string } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.script ?? mainPath, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        ROOST_URL: platform?.url ?? "",
        ROOST_TOKEN: options.token ?? adminToken,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    // A hung command must fail the test, not the whole run.
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? "");
  });
}

beforeAll(async () => {
  running = await startCliPlatform({ toolSources: [echoShell] });
  platform = running.platform;
  adminToken = running.adminToken;
  admin = createClient({ url: platform.url, token: adminToken });
});

afterAll(async () => {
  await running?.close();
});

describe("roost chat", () => {
  it("creates the assistant bot on first use and prints the demo model's reply", async () => {
    expect(await admin.listBots()).toEqual([]);
    const result = await roost(["chat", "hello"]);
    expect(result.stderr).not.toContain("Error");
    expect(result.code).toBe(0);
    // Only the reply, on one line: stdout is for the bot's text.
    expect(result.stdout).toMatch(
      /^\[demo model\] You said: "hello"\. \(No model provider is configured[^\n]*\n$/,
    );
    // stdout is not a terminal: decoration goes to stderr, without colours.
    expect(result.stderr).toContain('created one named "assistant"');
    expect(result.stderr).toContain("(demo model — configure a provider, see docs/models.md)");
    expect(result.stderr).not.toContain("\x1b[");
    const bots = await admin.listBots();
    expect(bots.map((bot) => bot.name)).toEqual(["assistant"]);
  });

  it("continues the most recent conversation, or starts a new one with --new", async () => {
    const bot = await ensureBot("continuer");
    const first = await roost(["chat", "--bot", "continuer", "first"]);
    expect(first.code).toBe(0);
    const [conversation] = await admin.listConversations({ botId: bot.id });
    const again = await roost(["chat", "--bot", "continuer", "again"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('You said: "again"');
    expect(
      (await admin.listConversations({ botId: bot.id })).map((candidate) => candidate.id),
    ).toEqual([conversation!.id]);
    const { steps } = await admin.listSteps(conversation!.id);
    expect(steps.map((step) => step.kind)).toEqual(["message", "reply", "message", "reply"]);

    const fresh = await roost(["chat", "--bot", "continuer", "--new", "fresh", "start"]);
    expect(fresh.code).toBe(0);
    expect(fresh.stdout).toContain('You said: "fresh start"');
    expect(await admin.listConversations({ botId: bot.id })).toHaveLength(2);
  });

  it("reads the message from stdin and continues a given --conversation", async () => {
    const bot = await ensureBot("reader");
    const conversation = await admin.createConversation({ botId: bot.id });
    const result = await roost(["chat", "--conversation", conversation.id], {
      stdin: "piped in\n",
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('You said: "piped in"');
    const { steps } = await admin.listSteps(conversation.id);
    expect(
      steps.map((step) => [step.kind, "text" in step.payload ? step.payload.text : undefined]),
    ).toEqual([
      ["message", "piped in"],
      ["reply", expect.stringContaining('You said: "piped in"')],
    ]);
  });

  it("an unknown --bot or --conversation fails with a message that says what to do", async () => {
    const bot = await roost(["chat", "--bot", "nobody", "hi"]);
    expect(bot.code).toBe(1);
    expect(bot.stderr).toMatch(
      /^roost: no bot named "nobody" \(your bots: [^;]+; create it with `roost bots create nobody`\)\n$/,
    );
    const conversation = await roost(["chat", "--conversation", "conv_missing", "hi"]);
    expect(conversation.code).toBe(1);
    expect(conversation.stderr).toMatch(
      /^roost: conversation "conv_missing" not found .*\(not_found\)\n$/,
    );
  });

  it("exits 1 with the error text when the turn ends in an error step", async () => {
    // A model the server cannot serve can only come from the store (the API refuses it).
    const account = await admin.me();
    await platform!.store.createBot({
      accountId: account.id,
      name: "broken",
      instructions: "",
      model: "openai:gpt-4.1-mini",
    });
    const result = await roost(["chat", "--bot", "broken", "hi"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(
      "roost: model openai:gpt-4.1-mini needs openai credentials: set ROOST_OPENAI_API_KEY (config_invalid)",
    );
  });

  it("shows tool steps compactly: ⚙ shell: echo hi → exit 0", async () => {
    await ensureBot("operator");
    const result = await roost(["chat", "--bot", "operator", "$ echo hi"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("⚙ shell: echo hi → exit 0\n");
    expect(result.stdout).toContain("hi");
    expect(result.stdout).not.toContain("⚙");
  });

  it("on a terminal: styled text, the spinner on stderr, tool steps between the text", async () => {
    let stdout = "";
    let stderr = "";
    await ensureBot("operator");
    const code = await runCli(["chat", "--bot", "operator", "--new", "$ echo tty"], {
      stdout: { write: (text: string) => (stdout += text), isTTY: true },
      stderr: { write: (text: string) => (stderr += text), isTTY: true },
      stdin: Object.assign((async function* () {})(), { isTTY: true }),
      env: { ROOST_URL: platform!.url, ROOST_TOKEN: adminToken },
    });
    expect(code).toBe(0);
    expect(stderr).toContain("operator is working…");
    expect(stderr).toContain("\r\x1b[K"); // the spinner clears its line
    expect(stdout).toContain("⚙ shell: echo tty → exit 0");
    expect(stdout).toContain(
      "\x1b[2m(demo model — configure a provider, see docs/models.md)\x1b[22m\n",
    );
    expect(stdout.indexOf("⚙ shell")).toBeLessThan(stdout.indexOf("tty\n```"));
  });

  it("works through the bin/roost.js launcher", async () => {
    await ensureBot("launched");
    const result = await roost(["chat", "--bot", "launched", "via launcher"], {
      script: launcherPath,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('You said: "via launcher"');
  });
  it("shows a running tool's output live, line by line, before the tool's summary", async () => {
    await ensureBot("streamer");
    const result = await roost(["chat", "--bot", "streamer", "--new", "$ echo done"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/ {2}│ live output\n(.|\n)*⚙ shell: echo done → exit 0/);
  });
});

describe("roost bots, token and accounts", () => {
  it("bots create, then bots list shows it", async () => {
    const created = await roost([
      "bots",
      "create",
      "researcher",
      "--model",
      "demo",
      "--instructions",
      "Cite sources.",
    ]);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^created bot researcher \(bot_[\w-]+\), model demo\n$/);
    const listed = await roost(["bots", "list"]);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+MODEL\s+ID$/);
    const row = lines.find((line) => line.startsWith("researcher "));
    expect(row).toMatch(/^researcher\s+demo\s+bot_[\w-]+$/);
    await ensureBot("plain");
    const withPlain = (await roost(["bots", "list"])).stdout.split("\n");
    expect(withPlain.find((line) => line.startsWith("plain "))).toMatch(
      /^plain\s+demo \(default\)\s+bot_/,
    );
    const json = await roost(["bots", "list", "--json"]);
    expect(
      (JSON.parse(json.stdout) as Api.Bot[]).find((bot) => bot.name === "researcher"),
    ).toMatchObject({
      instructions: "Cite sources.",
      model: "demo",
    });
  });

  it("API errors print the message and the code (exit 1)", async () => {
    const duplicate = await roost(["bots", "create", "researcher"]);
    expect(duplicate).toEqual({
      code: 1,
      stdout: "",
      stderr: 'roost: a bot named "researcher" already exists (pick another name) (conflict)\n',
    });
    const badModel = await roost(["bots", "create", "x", "--model", "openai:gpt-4.1-mini"]);
    expect(badModel.code).toBe(1);
    expect(badModel.stderr).toMatch(/ROOST_OPENAI_API_KEY.*\(invalid_request\)\n$/);
    const badToken = await roost(["bots", "list"], { token: "roost_wrong" });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toMatch(/^roost: the API token is not valid .*\(unauthenticated\)\n$/);
  });

  it("token create prints a new token for the calling account", async () => {
    const result = await roost(["token", "create", "--name", "ci"]);
    expect(result.code).toBe(0);
    const token = result.stdout.trim();
    expect(token).toMatch(/^roost_/);
    const me = await createClient({ url: platform!.url, token }).me();
    expect(me).toMatchObject({ name: "admin", isAdmin: true });
  });

  it("accounts create prints the new account and its token; only an admin may", async () => {
    const result = await roost(["accounts", "create", "alice", "--json"]);
    expect(result.code).toBe(0);
    const created = JSON.parse(result.stdout) as {
      account: { id: string; name: string };
      token: string;
    };
    expect(created.account.name).toBe("alice");
    const text = await roost(["accounts", "create", "carol"]);
    expect(text.stdout).toMatch(/^account acct_[\w-]+ \(carol\)\ntoken {3}roost_[\w-]+\n$/);

    const alice = createClient({ url: platform!.url, token: created.token });
    expect(await alice.me()).toMatchObject({ id: created.account.id, isAdmin: false });
    const forbidden = await roost(["accounts", "create", "mallory"], { token: created.token });
    expect(forbidden).toEqual({
      code: 1,
      stdout: "",
      stderr: "roost: only an admin account may do this (forbidden)\n",
    });
    // Alice's chat gets her own assistant, not the admin's bots.
    const chat = await roost(["chat", "hi from alice"], { token: created.token });
    expect(chat.code).toBe(0);
    expect((await alice.listBots()).map((bot) => bot.name)).toEqual(["assistant"]);
  });
});
