/**
 * Approval round trip on an awake computer (issue 12 "Tests and figures"): from the owner's
 * `POST /v1/approvals/{id}` to the approved shell command starting inside the computer. Roost runs
 * as a child process with the `process` computer provider and the demo model; the bot's policy asks
 * before `date`. Each round: a message `$ date +%s%N` parks on an approval; the bench takes the
 * time, approves, and reads the command's own start time (nanoseconds since the epoch, the same
 * host clock) from the tool's output. Also prints POST's own latency.
 *
 *   node bench/approvals.ts [rounds=30]
 */
import { rmSync } from "node:fs";
import { waitFor } from "../test/support/wait.ts";
import { startBenchRoost, summarize } from "./support.ts";

const rounds = Number(process.argv[2] ?? 30);
const { roost, api, dataDir } = await startBenchRoost({
  ROOST_COMPUTER_PROVIDER: "process",
  ROOST_FOLLOW_UP_WINDOW_MS: "60000",
  ROOST_MEMORY_PASS: "off",
});
try {
  const bot = await api.createBot("bench-approvals", "demo");
  await api.call("PUT", `/v1/bots/${bot.id}/tool-policy`, {
    rules: [{ tool: "shell", match: "date", decision: "ask" }],
  });
  const conversation = await api.createConversation(bot.id);
  // Wake the computer (not asked: the policy asks only before `date`).
  await api.send(conversation.id, "$ true");
  await api.waitForSteps(conversation.id, "reply", 1, 120_000);

  const toStart: number[] = [];
  const post: number[] = [];
  for (let round = 0; round < rounds; round++) {
    await api.send(conversation.id, `$ date +%s%N # ${round}`);
    const pending = await waitFor(
      async () => {
        const list = await api.call<{ approvals: { id: string }[] }>(
          "GET",
          "/v1/approvals?state=pending",
        );
        return list.approvals[0];
      },
      { timeoutMs: 30_000, what: "the approval" },
    );
    const approvedAt = Date.now();
    const before = performance.now();
    await api.call("POST", `/v1/approvals/${pending.id}`, { decision: "approve" });
    post.push(performance.now() - before);
    const steps = await api.waitForSteps(conversation.id, "tool", round + 2, 30_000);
    const output = String(steps.filter((step) => step.kind === "tool").at(-1)!.payload.output);
    const startedNs = /\b(\d{19})\b/.exec(output)?.[1];
    if (startedNs === undefined) throw new Error(`no start time in the tool output: ${output}`);
    toStart.push(Number(BigInt(startedNs) / 1000n) / 1000 - approvedAt);
    await api.waitForSteps(conversation.id, "reply", round + 2, 30_000);
  }
  console.log(summarize("approve → tool start (shell in an awake computer)", toStart));
  console.log(summarize("POST /v1/approvals/{id} answered", post));
} finally {
  await roost.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
