/**
 * Isolation between computers and from the host, with real namespaces and cgroups: two computers
 * A and B on one provider, a host service on 0.0.0.0, and a stand-in gateway on each computer's
 * socket. What a computer can reach on the network is in network.test.ts.
 *
 * A's wake claims a spare sandbox (spares.ts) and B's starts its own, so every test here holds
 * for both kinds of wake.
 */
import { readdir, writeFile } from "node:fs/promises";
import { networkInterfaces } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLocalProvider, type LocalProvider } from "./local-provider.ts";
import {
  connectCommand,
  makeTempDir,
  skipReason,
  startBannerServer,
  startTestGateway,
  uniqueId,
  type BannerServer,
  type TestGateway,
} from "./testing/index.ts";

const skip = await skipReason("isolation.test.ts");

describe.skipIf(skip !== undefined)("local provider isolation", () => {
  let dataDir: { path: string; remove: () => Promise<void> };
  let provider: LocalProvider;
  let gateway: TestGateway;
  let hostService: BannerServer;
  const a = uniqueId("iso-a");
  const b = uniqueId("iso-b");

  const sh = async (computerId: string, command: string) => {
    const result = await provider.exec(computerId, ["bash", "-c", command], { timeoutMs: 15_000 });
    return { ...result, output: result.stdout + result.stderr };
  };

  beforeAll(async () => {
    dataDir = await makeTempDir();
    gateway = await startTestGateway();
    hostService = await startBannerServer("host-service", "0.0.0.0");
    provider = await createLocalProvider({
      dataDir: dataDir.path,
      sockets: { gateway: (id, socketPath) => gateway.listenComputer(id, socketPath) },
      spares: 1,
      spareDelayMs: 600_000, // no second spare: B starts its own sandbox
    });
    expect(await provider.spareReady()).toBe(true);
    for (const id of [a, b]) {
      await provider.create(id);
      await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "t" });
    }
  });

  afterAll(async () => {
    try {
      for (const id of await readdir(dataDir.path).catch(() => [])) await provider?.destroy(id);
      await provider?.close();
    } finally {
      await Promise.all([gateway?.close(), hostService?.close()]);
      await dataDir?.remove();
    }
  });

  test("A's wake claimed a spare sandbox and B's started its own", () => {
    expect(provider.info(a)!.fromSpare).toBe(true);
    expect(provider.info(b)!.fromSpare).toBe(false);
  });

  test("each computer runs as its own host uid", async () => {
    const infoA = provider.info(a)!;
    const infoB = provider.info(b)!;
    expect(infoA.uid).not.toBe(infoB.uid);
    expect((await sh(a, "id -u")).stdout.trim()).toBe(String(infoA.uid));
    expect((await sh(b, "id -u")).stdout.trim()).toBe(String(infoB.uid));
  });

  test("the worker and user processes hold no capabilities and cannot gain any", async () => {
    const own = await sh(a, "grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status");
    expect(own.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(own.stdout).toMatch(/CapBnd:\s+0+\n/);
    expect(own.stdout).toMatch(/NoNewPrivs:\s+1\n/);
    const worker = await sh(
      a,
      "grep -E '^(Uid|CapEff|CapBnd):' /proc/$(pgrep -f '^/opt/node/bin/node ' | head -1)/status",
    );
    expect(worker.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(worker.stdout).toMatch(/CapBnd:\s+0+\n/);
    expect(worker.stdout).toContain(`Uid:\t${provider.info(a)!.uid}\t`);
    // The supervisor (pid 2) keeps uid 0 but only CAP_SETGID, CAP_SETUID and CAP_SETPCAP.
    expect((await sh(a, "grep -E '^CapEff:' /proc/2/status")).stdout).toBe(
      "CapEff:\t00000000000001c0\n",
    );
    // setuid binaries do not raise it (no_new_privs), and root's processes cannot be signalled.
    expect((await sh(a, "su -c id root < /dev/null")).exitCode).not.toBe(0);
    expect((await sh(a, "kill -KILL 1")).exitCode).not.toBe(0);
  });

  test("A cannot read or write B's files", async () => {
    const pathsB = provider.paths(b);
    await writeFile(path.join(pathsB.workspace, "secret-of-b.txt"), "b's secret");
    // B's disk is not in A's mount namespace at all: not by its host path, not anywhere.
    const read = await sh(a, `cat ${pathsB.workspace}/secret-of-b.txt`);
    expect(read.exitCode).not.toBe(0);
    const write = await sh(a, `echo x > ${pathsB.workspace}/from-a.txt`);
    expect(write.exitCode).not.toBe(0);
    const search = await sh(a, "find / -xdev -name 'secret-of-b*' 2>/dev/null; ls / /home");
    expect(search.stdout).not.toContain("secret-of-b");
    expect(search.stdout).not.toContain(path.basename(dataDir.path));
    // The data folder itself is root-only on the host, and B's files belong to B's uid.
    expect((await sh(b, "cat secret-of-b.txt")).exitCode).toBe(0);
    expect((await readdir(pathsB.workspace)).includes("from-a.txt")).toBe(false);
  });

  test("A cannot see B's processes", async () => {
    await sh(b, "nohup sleep 4242 >/dev/null 2>&1 &");
    const inB = await sh(b, "ps -e -o args");
    expect(inB.stdout).toContain("sleep 4242");
    const inA = await sh(a, "ps -e -o pid,user,args");
    expect(inA.stdout).not.toContain("sleep 4242");
    // Only A's own: bubblewrap's pid 1, the supervisor, the worker, and this command.
    const users = inA.stdout
      .trim()
      .split("\n")
      .slice(1)
      .map((line) => line.trim().split(/\s+/)[1]);
    expect(new Set(users)).toEqual(new Set(["root", "user"]));
    expect(users.length).toBeLessThan(10);
  });

  test("A cannot reach B's services: each computer's loopback is its own", async () => {
    await sh(
      b,
      `nohup node -e 'require("node:net").createServer((s) => s.end("b-service\\n")).listen(9090, "0.0.0.0")' >/dev/null 2>&1 &`,
    );
    // B's own service answers inside B...
    let inB = "";
    for (let attempt = 0; attempt < 50 && !inB.includes("b-service"); attempt++) {
      inB = (await sh(b, connectCommand("127.0.0.1", 9090))).stdout;
      if (!inB.includes("b-service")) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(inB).toContain("b-service");
    // ...but A's 127.0.0.1 is A's own, and A has no other address to try.
    const toB = await sh(a, connectCommand("127.0.0.1", 9090));
    expect(toB.exitCode).not.toBe(0);
    expect(toB.stdout).toBe("");
  });

  test("a host service on 0.0.0.0 is unreachable: neither at 127.0.0.1 nor at any host address", async () => {
    const service = await sh(a, connectCommand("127.0.0.1", hostService.port));
    expect(service.exitCode).not.toBe(0);
    expect(service.stdout).toBe("");
    const hostAddresses = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .filter((entry) => entry.family === "IPv4" && !entry.internal)
      .map((entry) => entry.address);
    for (const address of hostAddresses.slice(0, 4)) {
      const attempt = await sh(a, connectCommand(address, hostService.port));
      expect(attempt.exitCode, address).not.toBe(0);
      expect(attempt.output, address).toMatch(/unreachable/i);
    }
    expect(hostService.peers).toEqual([]);
  });
});
