/**
 * Local provider figures (run as root: `node bench/wake-local.ts [--wakes 20] [--max-awake 30]`):
 *   1. wake latency, asleep → first result, p50/p95 over N wakes, measured three ways:
 *      wake() resolved (sandbox up, supervisor running), first command result through the
 *      provider's exec helper, and first shell tool result through the real worker and a gateway
 *      on 127.0.0.1 (hello + call);
 *   2. host memory per awake computer (worker, supervisor and the egress forwarders): RSS and PSS
 *      of its processes and its cgroups' memory usage, 3 s after a call and idle (--idle-wait-ms
 *      later, after the worker's waiting shell has gone);
 *   3. with 1, 10 and 50 computers awake (--levels): the wake latency of one more (to its first
 *      tool result), the `shell true` round trip on one awake computer while the others idle,
 *      and the round trip when every awake computer runs calls at the same time;
 *   4. the cost of a new computer's disk: create() of a computer never seen (its ext4 image made
 *      and mounted, its slot claimed), the image's size on the host, a sleep() after it (fstrim
 *      and unmount), and attaching a sleeping one's image and detaching it again (what a wake and
 *      a sleep add), over --creates computers;
 *   5. what --sleeping (100) computers cost while asleep: their processes, mounts, cgroups, memory,
 *      the host's open files and sockets for them, and their disk space.
 *
 * `--node-options ''` starts workers without the production Node options (workerNodeOptions in
 * src/computers/worker-build.ts), which gives the figures before decision 0021.
 *
 * `--spares 1` (the default, as the platform runs): every timed wake first waits until a spare
 * sandbox is ready (src/computers/local/spares.ts), so it measures a wake that claims one, and
 * the memory of the waiting spare is reported; `--spares 0`: every wake starts its own sandbox.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  createLocalProvider,
  insidePaths,
  type LocalProvider,
} from "../src/computers/local/index.ts";
import { prepareWorkerBuild, workerNodeOptions } from "../src/computers/worker-build.ts";
import { createEgressProxy } from "../src/egress/index.ts";
import {
  isolationUnavailableReason,
  makeTempDir,
  shellStdout,
  spareSandboxPids,
  startTestGateway,
  type TestGateway,
} from "../src/computers/local/testing/index.ts";
import { summarize } from "./support.ts";

const { values } = parseArgs({
  options: {
    wakes: { type: "string", default: "20" },
    levels: { type: "string", default: "1,10,50" },
    calls: { type: "string", default: "50" },
    creates: { type: "string", default: "10" },
    sleeping: { type: "string", default: "100" },
    "node-options": { type: "string" },
    // off: the worker from its stripped files instead of its bundle (src/computers/worker-build.ts)
    bundle: { type: "string", default: "on" },
    // The pause after each call of the "calls apart" round trip (as an agent's calls come, its
    // model's turn between them; the worker then starts the next job's wrapper ahead).
    "gap-ms": { type: "string", default: "20" },
    // How long the idle memory figure waits after the first one (3 s after a call): longer than
    // the worker keeps the next call's shell (30 s, warm-shell.ts). 0: no idle figure.
    "idle-wait-ms": { type: "string", default: "28000" },
    spares: { type: "string", default: "1" },
  },
});
const spares = Number(values.spares);
const wakes = Number(values.wakes);
const levels = values.levels.split(",").map(Number);
const callsPerProbe = Number(values.calls);
const creates = Number(values.creates);
const sleeping = Number(values.sleeping);
const gapMs = Number(values["gap-ms"]);
const idleWaitMs = Number(values["idle-wait-ms"]);
const nodeOptions =
  values["node-options"] === undefined
    ? workerNodeOptions
    : values["node-options"].split(" ").filter((option) => option !== "");

const reason = await isolationUnavailableReason();
if (reason !== undefined) {
  console.error(
    `wake-local: cannot run: ${reason} (run as root with bubblewrap, util-linux and socat installed)`,
  );
  process.exit(2);
}

const dataDir = await makeTempDir("roost-bench-local-");
// As the platform runs it: the worker from its prebuilt JavaScript (src/computers/worker-build.ts),
// each computer's gateway socket, and the egress proxy's sockets with their forwarders inside.
const workerBuild = await prepareWorkerBuild({ bundle: values.bundle !== "off" });
const egress = createEgressProxy();
const gateways = new Map<string, TestGateway>();
// A cgroup folder of its own, so other Roost processes on this host do not count in section 5.
const cgroupName = `roost-bench-${process.pid}`;
const provider: LocalProvider = await createLocalProvider({
  dataDir: dataDir.path,
  cgroupName,
  spares,
  ...(workerBuild === undefined
    ? {}
    : {
        workerArgv: [
          insidePaths.node,
          ...nodeOptions,
          `${insidePaths.roost}/${workerBuild.relativeEntry}`,
        ],
      }),
  sockets: {
    gateway: async (id, socketPath) => (await gatewayFor(id)).listenComputer(id, socketPath),
    egress: (id, paths) => egress.listenComputer(id, paths),
  },
});
const created: string[] = [];

async function gatewayFor(id: string): Promise<TestGateway> {
  let gateway = gateways.get(id);
  if (gateway === undefined) {
    gateway = await startTestGateway();
    gateways.set(id, gateway);
  }
  return gateway;
}

async function createComputer(id: string): Promise<void> {
  await provider.create(id);
  created.push(id);
}

/** Wakes a sleeping computer; returns ms to wake(), to the first exec result, and to the first tool result. */
async function timedWake(id: string): Promise<{ wakeMs: number; execMs: number; toolMs: number }> {
  const gateway = await gatewayFor(id);
  const hellos = gateway.hellos;
  await provider.spareReady();
  const start = performance.now();
  await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "bench" });
  const wakeMs = performance.now() - start;
  const exec = await provider.exec(id, ["true"]);
  if (exec.exitCode !== 0) throw new Error(`exec failed: ${exec.stderr}`);
  const execMs = performance.now() - start;
  await gateway.waitForHello(hellos + 1, 30_000);
  shellStdout(await gateway.call("shell", { command: "true" }));
  const toolMs = performance.now() - start;
  return { wakeMs, execMs, toolMs };
}

const helloSamples: number[] = [];

/** Wake latency to the first tool result, without an exec first (the path a tool call takes). */
async function timedToolWake(id: string): Promise<number> {
  const gateway = await gatewayFor(id);
  const hellos = gateway.hellos;
  await provider.spareReady();
  const start = performance.now();
  await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "bench" });
  if (spares > 0 && !provider.info(id)!.fromSpare) throw new Error(`${id} did not claim a spare`);
  await gateway.waitForHello(hellos + 1, 30_000);
  helloSamples.push(performance.now() - start);
  shellStdout(await gateway.call("shell", { command: "true" }));
  return performance.now() - start;
}

/** Memory of the awake "bench-wake" computer's processes and cgroups. */
async function reportMemory(when: string): Promise<void> {
  const usage = (await provider.usage("bench-wake"))!;
  const rss = await memoryBytes(usage.pids, "Rss");
  const pss = await memoryBytes(usage.pids, "Pss");
  const uss =
    (await memoryBytes(usage.pids, "Private_Clean")) +
    (await memoryBytes(usage.pids, "Private_Dirty"));
  console.log(
    `memory per awake computer, ${when}: its ${usage.pids.length} processes RSS ${mib(rss)} (PSS ${mib(pss)} = ${(pss / 1e6).toFixed(1)} MB, shared pages such as Node's code split; USS ${mib(uss)}, pages only they map), cgroup memory usage ${mib(usage.memoryBytes ?? Number.NaN)}`,
  );
  const byName = new Map<string, number>();
  for (const pid of usage.pids) {
    const name = (await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "?")).trim();
    byName.set(name, (byName.get(name) ?? 0) + (await memoryBytes([pid], "Pss")));
  }
  console.log(
    `  PSS by process: ${[...byName].map(([name, bytes]) => `${name} ${mib(bytes)}`).join(", ")}`,
  );
}

/** Memory of the waiting spare sandboxes: processes whose mounts come from the spares folder. */
async function reportSpareMemory(): Promise<void> {
  await provider.spareReady();
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const pids = await spareSandboxPids("/run/roost/local/spares");
  console.log(
    `the waiting spare sandbox (${spares}), a host cost while it waits: ${pids.length} processes, PSS ${mib(await memoryBytes(pids, "Pss"))}, RSS ${mib(await memoryBytes(pids, "Rss"))}`,
  );
}

/** Sum of a field of /proc/PID/smaps_rollup (Rss: every page mapped; Pss: shared pages split among their users). */
async function memoryBytes(
  pids: number[],
  field: "Rss" | "Pss" | "Private_Clean" | "Private_Dirty",
): Promise<number> {
  let total = 0;
  for (const pid of pids) {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, "utf8").catch(() => "");
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(rollup);
    if (match !== null) total += Number(match[1]) * 1024;
  }
  return total;
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** `calls` sequential `shell true` round trips on an awake computer, `gap` ms apart, in ms. */
async function roundTrips(gateway: TestGateway, calls: number, gap = 0): Promise<number[]> {
  const samples: number[] = [];
  for (let index = 0; index < calls; index++) {
    const start = performance.now();
    shellStdout(await gateway.call("shell", { command: "true" }));
    samples.push(performance.now() - start);
    if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
  }
  return samples;
}

/** What the host holds for computers: processes in Roost's cgroups, mounts, cgroups, and this process's files. */
async function hostFootprint() {
  const v2 = await stat("/sys/fs/cgroup/cgroup.controllers").then(
    () => true,
    () => false,
  );
  const root = v2 ? `/sys/fs/cgroup/${cgroupName}` : `/sys/fs/cgroup/pids/${cgroupName}`;
  let processes = 0;
  let cgroups = 0;
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const procs = await readFile(path.join(dir, "cgroup.procs"), "utf8").catch(() => "");
    processes += procs.split("\n").filter(Boolean).length;
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      cgroups += 1;
      await walk(path.join(dir, entry.name));
    }
  };
  await walk(root);
  const mounts = (await readFile("/proc/self/mountinfo", "utf8"))
    .split("\n")
    .filter((line) => line.includes(dataDir.path)).length;
  const fds = (await readdir("/proc/self/fd")).length;
  return { processes, cgroups, mounts, fds, rss: process.memoryUsage().rss };
}

try {
  // 1. Wake latency, one computer, asleep → first result.
  await createComputer("bench-wake");
  await timedWake("bench-wake"); // warm-up (first start of node, page cache)
  await provider.sleep("bench-wake");
  const wake: number[] = [];
  const exec: number[] = [];
  const tool: number[] = [];
  const toolOnly: number[] = [];
  for (let index = 0; index < wakes; index++) {
    const sample = await timedWake("bench-wake");
    wake.push(sample.wakeMs);
    exec.push(sample.execMs);
    tool.push(sample.toolMs);
    await provider.sleep("bench-wake");
    toolOnly.push(await timedToolWake("bench-wake"));
    await provider.sleep("bench-wake");
  }
  console.log(
    `wake latency, ${wakes} wakes (local copy present, nothing else awake; ${spares > 0 ? "each claims a waiting spare sandbox" : "no spares: each starts its own sandbox"}):`,
  );
  console.log(`  ${summarize("wake() resolved (sandbox up)", wake)}`);
  console.log(`  ${summarize("first exec result (sandbox)", exec)}`);
  console.log(`  ${summarize("first tool result (worker hello + shell call, after exec)", tool)}`);
  console.log(`  ${summarize("worker hello at the gateway", helloSamples.slice(-wakes))}`);
  console.log(`  ${summarize("first tool result (worker hello + shell call)", toolOnly)}`);

  // 2. Memory per awake idle computer: 3 s after a call (the next call's shell is waiting for
  // it, warm-shell.ts) and once the computer has been idle longer than that shell is kept.
  await timedToolWake("bench-wake");
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await reportMemory("3 s after a call");
  if (idleWaitMs > 0) {
    await new Promise((resolve) => setTimeout(resolve, idleWaitMs));
    await reportMemory(`idle ${Math.round((idleWaitMs + 3000) / 1000)} s`);
  }
  await provider.sleep("bench-wake");
  if (spares > 0) await reportSpareMemory();

  // 3. Wake latency and tool round trip with 1, 10 and 50 computers awake.
  console.log(`node options of the workers: ${nodeOptions.join(" ") || "(none)"}`);
  console.log(
    `awake computers vs wake latency and \`shell true\` round trip (${callsPerProbe} calls):`,
  );
  await createComputer("bench-probe");
  const awakeIds: string[] = [];
  for (const level of levels) {
    // `level` computers awake in all: the probe and level - 1 others.
    while (awakeIds.length < level - 1) {
      const id = `bench-awake-${awakeIds.length}`;
      await createComputer(id);
      await timedToolWake(id);
      awakeIds.push(id);
    }
    await new Promise((resolve) => setTimeout(resolve, 2000)); // let them settle to idle
    const wakeSamples: number[] = [];
    for (let index = 0; index < 3; index++) {
      await provider.sleep("bench-probe");
      wakeSamples.push(await timedToolWake("bench-probe"));
    }
    const probe = await gatewayFor("bench-probe");
    const quiet = await roundTrips(probe, callsPerProbe);
    const apart = await roundTrips(probe, callsPerProbe, gapMs);
    const everyone = [probe, ...(await Promise.all(awakeIds.map((id) => gatewayFor(id))))];
    const busy = (
      await Promise.all(
        everyone.map((gateway) => roundTrips(gateway, Math.max(5, callsPerProbe / 5))),
      )
    ).flat();
    let memory = 0;
    let pssAll = 0;
    for (const id of ["bench-probe", ...awakeIds]) {
      const usage = await provider.usage(id);
      memory += usage?.memoryBytes ?? 0;
      pssAll += await memoryBytes(usage?.pids ?? [], "Pss");
    }
    console.log(
      `  ${String(level).padStart(2)} awake: ${summarize("wake to first tool result", wakeSamples)}; ${summarize("round trip, others idle", quiet)}; ${summarize(`${gapMs} ms apart`, apart)}; ${summarize(`round trip, all ${level} calling`, busy)}; cgroup memory of all ${mib(memory)}, PSS per computer ${mib(pssAll / level)}`,
    );
  }
  await provider.sleep("bench-probe");
  for (const id of awakeIds) await provider.sleep(id);

  // 4. A new computer's disk.
  const createMs: number[] = [];
  const detachMs: number[] = [];
  let hostBytes = 0;
  for (let index = 0; index < creates; index++) {
    const id = `bench-new-${index}`;
    const start = performance.now();
    const paths = await provider.create(id);
    createMs.push(performance.now() - start);
    created.push(id);
    const sleepStart = performance.now();
    await provider.sleep(id);
    detachMs.push(performance.now() - sleepStart);
    hostBytes += (await stat(path.join(paths.root, "../../disk.img"))).blocks * 512;
  }
  // What every wake and sleep now add: mounting a sleeping computer's image, and fstrim + unmount.
  const cycleMs: number[] = [];
  for (let index = 0; index < creates; index++) {
    const start = performance.now();
    await provider.withDisk(`bench-new-${index}`, async () => undefined);
    cycleMs.push(performance.now() - start);
  }
  console.log(`a new computer's disk (${creates} computers, 10 GiB limit):`);
  console.log(`  ${summarize("withDisk() of a sleeping one (mount, fstrim, unmount)", cycleMs)}`);
  console.log(`  ${summarize("create() (image made and mounted, slot claimed)", createMs)}`);
  console.log(`  ${summarize("sleep() right after (fstrim and unmount)", detachMs)}`);
  console.log(`  host space per new image: ${mib(hostBytes / Math.max(1, creates))}`);

  // 5. What sleeping computers cost.
  const before = await hostFootprint();
  let sleepingBytes = 0;
  for (let index = 0; index < sleeping; index++) {
    const id = `bench-sleeping-${index}`;
    const paths = await provider.create(id);
    created.push(id);
    await timedToolWake(id); // woken once, so each has a worker's state on its disk
    await provider.sleep(id);
    // This bench gives each computer a gateway of its own (the platform has one for all): close
    // it, so that the host's open files count what the provider keeps, not the bench.
    await gateways.get(id)?.close();
    gateways.delete(id);
    sleepingBytes += (await stat(path.join(paths.root, "../../disk.img"))).blocks * 512;
  }
  const after = await hostFootprint();
  let usages = 0;
  for (let index = 0; index < sleeping; index++)
    if ((await provider.usage(`bench-sleeping-${index}`)) !== undefined) usages += 1;
  console.log(`${sleeping} sleeping computers (each woken once, then put to sleep):`);
  console.log(
    `  awake according to the provider: ${usages}; processes in Roost's cgroups ${before.processes} → ${after.processes}; mounts under the data dir ${before.mounts} → ${after.mounts}; computer cgroups ${before.cgroups} → ${after.cgroups}`,
  );
  console.log(
    `  host process: open files ${before.fds} → ${after.fds}, RSS ${mib(before.rss)} → ${mib(after.rss)}; disk: ${mib(sleepingBytes / Math.max(1, sleeping))} per computer on the host`,
  );
} finally {
  for (const id of created)
    await provider.destroy(id).catch((error: unknown) => console.error(String(error)));
  await provider.close();
  await egress.close();
  for (const gateway of gateways.values()) await gateway.close();
  await dataDir.remove();
}
