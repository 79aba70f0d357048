/**
 * Wake latency: a sleeping computer, a `$ true` message, until the tool's result is stored
 * (asleep → first tool result), p50/p95 over N wakes; plus the idle worker's memory.
 *   node bench/wake.ts [wakes=20] [provider=process]
 * Set ROOST_BENCH_RESTORE=1 to delete the local copy before each wake (restore from the blob store).
 */
import { readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { openEventStream } from "../test/support/sse.ts";
import { waitFor } from "../test/support/wait.ts";
import { rssMiB, startBenchRoost, summarize } from "./support.ts";

const wakes = Number(process.argv[2] ?? 20);
const provider = process.argv[3] ?? "process";
const restore = process.env.ROOST_BENCH_RESTORE === "1";
const { roost, api, dataDir } = await startBenchRoost({
  ROOST_COMPUTER_PROVIDER: provider,
  ROOST_FOLLOW_UP_WINDOW_MS: "60000",
});
try {
  const bot = await api.createBot("bench");
  const conversation = await api.createConversation(bot.id);
  const stream = await openEventStream(
    `${roost.url}/v1/conversations/${conversation.id}/events`,
    roost.token(),
  );
  await stream.next((event) => event.event === "hello");
  // A few MB in the home folder, so restores have something to move.
  await api.send(conversation.id, "$ head -c 5000000 /dev/urandom > ~/payload.bin; true");
  await api.waitForSteps(conversation.id, "reply");

  const samples: number[] = [];
  const wakeOnly: number[] = [];
  for (let index = 0; index < wakes; index++) {
    // The turn releases the computer just after its reply: retry the sleep until it is free.
    const computer = await waitFor(
      () =>
        api
          .call<{ id: string; state: string }>("POST", "/v1/computers/me/sleep")
          .catch(() => undefined),
      { what: "sleep" },
    );
    if (computer.state !== "asleep") throw new Error(`computer did not sleep: ${computer.state}`);
    if (restore) rmSync(join(dataDir, "computers", computer.id), { recursive: true, force: true });
    const existing = await api.steps(conversation.id);
    const before = existing.filter((step) => step.kind === "tool").length;
    const replies = existing.filter((step) => step.kind === "reply").length;
    const started = performance.now();
    await api.send(conversation.id, "$ true");
    await api.waitForSteps(conversation.id, "tool", before + 1, 60_000);
    samples.push(performance.now() - started);

    await api.waitForSteps(conversation.id, "reply", replies + 1, 60_000);
    await waitFor(() => api.call("POST", "/v1/computers/me/sleep").catch(() => undefined), {
      what: "sleep",
    });
    if (restore) rmSync(join(dataDir, "computers", computer.id), { recursive: true, force: true });
    const wakeStarted = performance.now();
    await api.call("POST", "/v1/computers/me/wake");
    wakeOnly.push(performance.now() - wakeStarted);
  }
  console.log(
    summarize(
      `asleep → first tool result (${provider}${restore ? ", restored from the blob store" : ", local copy present"})`,
      samples,
    ),
  );
  console.log(summarize(`POST /v1/computers/me/wake (asleep → worker connected)`, wakeOnly));

  const computer = await api.call<{ id: string }>("GET", "/v1/computers/me");
  const workerPid = readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .find((entry) => {
      try {
        return (
          readFileSync(`/proc/${entry}/cmdline`, "latin1").includes("worker/main.") &&
          readFileSync(`/proc/${entry}/environ`, "latin1").includes(`COMPUTER_ID=${computer.id}\0`)
        );
      } catch {
        return false;
      }
    });
  if (workerPid !== undefined)
    console.log(`idle worker RSS: ${rssMiB(Number(workerPid)).toFixed(1)} MiB`);
  await stream.close();
} finally {
  await roost.stop();
}
