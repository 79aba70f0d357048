import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  chmodSync,
  existsSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { toolLimits, writePreviousMaxBytes } from "../protocol/index.ts";
import type { ShellCompletedOutput } from "../protocol/index.ts";
import { editTool } from "./edit-tool.ts";
import { globTool, listTool } from "./list-tool.ts";
import { readTool } from "./read-tool.ts";
import { shellStatusTool, shellTool } from "./shell-tool.ts";
import { ToolFailure } from "./tool-context.ts";
import type { ToolContext } from "./tool-context.ts";
import { createWarmShell, type WarmShell } from "./warm-shell.ts";
import { writeTool } from "./write-tool.ts";

let root: string;
let workspace: string;
let stateDir: string;
let home: string;
let callCounter = 0;
/** Set while the shell cases run with wrappers started ahead (warm-shell.ts). */
let warmShell: WarmShell | undefined;
const commandEnv = { PATH: "/usr/bin:/bin" };

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "roost-tools-"));
  workspace = path.join(root, "workspace");
  stateDir = path.join(root, "state");
  home = path.join(root, "home");
  for (const dir of [workspace, stateDir, home]) mkdirSync(dir, { recursive: true });
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function context(
  overrides: Partial<ToolContext> = {},
): ToolContext & { chunks: { stream: string; data: string }[]; marks: unknown[] } {
  const chunks: { stream: string; data: string }[] = [];
  const marks: unknown[] = [];
  callCounter += 1;
  return {
    callId: `call-${callCounter}`,
    workspace,
    stateDir,
    commandEnv: { ...commandEnv, HOME: home },
    ...(warmShell === undefined ? {} : { warmShell }),
    deadline: Date.now() + 30_000,
    signal: new AbortController().signal,
    emit: (stream, data) => chunks.push({ stream, data }),
    markStarted: async (detail) => {
      marks.push(detail);
    },
    afterRecorded: (task) => void task(),
    afterSent: (task) => task(),
    previous: undefined,
    durable: false,
    now: Date.now,
    ...overrides,
    chunks,
    marks,
  };
}

/** A child of this process started ahead of a call (its command line names its token). */
async function waitForWaitingWrapper(): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const parent = readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.split(" ")[1];
        if (Number(parent) !== process.pid) continue;
        if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes("roost-warm-")) return;
      } catch {
        // exited while we looked
      }
    }
    if (Date.now() > deadline) throw new Error("no wrapper started ahead within 10 s");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function failure(promise: Promise<unknown>): Promise<ToolFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ToolFailure) return error;
    throw error;
  }
  throw new Error("expected the tool to fail");
}

function completed(output: Awaited<ReturnType<typeof shellTool>>): ShellCompletedOutput {
  if (output.kind !== "completed")
    throw new Error(`expected a completed shell output, got ${output.kind}`);
  return output;
}

// Every shell case runs twice: each call starting its own wrapper (cold), and each taking one
// started ahead of it (warm-shell.ts, WS1).
describe.each(["cold", "warm"] as const)("shell (%s start)", (start) => {
  beforeEach(async () => {
    if (start === "cold") return;
    const env = { ...commandEnv, HOME: home };
    warmShell = createWarmShell({ env });
    // Its folder is made at once, then the first wrapper is started after the usual pause.
    await new Promise((resolve) => setTimeout(resolve, 20));
    warmShell.refill();
    // Until its wrapper waits (a fixed pause was too short once on a loaded machine).
    await waitForWaitingWrapper();
  });
  afterEach(() => {
    warmShell?.close();
    warmShell = undefined;
  });

  it("starts the job in a wrapper started ahead when there is one, and records which", async () => {
    const started = await shellTool({ command: "sleep 0.2", background: true }, context());
    if (started.kind !== "started") throw new Error("expected a started job");
    const meta = JSON.parse(
      readFileSync(path.join(path.dirname(started.stdoutPath), "job.json"), "utf8"),
    ) as { wrapper?: string };
    expect(meta.wrapper !== undefined).toBe(start === "warm");
    const cmdline = readFileSync(`/proc/${started.pid}/cmdline`, "utf8").split("\0");
    if (meta.wrapper !== undefined) expect(cmdline).toContain(meta.wrapper);
    // A later worker (a fresh context) recognises the running job by its folder or its token.
    expect((await shellStatusTool({ jobId: started.jobId }, context())).state).toBe("running");
    // A call with variables of its own starts cold (the wrapper waiting has the computer's).
    const own = await shellTool(
      { command: "sleep 0.2", background: true, env: { EXTRA: "1" } },
      context(),
    );
    if (own.kind !== "started") throw new Error("expected a started job");
    const ownMeta = JSON.parse(
      readFileSync(path.join(path.dirname(own.stdoutPath), "job.json"), "utf8"),
    ) as { wrapper?: string };
    expect(ownMeta.wrapper).toBeUndefined();
  });

  it("runs bash in the workspace and reports exit code, output and duration", async () => {
    const output = completed(await shellTool({ command: "pwd; echo oops >&2; exit 3" }, context()));
    expect(output).toMatchObject({
      exitCode: 3,
      timedOut: false,
      stdout: `${workspace}\n`,
      stderr: "oops\n",
    });
    expect(output.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("streams output as chunks while the command runs", async () => {
    const ctx = context();
    const output = completed(
      await shellTool({ command: "echo one; sleep 0.2; echo two" }, ctx, { pollMs: 20 }),
    );
    expect(output.stdout).toBe("one\ntwo\n");
    expect(ctx.chunks.map((chunk) => chunk.data).join("")).toBe("one\ntwo\n");
    expect(ctx.chunks.length).toBeGreaterThanOrEqual(2);
  });

  it("keeps head and tail of long output and names the file with all of it", async () => {
    const output = completed(await shellTool({ command: "seq 1 100000" }, context()));
    expect(output.stdoutTruncated).toBe(true);
    expect(output.stdout.length).toBeLessThan(toolLimits.shellOutputBytes + 200);
    expect(output.stdout.startsWith("1\n2\n3\n")).toBe(true);
    expect(output.stdout.endsWith("99999\n100000\n")).toBe(true);
    expect(output.stdout).toContain(`the full output is in ${output.stdoutPath}`);
    const full = readFileSync(output.stdoutPath!, "utf8");
    expect(full.split("\n").length).toBe(100_001);
    expect(output.stdoutBytes).toBe(Buffer.byteLength(full));
  });

  it("kills the process group at the deadline and says it timed out", async () => {
    const output = completed(
      await shellTool(
        { command: "sleep 30 & sleep 30; echo never" },
        context({ deadline: Date.now() + 300 }),
        { killGraceMs: 200 },
      ),
    );
    expect(output).toMatchObject({ timedOut: true, exitCode: null });
    expect(output.note).toMatch(/timed out/);
  });

  it("SIGKILLs a timed-out command that ignores SIGTERM after the grace period", async () => {
    const output = completed(
      await shellTool(
        { command: "trap '' TERM; echo $$ > shell.pid; sleep 30" },
        context({ deadline: Date.now() + 300 }),
        { killGraceMs: 200 },
      ),
    );
    expect(output.timedOut).toBe(true);
    const pid = Number.parseInt(readFileSync(path.join(workspace, "shell.pid"), "utf8"), 10);
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await expect.poll(alive, { timeout: 5000 }).toBe(false);
  });

  it("stops on cancel with a cancelled error", async () => {
    const controller = new AbortController();
    const ctx = context({ signal: controller.signal });
    const running = shellTool({ command: "echo started; sleep 30" }, ctx, { pollMs: 20 });
    while (ctx.chunks.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort();
    expect((await failure(running)).code).toBe("cancelled");
  });

  it("sources the job prelude in the command's own subshell, not in the wrapper that records its status", async () => {
    const prelude = path.join(root, "prelude.sh");
    writeFileSync(prelude, 'echo "$BASHPID" > "$HOME/prelude-pid"; prelude_var=set\n');
    const output = completed(
      await shellTool(
        { command: 'echo "$BASHPID ${prelude_var-unset}"; exit 4' },
        context({ jobPrelude: prelude }),
      ),
    );
    const [commandPid, variable] = output.stdout.trim().split(" ");
    expect(readFileSync(path.join(home, "prelude-pid"), "utf8").trim()).toBe(commandPid);
    expect(variable).toBe("set");
    expect(output.exitCode).toBe(4);
    // The wrapper (the job's pid, whose exit status is recorded) is another process.
    const started = await shellTool(
      { command: 'echo "$BASHPID" > "$HOME/command-pid"', background: true },
      context({ jobPrelude: prelude }),
    );
    if (started.kind !== "started") throw new Error("expected a started background job");
    const commandPidFile = path.join(home, "command-pid");
    // The shell creates the file before it writes the pid: wait for the line, not the file.
    const written = () =>
      existsSync(commandPidFile) && readFileSync(commandPidFile, "utf8").endsWith("\n");
    for (let tries = 0; !written() && tries < 500; tries += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    const backgroundPid = readFileSync(commandPidFile, "utf8").trim();
    expect(readFileSync(path.join(home, "prelude-pid"), "utf8").trim()).toBe(backgroundPid);
    expect(backgroundPid).not.toBe(String(started.pid));
  });

  it("passes extra environment variables and does not leak anything else", async () => {
    const output = completed(
      await shellTool(
        { command: 'echo "$GREETING/${ROOST_WORKER_TOKEN:-none}"', env: { GREETING: "hello" } },
        context(),
      ),
    );
    expect(output.stdout).toBe("hello/none\n");
  });

  it("runs the command as `bash -c` would: no wrapper state, no login profile, `exit` and `exec` kept", async () => {
    // A login shell would read ~/.profile (decision 0021: commands run in a non-login bash).
    writeFileSync(path.join(home, ".profile"), "echo profile-was-read\n");
    const script = [
      'echo "args=$#:$0:${1-unset}"',
      "case $- in *C*) echo noclobber-on;; *) echo noclobber-off;; esac",
      "shopt -q login_shell && echo login || echo non-login",
      'echo x > "$HOME/once"; echo y > "$HOME/once" && cat "$HOME/once"',
    ].join("\n");
    const output = completed(await shellTool({ command: script }, context()));
    expect(output.stdout).toBe("args=0:bash:unset\nnoclobber-off\nnon-login\ny\n");
    expect(completed(await shellTool({ command: "exit 7" }, context())).exitCode).toBe(7);
    const exec = completed(await shellTool({ command: "exec sh -c 'echo $0; exit 5'" }, context()));
    expect(exec).toMatchObject({ exitCode: 5, stdout: "sh\n" });
  });

  it("runs in a cwd relative to the workspace, and refuses one that does not exist", async () => {
    mkdirSync(path.join(workspace, "sub"));
    expect(completed(await shellTool({ command: "pwd", cwd: "sub" }, context())).stdout).toBe(
      `${workspace}/sub\n`,
    );
    expect((await failure(shellTool({ command: "pwd", cwd: "missing" }, context()))).code).toBe(
      "not_found",
    );
  });

  it("records that it started before running anything", async () => {
    const ctx = context();
    await shellTool({ command: "true" }, ctx);
    expect(ctx.marks).toHaveLength(1);
  });

  it("starts a background job and reports its state, exit code and output tail", async () => {
    const ctx = context();
    const started = await shellTool(
      // It waits for the test's go-ahead, so that it is still running when asked, however slow
      // the machine (a fixed sleep was not always long enough under load).
      {
        command: "echo working; until [ -e go ]; do sleep 0.02; done; echo done; exit 4",
        background: true,
      },
      ctx,
    );
    if (started.kind !== "started") throw new Error("expected a started job");
    expect(started.pid).toBeGreaterThan(0);
    const running = await shellStatusTool({ jobId: started.jobId }, context());
    expect(running.state).toBe("running");
    writeFileSync(path.join(workspace, "go"), "");
    let status = running;
    while (status.state === "running") {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = await shellStatusTool({ jobId: started.jobId }, context());
    }
    expect(status).toMatchObject({ state: "exited", exitCode: 4, stdoutTail: "working\ndone\n" });
    expect(status.endedAt).toBeDefined();
  });

  it("says so when asked about a job that does not exist", async () => {
    expect((await failure(shellStatusTool({ jobId: "job_nope" }, context()))).code).toBe(
      "not_found",
    );
  });
});

describe("read", () => {
  it("returns a line range with the total line count", async () => {
    writeFileSync(path.join(workspace, "f.txt"), "a\nb\nc\nd\ne\n");
    const output = await readTool({ path: "f.txt", offset: 2, limit: 2 }, context());
    expect(output).toMatchObject({
      kind: "text",
      content: "b\nc",
      startLine: 2,
      endLine: 3,
      totalLines: 5,
      truncated: true,
    });
    const all = await readTool({ path: "f.txt" }, context());
    expect(all).toMatchObject({ content: "a\nb\nc\nd\ne", endLine: 5, truncated: false });
  });

  it("stops at maxBytes", async () => {
    writeFileSync(path.join(workspace, "big.txt"), "0123456789\n".repeat(100));
    const output = await readTool({ path: "big.txt", maxBytes: 50 }, context());
    expect(output).toMatchObject({
      kind: "text",
      content: "0123456789\n".repeat(4).trimEnd(),
      endLine: 4,
      truncated: true,
    });
  });

  it("detects binary files", async () => {
    writeFileSync(path.join(workspace, "blob.bin"), Buffer.from([1, 2, 0, 3, 255, 254]));
    expect(await readTool({ path: "blob.bin" }, context())).toEqual({
      kind: "binary",
      path: path.join(workspace, "blob.bin"),
      sizeBytes: 6,
    });
    writeFileSync(
      path.join(workspace, "latin1.txt"),
      Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a, 0x63, 0x61, 0x66, 0xe9]),
    );
    expect((await readTool({ path: "latin1.txt" }, context())).kind).toBe("binary");
  });

  it("reads UTF-8 text as text even when the sniff window cuts a character", async () => {
    writeFileSync(path.join(workspace, "utf8.txt"), `${"x".repeat(8191)}é and more`);
    expect((await readTool({ path: "utf8.txt" }, context())).kind).toBe("text");
  });

  it("returns images as base64 with their mime type", async () => {
    const png = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");
    writeFileSync(path.join(workspace, "pixel.png"), png);
    const output = await readTool({ path: "pixel.png" }, context());
    expect(output).toMatchObject({
      kind: "image",
      mimeType: "image/png",
      data: png.toString("base64"),
      sizeBytes: png.length,
    });
  });

  it("explains missing files and directories", async () => {
    expect((await failure(readTool({ path: "nope.txt" }, context()))).code).toBe("not_found");
    expect((await failure(readTool({ path: "." }, context()))).code).toBe("is_directory");
  });
});

describe("write", () => {
  it("creates parent directories and reports whether the file is new", async () => {
    const first = await writeTool({ path: "a/b/c.txt", content: "one" }, context());
    expect(first).toEqual({
      path: path.join(workspace, "a/b/c.txt"),
      bytesWritten: 3,
      created: true,
    });
    const second = await writeTool({ path: "a/b/c.txt", content: "two!" }, context());
    expect(second.created).toBe(false);
    expect(readFileSync(path.join(workspace, "a/b/c.txt"), "utf8")).toBe("two!");
  });

  it("fails, and promptly, where a parent folder cannot be made (under /proc, where Node's recursive mkdir never settles)", async () => {
    // A link in the workspace leads there, as a command could make one.
    symlinkSync("/proc/self", path.join(workspace, "proc-link"));
    for (const target of ["/proc/self/roost-none/a/b.txt", "proc-link/roost-none/b.txt"]) {
      await expect(writeTool({ path: target, content: "x" }, context())).rejects.toMatchObject({
        message: expect.stringContaining("roost-none"),
      });
    }
  }, 5000);

  it("leaves no temporary files and keeps the file's permissions", async () => {
    const file = path.join(workspace, "run.sh");
    writeFileSync(file, "old");
    chmodSync(file, 0o750);
    await writeTool({ path: "run.sh", content: "#!/bin/sh\n" }, context());
    expect(statSync(file).mode & 0o777).toBe(0o750);
    expect((await listTool({}, context())).entries.map((entry) => entry.name)).toEqual(["run.sh"]);
  });

  it("writes through a symlink instead of replacing it", async () => {
    writeFileSync(path.join(workspace, "target.txt"), "old");
    symlinkSync("target.txt", path.join(workspace, "link.txt"));
    await writeTool({ path: "link.txt", content: "new" }, context());
    expect(readFileSync(path.join(workspace, "target.txt"), "utf8")).toBe("new");
  });

  it("decodes base64 content", async () => {
    await writeTool(
      { path: "bytes.bin", content: Buffer.from([0, 1, 2]).toString("base64"), encoding: "base64" },
      context(),
    );
    expect([...readFileSync(path.join(workspace, "bytes.bin"))]).toEqual([0, 1, 2]);
  });
});

describe("write records what it replaced", () => {
  it("returns the replaced text, and nothing for a new file", async () => {
    const file = path.join(workspace, "notes.txt");
    writeFileSync(file, "old line\nkept\n");
    const output = await writeTool({ path: "notes.txt", content: "new line\nkept\n" }, context());
    expect(output).toEqual({
      path: file,
      bytesWritten: 14,
      created: false,
      previous: "old line\nkept\n",
    });
    const created = await writeTool({ path: "fresh.txt", content: "x" }, context());
    expect(created.previous).toBeUndefined();
    expect(created.previousOmitted).toBeUndefined();
  });

  it("says binary or too large instead of recording such a file", async () => {
    writeFileSync(path.join(workspace, "blob.bin"), Buffer.from([0x89, 0x50, 0x00, 0x01]));
    writeFileSync(path.join(workspace, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    writeFileSync(path.join(workspace, "big.txt"), "a".repeat(writePreviousMaxBytes + 1));
    writeFileSync(path.join(workspace, "edge.txt"), "b".repeat(writePreviousMaxBytes));
    const write = (name: string) => writeTool({ path: name, content: "new" }, context());
    expect(await write("blob.bin")).toMatchObject({ previousOmitted: "binary" });
    expect(await write("latin1.txt")).toMatchObject({ previousOmitted: "binary" });
    const big = await write("big.txt");
    expect(big.previousOmitted).toBe("too_large");
    expect(big.previous).toBeUndefined();
    expect((await write("edge.txt")).previous).toBe("b".repeat(writePreviousMaxBytes));
  });

  it("records the replaced text before writing, and a repeated call reports the first attempt's", async () => {
    const file = path.join(workspace, "config.ini");
    writeFileSync(file, "mode=old\n");
    const first = context();
    await writeTool({ path: "config.ini", content: "mode=new\n" }, first);
    expect(first.marks).toEqual([{ created: false, previous: "mode=old\n" }]);
    // The worker died after the rename: the file already holds the new text.
    const repeated = await writeTool(
      { path: "config.ini", content: "mode=new\n" },
      context({
        previous: {
          state: "started",
          callId: first.callId,
          tool: "write",
          startedAt: new Date().toISOString(),
          detail: first.marks[0],
        },
      }),
    );
    expect(repeated).toMatchObject({ created: false, previous: "mode=old\n" });
    expect(readFileSync(file, "utf8")).toBe("mode=new\n");
  });

  it("never reads a file outside the workspace, through a link or by its path", async () => {
    const outside = path.join(root, "outside-secret.txt");
    writeFileSync(outside, "TOP SECRET KEY");
    symlinkSync(outside, path.join(workspace, "innocent.txt"));
    const linked = context();
    const output = await writeTool({ path: "innocent.txt", content: "overwritten" }, linked);
    expect(output.previousOmitted).toBe("outside_workspace");
    expect(JSON.stringify([output, linked.marks])).not.toContain("TOP SECRET");
    // The write itself still goes through the link, as before.
    expect(readFileSync(outside, "utf8")).toBe("overwritten");
    writeFileSync(outside, "TOP SECRET KEY");
    const direct = await writeTool({ path: outside, content: "again" }, context());
    expect(direct.previousOmitted).toBe("outside_workspace");
    expect(JSON.stringify(direct)).not.toContain("TOP SECRET");
    // A link inside the workspace to a workspace file is read as usual.
    writeFileSync(path.join(workspace, "real.txt"), "inside");
    symlinkSync("real.txt", path.join(workspace, "alias.txt"));
    expect((await writeTool({ path: "alias.txt", content: "v2" }, context())).previous).toBe(
      "inside",
    );
  });
});

describe("edit", () => {
  const file = () => path.join(workspace, "code.ts");

  it("replaces a unique string", async () => {
    writeFileSync(file(), "const a = 1;\nconst b = 2;\n");
    expect(
      await editTool({ path: "code.ts", oldString: "b = 2", newString: "b = $& 3" }, context()),
    ).toEqual({ path: file(), replacements: 1 });
    expect(readFileSync(file(), "utf8")).toBe("const a = 1;\nconst b = $& 3;\n");
  });

  it("fails when the string is not unique, and replaces all with replaceAll", async () => {
    writeFileSync(file(), "x x x");
    const error = await failure(
      editTool({ path: "code.ts", oldString: "x", newString: "y" }, context()),
    );
    expect(error.code).toBe("not_unique");
    expect(error.message).toMatch(/occurs 3 times/);
    expect(readFileSync(file(), "utf8")).toBe("x x x");
    expect(
      (
        await editTool(
          { path: "code.ts", oldString: "x", newString: "y", replaceAll: true },
          context(),
        )
      ).replacements,
    ).toBe(3);
    expect(readFileSync(file(), "utf8")).toBe("y y y");
  });

  it("fails when the string is missing or the file does not exist", async () => {
    writeFileSync(file(), "hello");
    expect(
      (await failure(editTool({ path: "code.ts", oldString: "bye", newString: "x" }, context())))
        .code,
    ).toBe("no_match");
    expect(
      (await failure(editTool({ path: "other.ts", oldString: "a", newString: "b" }, context())))
        .code,
    ).toBe("not_found");
  });

  it("after a worker restart, recognises an edit that already happened by the file's hash", async () => {
    writeFileSync(file(), "alpha beta");
    const first = context();
    await editTool({ path: "code.ts", oldString: "alpha", newString: "gamma" }, first);
    const detail = first.marks[0];
    const repeated = context({
      previous: {
        state: "started",
        callId: first.callId,
        tool: "edit",
        startedAt: new Date().toISOString(),
        detail,
      },
    });
    // Without the hash check this would fail with no_match: "alpha" is gone.
    expect(
      await editTool({ path: "code.ts", oldString: "alpha", newString: "gamma" }, repeated),
    ).toEqual({ path: file(), replacements: 1 });
    expect(readFileSync(file(), "utf8")).toBe("gamma beta");
  });
});

describe("list and glob", () => {
  it("lists entries with type and size, sorted", async () => {
    writeFileSync(path.join(workspace, "b.txt"), "12345");
    mkdirSync(path.join(workspace, "a-dir"));
    symlinkSync("b.txt", path.join(workspace, "c-link"));
    const output = await listTool({ path: "." }, context());
    expect(output).toEqual({
      path: workspace,
      truncated: false,
      entries: [
        { name: "a-dir", type: "directory", sizeBytes: expect.any(Number) },
        { name: "b.txt", type: "file", sizeBytes: 5 },
        { name: "c-link", type: "symlink", sizeBytes: 5 },
      ],
    });
    expect((await listTool({ limit: 1 }, context())).truncated).toBe(true);
  });

  it("refuses to list a file", async () => {
    writeFileSync(path.join(workspace, "f"), "");
    expect((await failure(listTool({ path: "f" }, context()))).code).toBe("not_a_directory");
  });

  it("matches a pattern under a directory", async () => {
    mkdirSync(path.join(workspace, "src/deep"), { recursive: true });
    for (const name of ["src/a.ts", "src/deep/b.ts", "src/c.js", "top.ts"])
      writeFileSync(path.join(workspace, name), "");
    expect(await globTool({ pattern: "src/**/*.ts" }, context())).toEqual({
      path: workspace,
      matches: ["src/a.ts", "src/deep/b.ts"],
      truncated: false,
    });
    expect((await globTool({ pattern: "*.ts", path: "src" }, context())).matches).toEqual(["a.ts"]);
    expect((await globTool({ pattern: "**/*", limit: 2 }, context())).truncated).toBe(true);
    expect((await failure(globTool({ pattern: "../*" }, context()))).code).toBe("invalid_input");
  });
});

describe("job files", () => {
  it("removes a finished foreground job's directory unless the result names a file in it", async () => {
    const small = context();
    await shellTool({ command: "echo small" }, small);
    const big = context();
    const output = completed(await shellTool({ command: "seq 1 50000" }, big));
    expect(existsSync(output.stdoutPath!)).toBe(true);
    const jobsDir = path.join(stateDir, "jobs");
    // Removal runs after the done record is written, off the latency path.
    await expect
      .poll(async () => (await listTool({ path: jobsDir }, context())).entries.length)
      .toBe(1);
  });
});
