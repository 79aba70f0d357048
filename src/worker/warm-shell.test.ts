import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ShellCompletedOutput, ShellInput } from "../protocol/index.ts";
import { jobPaths, jobsRoot } from "./jobs.ts";
import { jobIdFor, shellTool } from "./shell-tool.ts";
import type { ToolContext } from "./tool-context.ts";
import { createWarmShell, type WarmShell } from "./warm-shell.ts";

let root: string;
let workspace: string;
let stateDir: string;
let home: string;
let prelude: string;
let env: Record<string, string>;
let shells: WarmShell[] = [];
let calls = 0;

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "roost-warm-"));
  workspace = path.join(root, "workspace");
  stateDir = path.join(root, "state");
  home = path.join(root, "home");
  for (const dir of [workspace, stateDir, home]) mkdirSync(dir, { recursive: true });
  // Like the local provider's: it runs in the command's subshell, which it changes.
  prelude = path.join(root, "prelude.sh");
  writeFileSync(prelude, 'echo "$BASHPID" >> "$HOME/prelude-pids"; prelude_var=set\n');
  env = { PATH: "/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" };
});

afterEach(() => {
  for (const shell of shells) shell.close();
  shells = [];
  rmSync(root, { recursive: true, force: true });
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A warm shell with a wrapper waiting (or none, when `warm` is false). */
async function warmShell(options: { idleMs?: number } = {}): Promise<WarmShell> {
  const shell = createWarmShell({ env, prelude, ...options });
  shells.push(shell);
  shell.refill();
  await pause(30); // the refill's pause, and the spawn
  return shell;
}

function context(shell: WarmShell | undefined, overrides: Partial<ToolContext> = {}): ToolContext {
  calls += 1;
  return {
    callId: `warm-${calls}`,
    workspace,
    stateDir,
    commandEnv: env,
    jobPrelude: prelude,
    ...(shell === undefined ? {} : { warmShell: shell }),
    deadline: Date.now() + 30_000,
    signal: new AbortController().signal,
    emit: () => undefined,
    markStarted: async () => undefined,
    afterRecorded: (task) => void task(),
    afterSent: (task) => task(),
    previous: undefined,
    durable: false,
    now: Date.now,
    ...overrides,
  };
}

async function run(input: ShellInput, ctx: ToolContext): Promise<ShellCompletedOutput> {
  const output = await shellTool(input, ctx);
  if (output.kind !== "completed")
    throw new Error(`expected a completed output, got ${output.kind}`);
  return output;
}

/** Which wrapper ran a background job: its recorded token, if any. */
function wrapperOf(jobStdout: string): string | undefined {
  return (
    JSON.parse(readFileSync(path.join(path.dirname(jobStdout), "job.json"), "utf8")) as {
      wrapper?: string;
    }
  ).wrapper;
}

describe("warm shell", () => {
  it("WS1: a command sees what it sees under a cold start, prelude included", async () => {
    const probe = [
      'echo "args=$#:$0:${1-unset}"',
      "pwd",
      "env | sort",
      "echo \"vars=$(set | grep -c '^roost_')\"",
      "case $- in *C*) echo noclobber-on;; *) echo noclobber-off;; esac",
      "shopt -q login_shell && echo login || echo non-login",
      'read -r line; echo "stdin=$?"',
      'echo "prelude=${prelude_var-unset}"',
      '[ "$BASHPID" != "$$" ] && echo "in a subshell of the wrapper"',
      'me=$BASHPID; echo "prelude ran here: $(grep -c "^$me$" "$HOME/prelude-pids")"',
    ].join("\n");
    mkdirSync(path.join(workspace, "sub"));
    const cold = await run({ command: probe, cwd: "sub" }, context(undefined));
    // Read before the warm wrapper starts: its subshell may source the prelude at any moment
    // after (it did before this line under CI load, and the file then looked unchanged).
    const before = readFileSync(path.join(home, "prelude-pids"), "utf8");
    const shell = await warmShell();
    const warm = await run({ command: probe, cwd: "sub" }, context(shell));
    // The warm wrapper's subshell sourced the prelude (one more line).
    expect(readFileSync(path.join(home, "prelude-pids"), "utf8").length).toBeGreaterThan(
      before.length,
    );
    expect(warm.stdout).toBe(cold.stdout);
    expect(warm.stderr).toBe(cold.stderr);
    expect(warm.stdout).toContain("args=0:bash:unset\n");
    expect(warm.stdout).toContain(`${workspace}/sub\n`);
    expect(warm.stdout).toContain("vars=0\n");
    expect(warm.stdout).toContain("stdin=1\n");
    expect(warm.stdout).toContain("prelude=set\n");
    expect(warm.stdout).toContain("in a subshell of the wrapper\n");
    expect(warm.stdout).toContain("prelude ran here: 1\n");
    expect(warm.exitCode).toBe(0);
  });

  it("takes the waiting wrapper, records it, and starts the next one after the call", async () => {
    const shell = await warmShell();
    const first = await shellTool({ command: "sleep 0.3", background: true }, context(shell));
    if (first.kind !== "started") throw new Error("expected a started job");
    const token = wrapperOf(first.stdoutPath);
    expect(token).toMatch(/^roost-warm-/);
    // WS4: the job's process names the token (a later worker's isJobAlive looks for it).
    expect(readFileSync(`/proc/${first.pid}/cmdline`, "utf8").split("\0")).toContain(token);
    await pause(40);
    const second = await shellTool({ command: "true", background: true }, context(shell));
    if (second.kind !== "started") throw new Error("expected a started job");
    const next = wrapperOf(second.stdoutPath);
    expect(next).toMatch(/^roost-warm-/);
    expect(next).not.toBe(token);
  });

  it("records the status of a command whose subshell is killed (the wrapper stays outside it)", async () => {
    const shell = await warmShell();
    const killed = await run({ command: "kill -9 $BASHPID" }, context(shell));
    expect(killed.exitCode).toBe(137);
    await pause(40);
    const exited = await run({ command: "echo out; echo err >&2; exit 3" }, context(shell));
    expect(exited).toMatchObject({ exitCode: 3, stdout: "out\n", stderr: "err\n" });
  });

  it("records the status when the worker is gone before the job ends (the pipe keeps the job)", async () => {
    const shell = await warmShell();
    const taken = shell.take(env, prelude)!;
    const dir = path.join(jobsRoot(stateDir), "call_orphan");
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "command"), "sleep 0.2; echo done");
    for (const name of ["stdout", "stderr"]) writeFileSync(path.join(dir, name), "");
    shell.start(taken, dir, workspace);
    // Nothing reads its end or waits for it any more, as after a worker's death.
    taken.child.removeAllListeners();
    await expect
      .poll(() => existsSync(jobPaths(dir).exit) && readFileSync(jobPaths(dir).exit, "utf8"), {
        timeout: 5000,
      })
      .toBe("0\n");
    expect(readFileSync(jobPaths(dir).stdout, "utf8")).toBe("done\n");
    expect(readFileSync(jobPaths(dir).pid, "utf8")).toBe(`${taken.child.pid}\n`);
  });

  /** Hands `command` to the waiting wrapper as the shell tool would, without the tool. */
  function startBare(shell: WarmShell, name: string, command: string) {
    const taken = shell.take(env, prelude)!;
    const dir = path.join(jobsRoot(stateDir), name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "command"), command);
    for (const stream of ["stdout", "stderr"]) writeFileSync(path.join(dir, stream), "");
    shell.start(taken, dir, workspace);
    const exited = new Promise<number | null>((resolve) =>
      taken.child.once("exit", (code) => resolve(code)),
    );
    return { taken, dir, exited };
  }

  it("reports the command's status as it ends, before its wrapper exits; the wrapper still records it", async () => {
    const shell = await warmShell();
    const { taken, dir, exited } = startBare(shell, "call_early", "echo out; exit 3");
    let wrapperGone = false;
    void exited.then(() => (wrapperGone = true));
    expect(await taken.status).toBe(3);
    // The trap's write comes from the subshell, which the wrapper still waits for.
    expect(wrapperGone).toBe(false);
    expect(await exited).toBe(3);
    expect(readFileSync(jobPaths(dir).exit, "utf8")).toBe("3\n");
    expect(readFileSync(jobPaths(dir).stdout, "utf8")).toBe("out\n");
  });

  it("reports nothing early when the command replaces the trap, execs, or takes the descriptor; the call's status is the wrapper's", async () => {
    const cases = [
      { command: "trap 'echo mine' EXIT; exit 4", exitCode: 4, stdout: "mine\n" },
      { command: "exec bash -c 'exit 6'", exitCode: 6, stdout: "" },
      // A descriptor of its own on the trap's number (10, the first bash gives out): the trap
      // must not write its status into the command's file.
      { command: 'exec 10>"$HOME/ten"; echo ok; exit 2', exitCode: 2, stdout: "ok\n" },
    ];
    for (const [index, expected] of cases.entries()) {
      const shell = await warmShell();
      const { taken } = startBare(shell, `call_none_${index}`, expected.command);
      expect(await taken.status).toBeUndefined();
      const other = await warmShell();
      const output = await run({ command: expected.command }, context(other));
      expect(output).toMatchObject({ exitCode: expected.exitCode, stdout: expected.stdout });
    }
    expect(readFileSync(path.join(home, "ten"), "utf8")).toBe("");
  });

  it("a command flooding the trap's descriptor changes no status and stalls nothing", async () => {
    const shell = await warmShell();
    // fd 10 is the trap's descriptor; `yes` fills it before the command's end.
    const command = "yes flood >&10 & sleep 0.1; exit 3";
    const { taken, exited } = startBare(shell, "call_flood", command);
    expect(await taken.status).toBeUndefined();
    expect(await exited).toBe(3);
    const other = await warmShell();
    const output = await run({ command }, context(other));
    expect(output.exitCode).toBe(3);
  });

  it("records the command's own status, not SIGPIPE's, when the worker's end is closed before the job ends", async () => {
    const shell = await warmShell();
    const taken = shell.take(env, prelude)!;
    // As after the worker's death: nobody reads the trap's descriptor any more.
    taken.child.stdout!.destroy();
    const dir = path.join(jobsRoot(stateDir), "call_gone");
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "command"), "sleep 0.1; exit 5");
    for (const stream of ["stdout", "stderr"]) writeFileSync(path.join(dir, stream), "");
    shell.start(taken, dir, workspace);
    await expect
      .poll(() => existsSync(jobPaths(dir).exit) && readFileSync(jobPaths(dir).exit, "utf8"))
      .toBe("5\n");
  });

  it("removes a finished call's folder only once its wrapper has recorded the status there", async () => {
    const tasks: Promise<unknown>[] = [];
    const shell = await warmShell();
    for (let index = 0; index < 8; index += 1) {
      const output = await run(
        { command: `exit ${index}` },
        context(shell, { afterRecorded: (task) => void tasks.push(task()) }),
      );
      expect(output.exitCode).toBe(index);
      await pause(20); // the next wrapper
    }
    await Promise.all(tasks);
    expect(readdirSync(jobsRoot(stateDir))).toEqual([]);
  });

  it("kills the whole job on timeout, as a cold one", async () => {
    const shell = await warmShell();
    const output = await run(
      { command: "echo $$ > $HOME/group; sleep 30 & sleep 30" },
      context(shell, { deadline: Date.now() + 300 }),
    );
    expect(output).toMatchObject({ timedOut: true, exitCode: null });
    const group = Number(readFileSync(path.join(home, "group"), "utf8"));
    const alive = () => {
      try {
        process.kill(-group, 0);
        return true;
      } catch {
        return false;
      }
    };
    await expect.poll(alive, { timeout: 5000 }).toBe(false);
  });

  it("runs nothing when its job was claimed already (a restart racing a start)", async () => {
    const shell = await warmShell();
    const ctx = context(shell);
    // The job id is derived from the call id: claim its folder before the call runs.
    const claimed = path.join(jobsRoot(stateDir), jobIdFor(ctx.callId, false));
    mkdirSync(claimed, { recursive: true });
    writeFileSync(jobPaths(claimed).pid, `${process.pid}\n`);
    // The claimant (this process, standing in for the other wrapper) is not a job's process, so
    // the call ends as a vanished job: what matters is that the warm wrapper ran nothing.
    await shellTool({ command: "touch $HOME/ran" }, ctx).catch(() => undefined);
    expect(existsSync(path.join(home, "ran"))).toBe(false);
    expect(existsSync(jobPaths(claimed).exit)).toBe(false);
  });

  it("WS2: a waiting wrapper whose stdin closes runs nothing and exits; close() ends it", async () => {
    const shell = await warmShell();
    const taken = shell.take(env, prelude);
    expect(taken).toBeDefined();
    const exited = new Promise((resolve) => taken!.child.once("exit", resolve));
    taken!.child.stdin!.end();
    expect(await exited).toBe(0);

    const other = await warmShell();
    const waiting = other.take(env, prelude);
    expect(waiting).toBeDefined();
    // Put back is not possible: taking it and closing the shell ends it the same way.
    const gone = new Promise((resolve) => waiting!.child.once("exit", resolve));
    waiting!.child.stdin!.end();
    other.close();
    expect(await gone).toBe(0);
  });

  it("WS3: none waits once no call came for idleMs, and none for other variables or prelude", async () => {
    await warmShell({ idleMs: 400 });
    const pids = () =>
      readdirSync("/proc").filter((name) => {
        try {
          return readFileSync(`/proc/${name}/cmdline`, "utf8").includes(prelude);
        } catch {
          return false;
        }
      });
    // The wrapper and its subshell (polled: under load bash may take longer than the helper's
    // pause to start and fork).
    await expect.poll(() => pids().length, { timeout: 350, interval: 10 }).toBe(2);
    await pause(500);
    await expect.poll(pids, { timeout: 2000 }).toEqual([]);
    const other = await warmShell();
    expect(other.take({ ...env, EXTRA: "1" }, prelude)).toBeUndefined();
    await pause(30);
    other.refill();
    await pause(30);
    expect(other.take(env, undefined)).toBeUndefined();
  });

  it("a wrapper killed while it waits is not used: the call starts cold", async () => {
    const shell = await warmShell();
    const waiting = shell.take(env, prelude)!;
    shell.refill();
    await pause(30);
    const next = shell.take(env, prelude)!;
    process.kill(-next.child.pid!, "SIGKILL");
    await new Promise((resolve) => next.child.once("exit", resolve));
    waiting.child.stdin!.end();
    const output = await run({ command: "echo still works" }, context(shell));
    expect(output.stdout).toBe("still works\n");
  });
});
