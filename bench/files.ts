/**
 * The files API's transport on an awake computer: the server's files client (src/api) over a
 * real gateway and WebSocket to a real worker process, as the HTTP routes use it. Prints the
 * latency of a listing and of a small download, and the time and throughput of a 25 MiB upload
 * and download (9 chunks each way).
 *
 *   node bench/files.ts [--rounds 200]
 */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { createFilesClient } from "../src/api/index.ts";
import { makeComputerDirs, spawnWorker, startTestGateway } from "../src/gateway/testing/index.ts";
import { fileLimits } from "../src/protocol/index.ts";
import { summarize } from "./support.ts";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "200" } } });
const rounds = Number.parseInt(values.rounds, 10);

const gw = await startTestGateway();
const dirs = makeComputerDirs("roost-bench-files-");
gw.tokens.set("bench-token", "cmp_bench");
const worker = spawnWorker({ gatewayUrl: gw.url, token: "bench-token", dirs });
const files = createFilesClient(gw.gateway);
try {
  await gw.gateway.waitForWorker("cmp_bench", 15_000);
  for (let index = 0; index < 100; index++)
    writeFileSync(path.join(dirs.workspace, `file-${index}.txt`), "x".repeat(index));
  const timed = async (label: string, body: () => Promise<unknown>) => {
    for (let index = 0; index < 10; index++) await body();
    const samples: number[] = [];
    for (let index = 0; index < rounds; index++) {
      const started = performance.now();
      await body();
      samples.push(performance.now() - started);
    }
    console.log(summarize(label, samples));
  };
  await timed("list (100 entries)", () => files.list("cmp_bench", ""));
  await timed("download (50 bytes)", async () => {
    const download = await files.download("cmp_bench", "file-50.txt");
    await new Response(download.body).arrayBuffer();
  });

  const big = randomBytes(fileLimits.maxUploadBytes);
  const mib = big.byteLength / 1024 / 1024;
  for (let round = 0; round < 3; round++) {
    let started = performance.now();
    await files.upload("cmp_bench", "big.bin", new Blob([big]).stream());
    const uploadMs = performance.now() - started;
    started = performance.now();
    const download = await files.download("cmp_bench", "big.bin");
    const bytes = await new Response(download.body).arrayBuffer();
    const downloadMs = performance.now() - started;
    if (bytes.byteLength !== big.byteLength) throw new Error("short download");
    console.log(
      `25 MiB round ${round + 1}: upload ${uploadMs.toFixed(0)} ms (${(mib / (uploadMs / 1000)).toFixed(0)} MiB/s), download ${downloadMs.toFixed(0)} ms (${(mib / (downloadMs / 1000)).toFixed(0)} MiB/s)`,
    );
  }
} finally {
  await worker.stop();
  await gw.close();
  dirs.remove();
}
