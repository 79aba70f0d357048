/**
 * Host preparation (host-setup.ts): the real detection on scripted hosts, with the package
 * manager behind the runner seam, so the flow is checked without changing this machine; and the
 * real runner against a stand-in apt-get script. The newcomer's path end to end (the real
 * `roost up` on a PATH without bubblewrap) is test/e2e/fresh-host.test.ts.
 */
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { isRoostError } from "../errors/index.ts";
import { detectHost } from "./detect.ts";
import {
  prepareHost,
  runPackageCommand,
  type HostSetupOptions,
  type PackageCommandRunner,
} from "./host-setup.ts";
import type { CgroupDiscovery } from "./local/cgroups.ts";

const everyTool = [
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
  "apt-get",
];
/** Which tool each package brings (what the scripted apt-get "installs"). */
const toolsOf: Record<string, string[]> = {
  bubblewrap: ["bwrap"],
  socat: ["socat"],
  e2fsprogs: ["mkfs.ext4", "e2fsck", "resize2fs"],
};
const cgroups = async (): Promise<CgroupDiscovery> => ({
  hierarchies: [],
  controllers: { memory: 2, pids: 2, cpu: 2, freezer: 2 },
});

interface ScriptedHost {
  installed: Set<string>;
  commands: string[];
  notices: string[];
  options(overrides?: Partial<HostSetupOptions>): HostSetupOptions;
}

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(path.join(tmpdir(), "roost-host-setup-"));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

/**
 * A host (as seen by the real detectHost) lacking `missing`, whose apt-get is `respond`: it gets
 * each command and prints, and what it reports as exit status decides whether the packages arrive.
 */
function scriptedHost(
  missing: string[],
  respond: (args: readonly string[], print: (text: string) => void) => number,
  host: { uid?: number; cgroups?: () => Promise<CgroupDiscovery> } = {},
): ScriptedHost {
  const installed = new Set(everyTool.filter((tool) => !missing.includes(tool)));
  const commands: string[] = [];
  const notices: string[] = [];
  const run: PackageCommandRunner = async (file, args, options) => {
    commands.push(`${path.basename(file)} ${args.join(" ")}`);
    expect(options.env.DEBIAN_FRONTEND).toBe("noninteractive");
    const exitCode = respond(args, options.onOutput);
    if (exitCode === 0 && args[0] === "install") {
      for (const name of args.filter((arg) => toolsOf[arg] !== undefined))
        for (const tool of toolsOf[name]!) installed.add(tool);
    }
    return { exitCode, signal: null, timedOut: false };
  };
  return {
    installed,
    commands,
    notices,
    options: (overrides = {}) => ({
      provider: "auto",
      installSystemPackages: true,
      searchPath: undefined,
      logFile: path.join(folder, "data", "system-packages.log"),
      notice: (line) => notices.push(line),
      detect: () =>
        detectHost({
          platform: "linux",
          getuid: () => host.uid ?? 0,
          findTool: async (name) => (installed.has(name) ? `/usr/bin/${name}` : undefined),
          run: async () => ({ exitCode: 0, signal: null, stdout: "", stderr: "" }),
          discoverCgroups: host.cgroups ?? cgroups,
        }),
      run,
      ...overrides,
    }),
  };
}

const installArgs = "install -y --no-install-recommends -o DPkg::Lock::Timeout=120";

describe("prepareHost", () => {
  test("a fresh root host with apt-get: one line, one apt-get install, then the probe finds the tools", async () => {
    const host = scriptedHost(["bwrap", "socat"], (_args, print) => {
      print("Reading package lists...\nSetting up bubblewrap (0.8.0-2+deb12u1) ...\n");
      return 0;
    });
    const setup = await prepareHost(host.options());
    expect(host.notices).toEqual([
      "roost: installing bubblewrap socat for isolated computers (apt-get install -y bubblewrap socat); set ROOST_INSTALL_SYSTEM_PACKAGES=0 to do it yourself",
    ]);
    expect(host.commands).toEqual([`apt-get ${installArgs} bubblewrap socat`]);
    expect(setup.installed).toEqual(["bubblewrap", "socat"]);
    expect(setup.report.localAvailable).toBe(true);
    expect(setup.report.isolation).toBe("full");
    // The package manager's output is in the log, not on the terminal.
    const log = await readFile(path.join(folder, "data", "system-packages.log"), "utf8");
    expect(log).toContain(`apt-get ${installArgs} bubblewrap socat`);
    expect(log).toContain("Setting up bubblewrap (0.8.0-2+deb12u1) ...");
  });

  test("no package lists yet: apt-get update once, then the install again", async () => {
    let updated = false;
    const host = scriptedHost(["bwrap"], (args, print) => {
      if (args[0] === "update") {
        updated = true;
        print("Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]\n");
        return 0;
      }
      if (!updated) {
        print("Reading package lists...\nE: Unable to locate package bubblewrap\n");
        return 100;
      }
      return 0;
    });
    const setup = await prepareHost(host.options());
    expect(host.commands).toEqual([
      `apt-get ${installArgs} bubblewrap`,
      "apt-get update",
      `apt-get ${installArgs} bubblewrap`,
    ]);
    expect(host.notices).toHaveLength(1);
    expect(setup.report.localAvailable).toBe(true);
  });

  test("an install that fails for another reason: the error has the command, its status, its last lines, the log and what to do; no update", async () => {
    const host = scriptedHost(["bwrap"], (_args, print) => {
      for (let line = 1; line <= 20; line++) print(`progress line ${line}\n`);
      print(
        "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)\n",
      );
      return 100;
    });
    const error = await prepareHost(host.options()).catch((caught: unknown) => caught);
    expect(isRoostError(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain(
      `installing bubblewrap for isolated computers failed: \`apt-get ${installArgs} bubblewrap\` exited with status 100.`,
    );
    expect(message).toContain("  E: Could not get lock /var/lib/dpkg/lock-frontend.");
    expect(message).toContain("  progress line 20");
    expect(message).not.toContain("progress line 5\n"); // only the last lines
    expect(message).toContain(path.join(folder, "data", "system-packages.log"));
    expect(message).toContain(
      "install them yourself (apt-get install -y bubblewrap) and start with ROOST_INSTALL_SYSTEM_PACKAGES=0",
    );
    expect(host.commands).toEqual([`apt-get ${installArgs} bubblewrap`]);
    const log = await readFile(path.join(folder, "data", "system-packages.log"), "utf8");
    expect(log).toContain("progress line 1\n");
  });

  test("an apt-get update that fails is reported as such", async () => {
    const host = scriptedHost(["bwrap"], (args, print) => {
      if (args[0] === "update") {
        print("E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease\n");
        return 100;
      }
      print("E: Unable to locate package bubblewrap\n");
      return 100;
    });
    await expect(prepareHost(host.options())).rejects.toThrow(
      /`apt-get update` exited with status 100\.\nIts last lines:\n {2}E: Failed to fetch/,
    );
  });

  test("ROOST_INSTALL_SYSTEM_PACKAGES=0: nothing runs; the message names the tools and the command", async () => {
    const host = scriptedHost(["bwrap", "socat"], () => 0);
    const setup = await prepareHost(host.options({ installSystemPackages: false }));
    expect(host.commands).toEqual([]);
    expect(host.notices).toEqual([]);
    expect(setup.report.localAvailable).toBe(false);
    expect(setup.report.message).toContain(
      "bwrap, socat (install them: apt-get install -y bubblewrap socat)",
    );
    expect(setup.report.message).toContain("ROOST_INSTALL_SYSTEM_PACKAGES=0 is set");
  });

  test("not root: nothing runs; the message gives the command with sudo", async () => {
    const host = scriptedHost(["bwrap"], () => 0, { uid: 1000 });
    const setup = await prepareHost(host.options());
    expect(host.commands).toEqual([]);
    expect(setup.report.message).toContain("sudo apt-get install -y bubblewrap");
  });

  test("no apt-get: nothing runs; the message names the packages", async () => {
    const host = scriptedHost(["bwrap", "apt-get"], () => 0);
    const setup = await prepareHost(host.options());
    expect(host.commands).toEqual([]);
    expect(setup.report.message).toContain("on Debian and Ubuntu: apt-get install -y bubblewrap");
  });

  test("the process provider: nothing is installed for it", async () => {
    const host = scriptedHost(["bwrap"], () => 0);
    await prepareHost(host.options({ provider: "process" }));
    expect(host.commands).toEqual([]);
  });

  test("cgroup controllers missing as well: nothing is installed, since it would not help", async () => {
    const host = scriptedHost(["bwrap"], () => 0, {
      cgroups: async () => ({
        hierarchies: [],
        controllers: { memory: undefined, pids: 1, cpu: undefined, freezer: undefined },
      }),
    });
    const setup = await prepareHost(host.options());
    expect(host.commands).toEqual([]);
    expect(setup.report.message).toContain("the cgroup controller memory");
  });

  test("nothing missing: nothing runs and nothing is printed", async () => {
    const host = scriptedHost([], () => 0);
    const setup = await prepareHost(host.options());
    expect(host.commands).toEqual([]);
    expect(host.notices).toEqual([]);
    expect(setup.report.localAvailable).toBe(true);
  });
});

describe("runPackageCommand (a real process)", () => {
  test("a package manager's output all reaches the log, in order, and its status is reported", async () => {
    const script = path.join(folder, "apt-get");
    await writeFile(
      script,
      `#!/bin/sh\nfor i in $(seq 1 300); do echo "line $i"; echo "warning $i" >&2; done\necho "args: $*"\nexit 3\n`,
    );
    await chmod(script, 0o755);
    const host = scriptedHost(["bwrap"], () => 0);
    const error: unknown = await prepareHost(
      host.options({
        run: runPackageCommand,
        detect: () =>
          detectHost({
            platform: "linux",
            getuid: () => 0,
            findTool: async (name) =>
              name === "bwrap" ? undefined : name === "apt-get" ? script : `/usr/bin/${name}`,
            run: async () => ({ exitCode: 0, signal: null, stdout: "", stderr: "" }),
            discoverCgroups: cgroups,
          }),
      }),
    ).catch((caught: unknown) => caught);
    expect((error as Error).message).toContain("exited with status 3.\nIts last lines:\n");
    const log = await readFile(path.join(folder, "data", "system-packages.log"), "utf8");
    expect(log).toContain(`args: ${installArgs} bubblewrap`);
    const lines = log.split("\n").filter((line) => line.startsWith("line "));
    expect(lines).toHaveLength(300);
    expect(lines.at(-1)).toBe("line 300");
    expect(log).toContain("warning 300");
    expect(host.notices).toHaveLength(1);
  });

  test("a package manager that hangs is stopped at its time limit", async () => {
    const script = path.join(folder, "hangs");
    await writeFile(script, "#!/bin/sh\necho started\nexec sleep 600\n");
    await chmod(script, 0o755);
    let output = "";
    const result = await runPackageCommand(script, [], {
      env: { PATH: "/usr/bin:/bin" },
      timeoutMs: 300,
      onOutput: (text) => (output += text),
    });
    expect(result.timedOut).toBe(true);
    expect(result.signal).toBe("SIGTERM");
    expect(output).toBe("started\n");
  });
});
