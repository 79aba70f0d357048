/**
 * Issue 17's Restate outage: the engine stops answering for 10 s while a loop waits in its
 * follow-up window. A message sent meanwhile is stored (202) but its kick fails; once the engine
 * is back, the sweep resolves the waiter the store recorded (KICK2), so the message is answered
 * within seconds of the return instead of after the 2-minute window.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

describe("faults: the engine unavailable for 10 s", () => {
  let dataDir: string;
  let roost: RoostProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-engine-outage-"));
    roost = await createRoostProcess({ dataDir });
    await roost.start();
  });
  afterAll(async () => {
    const restate = roost?.restatePid();
    if (restate !== undefined) process.kill(restate, "SIGCONT");
    await roost?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("Restate outage: a message sent during it is answered within seconds of the engine's return", async () => {
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("steady");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "before");
    await api.waitForSteps(conversation.id, "reply");
    // The loop now waits up to 2 minutes for a follow-up; the engine stops answering.
    const restate = roost.restatePid()!;
    process.kill(restate, "SIGSTOP");
    try {
      const ack = await api.send(conversation.id, "during the outage");
      expect(ack.seq).toBeGreaterThan(0); // stored, answered 202
      await new Promise((resolve) => setTimeout(resolve, 10_000));
    } finally {
      process.kill(restate, "SIGCONT");
    }
    const resumedAt = Date.now();
    await waitFor(
      async () =>
        (await api.steps(conversation.id)).some(
          (step) =>
            step.kind === "reply" &&
            typeof step.payload.text === "string" &&
            step.payload.text.includes('You said: "during the outage"'),
        ),
      { what: "the reply to the message sent during the outage", timeoutMs: 60_000 },
    );
    // Well inside the follow-up window it would otherwise have waited out (120 s).
    expect(Date.now() - resumedAt).toBeLessThan(30_000);
  });
});
