/**
 * Fault tests for the computer (ARCHITECTURE.md §6, §12), each named after its failure. Roost
 * runs as a child process with the computer provider under test; the demo model turns `$ cmd`
 * messages into shell calls.
 */
import { readFileSync, readdirSync, mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

// These faults are about the worker and its done-log, which every provider shares. They run on
// the process provider because they find and kill the worker by its host pid, and because the
// local provider's sandboxes end with the server by design (docs/computers.md), so "the server
// dies while a command runs" there means the command ends too (the done-log then answers
// `interrupted`, which src/worker's tests cover).
const provider = "process";

/** Pids of the computer's worker processes on this host. */
function workerPids(computerId: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "latin1");
      const environ = readFileSync(`/proc/${entry}/environ`, "latin1");
      // The worker from its sources, its stripped files or its bundle (src/computers/worker-build.ts).
      if (
        /worker\/main\.|bundle\/main\.[mc]js/.test(cmdline) &&
        environ.includes(`COMPUTER_ID=${computerId}\0`)
      )
        pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

describe(`faults: the computer (${provider} provider)`, () => {
  let dataDir: string;
  let roost: RoostProcess;
  let api: ReturnType<typeof apiClient>;

  async function start(env: Record<string, string> = {}) {
    roost = await createRoostProcess({
      dataDir,
      env: { ROOST_COMPUTER_PROVIDER: provider, ROOST_FOLLOW_UP_WINDOW_MS: "200", ...env },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("faulty");
    const conversation = await api.createConversation(bot.id);
    const computer = await api.call<{ id: string }>("GET", "/v1/computers/me");
    const workspace = join(dataDir, "computers", computer.id, "workspace");
    return { conversationId: conversation.id, computerId: computer.id, workspace };
  }

  const lines = (file: string) =>
    existsSync(file)
      ? readFileSync(file, "utf8")
          .split("\n")
          .filter((line) => line !== "")
      : [];

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-fault-computer-"));
  });
  afterEach(async () => {
    await roost?.stop();
    if (process.env.ROOST_KEEP_TEST_DATA === undefined)
      rmSync(dataDir, { recursive: true, force: true });
    else console.log(`kept ${dataDir}`);
  });

  it("worker SIGKILLed mid-call: the call completes after the worker restarts and its side effect happened once", async () => {
    const { conversationId, computerId, workspace } = await start();
    await api.send(conversationId, "$ echo ran >> runs.txt; sleep 2; echo finished");
    await waitFor(() => lines(join(workspace, "runs.txt")).length === 1, {
      what: "the command to start",
    });
    const [pid] = workerPids(computerId);
    expect(pid).toBeDefined();
    process.kill(pid!, "SIGKILL");
    const steps = await api.waitForSteps(conversationId, "reply", 1, 60_000);
    const tool = steps.find((step) => step.kind === "tool")!;
    expect(tool.payload.name).toBe("shell");
    expect(lines(join(workspace, "runs.txt"))).toEqual(["ran"]);
    expect(workerPids(computerId)).toHaveLength(1); // restarted, and only once
  });

  it("server SIGKILLed during a running shell call: after restart the result comes from the done-log and the command did not run twice", async () => {
    const { conversationId, computerId, workspace } = await start();
    await api.send(conversationId, "$ echo ran >> runs.txt; sleep 3; echo finished");
    await waitFor(() => lines(join(workspace, "runs.txt")).length === 1, {
      what: "the command to start",
    });
    await roost.kill("SIGKILL");
    await roost.start();
    const steps = await api.waitForSteps(conversationId, "reply", 1, 60_000);
    const tool = steps.find((step) => step.kind === "tool")!;
    expect(tool.payload.details).toMatchObject({ exitCode: 0, stdout: "finished\n" });
    expect(lines(join(workspace, "runs.txt"))).toEqual(["ran"]);
    expect(steps.filter((step) => step.kind === "tool")).toHaveLength(1);
    await waitFor(() => workerPids(computerId).length === 1, { what: "one worker" });
  });

  it("idle timer: an idle computer sleeps after the configured time, and never during a turn", async () => {
    const { conversationId } = await start({ ROOST_IDLE_SLEEP_MS: "1000" });
    const states: string[] = [];
    await api.send(conversationId, "$ sleep 4; echo still-awake");
    // While the 4-second command runs (4 idle periods), the computer stays awake.
    await waitFor(
      async () => (await api.call<{ state: string }>("GET", "/v1/computers/me")).state === "awake",
      { what: "awake" },
    );
    const watching = (async () => {
      for (;;) {
        const steps = await api.steps(conversationId);
        if (steps.some((step) => step.kind === "reply")) return;
        states.push((await api.call<{ state: string }>("GET", "/v1/computers/me")).state);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    await watching;
    expect(states.length).toBeGreaterThan(10);
    expect(new Set(states)).toEqual(new Set(["awake"]));
    // Then, with nothing to do, it falls asleep by itself.
    await waitFor(
      async () => (await api.call<{ state: string }>("GET", "/v1/computers/me")).state === "asleep",
      {
        timeoutMs: 15_000,
        what: "the idle computer to sleep",
      },
    );
  });
});

const isRoot = process.getuid?.() === 0;
if (!isRoot && process.env.CI === "true")
  throw new Error("the local-provider fault tests need root in CI");

describe.skipIf(!isRoot)("faults: the computer (local provider; skipped when not root)", () => {
  let dataDir: string;
  let roost: RoostProcess | undefined;

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-fault-local-"));
  });
  afterEach(async () => {
    await roost?.stop();
    roost = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("server SIGKILLed while the computer is awake: the sandbox ends with it, and the next tool call wakes it again at once", async () => {
    roost = await createRoostProcess({
      dataDir,
      env: { ROOST_COMPUTER_PROVIDER: "local", ROOST_FOLLOW_UP_WINDOW_MS: "200" },
    });
    await roost.start();
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("survivor");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "$ echo kept > kept.txt");
    await api.waitForSteps(conversation.id, "reply", 1, 60_000);
    expect((await api.call<{ state: string }>("GET", "/v1/computers/me")).state).toBe("awake");

    await roost.kill("SIGKILL");
    await roost.start();
    // The control plane still says "awake"; the sandbox is gone. A non-waking tool must not wait
    // for a worker that never comes: it finds the computer asleep…
    await api.send(conversation.id, "ls");
    const listed = (await api.waitForSteps(conversation.id, "reply", 2, 30_000))
      .filter((step) => step.kind === "tool")
      .at(-1)!;
    expect(listed.payload.output).toBe(
      "The computer is asleep. Use Shell or Read to wake it, then try again.",
    );
    // …and a waking one wakes it, with its files.
    await api.send(conversation.id, "$ cat kept.txt");
    const steps = await api.waitForSteps(conversation.id, "reply", 3, 30_000);
    expect(steps.filter((step) => step.kind === "tool").at(-1)!.payload.details).toMatchObject({
      exitCode: 0,
      stdout: "kept\n",
    });
  });
});
