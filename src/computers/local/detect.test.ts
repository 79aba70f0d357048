/** Host detection (../detect.ts): the real host, and hosts that lack things (scripted probes). */
import { describe, expect, test } from "vitest";
import {
  chooseComputerProvider,
  detectHost,
  processProviderHint,
  type HostReport,
} from "../detect.ts";
import type { CgroupDiscovery } from "./cgroups.ts";
import type { CommandResult } from "./system.ts";

const ok: CommandResult = { exitCode: 0, signal: null, stdout: "", stderr: "" };
const noCgroups = async (): Promise<CgroupDiscovery> => ({
  hierarchies: [],
  controllers: { memory: undefined, pids: undefined, cpu: undefined, freezer: undefined },
});
const allCgroups = async (): Promise<CgroupDiscovery> => ({
  hierarchies: [],
  controllers: { memory: 2, pids: 2, cpu: 2, freezer: 2 },
});
/** A host where every tool but `without` is in /usr/bin. */
const toolsExcept =
  (...without: string[]) =>
  async (name: string) =>
    without.includes(name) ? undefined : `/usr/bin/${name}`;

describe("detectHost", () => {
  test("reports this host consistently", async () => {
    const report = await detectHost();
    expect(report.platform).toBe(process.platform);
    expect(report.root).toBe(process.getuid?.() === 0);
    expect(report.localAvailable).toBe(report.missing.length === 0);
    if (report.localAvailable) {
      expect(report.sandbox.ok && report.namespaces.ok).toBe(true);
      expect(report.isolation).toBe(report.root ? "full" : "unprivileged");
      expect(report.message).toMatch(/can isolate/);
    } else {
      expect(report.isolation).toBeUndefined();
      expect(report.message).toContain("ROOST_COMPUTER_PROVIDER=process");
    }
  });

  test("a bare host as root: names each missing piece, the command that installs them, and the process provider", async () => {
    const report = await detectHost({
      platform: "linux",
      getuid: () => 0,
      findTool: toolsExcept(
        "bwrap",
        "nsenter",
        "setpriv",
        "socat",
        "mkfs.ext4",
        "e2fsck",
        "resize2fs",
        "losetup",
        "mount",
        "umount",
        "fstrim",
        "unshare",
      ),
      run: async () => ok,
      discoverCgroups: noCgroups,
    });
    expect(report.localAvailable).toBe(false);
    expect(report.message).toContain("bwrap");
    expect(report.message).toContain("mkfs.ext4");
    expect(report.missingPackages).toEqual([
      "bubblewrap",
      "util-linux",
      "socat",
      "e2fsprogs",
      "mount",
    ]);
    expect(report.installCommand).toBe(
      "apt-get install -y bubblewrap util-linux socat e2fsprogs mount",
    );
    expect(report.message).toContain(
      "install them: apt-get install -y bubblewrap util-linux socat e2fsprogs mount",
    );
    expect(report.message).toContain("memory and pids");
    expect(report.message).toContain(processProviderHint);
    expect(report.sandbox.detail).toMatch(/not tried/);
    // The cgroups are missing too: installing packages would not be enough.
    expect(report.onlyPackagesMissing).toBe(false);
  });

  test("root, only bubblewrap and socat missing: installing them is all it takes", async () => {
    const report = await detectHost({
      platform: "linux",
      getuid: () => 0,
      findTool: toolsExcept("bwrap", "socat"),
      run: async () => ok,
      discoverCgroups: allCgroups,
    });
    expect(report.missingPackages).toEqual(["bubblewrap", "socat"]);
    expect(report.onlyPackagesMissing).toBe(true);
    expect(report.aptGet).toBe("/usr/bin/apt-get");
    expect(report.message).toContain(
      "bwrap, socat (install them: apt-get install -y bubblewrap socat)",
    );
  });

  test("not root: the command to run is given with sudo, and no disk tools or cgroups are needed", async () => {
    const report = await detectHost({
      platform: "linux",
      getuid: () => 1000,
      findTool: toolsExcept("bwrap", "mkfs.ext4", "losetup"),
      run: async () => ok,
      discoverCgroups: noCgroups,
    });
    expect(report.missing).toEqual(["bwrap (install them: sudo apt-get install -y bubblewrap)"]);
    expect(report.installCommand).toBe("sudo apt-get install -y bubblewrap");
    expect(report.loopDevices.detail).toMatch(/not needed without root/);
  });

  test("no apt-get: the Debian packages are named, and what to install elsewhere", async () => {
    const report = await detectHost({
      platform: "linux",
      getuid: () => 0,
      findTool: toolsExcept("bwrap", "apt-get"),
      run: async () => ok,
      discoverCgroups: allCgroups,
    });
    expect(report.aptGet).toBeUndefined();
    expect(report.installCommand).toBeUndefined();
    expect(report.message).toContain(
      "bwrap (on Debian and Ubuntu: apt-get install -y bubblewrap; elsewhere install what provides bwrap)",
    );
  });

  test("not root where user namespaces work: the unprivileged mode, probed inside a user namespace", async () => {
    const probes: string[][] = [];
    const report = await detectHost({
      platform: "linux",
      getuid: () => 1000,
      findTool: toolsExcept("mkfs.ext4"),
      run: async (file, args) => {
        probes.push([file, ...args]);
        return ok;
      },
      discoverCgroups: noCgroups,
    });
    expect(report.localAvailable).toBe(true);
    expect(report.isolation).toBe("unprivileged");
    expect(report.message).toMatch(
      /without root .*no per-computer uids, no memory\/CPU\/disk limits/,
    );
    expect(probes.find((argv) => argv[0]!.endsWith("/bwrap"))).toContain("--unshare-user");
    expect(probes.find((argv) => argv[0]!.endsWith("/unshare"))).toContain("--user");
    expect(chooseComputerProvider("auto", report)).toEqual({
      kind: "local",
      isolation: "unprivileged",
    });
  });

  test("not root where user namespaces are refused: says so, how to allow them, and that root works", async () => {
    const report = await detectHost({
      platform: "linux",
      getuid: () => 1000,
      findTool: toolsExcept(),
      run: async (file) => ({
        exitCode: 1,
        signal: null,
        stdout: "",
        stderr: file.endsWith("/bwrap")
          ? "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.\n"
          : "unshare: unshare failed: Operation not permitted\n",
      }),
      discoverCgroups: noCgroups,
    });
    expect(report.localAvailable).toBe(false);
    expect(report.onlyPackagesMissing).toBe(false);
    expect(report.missing).toHaveLength(1);
    expect(report.missing[0]).toContain("unprivileged user namespaces");
    expect(report.missing[0]).toContain("bwrap: No permissions to creating new namespace");
    expect(report.missing[0]).toContain("user.max_user_namespaces");
    expect(report.missing[0]).toContain("run Roost as root");
    expect(() => chooseComputerProvider("auto", report)).toThrow(/ROOST_COMPUTER_PROVIDER=process/);
  });

  test("a probe that fails is reported with its error", async () => {
    const report = await detectHost({
      platform: "linux",
      getuid: () => 0,
      findTool: async (name) => `/usr/bin/${name}`,
      run: async (file) =>
        file.endsWith("/bwrap")
          ? {
              exitCode: 1,
              signal: null,
              stdout: "",
              stderr: "bwrap: No permissions to create new namespace\n",
            }
          : ok,
      discoverCgroups: async () => ({
        hierarchies: [],
        controllers: { memory: 1, pids: 1, cpu: undefined, freezer: 1 },
      }),
    });
    expect(report.sandbox.ok).toBe(false);
    expect(report.missing).toEqual([
      "working bubblewrap: bwrap: No permissions to create new namespace",
    ]);
    expect(report.localAvailable).toBe(false);
  });

  test("a host without nftables and iproute2 can isolate computers: neither is needed", async () => {
    const looked: string[] = [];
    const report = await detectHost({
      platform: "linux",
      getuid: () => 0,
      findTool: async (name) => {
        looked.push(name);
        return name === "nft" || name === "ip" ? undefined : `/usr/bin/${name}`;
      },
      run: async () => ok,
      discoverCgroups: allCgroups,
    });
    expect(report.missing).toEqual([]);
    expect(report.localAvailable).toBe(true);
    expect(report.isolation).toBe("full");
    expect(looked).not.toContain("nft");
    expect(looked).not.toContain("ip");
  });

  test("not Linux: only the process provider can run", async () => {
    const report = await detectHost({ platform: "darwin", getuid: () => 501 });
    expect(report.missing).toEqual(["Linux (this is darwin)"]);
    expect(chooseComputerProvider("process", report).kind).toBe("process");
  });
});

describe("chooseComputerProvider", () => {
  const able = { localAvailable: true, isolation: "full", message: "can isolate" } as HostReport;
  const unable = {
    localAvailable: false,
    isolation: undefined,
    message: `cannot isolate. ${processProviderHint}`,
  } as HostReport;

  test("local by default where the host allows it", () => {
    expect(chooseComputerProvider(undefined, able)).toEqual({ kind: "local", isolation: "full" });
    expect(chooseComputerProvider("auto", able)).toEqual({ kind: "local", isolation: "full" });
    expect(chooseComputerProvider("local", able)).toEqual({ kind: "local", isolation: "full" });
  });

  test("stops with the report's message where it does not", () => {
    expect(() => chooseComputerProvider(undefined, unable)).toThrow(
      /ROOST_COMPUTER_PROVIDER=process/,
    );
    expect(() => chooseComputerProvider("local", unable)).toThrow(/cannot isolate/);
  });

  test("process only by name, with a loud warning", () => {
    const choice = chooseComputerProvider("process", unable);
    expect(choice.kind).toBe("process");
    expect(choice.warning).toMatch(/NOT isolated/);
    expect(() => chooseComputerProvider("docker", able)).toThrow(/must be "local" or "process"/);
  });
});
