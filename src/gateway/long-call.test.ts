/**
 * The issue requires one real 3-minute command (longer than the durable engine's inactivity
 * limits) to complete; it runs in CI like every other test and takes 3 minutes of one test
 * worker. faults.test.ts has a fast stand-in with short heartbeats.
 */
import { describe, expect, it } from "vitest";
import type { ShellCompletedOutput } from "../protocol/index.ts";
import {
  makeComputerDirs,
  spawnWorker,
  startTestGateway,
  waitForWorkerProcess,
} from "./testing/index.ts";

const threeMinutesMs = 180_000;

describe("long calls", () => {
  it(
    "a real 3-minute shell command completes, with progress reports and streamed output on one connection",
    async () => {
      const gw = await startTestGateway(); // production heartbeat settings
      const dirs = makeComputerDirs();
      gw.tokens.set("token-a", "cmp_a");
      const worker = spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs });
      try {
        await waitForWorkerProcess(gw.gateway, "cmp_a", worker);
        const chunks: string[] = [];
        const progress: number[] = [];
        const result = await gw.gateway.call(
          "cmp_a",
          {
            callId: "three-minutes",
            tool: "shell",
            input: { command: "for i in 1 2 3 4 5 6; do sleep 30; echo tick $i; done" },
            timeoutMs: threeMinutesMs + 60_000,
          },
          {
            onChunk: (chunk) => chunks.push(chunk.data),
            onProgress: (elapsedMs) => progress.push(elapsedMs),
          },
        );
        if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
        const output = result.output as ShellCompletedOutput;
        expect(output).toMatchObject({
          exitCode: 0,
          timedOut: false,
          stdout: "tick 1\ntick 2\ntick 3\ntick 4\ntick 5\ntick 6\n",
        });
        expect(output.durationMs).toBeGreaterThanOrEqual(threeMinutesMs);
        expect(chunks.join("")).toBe(output.stdout);
        expect(progress.length).toBeGreaterThanOrEqual(30); // one every 5 s
        expect(gw.events.filter((event) => event.type === "connected")).toHaveLength(1);
      } finally {
        await worker.stop();
        await gw.close();
        dirs.remove();
      }
    },
    threeMinutesMs + 90_000,
  );
});
