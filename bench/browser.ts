/**
 * The browser inside a real computer (issue 13 §1): a real Roost (`--provider local` as root, or
 * `process`), the demo model's `call browser {…}` turns, `python3 -m http.server` inside the
 * computer. Prints:
 *
 *  - browser cold start to the first snapshot: the first `browser snapshot` of an awake computer
 *    (Xvfb, x11vnc and Chromium start, then the snapshot), as the tool's own duration and as the
 *    whole turn seen by the API;
 *  - navigate plus snapshot of a local page: p50/p95 of the tool's duration over `--rounds`;
 *  - memory of the awake computer: the PSS of every process inside it (read from inside, so with
 *    `--provider local` only), before the browser starts and with it open on the page.
 *
 *   node bench/browser.ts [--provider local|process] [--rounds 30]
 */
import { rmSync } from "node:fs";
import { parseArgs } from "node:util";
import { startBenchRoost, summarize } from "./support.ts";

const { values } = parseArgs({
  options: {
    provider: { type: "string", default: process.getuid?.() === 0 ? "local" : "process" },
    rounds: { type: "string", default: "30" },
  },
});
const rounds = Number.parseInt(values.rounds, 10);
const port = values.provider === "local" ? 8000 : 18_765;

const { roost, api, dataDir } = await startBenchRoost({
  ROOST_COMPUTER_PROVIDER: values.provider,
  ROOST_FOLLOW_UP_WINDOW_MS: "50",
});
try {
  const bot = await api.createBot("bench-browser");
  const conversation = await api.createConversation(bot.id);
  let replies = 0;
  const turn = async (text: string) => {
    const started = performance.now();
    await api.send(conversation.id, text);
    const steps = await api.waitForSteps(conversation.id, "reply", ++replies, 180_000);
    const wallMs = performance.now() - started;
    const tool = steps.filter((step) => step.kind === "tool").at(-1)!.payload as {
      output: string;
      isError: boolean;
      durationMs: number;
    };
    if (tool.isError) throw new Error(`${text}: ${tool.output}`);
    return { ...tool, wallMs };
  };
  const pssKiB = async () => {
    const answer = await turn(
      "$ cat /proc/[0-9]*/smaps_rollup 2>/dev/null | awk '/^Pss:/ {sum += $2} END {print sum}'",
    );
    return Number(/stdout:\n(\d+)/.exec(answer.output)?.[1] ?? Number.NaN);
  };

  await turn(
    `$ mkdir -p bench-site && cd bench-site && printf '<!doctype html><title>Bench</title><h1>Bench page</h1><ul>%s</ul>' "$(for i in $(seq 50); do printf '<li><a href="/#%s">link %s</a></li>' $i $i; done)" > index.html && echo ok`,
  );
  await turn(
    `$ cd bench-site && (setsid python3 -m http.server ${port} --bind 127.0.0.1 >/dev/null 2>&1 &) && for i in $(seq 100); do curl -s -o /dev/null --noproxy '*' http://127.0.0.1:${port}/ && break; sleep 0.1; done; echo serving`,
  );
  const before = await pssKiB();
  const cold = await turn('call browser {"action":"snapshot"}');
  console.log(
    `browser cold start to first snapshot: tool ${cold.durationMs.toFixed(0)} ms, whole turn ${cold.wallMs.toFixed(0)} ms`,
  );
  const samples: number[] = [];
  const turnSamples: number[] = [];
  for (let index = 0; index < rounds + 3; index++) {
    const result = await turn(
      `call browser {"action":"navigate","url":"http://127.0.0.1:${port}/?round=${index}"}`,
    );
    if (!result.output.includes("Bench page")) throw new Error(`no page text in: ${result.output}`);
    if (index < 3) continue; // warm-up
    samples.push(result.durationMs);
    turnSamples.push(result.wallMs);
  }
  console.log(summarize("navigate + snapshot of a local page (tool)", samples));
  console.log(summarize("navigate + snapshot of a local page (whole turn)", turnSamples));
  const after = await pssKiB();
  if (values.provider !== "local")
    console.log(
      "memory: measured with --provider local only (a process computer sees the host's processes)",
    );
  else
    console.log(
      `memory (PSS) of the awake computer (${values.provider}): ${(before / 1024).toFixed(0)} MiB before the browser, ${(after / 1024).toFixed(0)} MiB with it open (+${((after - before) / 1024).toFixed(0)} MiB)`,
    );
} finally {
  await roost.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
