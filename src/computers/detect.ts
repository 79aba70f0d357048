/**
 * What this host allows for computers, checked once at start so the server can pick a provider
 * (ARCHITECTURE.md §7). The isolated `local` provider runs in one of two modes:
 *
 * - **full**, as root: bubblewrap, util-linux (nsenter, setpriv, fstrim), socat (the sandbox's
 *   forwarder to the egress proxy), e2fsprogs and mount (each computer's disk is a loop-mounted
 *   ext4 image), loop devices, namespaces that can be created, and the memory and pids cgroup
 *   controllers (v1 or v2; cpu is used when present).
 * - **unprivileged**, as any other user where unprivileged user namespaces work: bubblewrap,
 *   util-linux and socat, and a sandbox in a user namespace; no per-computer uids, cgroups or
 *   disk images (docs/computers.md, "Without root").
 *
 * Neither needs a firewall or network tools: a computer's network namespace holds only loopback.
 * Where neither is possible, Roost stops with a message naming what is missing and the command
 * that installs the missing packages; the unisolated `process` provider runs only when asked for
 * explicitly (ROOST_COMPUTER_PROVIDER=process). `roost up` first installs missing packages itself
 * where it can (host-setup.ts).
 *
 * The probes change nothing on the host: namespaces are created by short-lived processes that
 * exit, and the loop probe only asks for the first free loop device (`losetup --find`).
 */
import { ConfigError } from "../errors/index.ts";
import { discoverCgroups, type CgroupController, type CgroupDiscovery } from "./local/cgroups.ts";
import { diskToolNames, diskToolPackages, type DiskToolName } from "./local/disk-image.ts";
import {
  findExecutable,
  hostToolNames,
  hostToolPackages,
  runCommand,
  type CommandResult,
  type HostToolName,
} from "./local/system.ts";
import type { LocalIsolation } from "./provider.ts";

export interface HostCheck {
  ok: boolean;
  /** What was tried and, when it failed, why. */
  detail: string;
}

export interface HostReport {
  platform: string;
  root: boolean;
  /** Where each tool the local provider drives was found; undefined when missing. */
  tools: Record<HostToolName | DiskToolName, string | undefined>;
  /** `unshare` of mount, pid, network, uts and ipc namespaces (and user, when not root) works. */
  namespaces: HostCheck;
  /** bubblewrap can start a sandbox with its own pid and network namespaces (in a user namespace, when not root). */
  sandbox: HostCheck;
  /** A loop device is free for a computer's disk image (root only). */
  loopDevices: HostCheck;
  /** Which cgroup version provides each controller (undefined: not available, or not looked at without root). */
  cgroups: Record<CgroupController, 1 | 2 | undefined>;
  /** Where apt-get is, when this host has it. */
  aptGet: string | undefined;
  /** The Debian (and Ubuntu) packages that provide the missing tools; empty when none is missing. */
  missingPackages: string[];
  /**
   * The exact command that installs {@link missingPackages} (`apt-get install -y …`, with `sudo`
   * when not root); undefined when nothing is missing or the host has no apt-get.
   */
  installCommand: string | undefined;
  /** What the local provider lacks here, each with how to fix it; empty when it can run. */
  missing: string[];
  /** Whether installing {@link missingPackages} is all the local provider lacks (as far as the probes could tell). */
  onlyPackagesMissing: boolean;
  /** Whether the isolated `local` provider can run on this host. */
  localAvailable: boolean;
  /** How the local provider isolates computers here: `full` as root, `unprivileged` otherwise; undefined when it cannot run. */
  isolation: LocalIsolation | undefined;
  /** A one-paragraph human summary: what is missing and how to proceed. */
  message: string;
}

export interface DetectOptions {
  /** @default process.platform */
  platform?: string;
  /** @default process.getuid */
  getuid?: () => number;
  /** Finds a tool's path. @default a search of `searchPath`, or of the usual sbin and bin folders */
  findTool?: (name: string) => Promise<string | undefined>;
  /** Folders to search for tools (PATH-style), instead of the usual ones (ROOST_TOOLS_PATH). */
  searchPath?: string;
  /** Runs a probe command. */
  run?: (
    file: string,
    args: readonly string[],
    options?: { input?: string; timeoutMs?: number },
  ) => Promise<CommandResult>;
  discoverCgroups?: () => Promise<CgroupDiscovery>;
}

/** How to allow the unisolated provider; named in every message that refuses `local`. */
export const processProviderHint =
  "To run without isolation anyway (development only: every computer is then a plain process of the server's user, with full access to this machine, its files and its network), set ROOST_COMPUTER_PROVIDER=process.";

/** What an operator can do where unprivileged user namespaces are refused. */
export const userNamespaceHint =
  "allow them (sysctl kernel.unprivileged_userns_clone=1 where that exists, user.max_user_namespaces above 0, and on Ubuntu 23.10 and later kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap), or run Roost as root";

/** What the unprivileged mode gives up, as `roost up` and the docs word it. */
export const unprivilegedLimits = "no per-computer uids, no memory/CPU/disk limits";

function failed(result: CommandResult): string {
  return (
    result.stderr.trim() ||
    result.stdout.trim() ||
    `exit ${result.exitCode ?? result.signal}`
  ).split("\n")[0]!;
}

/** The tools the local provider needs in each mode. */
export function toolsFor(isolation: LocalIsolation): ReadonlyArray<HostToolName | DiskToolName> {
  return isolation === "full" ? [...hostToolNames, ...diskToolNames] : hostToolNames;
}

/** The Debian package that provides each tool the local provider needs (and `unshare`, the probe's). */
export const toolPackages: Readonly<Record<HostToolName | DiskToolName | "unshare", string>> = {
  ...hostToolPackages,
  ...diskToolPackages,
  unshare: "util-linux",
};

/** Probes the host. Never throws for a missing capability: it is reported instead. */
export async function detectHost(options: DetectOptions = {}): Promise<HostReport> {
  const platform = options.platform ?? process.platform;
  const linux = platform === "linux";
  const root = (options.getuid !== undefined ? options.getuid() : process.getuid?.()) === 0;
  const mode: LocalIsolation = root ? "full" : "unprivileged";
  const findTool = options.findTool ?? ((name: string) => findExecutable(name, options.searchPath));
  const run = options.run ?? runCommand;

  const toolNames = [...hostToolNames, ...diskToolNames];
  const tools = {} as Record<HostToolName | DiskToolName, string | undefined>;
  for (const name of toolNames) tools[name] = linux ? await findTool(name) : undefined;
  const unshare = linux ? await findTool("unshare") : undefined;
  const aptGet = linux ? await findTool("apt-get") : undefined;

  const skipped = (why: string): HostCheck => ({ ok: false, detail: `not tried: ${why}` });
  const probe = async (
    file: string | undefined,
    what: string,
    args: string[],
  ): Promise<HostCheck> => {
    if (!linux) return skipped("not Linux");
    if (file === undefined) return skipped(`${what} is not installed`);
    try {
      const result = await run(file, args, { timeoutMs: 10_000 });
      return result.exitCode === 0
        ? { ok: true, detail: `${what} works` }
        : { ok: false, detail: `${what}: ${failed(result)}` };
    } catch (error) {
      return { ok: false, detail: `${what}: ${(error as Error).message}` };
    }
  };
  // Without root, both probes make a user namespace first, as the unprivileged sandbox does.
  const [namespaces, sandbox, loopDevices] = await Promise.all([
    probe(unshare, "unshare", [
      ...(root ? [] : ["--user"]),
      "--mount",
      "--pid",
      "--net",
      "--uts",
      "--ipc",
      "--fork",
      "/bin/true",
    ]),
    probe(tools.bwrap, "bubblewrap", [
      ...(root ? [] : ["--unshare-user"]),
      "--ro-bind",
      "/",
      "/",
      "--proc",
      "/proc",
      ...(root ? ["--dev", "/dev"] : []),
      "--unshare-pid",
      "--unshare-net",
      "--unshare-ipc",
      "--unshare-uts",
      "--die-with-parent",
      "/bin/true",
    ]),
    root
      ? probe(tools.losetup, "loop devices", ["--find"])
      : Promise.resolve(skipped("not needed without root")),
  ]);

  const discovery =
    linux && root
      ? await (options.discoverCgroups ?? discoverCgroups)().catch(() => undefined)
      : undefined;
  const cgroups: Record<CgroupController, 1 | 2 | undefined> = discovery?.controllers ?? {
    memory: undefined,
    pids: undefined,
    cpu: undefined,
    freezer: undefined,
  };

  const missing: string[] = [];
  if (!linux) missing.push(`Linux (this is ${platform})`);
  const absent = linux ? toolsFor(mode).filter((name) => tools[name] === undefined) : [];
  const missingPackages = [...new Set(absent.map((name) => toolPackages[name]))];
  const installCommand =
    missingPackages.length === 0 || aptGet === undefined
      ? undefined
      : `${root ? "" : "sudo "}apt-get install -y ${missingPackages.join(" ")}`;
  if (absent.length > 0) {
    const how =
      installCommand !== undefined
        ? `install them: ${installCommand}`
        : `on Debian and Ubuntu: apt-get install -y ${missingPackages.join(" ")}; elsewhere install what provides ${absent.join(", ")}`;
    missing.push(`${absent.join(", ")} (${how})`);
  }
  const probeFailures = [namespaces, sandbox, loopDevices].filter(
    (check) => !check.ok && !check.detail.startsWith("not tried"),
  );
  if (root) {
    for (const check of probeFailures) missing.push(`working ${check.detail}`);
    const controllers = (["memory", "pids"] as const).filter(
      (name) => linux && cgroups[name] === undefined,
    );
    if (controllers.length > 0) {
      missing.push(
        `the cgroup controller${controllers.length > 1 ? "s" : ""} ${controllers.join(" and ")} (enable them in the kernel or the cgroup mounts)`,
      );
    }
  } else if (probeFailures.length > 0) {
    missing.push(
      `unprivileged user namespaces (Roost is not running as root, so it would isolate computers in a user namespace, but ${probeFailures.map((check) => check.detail).join("; ")}): ${userNamespaceHint}`,
    );
  }
  const localAvailable = missing.length === 0;
  // The tools are one entry of `missing`; a probe that needs a missing tool was not tried.
  const onlyPackagesMissing = absent.length > 0 && missing.length === 1;
  const isolation = localAvailable ? mode : undefined;
  let message: string;
  if (!localAvailable) {
    message = `This host cannot isolate computers (the local provider), because it lacks: ${missing.join("; ")}. ${processProviderHint}`;
  } else if (mode === "full") {
    message = `This host can isolate computers (local provider: bubblewrap, network namespaces with loopback only, ext4 disk images, cgroup v${cgroups.memory} memory, v${cgroups.pids} pids${cgroups.cpu === undefined ? ", no cpu controller: CPU is not limited" : `, v${cgroups.cpu} cpu`}).`;
  } else {
    message = `This host can isolate computers without root (local provider, unprivileged: bubblewrap in a user namespace, network namespaces with loopback only; ${unprivilegedLimits}). Run Roost as root for full isolation.`;
  }
  return {
    platform,
    root,
    tools,
    namespaces,
    sandbox,
    loopDevices,
    cgroups,
    aptGet,
    missingPackages,
    installCommand,
    missing,
    onlyPackagesMissing,
    localAvailable,
    isolation,
    message,
  };
}

export type ComputerProviderKind = "local" | "process";

export interface ProviderChoice {
  kind: ComputerProviderKind;
  /** Set for `local`: how it isolates computers on this host. */
  isolation?: LocalIsolation;
  /** Set for `process`: print it loudly at start. */
  warning?: string;
}

/**
 * Picks the provider from the configured value (ROOST_COMPUTER_PROVIDER, resolved by the
 * server's configuration) and the host report: `local` by default when the host allows it;
 * `process` only when asked for by name. Throws ConfigError with the report's message otherwise.
 */
export function chooseComputerProvider(
  requested: string | undefined,
  report: HostReport,
): ProviderChoice {
  const value = requested?.trim().toLowerCase() ?? "";
  switch (value) {
    case "":
    case "auto":
    case "local":
      if (!report.localAvailable || report.isolation === undefined)
        throw new ConfigError(report.message);
      return { kind: "local", isolation: report.isolation };
    case "process":
      return {
        kind: "process",
        warning:
          "ROOST_COMPUTER_PROVIDER=process: computers are NOT isolated. Every computer runs as a plain process of this server's user, and every bot can read and change anything that user can, and reach any network. Use it for development on your own machine only.",
      };
    default:
      throw new ConfigError(
        `ROOST_COMPUTER_PROVIDER must be "local" or "process" (got ${JSON.stringify(requested)})`,
      );
  }
}
