/**
 * `roost conversations` and `roost files` end to end: the real platform in-process (embedded
 * Restate, the demo model, SQLite) with a real computer (the `process` provider, whose worker
 * does the file operations), and the CLI as a child process, the way a user runs it.
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { createClient, type RoostClient } from "./client.ts";
import { startCliPlatform, type CliPlatform } from "./testing/index.ts";

const mainPath = fileURLToPath(new URL("./main.ts", import.meta.url));

let roost: CliPlatform | undefined;
let admin: RoostClient;
let otherToken: string;
let local: string;

beforeAll(async () => {
  roost = await startCliPlatform({ env: { ROOST_COMPUTER_PROVIDER: "process" } });
  admin = createClient({ url: roost.url, token: roost.adminToken });
  otherToken = (await admin.createAccount("other")).token;
  local = mkdtempSync(join(tmpdir(), "roost-cli-files-"));
}, 120_000);
afterAll(async () => {
  await roost?.close();
  if (local !== undefined) rmSync(local, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: Buffer;
  text: string;
  stderr: string;
}

function roostCli(
  args: string[],
  options: {
    token?: string;
    stdin?: Buffer | string;
    cwd?: string;
    env?: Record<string, string>;
  } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [mainPath, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        ROOST_URL: roost!.url,
        ROOST_TOKEN: options.token ?? roost!.adminToken,
        ...options.env,
      },
      cwd: options.cwd ?? local,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out);
      resolve({ code, stdout, text: stdout.toString("utf8"), stderr });
    });
    child.stdin.end(options.stdin ?? "");
  });
}

/** Runs a bash script with ROOST_URL and ROOST_TOKEN set; resolves with its stdout. */
function bash(script: string, env: Record<string, string> = {}): Promise<{ stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["--norc", "--noprofile", "-c", script], {
      env: {
        PATH: process.env.PATH ?? "",
        ROOST_URL: roost!.url,
        ROOST_TOKEN: roost!.adminToken,
        ...env,
      },
    });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("error", reject);
    child.once("close", () => {
      clearTimeout(timer);
      resolve({ stdout });
    });
  });
}

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("roost conversations", () => {
  it("list shows id, bot, title and last activity; --bot filters; --json is the API's list", async () => {
    const bot = await admin.createBot({ name: "lister" });
    const conversation = await admin.createConversation({
      botId: bot.id,
      title: "Plans for Friday",
    });
    await admin.createBot({ name: "quiet" });
    const listed = await roostCli(["conversations", "list"]);
    expect(listed.code).toBe(0);
    const [header, ...rows] = listed.text.trimEnd().split("\n");
    expect(header).toMatch(/^ID +BOT +TITLE +LAST ACTIVITY$/);
    expect(rows.find((row) => row.startsWith(conversation.id))).toMatch(
      new RegExp(`^${conversation.id} +lister +Plans for Friday +just now$`),
    );
    const quiet = await roostCli(["conversations", "list", "--bot", "quiet"]);
    expect(quiet).toMatchObject({ code: 0, text: "" });
    expect(quiet.stderr).toContain("no conversations yet");
    const json = await roostCli(["conversations", "list", "--bot", "lister", "--json"]);
    expect(JSON.parse(json.text)).toEqual([expect.objectContaining({ id: conversation.id })]);
    const badLimit = await roostCli(["conversations", "list", "--limit", "0"]);
    expect(badLimit.code).toBe(2);
    expect(badLimit.stderr).toContain("--limit must be a whole number from 1 to 500");
  });

  it("show prints the timeline as chat does, with the tool step that ran on the computer", async () => {
    await admin.createBot({ name: "shower" });
    const chat = await roostCli(["chat", "--bot", "shower", "--new", "$ echo from the computer"]);
    expect({ code: chat.code, stderr: chat.stderr }).toMatchObject({ code: 0 });
    const bots = await admin.listBots();
    const shower = bots.find((bot) => bot.name === "shower")!;
    const [conversation] = await admin.listConversations({ botId: shower.id });
    const shown = await roostCli(["conversations", "show", conversation!.id]);
    expect(shown.code).toBe(0);
    const lines = shown.text.trimEnd().split("\n");
    expect(lines[0]).toBe(`${conversation!.title} (${conversation!.id}, with shower)`);
    expect(lines[1]).toBe("you › $ echo from the computer");
    expect(lines).toContain("⚙ shell: echo from the computer → exit 0");
    // The reply (several lines: the output, then the exit status) comes after the tool step.
    const tool = lines.indexOf("⚙ shell: echo from the computer → exit 0");
    expect(lines.slice(tool + 1).join("\n")).toMatch(
      /^shower › (.|\n)*from the computer(.|\n)*\(demo model\)$/,
    );
    const json = JSON.parse(
      (await roostCli(["conversations", "show", conversation!.id, "--json"])).text,
    ) as {
      conversation: { id: string };
      steps: { seq: number; kind: string }[];
    };
    expect(json.conversation.id).toBe(conversation!.id);
    expect(json.steps.map((step) => step.seq)).toEqual(json.steps.map((_, index) => index + 1));
    expect(json.steps.map((step) => step.kind)).toContain("tool");
  });

  it("another account's conversation is not found, for show, rename and rm, and stays", async () => {
    const bot = await admin.createBot({ name: "private" });
    const conversation = await admin.createConversation({ botId: bot.id, title: "mine" });
    for (const args of [
      ["conversations", "show", conversation.id],
      ["conversations", "rename", conversation.id, "taken"],
      ["conversations", "rm", conversation.id, "--yes"],
    ]) {
      const result = await roostCli(args, { token: otherToken });
      expect({ args, code: result.code }).toEqual({ args, code: 1 });
      expect(result.stderr).toBe(
        `roost: no conversation "${conversation.id}" in your account (see \`roost conversations list\` for the ids)\n`,
      );
    }
    expect((await admin.getConversation(conversation.id)).title).toBe("mine");
  });

  it("rename; rm asks first (refused on a pipe without --yes), --yes deletes", async () => {
    const bot = await admin.createBot({ name: "doomed" });
    const conversation = await admin.createConversation({ botId: bot.id });
    const renamed = await roostCli(["conversations", "rename", conversation.id, "New", "name"]);
    expect(renamed.code).toBe(0);
    expect((await admin.getConversation(conversation.id)).title).toBe("New name");
    const refused = await roostCli(["conversations", "rm", conversation.id], { stdin: "y\n" });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("stdin is not a terminal, so pass --yes");
    expect((await admin.getConversation(conversation.id)).id).toBe(conversation.id);
    const removed = await roostCli(["conversations", "rm", conversation.id, "--yes"]);
    expect(removed.code).toBe(0);
    expect(removed.text).toBe(`deleted ${conversation.id} ("New name")\n`);
    await expect(admin.getConversation(conversation.id)).rejects.toMatchObject({ status: 404 });
  });

  it("rm on a terminal deletes only after a yes", async () => {
    const bot = await admin.createBot({ name: "asked" });
    const conversation = await admin.createConversation({ botId: bot.id });
    const command = [process.execPath, mainPath, "conversations", "rm", conversation.id]
      .map((word) => `'${word}'`)
      .join(" ");
    const answer = async (reply: string) => {
      const session = spawn("script", ["-qfec", command, "/dev/null"], {
        env: {
          PATH: process.env.PATH ?? "",
          ROOST_URL: roost!.url,
          ROOST_TOKEN: roost!.adminToken,
        },
        stdio: ["pipe", "pipe", "pipe"],
      });
      let screen = "";
      session.stdout.setEncoding("utf8").on("data", (chunk: string) => (screen += chunk));
      const closed = new Promise<number | null>((resolve) => session.once("close", resolve));
      try {
        await waitFor(() => screen.includes("[y/N]"), { what: "the question" });
        session.stdin.write(`${reply}\r`);
        return { code: await closed, screen };
      } finally {
        if (session.exitCode === null) session.kill("SIGKILL");
      }
    };
    const no = await answer("n");
    expect(no.code).toBe(1);
    expect(no.screen).toContain("not deleted");
    expect((await admin.getConversation(conversation.id)).id).toBe(conversation.id);
    const yes = await answer("y");
    expect(yes.code).toBe(0);
    await expect(admin.getConversation(conversation.id)).rejects.toMatchObject({ status: 404 });
  });
});

describe("roost files", () => {
  it("put, ls and get round-trip binary bytes (bigger than one 3 MiB piece), also through stdout", async () => {
    const bytes = Buffer.concat([
      Buffer.from(Array.from({ length: 256 }, (_, index) => index)),
      randomBytes(5 * 1024 * 1024),
    ]);
    writeFileSync(join(local, "blob.bin"), bytes);
    const put = await roostCli(["files", "put", "blob.bin", "cli/data/"]);
    expect({ code: put.code, stderr: put.stderr }).toMatchObject({ code: 0 });
    expect(put.stderr).toContain("blob.bin → /workspace/cli/data/blob.bin (5.0 MiB)");

    const listed = await roostCli(["files", "ls", "cli"]);
    expect(listed).toMatchObject({ code: 0, text: "data/\n" });
    const long = await roostCli(["files", "ls", "-l", "/workspace/cli/data"]);
    expect(long.text).toMatch(/^file +5\.0 MiB +\d{4}-\d\d-\d\d \d\d:\d\d +blob\.bin\n$/);

    const downloads = join(local, "downloads");
    mkdirSync(downloads);
    const get = await roostCli(["files", "get", "cli/data/blob.bin", "downloads"]);
    expect({ code: get.code, stderr: get.stderr }).toMatchObject({ code: 0 });
    expect(sha(readFileSync(join(downloads, "blob.bin")))).toBe(sha(bytes));
    // No temporary file is left beside it.
    expect(readdirSync(downloads)).toEqual(["blob.bin"]);

    const piped = await roostCli(["files", "get", "cli/data/blob.bin", "-"]);
    expect(piped.code).toBe(0);
    expect(sha(piped.stdout)).toBe(sha(bytes));

    // A reader that leaves early (`| head -c 10`) ends the download quietly: exit 0, no stack.
    // (Async: the platform runs in this process, so a synchronous spawn would starve it.)
    const early = await bash(
      `'${process.execPath}' '${mainPath}' files get cli/data/blob.bin - 2>"$ERR" | head -c 10 > /dev/null; echo "\${PIPESTATUS[0]}"`,
      { ERR: join(local, "early.err") },
    );
    expect({
      status: early.stdout,
      stderr: readFileSync(join(local, "early.err"), "utf8"),
    }).toEqual({
      status: "0\n",
      stderr: "",
    });

    const fromStdin = await roostCli(["files", "put", "-", "cli/stdin.txt"], {
      stdin: "piped in\n",
    });
    expect(fromStdin.code).toBe(0);
    expect((await roostCli(["files", "get", "cli/stdin.txt", "-"])).text).toBe("piped in\n");
  });

  it("get never writes outside the chosen folder: `..` is refused, a planted link is replaced, not followed", async () => {
    await roostCli(["files", "put", "-", "trick/evil"], { stdin: "remote bytes" });
    const target = join(local, "target");
    mkdirSync(target);
    const outside = join(local, "outside.txt");
    writeFileSync(outside, "untouched");

    // The API refuses `..` before anything reaches the computer; nothing is written here.
    const dotted = await roostCli(["files", "get", "../../etc/passwd", "target"]);
    expect(dotted.code).toBe(1);
    expect(dotted.stderr).toContain("paths must be inside /workspace");
    const parent = await roostCli(["files", "get", "trick/..", "target"]);
    expect(parent.code).toBe(2);
    expect(parent.stderr).toContain('"trick/.." names no file');
    expect(readdirSync(target)).toEqual([]);

    // A link at the name the download takes is replaced by the file; its target stays as it was.
    symlinkSync(outside, join(target, "evil"));
    const got = await roostCli(["files", "get", "trick/evil", "target"]);
    expect({ code: got.code, stderr: got.stderr }).toMatchObject({ code: 0 });
    expect(lstatSync(join(target, "evil")).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(target, "evil"), "utf8")).toBe("remote bytes");
    expect(readFileSync(outside, "utf8")).toBe("untouched");
    expect(readdirSync(target)).toEqual(["evil"]);
  });

  it("clear errors: a missing file, a folder to put, a file over the limit (with the limit), a folder to ls as a file", async () => {
    const missing = await roostCli(["files", "get", "no/such/file"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^roost: \/workspace\/no does not exist.* \(not_found\)\n$/);
    expect(existsSync(join(local, "file"))).toBe(false);

    const folder = await roostCli(["files", "put", ".", "x"]);
    expect(folder.code).toBe(1);
    expect(folder.stderr).toContain(". is a folder; files put uploads one file");

    const huge = join(local, "huge.bin");
    writeFileSync(huge, "");
    truncateSync(huge, 25 * 1024 * 1024 + 1);
    const tooBig = await roostCli(["files", "put", huge, "huge.bin"]);
    expect(tooBig.code).toBe(1);
    expect(tooBig.stderr).toContain("uploads are limited to 25 MiB (26214400 bytes)");
    // The same from stdin: reading stops past the limit, and nothing is sent.
    const flood = await roostCli(["files", "put", "-", "flood.bin"], {
      stdin: Buffer.alloc(25 * 1024 * 1024 + 1),
    });
    expect(flood.code).toBe(1);
    expect(flood.stderr).toContain("stdin is more than 25 MiB; uploads are limited to 25 MiB");
    const names = (await roostCli(["files", "ls"])).text;
    expect(names).not.toContain("huge.bin");
    expect(names).not.toContain("flood.bin");

    await roostCli(["files", "put", "-", "errors/plain.txt"], { stdin: "a file" });
    const notFolder = await roostCli(["files", "ls", "errors/plain.txt"]);
    expect(notFolder.code).toBe(1);
    expect(notFolder.stderr).toContain("is not a folder");
  });

  it("another account sees its own computer: the admin's file is not found", async () => {
    await roostCli(["files", "put", "-", "secret.txt"], { stdin: "admin only" });
    const other = await roostCli(["files", "get", "secret.txt", "-"], { token: otherToken });
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("(not_found)");
    expect(other.text).toBe("");
  });
});

describe("roost completion with a running Roost", () => {
  it("completes bot names after --bot, asking Roost", async () => {
    await admin.createBot({ name: "completer" });
    const bin = join(local, "bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(
      join(bin, "roost"),
      `#!/bin/sh\nexec '${process.execPath}' '${mainPath}' "$@"\n`,
      {
        mode: 0o755,
      },
    );
    const script = (await roostCli(["completion", "bash"])).text;
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(
        "bash",
        [
          "--norc",
          "--noprofile",
          "-c",
          `eval "$ROOST_COMPLETION"; COMP_WORDS=(roost chat --bot comp); COMP_CWORD=3; _roost; printf '%s\\n' "\${COMPREPLY[@]}"`,
        ],
        {
          env: {
            PATH: `${bin}:${process.env.PATH ?? ""}`,
            ROOST_URL: roost!.url,
            ROOST_TOKEN: roost!.adminToken,
            ROOST_COMPLETION: script,
          },
        },
      );
      let stdout = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.once("close", (code) => resolve({ code, stdout }));
    });
    expect(result).toEqual({ code: 0, stdout: "completer\n" });
  });
});
