/**
 * Spare sandboxes (spares.ts, SP1–SP4; worker/spare-claim.ts, SC1–SC2), with real namespaces,
 * mounts and cgroups: a wake claims the waiting spare, the computer is then the same as a cold
 * one (uid, files, passwd, cgroups, flags of its mounts, no capability), sleep leaves nothing of
 * the spare, and every way a claim can fail ends in a cold wake with nothing left mounted.
 */
import { mkdir, readdir, readFile, rm, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readMounts } from "./disk-image.ts";
import { createLocalProvider, type LocalProvider } from "./local-provider.ts";
import { runChecked, signalProcess } from "./system.ts";
import {
  makeTempDir,
  skipReason,
  spareSandboxPids,
  startTestGateway,
  uniqueId,
  type TestGateway,
} from "./testing/index.ts";

const skip = await skipReason("spares.test.ts");

// Each provider here has a runtime folder of its own, so a cgroup folder of its own too: a server
// sweeps the cgroups of its folder's slots that it finds no record for (L4), and another test
// file's server, with the default folders, would otherwise take these for leftovers.
const cgroupName = `roost-spares-test-${process.pid}`;

const mountsUnder = async (dir: string) =>
  (await readMounts()).filter((mount) => mount.mountPoint.startsWith(`${dir}/`));

describe.skipIf(skip !== undefined)("spare sandboxes", () => {
  let temp: { path: string; remove: () => Promise<void> };
  let gateway: TestGateway;
  let provider: LocalProvider;
  let runDir: string;
  const logs: string[] = [];

  beforeAll(async () => {
    temp = await makeTempDir();
    gateway = await startTestGateway();
    runDir = path.join(temp.path, "run");
    provider = await createLocalProvider({
      dataDir: path.join(temp.path, "data"),
      runDir,
      cgroupName,
      spares: 1,
      // Long enough that no spare is refilled while a test wakes (a loaded CI machine included);
      // spareReady waits for it.
      spareDelayMs: 2000,
      log: (message) => logs.push(message),
      sockets: { gateway: (id, socketPath) => gateway.listenComputer(id, socketPath) },
    });
  }, 60_000);

  afterAll(async () => {
    try {
      for (const id of await readdir(path.join(temp.path, "data")).catch(() => []))
        await provider?.destroy(id).catch(() => undefined);
      await provider?.close();
      // SP2: nothing of any spare stays mounted once the provider is closed.
      expect(await mountsUnder(path.join(runDir, "spares"))).toEqual([]);
    } finally {
      await gateway?.close();
      await runChecked("umount", [path.join(runDir, "spares")]).catch(() => undefined);
      await temp?.remove();
    }
  });

  /** A new computer woken from the waiting spare, its worker's hello received. */
  const wakeFromSpare = async (prefix: string, env?: Record<string, string>) => {
    const id = uniqueId(prefix);
    await provider.create(id);
    expect(await provider.spareReady()).toBe(true);
    const hellos = gateway.hellos;
    await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "t", ...(env && { env }) });
    expect(provider.info(id)!.fromSpare).toBe(true);
    await gateway.waitForHello(hellos + 1);
    return id;
  };

  const sh = async (id: string, command: string) => {
    const result = await provider.exec(id, ["bash", "-c", command], { timeoutMs: 15_000 });
    return result.stdout + result.stderr;
  };

  test("a wake claims the waiting spare: the computer's uid, files, passwd, cgroups and mounts, no capability", async () => {
    const id = await wakeFromSpare("spare-a");
    const info = provider.info(id)!;

    // Through the worker: it is the computer's user, in its home, with its passwd entry.
    const result = await gateway.call("shell", {
      command: "id -u; id -g; id -G; whoami; echo kept > ~/note; cat ~/note",
    });
    expect(result.ok).toBe(true);
    const stdout = (result.output as { stdout: string }).stdout;
    expect(stdout).toBe(`${info.uid}\n${info.gid}\n${info.gid}\nuser\nkept\n`);

    // The worker itself: every thread the computer's uid, no capability, no_new_privs.
    const worker = await sh(
      id,
      "for t in /proc/$(pgrep -f '^/opt/node/bin/node ' | head -1)/task/*; do grep -E '^(Uid|Gid|CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):' $t/status; done",
    );
    for (const line of worker.trim().split("\n")) {
      if (/^(Uid|Gid):/.test(line))
        expect(line.split(/\s+/).slice(1)).toEqual(Array(4).fill(String(info.uid)));
      else if (line.startsWith("NoNewPrivs")) expect(line).toMatch(/\s1$/);
      else expect(line).toMatch(/\s0+$/);
    }

    // Its processes are in the computer's cgroups, the worker in `worker`.
    const usage = (await provider.usage(id))!;
    const commands = await Promise.all(
      usage.workerPids.map((pid) => readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")),
    );
    expect(commands.some((command) => command.startsWith("/opt/node/bin/node\0"))).toBe(true);
    expect(commands.some((command) => command.includes("/run/roost-spare/spare.sh"))).toBe(true);
    expect(usage.memoryBytes).toBeGreaterThan(0);

    // SP2: the claim's binds have bubblewrap's flags inside.
    const mounts = await sh(id, "cat /proc/self/mountinfo");
    const optionsAt = (target: string) =>
      mounts
        .split("\n")
        .filter((line) => line.split(" ")[4] === target)
        .map((line) => line.split(" ")[5]!)
        .at(-1);
    expect(optionsAt("/run/roost")).toMatch(/^ro,nosuid,nodev/);
    for (const target of ["/home/user", "/workspace", "/var/lib/roost/worker"])
      expect(optionsAt(target)).toMatch(/^rw,nosuid,nodev/);
    expect(optionsAt("/run/roost-cgroup/0.procs")).toMatch(/nosuid,nodev,noexec/);
    expect(await sh(id, "touch /run/roost/x 2>&1; echo $?")).toMatch(/Read-only file system/);

    // The file is on the computer's disk.
    await provider.sleep(id);
    expect(await mountsUnder(path.join(runDir, "spares"))).toEqual([]);
    // The next wake (a spare's or its own sandbox, whichever is ready) finds the file.
    await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "t" });
    expect(await sh(id, "cat ~/note")).toBe("kept\n");
    await provider.sleep(id);
  }, 60_000);

  test("a claimed spare's worker, killed, is started again by its supervisor as the computer's user", async () => {
    const id = await wakeFromSpare("spare-restart");
    const hellos = gateway.hellos;
    const worker = await sh(id, "pgrep -f '^/opt/node/bin/node '");
    await sh(id, `kill -9 ${worker.trim().split("\n")[0]}`);
    await gateway.waitForHello(hellos + 1);
    const result = await gateway.call("shell", { command: "id -u; env | grep -c ROOST_ || true" });
    expect((result.output as { stdout: string }).stdout).toBe(`${provider.info(id)!.uid}\n0\n`);
    const supervisor = await sh(id, "cat /proc/2/cmdline | tr '\\0' ' '");
    expect(supervisor).toContain("/run/roost-spare/spare.sh");
    await provider.sleep(id);
  }, 60_000);

  test("attack: environment values reach a claimed computer as they are, through the worker and its restart; a name the shell cannot export gets a sandbox of its own", async () => {
    const tricky = `a'b"c $(touch /tmp/roost-pwned-${process.pid}) \`id\` \\ ; end`;
    const id = await wakeFromSpare("spare-env", { TRICKY: tricky });
    const read = async () =>
      (
        (await gateway.call("shell", { command: 'printf %s "$TRICKY"' })).output as {
          stdout: string;
        }
      ).stdout;
    expect(await read()).toBe(tricky);
    // After a restart the worker's environment comes from adopt.sh's exports.
    const hellos = gateway.hellos;
    await sh(id, `kill -9 $(pgrep -f '^/opt/node/bin/node ' | head -1)`);
    await gateway.waitForHello(hellos + 1);
    expect(await read()).toBe(tricky);
    // Nothing in it ran: not in the computer's /tmp (the supervisor's), not in the host's.
    expect(await sh(id, "ls /tmp")).not.toContain("roost-pwned");
    await provider.sleep(id);
    expect(await readdir("/tmp")).not.toContain(`roost-pwned-${process.pid}`);

    // A name no shell can export: not through adopt.sh, so not through a spare.
    expect(await provider.spareReady()).toBe(true);
    await provider.wake(id, {
      gatewayUrl: gateway.url,
      workerToken: "t",
      env: { [`X;touch /tmp/roost-pwned-${process.pid};Y`]: "1" },
    });
    expect(provider.info(id)!.fromSpare).toBe(false);
    await provider.sleep(id);
    expect(await readdir("/tmp")).not.toContain(`roost-pwned-${process.pid}`);
  }, 60_000);

  test("attack: a process in a claimed computer cannot read or write the claim, nor regain root", async () => {
    const id = await wakeFromSpare("spare-attack");
    const output = await sh(
      id,
      [
        "ls -ln /run/roost-spare",
        'echo \'{"uid":1,"gid":1,"env":{}}\' > /run/roost-spare/claim; echo write $?',
        "cat /run/roost-spare/claim; echo read $?",
        "kill -USR1 2; echo signal $?",
        "cat /run/roost/adopt.sh; echo adopt $?",
      ].join("; "),
    );
    expect(output).toMatch(/^prw------- 1 0 0 .* claim$/m);
    expect(output).toMatch(/write 1/);
    expect(output).toMatch(/read 1/);
    expect(output).toMatch(/signal 1/);
    expect(output).toMatch(/adopt 1/);
    await provider.sleep(id);
  }, 60_000);

  test("a spare whose worker died before its claim: the wake starts its own sandbox", async () => {
    const id = uniqueId("spare-dead");
    await provider.create(id);
    expect(await provider.spareReady()).toBe(true);
    // Its worker (and, in the same namespace, the rest of it): only this provider's spare
    // mounts from below this runDir.
    const spareProcesses = await spareSandboxPids(path.join(runDir, "spares"));
    expect(spareProcesses.length).toBeGreaterThan(0);
    for (const pid of spareProcesses) signalProcess(pid, "SIGKILL");
    const hellos = gateway.hellos;
    await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "t" });
    expect(provider.info(id)!.fromSpare).toBe(false);
    await gateway.waitForHello(hellos + 1);
    expect(await sh(id, "id -u")).toBe(`${provider.info(id)!.uid}\n`);
    await provider.sleep(id);
    expect(await mountsUnder(path.join(runDir, "spares"))).toEqual([]);
  }, 60_000);

  test("a claim whose binds fail: the spare is discarded with nothing left mounted, and the wake starts its own sandbox", async () => {
    const id = uniqueId("spare-bind");
    await provider.create(id);
    expect(await provider.spareReady()).toBe(true);
    const [spare] = await readdir(path.join(runDir, "spares"));
    // The last bind target is gone: the first binds succeed, then mount fails.
    const procs = (await readdir(path.join(runDir, "spares", spare!, "stage", "cg"))).sort();
    await unlink(path.join(runDir, "spares", spare!, "stage", "cg", procs.at(-1)!));
    await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "t" });
    expect(provider.info(id)!.fromSpare).toBe(false);
    expect(logs.some((line) => line.includes("could not be claimed"))).toBe(true);
    expect(await readdir(path.join(runDir, "spares"))).not.toContain(spare);
    expect(await mountsUnder(path.join(runDir, "spares"))).toEqual([]);
    expect(await sh(id, "id -u")).toBe(`${provider.info(id)!.uid}\n`);
    await provider.sleep(id);
  }, 60_000);
});

describe.skipIf(skip !== undefined)("two servers on one host", () => {
  test("a second server's start keeps the first one's spares claimable (the shared mount is made once, under a lock)", async () => {
    const temp = await makeTempDir();
    const runDir = path.join(temp.path, "run");
    const gateway = await startTestGateway();
    const providers: LocalProvider[] = [];
    try {
      const start = async () => {
        const provider = await createLocalProvider({
          dataDir: path.join(temp.path, `data-${providers.length}`),
          runDir,
          cgroupName,
          spares: 1,
          spareDelayMs: 600_000,
          sockets: { gateway: (id, socketPath) => gateway.listenComputer(id, socketPath) },
        });
        providers.push(provider);
        return provider;
      };
      // Both start at once, as parallel servers (or test files) on a fresh host do.
      const [first, second] = await Promise.all([start(), start()]);
      expect(await first.spareReady()).toBe(true);
      expect(await second.spareReady()).toBe(true);
      const third = await start();
      expect(await third.spareReady()).toBe(true);
      for (const provider of [first, second, third]) {
        const id = uniqueId("spare-two");
        await provider.create(id);
        const hellos = gateway.hellos;
        await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "t" });
        expect(provider.info(id)!.fromSpare).toBe(true);
        await gateway.waitForHello(hellos + 1);
        const result = await provider.exec(id, ["id", "-u"]);
        expect(result.stdout).toBe(`${provider.info(id)!.uid}\n`);
        await provider.destroy(id);
      }
    } finally {
      for (const provider of providers) await provider.close();
      await gateway.close();
      await runChecked("umount", [path.join(runDir, "spares")]).catch(() => undefined);
      await rm(temp.path, { recursive: true, force: true });
    }
  }, 90_000);
});

describe.skipIf(skip !== undefined)("spares left by a dead server", () => {
  test("are removed at start, their binds undone first, without touching what was bound", async () => {
    const temp = await makeTempDir();
    const runDir = path.join(temp.path, "run");
    const spare = path.join(runDir, "spares", "999999-1");
    const precious = path.join(temp.path, "precious");
    let provider: LocalProvider | undefined;
    try {
      await mkdir(path.join(spare, "stage", "home"), { recursive: true });
      await mkdir(precious);
      await writeFile(path.join(precious, "file"), "keep me");
      // A dead owner (pid 999999 with another start time).
      await writeFile(path.join(spare, "owner.json"), JSON.stringify({ pid: 999_999, start: "1" }));
      await runChecked("mount", ["--bind", precious, path.join(spare, "stage", "home")]);
      provider = await createLocalProvider({
        dataDir: path.join(temp.path, "data"),
        runDir,
        cgroupName,
        spares: 1,
        sockets: { gateway: async () => ({ close: async () => undefined }) },
      });
      expect(await readdir(path.join(runDir, "spares"))).not.toContain("999999-1");
      expect(await readFile(path.join(precious, "file"), "utf8")).toBe("keep me");
      expect(await provider.spareReady()).toBe(true);
    } finally {
      await provider?.close();
      await runChecked("umount", [path.join(runDir, "spares")]).catch(() => undefined);
      await rm(temp.path, { recursive: true, force: true });
    }
  }, 60_000);
});
