/**
 * The owner interrupts a running turn (ARCHITECTURE.md §4): `$ sleep 61.5; echo finished`, stopped
 * after 2 s by a message sent with `interrupt: true`. That message is answered within seconds,
 * `finished` never appears, and the command's process is gone from the computer.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

const run = promisify(execFile);
const marker = "sleep 61.5";

/** Host pids of the test command (the host sees every sandbox's processes). */
async function commandPids(): Promise<string[]> {
  const { stdout } = await run("pgrep", ["-f", marker]).catch(() => ({ stdout: "" }));
  return stdout.split("\n").filter((line) => line.trim() !== "");
}

describe(`interrupting a running turn (${testComputerProvider} provider, demo model)`, () => {
  let dataDir: string;
  let roost: RoostProcess;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-interrupt-"));
    roost = await createRoostProcess({
      dataDir,
      env: { ROOST_COMPUTER_PROVIDER: testComputerProvider, ROOST_FOLLOW_UP_WINDOW_MS: "2000" },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
  });
  afterAll(async () => {
    await roost?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("an interrupt stops `sleep; echo finished` after 2 s: the new message is answered, the process is gone", async () => {
    const bot = await api.createBot("stoppable");
    const { id: conversationId } = await api.createConversation(bot.id);
    await api.send(conversationId, `$ ${marker}; echo finished | tee /workspace/finished.txt`);
    await waitFor(async () => (await commandPids()).length > 0, {
      timeoutMs: 60_000,
      what: "the command to start on the computer",
    });
    await new Promise((resolve) => setTimeout(resolve, 2000));

    const interruptedAt = Date.now();
    await api.call("POST", `/v1/conversations/${conversationId}/messages`, {
      text: "$ echo after the stop",
      clientMessageId: "stop-1",
      interrupt: true,
    });
    const steps = await api.waitForSteps(conversationId, "reply", 1, 30_000);
    const answeredInMs = Date.now() - interruptedAt;
    expect(answeredInMs).toBeLessThan(15_000);

    const kinds = steps.map((step) => step.kind);
    expect(kinds).toContain("interrupted");
    const interrupted = steps.find((step) => step.kind === "interrupted")!;
    expect(interrupted.payload).toMatchObject({
      reason: "owner",
      stopped: [{ kind: "tool", name: "shell" }],
    });
    const tools = steps.filter((step) => step.kind === "tool");
    expect(tools[0]!.payload.details).toMatchObject({ interrupted: true });
    const reply = steps.find((step) => step.kind === "reply")!;
    expect(JSON.stringify(reply.payload)).toContain("after the stop");
    expect(JSON.stringify(steps)).not.toContain("finished\\n");

    await waitFor(async () => (await commandPids()).length === 0, {
      timeoutMs: 10_000,
      what: "the interrupted command's process to be gone",
    });
    const check = await api.call<{ steps: unknown }>(
      "GET",
      `/v1/conversations/${conversationId}/steps`,
    );
    expect(JSON.stringify(check)).not.toContain("finished\\n");
  }, 120_000);

  it("POST …/interrupt with nothing running answers interrupted: false and changes nothing", async () => {
    const bot = await api.createBot("idle");
    const { id: conversationId } = await api.createConversation(bot.id);
    const answer = await api.call<{ interrupted: boolean }>(
      "POST",
      `/v1/conversations/${conversationId}/interrupt`,
    );
    expect(answer).toEqual({ interrupted: false });
    expect(await api.steps(conversationId)).toEqual([]);
  });
});
