/**
 * One done-log record on a computer's kind of disk: a new ext4 image, loop-mounted, as the local
 * provider makes them (run as root: `node bench/done-log-disk.ts [--records 300]`). Prints p50,
 * p90 and p99 of:
 *   1. the done-log's own records (`openDoneLog` with fsync: DL6, written over zeros the journal
 *      was grown by, then fdatasync'd);
 *   2. the same bytes appended to a file and fdatasync'd (the journal before DL6: every record
 *      changes the file's size, so ext4 commits its journal at each flush).
 * A `shell` call writes two records and waits for both; a `read` call one.
 */
import { open } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { openDoneLog } from "../src/worker/done-log.ts";
import { makeTempDir } from "../src/computers/local/testing/index.ts";
import { runChecked } from "../src/computers/local/system.ts";

const { values } = parseArgs({ options: { records: { type: "string", default: "300" } } });
const records = Number(values.records);
if (process.getuid?.() !== 0) {
  console.error("done-log-disk: run as root (it mounts an ext4 image)");
  process.exit(2);
}

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(3);
  return `p50 ${at(0.5)} ms  p90 ${at(0.9)} ms  p99 ${at(0.99)} ms  (n=${sorted.length})`;
}

const work = await makeTempDir("roost-bench-done-log-");
const image = path.join(work.path, "disk.img");
const mountPoint = path.join(work.path, "mnt");
let mounted = false;
try {
  await runChecked("truncate", ["-s", "1G", image]);
  await runChecked("mkfs.ext4", ["-q", "-F", image]);
  await runChecked("mkdir", [mountPoint]);
  await runChecked("mount", ["-o", "loop", image, mountPoint]);
  mounted = true;

  for (let round = 0; round < 2; round++) {
    const stateDir = path.join(mountPoint, `state-${round}`);
    const log = await openDoneLog(stateDir);
    const journal: number[] = [];
    for (let index = 0; index < records; index++) {
      const start = performance.now();
      await log.markStarted(`call-${index}`, "shell", { timeoutMs: 30_000 });
      journal.push(performance.now() - start);
    }
    await log.close();

    const record = Buffer.from(
      `${JSON.stringify({ state: "started", callId: "call-0", tool: "shell", startedAt: new Date().toISOString(), detail: { timeoutMs: 30_000 } })}\n`,
    );
    const handle = await open(path.join(mountPoint, `append-${round}.jsonl`), "a");
    const append: number[] = [];
    for (let index = 0; index < records; index++) {
      const start = performance.now();
      await handle.write(record);
      await handle.datasync();
      append.push(performance.now() - start);
    }
    await handle.close();
    console.log(`round ${round + 1}, ${record.length}-byte records on a loop-mounted ext4 image:`);
    console.log(`  done-log record (DL6, over flushed zeros) ${summary(journal)}`);
    console.log(`  before: appended + fdatasync            ${summary(append)}`);
  }
} finally {
  if (mounted)
    await runChecked("umount", [mountPoint]).catch((error: unknown) => console.error(error));
  await work.remove();
}
