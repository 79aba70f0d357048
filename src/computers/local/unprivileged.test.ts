/**
 * The local provider without root (`unprivileged` isolation, sandbox.ts X6): run by a server that
 * is not root (uid 65534 when this test runs as root), with real user namespaces. Two computers A
 * and B, and a server whose home folder holds a secret. The attacks are what a user namespace has
 * to stop when every computer shares the server's uid: another computer's files, the server's
 * own files and home, signals to everything the uid owns, and a way out of the namespace.
 */
import {
  chmod,
  chown,
  mkdir,
  mkdtemp,
  readdir,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { waitFor } from "../../../test/support/wait.ts";
import {
  startUnprivilegedHarness,
  unprivilegedSkipReason,
  unprivilegedUid,
  type UnprivilegedHarness,
} from "./testing/index.ts";

const skip = await unprivilegedSkipReason("unprivileged.test.ts");

interface Exec {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}
interface Info {
  uid: number;
  sandboxPid: number;
  cgroups: unknown[];
}

describe.skipIf(skip !== undefined)("the local provider without root", () => {
  const uid = unprivilegedUid();
  let folder: string;
  let dataDir: string;
  let home: string;
  let harness: UnprivilegedHarness;
  const sh = (computerId: string, command: string) =>
    harness.request<Exec>("exec", { computerId, argv: ["bash", "-c", command] });

  beforeAll(async () => {
    folder = await mkdtemp(path.join(tmpdir(), "roost-unprivileged-"));
    dataDir = path.join(folder, "computers");
    home = path.join(folder, "home");
    await chown(folder, uid, uid);
    for (const made of [dataDir, home]) {
      await mkdir(made, { mode: 0o700 });
      await chown(made, uid, uid);
    }
    await writeFile(path.join(home, "server-secret"), "the server's own secret\n", { mode: 0o600 });
    await chown(path.join(home, "server-secret"), uid, uid);
    harness = await startUnprivilegedHarness(dataDir, { HOME: home });
    for (const id of ["a", "b"]) {
      await harness.request("create", { computerId: id });
      await harness.request("wake", { computerId: id });
    }
    await sh("b", "echo b-secret > /workspace/b-secret && echo b-home > ~/b-home-secret");
  }, 90_000);

  afterAll(async () => {
    await harness?.close();
    if (folder !== undefined) await rm(folder, { recursive: true, force: true });
  });

  test("the provider runs unprivileged: no cgroups, and every computer is the server's uid", async () => {
    expect(harness.isolation).toBe("unprivileged");
    const a = await harness.request<Info>("info", { computerId: "a" });
    const b = await harness.request<Info>("info", { computerId: "b" });
    expect(a.uid).toBe(uid);
    expect(b.uid).toBe(uid);
    expect(a.cgroups).toEqual([]);
    expect((await sh("a", "id -u")).stdout.trim()).toBe(String(uid));
  });

  test("inside: its own user namespace mapping only the server's uid, no capabilities, no_new_privs, the seccomp filter", async () => {
    const result = await sh(
      "a",
      "cat /proc/self/uid_map; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; readlink /proc/self/ns/user",
    );
    const mapping = result.stdout.split("\n")[0]!.trim().split(/\s+/);
    expect(mapping).toEqual([String(uid), String(uid), "1"]);
    expect(result.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(result.stdout).toMatch(/CapBnd:\s+0+\n/);
    expect(result.stdout).toMatch(/NoNewPrivs:\s+1\n/);
    expect(result.stdout).toMatch(/Seccomp:\s+2\n/);
    // The worker itself (started by the supervisor, not through exec) is the same.
    const worker = await sh(
      "a",
      "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/$(pgrep -f '^/opt/node/bin/node ' | head -1)/status",
    );
    expect(worker.stdout).toMatch(/CapEff:\s+0+\nNoNewPrivs:\s+1\nSeccomp:\s+2\n/);
  });

  test("a tool call reaches the computer's worker and runs in /workspace", async () => {
    const result = await harness.request<{ ok: boolean; output: { stdout: string } }>("call", {
      computerId: "a",
      tool: "shell",
      input: { command: "echo from-a > note && cat note && pwd && hostname" },
    });
    expect(result.ok).toBe(true);
    expect(result.output.stdout).toBe("from-a\n/workspace\ncomputer\n");
  });

  test("attack: computer A looks for B's files by their host path, by name and through /proc", async () => {
    const hostB = path.join(dataDir, "b");
    const result = await sh(
      "a",
      [
        `cat ${hostB}/disk/workspace/b-secret 2>&1`,
        `ls ${dataDir} 2>&1`,
        "find / -xdev \\( -name 'b-secret' -o -name 'b-home-secret' \\) 2>/dev/null",
        "cat /proc/*/root/workspace/b-secret 2>&1",
        "ls /proc/*/root/home/user 2>/dev/null",
        "echo done",
      ].join("; "),
    );
    expect(result.stdout).not.toContain("b-secret\n");
    expect(result.stdout).not.toContain("b-home");
    expect(result.stdout).toContain(
      `cat: ${hostB}/disk/workspace/b-secret: No such file or directory`,
    );
    expect(result.stdout).toContain(`ls: cannot access '${dataDir}': No such file or directory`);
    expect(result.stdout).toContain("done");
    // B's files are still B's.
    expect((await sh("b", "cat /workspace/b-secret")).stdout).toBe("b-secret\n");
  });

  test("attack: the server's home folder and data folder are not there, though the computer has the server's uid", async () => {
    const result = await sh(
      "a",
      `cat ${home}/server-secret 2>&1; ls ${folder} 2>&1; ls /home; grep -rs 'the server' /home /tmp /run /var 2>/dev/null; echo done`,
    );
    expect(result.stdout).toContain(`cat: ${home}/server-secret: No such file or directory`);
    expect(result.stdout).toContain(`ls: cannot access '${folder}': No such file or directory`);
    expect(result.stdout).toContain("user\n");
    expect(result.stdout).not.toContain("the server's own secret");
  });

  test("attack: no way out of the namespace: unshare, a nested user namespace and mount are refused", async () => {
    const result = await sh(
      "a",
      "unshare -U -r true 2>&1; echo unshare=$?; unshare -m true 2>&1; echo mountns=$?; mkdir -p /tmp/m && mount -t tmpfs none /tmp/m 2>&1; echo mount=$?",
    );
    expect(result.stdout).toContain("unshare=1");
    expect(result.stdout).toContain("mountns=1");
    expect(result.stdout).toMatch(/mount=(1|32)/);
    expect(result.stdout).toContain("Operation not permitted");
  });

  test("attack: kill -9 -1 in A reaches only A's own processes: B and the server keep running", async () => {
    const serverAlive = () =>
      stat(`/proc/${harness.pid}`).then(
        () => true,
        () => false,
      );
    const bBefore = await harness.request<Info>("info", { computerId: "b" });
    await sh("a", "kill -9 -1; true").catch(() => undefined);
    expect(await serverAlive()).toBe(true);
    expect((await sh("b", "echo b-alive")).stdout).toBe("b-alive\n");
    expect((await harness.request<Info>("info", { computerId: "b" })).sandboxPid).toBe(
      bBefore.sandboxPid,
    );
    // A's supervisor was among them: its sandbox ends, is cleaned up and reported, and A wakes again.
    await waitFor(
      async () => (await harness.request<string[]>("exits")).some((line) => line.startsWith("a: ")),
      { timeoutMs: 20_000, what: "A's sandbox to be reported gone" },
    );
    await harness.request("wake", { computerId: "a" });
    expect((await sh("a", "cat /workspace/note")).stdout).toBe("from-a\n");
  });

  // Skipped when this test is not root: then there is no other user to play the attacker.
  test.skipIf(process.getuid?.() !== 0)(
    "attack: another user made the server's runtime folder first (or linked it elsewhere): the provider refuses to start",
    async () => {
      // The harness's TMPDIR is a folder of root's, the "other user" here, who prepared the
      // folder the provider would keep its sockets and sandbox scripts in.
      const squatted = path.join(folder, "squatted-tmp");
      await mkdir(path.join(squatted, `roost-${uid}`), { recursive: true, mode: 0o777 });
      await chmod(squatted, 0o777); // anyone may make folders here, as in /tmp
      await expect(
        startUnprivilegedHarness(path.join(folder, "other-data"), { HOME: home, TMPDIR: squatted }),
      ).rejects.toThrow(
        new RegExp(`roost-${uid} holds the computers' sockets .* but it is owned by uid 0`),
      );
      const linked = path.join(folder, "linked-tmp");
      await mkdir(linked, { mode: 0o777 });
      await chmod(linked, 0o777);
      await symlink(path.join(squatted, `roost-${uid}`), path.join(linked, `roost-${uid}`));
      await expect(
        startUnprivilegedHarness(path.join(folder, "other-data"), { HOME: home, TMPDIR: linked }),
      ).rejects.toThrow(/but it is a link to/);
    },
  );

  test("its disk is plain folders of the server's uid, closed to everyone else; sleep leaves no process", async () => {
    const disk = path.join(dataDir, "a");
    for (const folderPath of [
      disk,
      path.join(disk, "disk"),
      path.join(disk, "disk", "workspace"),
    ]) {
      const info = await stat(folderPath);
      expect(info.uid).toBe(uid);
      expect(info.mode & 0o077).toBe(0);
    }
    expect(await readdir(path.join(disk, "disk"))).toEqual(
      expect.arrayContaining(["home", "workspace", "worker"]),
    );
    const usage = await harness.request<{ pids: number[] }>("usage", { computerId: "a" });
    expect(usage.pids.length).toBeGreaterThan(1);
    await harness.request("sleep", { computerId: "a" });
    await waitFor(
      async () => {
        const alive = await Promise.all(
          usage.pids.map((pid) =>
            stat(`/proc/${pid}`).then(
              () => true,
              () => false,
            ),
          ),
        );
        return alive.every((isAlive) => !isAlive);
      },
      { timeoutMs: 10_000, what: "A's processes to be gone after sleep" },
    );
  });
});
