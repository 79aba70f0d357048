/**
 * A fresh machine, the way a newcomer meets it: the real `roost up` (what `npm start` runs) as a
 * child process, on a host where bubblewrap is missing (a tools folder, ROOST_TOOLS_PATH, that
 * holds every tool but bwrap, and a stand-in apt-get that "installs" it by copying the host's
 * binary into that folder), then a shell command on an isolated computer. Also the refusals:
 * ROOST_INSTALL_SYSTEM_PACKAGES=0, a user that is not root without bubblewrap, and one whose user
 * namespaces are refused; and a user that is not root where they work (the unprivileged mode).
 */
import { spawn } from "node:child_process";
import {
  access,
  chmod,
  copyFile,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readlink,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { findFreePort } from "../../src/engine/index.ts";
import {
  asUnprivileged,
  nodeForUnprivileged,
  unprivilegedSkipReason,
  unprivilegedUid,
} from "../../src/computers/local/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

/** Every tool `roost up` looks for, found where this host has it; bwrap is left out of the folder. */
const hostTools = [
  "bwrap",
  "nsenter",
  "setpriv",
  "socat",
  "unshare",
  "mkfs.ext4",
  "e2fsck",
  "resize2fs",
  "losetup",
  "mount",
  "umount",
  "fstrim",
  "mkfifo",
];
const standardFolders = [
  "/usr/local/sbin",
  "/usr/local/bin",
  "/usr/sbin",
  "/usr/bin",
  "/sbin",
  "/bin",
];

async function whereIs(tool: string): Promise<string | undefined> {
  for (const folder of standardFolders) {
    const candidate = path.join(folder, tool);
    if (
      await access(candidate).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return undefined;
}

/** Why the root tests cannot run here; with CI=true (a root Debian host with the tools) a failure. */
async function rootSkipReason(): Promise<string | undefined> {
  let reason: string | undefined;
  if (process.getuid?.() !== 0) reason = "not running as root";
  else {
    for (const tool of hostTools) {
      if ((await whereIs(tool)) === undefined) reason ??= `${tool} is not installed`;
    }
  }
  if (reason === undefined) return undefined;
  if (process.env.CI === "true") throw new Error(`fresh-host.test.ts: ${reason}`);
  console.warn(`fresh-host.test.ts (as root): skipped: ${reason}`);
  return reason;
}

interface FreshHost {
  folder: string;
  dataDir: string;
  /** ROOST_TOOLS_PATH: every tool but bwrap, and the stand-in apt-get. */
  bin: string;
  /** What the stand-in apt-get was run with, one line a run. */
  calls(): Promise<string[]>;
}

/**
 * A tools folder without bwrap and with a stand-in apt-get that, like a real one on a machine
 * whose package lists were never fetched, fails to find bubblewrap until `apt-get update` ran.
 */
async function freshHost(owner?: number): Promise<FreshHost> {
  const folder = await mkdtemp(path.join(tmpdir(), "roost-fresh-host-"));
  const bin = path.join(folder, "bin");
  const state = path.join(folder, "apt-state");
  const dataDir = path.join(folder, "data");
  await Promise.all([mkdir(bin), mkdir(state), mkdir(dataDir, { mode: 0o700 })]);
  // Links, except for the tools the sandbox itself runs, which are copies: a folder of tools
  // outside the system folders (/opt/…/bin) must work too.
  for (const tool of hostTools) {
    const found = (await whereIs(tool))!;
    if (tool === "setpriv" || tool === "socat") await copyFile(found, path.join(bin, tool));
    else if (tool !== "bwrap") await symlink(found, path.join(bin, tool));
  }
  const bwrap = (await whereIs("bwrap"))!;
  const calls = path.join(state, "calls");
  await writeFile(
    path.join(bin, "apt-get"),
    `#!/bin/sh
# A stand-in apt-get (fresh-host.test.ts): records its arguments; "installs" bubblewrap by
# copying the host's bwrap into the tools folder, once the package lists were fetched.
echo "$*" >> '${calls}'
case "$1" in
  update)
    echo "Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]"
    touch '${state}/updated'
    exit 0 ;;
  install)
    echo "Reading package lists..."
    if [ ! -e '${state}/updated' ]; then echo "E: Unable to locate package bubblewrap" >&2; exit 100; fi
    for package in "$@"; do
      if [ "$package" = bubblewrap ]; then
        cp '${bwrap}' '${bin}/bwrap'
        echo "Setting up bubblewrap (0.8.0-2+deb12u1) ..."
      fi
    done
    exit 0 ;;
esac
exit 1
`,
  );
  await chmod(path.join(bin, "apt-get"), 0o755);
  if (owner !== undefined) {
    await chown(folder, owner, owner);
    await chown(dataDir, owner, owner);
  }
  return {
    folder,
    dataDir,
    bin,
    calls: async () =>
      (await readFile(calls, "utf8").catch(() => "")).split("\n").filter((line) => line !== ""),
  };
}

/** Runs `roost up` that is expected to stop at start; resolves with its exit code and output. */
async function roostUpUntilExit(options: {
  dataDir: string;
  env: Record<string, string>;
  prefix?: readonly string[];
  node?: string;
}): Promise<{ code: number | null; output: string }> {
  const port = await findFreePort([]);
  const [file, ...args] = [
    ...(options.prefix ?? []),
    options.node ?? process.execPath,
    "src/cli/main.ts",
    "up",
  ];
  const child = spawn(file, args, {
    env: {
      ...process.env,
      ROOST_DATA_DIR: options.dataDir,
      ROOST_PORT: String(port),
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  clearTimeout(timer);
  return { code, output };
}

async function shellOnComputer(roost: RoostProcess, command: string) {
  const api = apiClient(roost.url, roost.token);
  const bot = await api.createBot("newcomer");
  const conversation = await api.createConversation(bot.id);
  await api.send(conversation.id, `$ ${command}`);
  const steps = await api.waitForSteps(conversation.id, "reply", 1, 90_000);
  return steps.find((step) => step.kind === "tool")!.payload as {
    name: string;
    isError: boolean;
    details: { exitCode: number; stdout: string };
  };
}

const rootSkip = await rootSkipReason();

describe.skipIf(rootSkip !== undefined)("a fresh machine, as root", () => {
  let host: FreshHost;
  let roost: RoostProcess | undefined;
  beforeEach(async () => {
    host = await freshHost();
  });
  afterEach(async () => {
    await roost?.stop();
    roost = undefined;
    await rm(host.folder, { recursive: true, force: true });
  });

  test("bubblewrap missing: `roost up` says so in one line, installs it with apt-get (after apt-get update), and a shell command runs on an isolated computer", async () => {
    roost = await createRoostProcess({
      dataDir: host.dataDir,
      env: { ROOST_TOOLS_PATH: host.bin, ROOST_FOLLOW_UP_WINDOW_MS: "200" },
    });
    await roost.start();
    const output = roost.output();
    expect(output).toContain(
      "roost: installing bubblewrap for isolated computers (apt-get install -y bubblewrap); set ROOST_INSTALL_SYSTEM_PACKAGES=0 to do it yourself",
    );
    expect(output.match(/roost: installing/g)).toHaveLength(1);
    // apt-get's own output is in the log file, not on the terminal.
    expect(output).not.toContain("Setting up bubblewrap");
    expect(output).not.toContain("Unable to locate package");
    const log = await readFile(path.join(host.dataDir, "system-packages.log"), "utf8");
    expect(log).toContain("E: Unable to locate package bubblewrap");
    expect(log).toContain("Setting up bubblewrap (0.8.0-2+deb12u1) ...");
    const install = "install -y --no-install-recommends -o DPkg::Lock::Timeout=120 bubblewrap";
    expect(await host.calls()).toEqual([install, "update", install]);
    expect(output).toContain("computers:   local (isolated sandboxes)");

    const api = apiClient(roost.url, roost.token);
    expect(await api.call("GET", "/v1/computers/me")).toMatchObject({
      provider: "local",
      isolated: true,
      isolation: "full",
    });
    const tool = await shellOnComputer(roost, "echo hi; id -u; hostname");
    expect(tool).toMatchObject({ name: "shell", isError: false, details: { exitCode: 0 } });
    const [hi, uid, hostname] = tool.details.stdout.trim().split("\n");
    expect(hi).toBe("hi");
    expect(Number(uid)).toBeGreaterThanOrEqual(200_000); // the computer's own uid
    expect(hostname).toBe("computer");
  });

  test("ROOST_INSTALL_SYSTEM_PACKAGES=0: `roost up` stops, naming bwrap and the command that installs it, and runs no apt-get", async () => {
    const { code, output } = await roostUpUntilExit({
      dataDir: host.dataDir,
      env: { ROOST_TOOLS_PATH: host.bin, ROOST_INSTALL_SYSTEM_PACKAGES: "0" },
    });
    expect(code).toBe(1);
    expect(output).toContain(
      "This host cannot isolate computers (the local provider), because it lacks: bwrap (install them: apt-get install -y bubblewrap)",
    );
    expect(output).toContain(
      "ROOST_INSTALL_SYSTEM_PACKAGES=0 is set, so Roost did not install them itself.",
    );
    expect(output).toContain("ROOST_COMPUTER_PROVIDER=process");
    expect(output).not.toContain("roost: installing");
    expect(await host.calls()).toEqual([]);
  });
});

const unprivilegedSkip = await unprivilegedSkipReason("fresh-host.test.ts (not root)");

describe.skipIf(unprivilegedSkip !== undefined)("as a user that is not root", () => {
  const uid = unprivilegedUid();
  let host: FreshHost;
  let home: string;
  let node: string;
  let roost: RoostProcess | undefined;
  beforeEach(async () => {
    host = await freshHost(process.getuid?.() === 0 ? uid : undefined);
    home = path.join(host.folder, "home");
    await mkdir(home, { mode: 0o700 });
    if (process.getuid?.() === 0) await chown(home, uid, uid);
    node = await nodeForUnprivileged();
  });
  afterEach(async () => {
    await roost?.stop();
    roost = undefined;
    await rm(host.folder, { recursive: true, force: true });
  });

  test("user namespaces work: `roost up` prints the unprivileged state, GET /v1/computers/me labels it, and a shell command runs on the computer", async () => {
    roost = await createRoostProcess({
      dataDir: host.dataDir,
      env: { HOME: home, ROOST_FOLLOW_UP_WINDOW_MS: "200" },
      prefix: asUnprivileged(),
      node,
    });
    await roost.start();
    expect(roost.output()).toContain(
      "computers:   local (isolated sandboxes, unprivileged: no per-computer uids, no memory/CPU/disk limits)",
    );
    const api = apiClient(roost.url, roost.token);
    expect(await api.call("GET", "/v1/computers/me")).toMatchObject({
      provider: "local",
      isolated: true,
      isolation: "unprivileged",
    });
    const tool = await shellOnComputer(roost, "echo hi; id -u; hostname; ls /home");
    expect(tool).toMatchObject({ name: "shell", isError: false });
    expect(tool.details.stdout).toBe(`hi\n${uid}\ncomputer\nuser\n`);
  });

  test("bubblewrap missing: `roost up` stops with the command to run (sudo apt-get install -y bubblewrap) and installs nothing", async () => {
    const { code, output } = await roostUpUntilExit({
      dataDir: host.dataDir,
      env: { HOME: home, ROOST_TOOLS_PATH: host.bin },
      prefix: asUnprivileged(),
      node,
    });
    expect(code).toBe(1);
    expect(output).toContain("bwrap (install them: sudo apt-get install -y bubblewrap)");
    expect(output).not.toContain("roost: installing");
    expect(await host.calls()).toEqual([]);
  });

  test("user namespaces refused (none left to this user, as with user.max_user_namespaces=0): `roost up` stops and says why and what to do", async () => {
    // The server runs inside a user namespace that may create no other (bubblewrap's
    // --disable-userns): the kernel refuses a nested one with ENOSPC, as it does on a host whose
    // limit is 0. Only what it needs is bound in, not the host's whole mount tree: a copy of
    // other tests' disk mounts would hold their loop devices (DISK3) while it runs.
    const checkout = path.resolve(import.meta.dirname, "../..");
    const system: string[] = [];
    for (const folder of ["/bin", "/sbin", "/lib", "/lib32", "/lib64"]) {
      const info = await lstat(folder).catch(() => undefined);
      if (info?.isSymbolicLink()) system.push("--symlink", await readlink(folder), folder);
      else if (info?.isDirectory()) system.push("--ro-bind", folder, folder);
    }
    const { code, output } = await roostUpUntilExit({
      dataDir: host.dataDir,
      env: { HOME: home },
      prefix: [
        ...asUnprivileged(),
        (await whereIs("bwrap"))!,
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--die-with-parent",
        "--ro-bind",
        "/usr",
        "/usr",
        ...system,
        "--ro-bind",
        "/etc",
        "/etc",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--ro-bind",
        path.dirname(node),
        path.dirname(node),
        "--ro-bind",
        checkout,
        checkout,
        "--bind",
        host.folder,
        host.folder,
        "--chdir",
        checkout,
        "--",
      ],
      node,
    });
    expect(code).toBe(1);
    expect(output).toContain(
      "This host cannot isolate computers (the local provider), because it lacks: unprivileged user namespaces (Roost is not running as root",
    );
    expect(output).toContain("max_*_namespaces exceeded");
    expect(output).toContain("user.max_user_namespaces above 0");
    expect(output).toContain("or run Roost as root");
    expect(output).toContain("ROOST_COMPUTER_PROVIDER=process");
  });
});
