/**
 * The disk limit (disk-image.ts), with the real worker in a real sandbox: a computer that fills
 * its disk gets "No space left on device" at the limit, while the host and another computer keep
 * writing; freeing space makes it writable again; its files survive sleep and wake, and a
 * sleeping computer holds no mount.
 */
import { readdir, realpath, rm, statfs, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readMounts } from "./disk-image.ts";
import { createLocalProvider, type LocalProvider } from "./local-provider.ts";
import { runCommand } from "./system.ts";
import {
  makeTempDir,
  shellStdout,
  skipReason,
  startTestGateway,
  uniqueId,
  type TestGateway,
} from "./testing/index.ts";

const skip = await skipReason("disk-quota.test.ts");
const mib = 1024 * 1024;

describe.skipIf(skip !== undefined)("local provider disk limit", () => {
  let dataDir: { path: string; remove: () => Promise<void> };
  let gateway: TestGateway;
  let provider: LocalProvider;
  const full = uniqueId("quota-full");
  const other = uniqueId("quota-other");

  /** A shell command through the real worker, as a bot's Shell tool runs it. */
  const shell = async (command: string) => {
    const result = await gateway.call("shell", { command: `${command} 2>&1; echo "exit=$?"` });
    return shellStdout(result);
  };
  /** A command whose own output cannot be kept (the disk it writes to is full): its exit code. */
  const fill = async (command: string) => {
    const result = await gateway.call("shell", { command });
    expect(result.ok).toBe(true);
  };
  const mountsOf = async (computerId: string) => {
    const mountPoint = path.join(await realpath(dataDir.path), computerId, "mount");
    return (await readMounts()).filter((entry) => entry.mountPoint === mountPoint);
  };

  beforeAll(async () => {
    dataDir = await makeTempDir();
    gateway = await startTestGateway();
    provider = await createLocalProvider({
      dataDir: dataDir.path,
      limits: { diskBytes: 64 * mib },
      sockets: {
        gateway: async (id, socketPath) => {
          if (id === full) return gateway.listenComputer(id, socketPath);
          // The other computer's worker never gets through: it is driven by exec alone.
          const silent = createServer((socket) => socket.destroy());
          await new Promise<void>((resolve) => silent.listen(socketPath, resolve));
          return { close: () => new Promise<void>((resolve) => silent.close(() => resolve())) };
        },
      },
    });
    for (const id of [full, other]) await provider.create(id);
    await provider.wake(full, { gatewayUrl: gateway.url, workerToken: "quota-token" });
    await provider.wake(other, { gatewayUrl: gateway.url, workerToken: "other-token" });
    await gateway.waitForHello(1);
  });

  afterAll(async () => {
    try {
      for (const id of [full, other]) await provider?.destroy(id);
      await provider?.close();
    } finally {
      await gateway?.close();
      await dataDir?.remove();
    }
  });

  test("the disk inside is the limit's size", async () => {
    const output = await shell("df --output=size -B1 /workspace | tail -1");
    const size = Number(output.split("\n")[0]);
    expect(size).toBeGreaterThan(50 * mib);
    expect(size).toBeLessThanOrEqual(64 * mib);
  });

  test("filling the disk stops at the limit with ENOSPC: fallocate and dd", async () => {
    // The command that fills the disk cannot write its own output there either: it goes to /tmp
    // (memory), and the next call reads it, which the worker's disk reserve makes possible.
    await fill(
      'fallocate -l 100M /workspace/reserved 2>/tmp/out.txt; echo "exit=$?" >> /tmp/out.txt',
    );
    expect(await shell("cat /tmp/out.txt; rm /workspace/reserved")).toMatch(
      /fallocate failed: No space left on device\nexit=1\n/,
    );
    await fill(
      'dd if=/dev/zero of=/workspace/fill bs=1M count=100 2>/tmp/out.txt; echo "exit=$?" >> /tmp/out.txt; dd if=/dev/zero of=$HOME/more bs=1M count=10 2>>/tmp/out.txt; echo "exit=$?" >> /tmp/out.txt',
    );
    const output = await shell("cat /tmp/out.txt; df --output=avail -B1 /workspace | tail -1");
    // Home is on the same disk.
    expect(output).toMatch(
      /No space left on device[\s\S]*exit=1\n[\s\S]*No space left on device[\s\S]*exit=1\n/,
    );
    const available = Number(output.split("\n").at(-3));
    expect(available).toBeLessThan(9 * mib); // at most what the worker's reserve gave back
  });

  test("a full disk leaves the host and another computer writing", async () => {
    // The host: a file of the same size as the limit next to the computers' disks.
    const hostFile = path.join(dataDir.path, "host-file.bin");
    await writeFile(hostFile, Buffer.alloc(64 * mib, 1));
    await rm(hostFile);
    const host = await statfs(dataDir.path);
    expect(host.bavail * host.bsize).toBeGreaterThan(256 * mib);
    // The other computer writes as much as it likes up to its own limit.
    const written = await provider.exec(other, [
      "sh",
      "-c",
      "dd if=/dev/zero of=/workspace/other.bin bs=1M count=40 2>&1 && sync && wc -c < /workspace/other.bin",
    ]);
    expect(written.exitCode).toBe(0);
    expect(written.stdout).toMatch(/41943040\n$/);
  });

  test("on a full disk the bot still runs commands; after the big files are deleted, the computer writes again", async () => {
    expect(await shell("rm -f /workspace/fill $HOME/more")).toMatch(/exit=0/);
    expect(
      await shell("dd if=/dev/zero of=/workspace/after bs=1M count=20 && wc -c < /workspace/after"),
    ).toMatch(/20971520\nexit=0/);
  });

  test("upgrade: a computer whose disk is still plain folders moves into an image at its first wake, every file and its slot kept", async () => {
    const old = uniqueId("quota-old");
    try {
      await provider.create(old);
      await provider.wake(old, { gatewayUrl: "ws://127.0.0.1:9/v1/gateway", workerToken: "t" });
      const slot = provider.info(old)!.slot;
      const made = await provider.exec(old, [
        "sh",
        "-c",
        "mkdir -p /workspace/src ~/.ssh && echo code > /workspace/src/main.py && ln -s src/main.py /workspace/link && chmod 600 /workspace/src/main.py && echo key > ~/.ssh/id && dd if=/dev/urandom of=/workspace/blob bs=1k count=300 2>/dev/null && sha256sum /workspace/blob ~/.ssh/id /workspace/src/main.py && stat -c '%a %U %n' /workspace/src/main.py",
      ]);
      expect(made.exitCode).toBe(0);
      await provider.sleep(old);
      // Make it what a server from before images left: the disk's folders in the computer's folder.
      const hostDir = path.join(dataDir.path, old);
      await provider.withDisk(old, async (paths) => {
        const copied = await runCommand("sh", ["-c", `cp -a "${paths.root}"/. "${hostDir}"/`]);
        expect(copied.exitCode).toBe(0);
      });
      await rm(path.join(hostDir, "disk.img"));
      await rm(path.join(hostDir, "mount"), { recursive: true });
      expect((await readdir(hostDir)).sort()).toEqual(
        expect.arrayContaining(["home", "local.json", "worker", "workspace"]),
      );

      await provider.wake(old, { gatewayUrl: "ws://127.0.0.1:9/v1/gateway", workerToken: "t" });
      expect(provider.info(old)!.slot).toBe(slot);
      const after = await provider.exec(old, [
        "sh",
        "-c",
        "sha256sum /workspace/blob ~/.ssh/id /workspace/src/main.py && stat -c '%a %U %n' /workspace/src/main.py && readlink /workspace/link && df --output=size -B1M /workspace | tail -1",
      ]);
      const [sums, size] = [after.stdout.split("\n").slice(0, 5).join("\n"), after.stdout];
      expect(`${sums}\n`).toBe(`${made.stdout}src/main.py\n`);
      // The image is the limit, grown to fit the old folders plus migration headroom (64 MiB):
      // never the host's free space.
      expect(Number(size.trim().split("\n").at(-1))).toBeLessThanOrEqual(64 + 64);
      expect((await readdir(hostDir)).sort()).toEqual(["disk.img", "local.json", "mount"]);
    } finally {
      await provider.destroy(old);
    }
  });

  test("sleep and wake keep the files; asleep, the computer holds no mount", async () => {
    expect(
      await shell("echo kept > /workspace/kept.txt && mkdir -p ~/.cache && echo home > ~/.cache/h"),
    ).toMatch(/exit=0/);
    expect(await mountsOf(full)).toHaveLength(1);
    await provider.sleep(full);
    expect(await mountsOf(full)).toEqual([]);
    const hellos = gateway.hellos;
    await provider.wake(full, { gatewayUrl: gateway.url, workerToken: "quota-token" });
    await gateway.waitForHello(hellos + 1);
    expect(await shell("cat /workspace/kept.txt ~/.cache/h && wc -c < /workspace/after")).toBe(
      "kept\nhome\n20971520\nexit=0\n",
    );
  });
});
