/**
 * Limits, with the real worker inside a real sandbox, driven through a small real gateway: a
 * runaway user command (too much memory, a fork bomb) is contained in the computer's `user`
 * cgroup, and the worker keeps serving on the same connection.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createEgressProxy, type EgressProxy } from "../../egress/index.ts";
import type { CgroupController } from "./cgroups.ts";
import { createLocalProvider, type LocalProvider } from "./local-provider.ts";
import {
  makeTempDir,
  shellStdout,
  skipReason,
  startTestGateway,
  uniqueId,
  type TestGateway,
} from "./testing/index.ts";

const skip = await skipReason("limits.test.ts");
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(skip !== undefined)("local provider limits", () => {
  let dataDir: { path: string; remove: () => Promise<void> };
  let gateway: TestGateway;
  let provider: LocalProvider;
  let proxy: EgressProxy;
  const id = uniqueId("limits");

  /** The computer's cgroup carrying a controller, and the files named by its version. */
  const cgroupOf = (controller: CgroupController) => {
    const cgroup = provider
      .info(id)!
      .cgroups.find((entry) => entry.controllers.includes(controller));
    if (cgroup === undefined) throw new Error(`no ${controller} cgroup`);
    return { dir: cgroup.dir, user: path.join(cgroup.dir, "user"), v2: cgroup.version === 2 };
  };
  const userCgroup = (controller: CgroupController) => cgroupOf(controller).user;
  const read = async (file: string) => (await readFile(file, "utf8")).trim();
  /**
   * The pids that are not a wrapper started ahead of a call (its command line names its token);
   * one that is gone already counts as lasting, so take it while they run.
   */
  const lasting = (pids: readonly number[]) =>
    pids.filter((pid) => {
      try {
        return !readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("roost-warm-");
      } catch {
        return true;
      }
    });

  beforeAll(async () => {
    dataDir = await makeTempDir();
    gateway = await startTestGateway();
    // The worker runs with HTTP(S)_PROXY, ALL_PROXY and NODE_USE_ENV_PROXY set, and must still
    // reach the gateway on its own socket.
    proxy = createEgressProxy();
    provider = await createLocalProvider({
      dataDir: dataDir.path,
      limits: { memoryBytes: 128 * 1024 * 1024, pids: 64 },
      sockets: {
        gateway: (computerId, socketPath) => gateway.listenComputer(computerId, socketPath),
        egress: (computerId, paths) => proxy.listenComputer(computerId, paths),
      },
    });
    await provider.create(id);
    await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "limits-token" });
    await gateway.waitForHello(1);
  });

  afterAll(async () => {
    try {
      await provider?.destroy(id);
      await provider?.close();
    } finally {
      await gateway?.close();
      await proxy?.close();
      await dataDir?.remove();
    }
  });

  test("user commands run in the user cgroup, the worker in its own", async () => {
    const cgroups = shellStdout(
      await gateway.call("shell", { command: "grep -E ':(memory|pids):' /proc/self/cgroup" }),
    );
    expect(cgroups).toMatch(/:memory:.*\/c\d+\/user\n/);
    expect(cgroups).toMatch(/:pids:.*\/c\d+\/user\n/);
    const usage = (await provider.usage(id))!;
    expect(usage.workerPids.length).toBeGreaterThan(0);
    // The worker reached the gateway on its socket, not through the proxy.
    expect(proxy.stats()).toMatchObject({ allowed: 0, denied: 0 });
  });

  test("memory, pids and cpu limits are set on the computer's cgroups", async () => {
    const memory = cgroupOf("memory");
    expect(
      await read(path.join(memory.user, memory.v2 ? "memory.max" : "memory.limit_in_bytes")),
    ).toBe(String(128 * 1024 * 1024));
    expect(await read(path.join(userCgroup("pids"), "pids.max"))).toBe("64");
    const cpu = cgroupOf("cpu");
    if (cpu.v2) expect(await read(path.join(cpu.dir, "cpu.max"))).toBe("100000 100000");
    else
      expect([
        await read(path.join(cpu.dir, "cpu.cfs_quota_us")),
        await read(path.join(cpu.dir, "cpu.cfs_period_us")),
      ]).toEqual(["100000", "100000"]);
  });

  test("a process allocating past the memory limit is killed; the worker keeps serving", async () => {
    const before = lasting((await provider.usage(id))!.workerPids);
    const result = await gateway.call("shell", {
      command: `node -e 'const keep = []; for (;;) keep.push(Buffer.alloc(1 << 20, 1))'; echo "exit $?"`,
    });
    // 137 = killed by SIGKILL (the OOM killer), reported by the shell that ran node.
    expect(shellStdout(result)).toContain("exit 137");
    const memory = cgroupOf("memory");
    expect(
      await read(path.join(memory.user, memory.v2 ? "memory.events" : "memory.oom_control")),
    ).toMatch(/oom_kill [1-9]/);
    // Same worker, same connection: no restart, no reconnect.
    expect(shellStdout(await gateway.call("shell", { command: "echo still serving" }))).toBe(
      "still serving\n",
    );
    expect(gateway.hellos).toBe(1);
    // The worker's own processes are the same ones; a wrapper started ahead for the next call
    // (warm-shell.ts) is used by a call and replaced, so it is not counted.
    const after = (await provider.usage(id))!.workerPids;
    expect(lasting(after)).toEqual(expect.arrayContaining(before));
    expect(before.length).toBeGreaterThan(0);
  });

  test("a fork bomb is contained by the pids limit and the computer still answers", async () => {
    // A background job is its own process group, so one `kill` of the group ends the bomb.
    const started = await gateway.call("shell", {
      command: "bomb() { bomb | bomb & }; bomb",
      background: true,
    });
    const job = started.output as { kind: string; pid: number };
    expect(job.kind).toBe("started");
    const pidsDir = userCgroup("pids");
    const pidsCurrent = async () =>
      Number((await readFile(path.join(pidsDir, "pids.current"), "utf8")).trim());
    try {
      const pidsEvents = () => readFile(path.join(pidsDir, "pids.events"), "utf8");
      const deadline = Date.now() + 10_000;
      while (
        ((await pidsCurrent()) < 60 || /max 0\b/.test(await pidsEvents())) &&
        Date.now() < deadline
      ) {
        await delay(50);
      }
      const current = await pidsCurrent();
      expect(current).toBeGreaterThanOrEqual(60);
      // Shells that the job prelude moves in may exceed pids.max; forks may not.
      expect(current).toBeLessThanOrEqual(64 + 4);
      expect(await pidsEvents()).toMatch(/max [1-9]/);
      // While the bomb holds every pid of `user`, the worker still runs commands (builtins need no fork).
      expect(shellStdout(await gateway.call("shell", { command: "echo during the bomb" }))).toBe(
        "during the bomb\n",
      );
    } finally {
      for (let attempt = 0; attempt < 100 && (await pidsCurrent()) > 0; attempt++) {
        await gateway.call("shell", { command: `kill -KILL -- -${job.pid} 2>/dev/null; true` });
        await delay(50);
      }
    }
    // Nothing of the bomb is left; at most the subshell of the wrapper started ahead for the next
    // call waits there (warm-shell.ts: it joins `user` before its job comes).
    const left = (await readFile(path.join(pidsDir, "cgroup.procs"), "utf8"))
      .split("\n")
      .filter((line) => line !== "")
      .map(Number);
    expect(left.length).toBeLessThanOrEqual(1);
    expect(lasting(left)).toEqual([]);
    expect(shellStdout(await gateway.call("shell", { command: "ls / | wc -l" })).trim()).toMatch(
      /^\d+$/,
    );
    expect(gateway.hellos).toBe(1);
  });

  test("a worker killed by a user process is restarted by the supervisor", async () => {
    // The call's own result may be lost with the worker it kills; what matters is the restart.
    void gateway
      .call("shell", { command: "pkill -KILL -f 'src/worker/main.ts'; echo sent" }, 2000)
      .catch(() => undefined);
    await gateway.waitForHello(2);
    expect(shellStdout(await gateway.call("shell", { command: "echo back" }))).toBe("back\n");
    expect(await provider.status(id)).toBe("running");
  });
});
