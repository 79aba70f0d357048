import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ShellCompletedOutput } from "../protocol/index.ts";
import type { CallResult } from "./gateway.ts";
import {
  makeComputerDirs,
  spawnWorker,
  startTestGateway,
  waitFor,
  waitForWorkerProcess,
} from "./testing/index.ts";
import type { WorkerProcess } from "./testing/index.ts";

function completed(result: CallResult): ShellCompletedOutput {
  if (!result.ok) throw new Error(`call failed: ${result.error.code}: ${result.error.message}`);
  return result.output as ShellCompletedOutput;
}

const runCount = (workspace: string) =>
  existsSync(path.join(workspace, "runs"))
    ? readFileSync(path.join(workspace, "runs"), "utf8").split("\n").filter(Boolean).length
    : 0;

/** Makes the next shell call take a wrapper started ahead (or not: cold). */
async function startsWarm(
  gateway: Awaited<ReturnType<typeof startTestGateway>>["gateway"],
  start: "cold" | "warm",
): Promise<void> {
  if (start === "cold") return;
  completed(
    await gateway.call("cmp_a", {
      callId: "warm-up",
      tool: "shell",
      input: { command: "true" },
      timeoutMs: 30_000,
    }),
  );
  // The next wrapper is started a few ms after that call's result.
  await new Promise((resolve) => setTimeout(resolve, 200));
}

/** The warm wrapper token of the one running job, if it has one. */
function runningWrapper(dirs: { stateDir: string }): string | undefined {
  const jobs = path.join(dirs.stateDir, "jobs");
  for (const name of readdirSync(jobs)) {
    const meta = path.join(jobs, name, "job.json");
    if (existsSync(meta) && !existsSync(path.join(jobs, name, "exit")))
      return (JSON.parse(readFileSync(meta, "utf8")) as { wrapper?: string }).wrapper;
  }
  return undefined;
}

describe("faults", () => {
  // Each with the job's wrapper started by the call (cold) and started ahead of it (warm-shell.ts).
  describe.each(["cold", "warm"] as const)("%s start", (start) => {
    it("worker SIGKILLed mid-call: the call completes after the worker restarts and the side effect happened once", async () => {
      const gw = await startTestGateway();
      const dirs = makeComputerDirs();
      gw.tokens.set("token-a", "cmp_a");
      const workers: WorkerProcess[] = [
        spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs }),
      ];
      try {
        await waitForWorkerProcess(gw.gateway, "cmp_a", workers[0]!);
        await startsWarm(gw.gateway, start);
        const call = gw.gateway.call("cmp_a", {
          callId: "kill-1",
          tool: "shell",
          input: { command: "echo run >> runs; sleep 1.5; echo finished" },
          timeoutMs: 30_000,
        });
        await waitFor(() => runCount(dirs.workspace) === 1, { message: "the command to start" });
        expect(runningWrapper(dirs) !== undefined).toBe(start === "warm");
        workers[0]!.child.kill("SIGKILL");
        await workers[0]!.exited;
        await waitFor(() => !gw.gateway.isConnected("cmp_a"), {
          message: "the gateway to notice the dead worker",
        });

        workers.push(spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs }));
        const output = completed(await call);
        expect(output).toMatchObject({ exitCode: 0, stdout: "finished\n" });
        expect(output.note).toMatch(/worker restarted/);
        expect(runCount(dirs.workspace)).toBe(1);
        expect(gw.events).toContainEqual(
          expect.objectContaining({ type: "call_sent", callId: "kill-1", resend: true }),
        );
      } finally {
        for (const worker of workers) await worker.stop();
        await gw.close();
        dirs.remove();
      }
    });

    it("worker SIGKILLed and the command finished while it was down: the restarted worker returns its exit status", async () => {
      const gw = await startTestGateway();
      const dirs = makeComputerDirs();
      gw.tokens.set("token-a", "cmp_a");
      const workers: WorkerProcess[] = [
        spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs }),
      ];
      try {
        await waitForWorkerProcess(gw.gateway, "cmp_a", workers[0]!);
        await startsWarm(gw.gateway, start);
        const call = gw.gateway.call("cmp_a", {
          callId: "kill-2",
          tool: "shell",
          input: { command: "echo run >> runs; sleep 0.5; echo done > finished; exit 7" },
          timeoutMs: 30_000,
        });
        await waitFor(() => runCount(dirs.workspace) === 1, { message: "the command to start" });
        expect(runningWrapper(dirs) !== undefined).toBe(start === "warm");
        workers[0]!.child.kill("SIGKILL");
        await waitFor(() => existsSync(path.join(dirs.workspace, "finished")), {
          message: "the orphaned command to finish",
        });

        workers.push(spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs }));
        expect(completed(await call)).toMatchObject({ exitCode: 7 });
        expect(runCount(dirs.workspace)).toBe(1);
      } finally {
        for (const worker of workers) await worker.stop();
        await gw.close();
        dirs.remove();
      }
    });
  });

  it("socket dropped mid-call: the worker reconnects and the pending call completes", async () => {
    const gw = await startTestGateway();
    const dirs = makeComputerDirs();
    gw.tokens.set("token-a", "cmp_a");
    const worker = spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs });
    try {
      await waitForWorkerProcess(gw.gateway, "cmp_a", worker);
      const before = gw.gateway.worker("cmp_a")!;
      const call = gw.gateway.call("cmp_a", {
        callId: "drop-1",
        tool: "shell",
        input: { command: "echo run >> runs; sleep 1; echo survived" },
        timeoutMs: 30_000,
      });
      await waitFor(() => runCount(dirs.workspace) === 1, { message: "the command to start" });
      for (const socket of gw.sockets) socket.destroy(); // the network drops, as seen from the gateway

      expect(completed(await call)).toMatchObject({ exitCode: 0, stdout: "survived\n" });
      expect(runCount(dirs.workspace)).toBe(1);
      const after = gw.gateway.worker("cmp_a")!;
      expect(after.bootId).toBe(before.bootId); // same process, new connection
      expect(gw.events.filter((event) => event.type === "connected")).toHaveLength(2);
    } finally {
      await worker.stop();
      await gw.close();
      dirs.remove();
    }
  });

  it("server restarted during a running shell call: the repeated call id attaches and the command runs once", async () => {
    const first = await startTestGateway();
    const dirs = makeComputerDirs();
    first.tokens.set("token-a", "cmp_a");
    const worker = spawnWorker({ gatewayUrl: first.url, token: "token-a", dirs });
    let second: Awaited<ReturnType<typeof startTestGateway>> | undefined;
    try {
      await waitForWorkerProcess(first.gateway, "cmp_a", worker);
      const request = {
        callId: "srv-1",
        tool: "shell",
        input: { command: "echo run >> runs; sleep 1.5; echo from-before-the-restart" },
        timeoutMs: 30_000,
      };
      const lost = first.gateway.call("cmp_a", request).then(
        () => "resolved",
        (error: unknown) => (error as { code?: string }).code,
      );
      await waitFor(() => runCount(dirs.workspace) === 1, { message: "the command to start" });
      await first.close(); // the server process is gone; its pending call with it
      expect(await lost).toBe("computer_unavailable");

      second = await startTestGateway({ port: first.port });
      second.tokens.set("token-a", "cmp_a");
      await waitForWorkerProcess(second.gateway, "cmp_a", worker);
      // The engine retries the journaled step with the same call id.
      const output = completed(await second.gateway.call("cmp_a", request));
      expect(output).toMatchObject({ exitCode: 0, stdout: "from-before-the-restart\n" });
      expect(runCount(dirs.workspace)).toBe(1);
    } finally {
      await worker.stop();
      await second?.close();
      dirs.remove();
    }
  });

  it("long call (stand-in): a command spanning many heartbeat intervals completes on one connection", async () => {
    // Short enough that the command spans many heartbeat intervals, loose enough for a loaded CI host.
    const gw = await startTestGateway({ heartbeatMs: 400, heartbeatTimeoutMs: 2000 });
    const dirs = makeComputerDirs();
    gw.tokens.set("token-a", "cmp_a");
    const worker = spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs });
    try {
      await waitForWorkerProcess(gw.gateway, "cmp_a", worker);
      const chunks: string[] = [];
      const output = completed(
        await gw.gateway.call(
          "cmp_a",
          {
            callId: "long-1",
            tool: "shell",
            input: { command: "sleep 2; echo tick; sleep 1.5; echo done" },
            timeoutMs: 10_000,
          },
          { onChunk: (chunk) => chunks.push(chunk.data) },
        ),
      );
      expect(output).toMatchObject({ exitCode: 0, stdout: "tick\ndone\n" });
      expect(chunks.join("")).toBe("tick\ndone\n");
      expect(gw.events.filter((event) => event.type === "connected")).toHaveLength(1); // no reconnects needed
    } finally {
      await worker.stop();
      await gw.close();
      dirs.remove();
    }
  });
});
