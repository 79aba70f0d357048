/**
 * What this host allows for computers, checked once at start so the server can pick a provider
 * (ARCHITECTURE.md §7): the isolated `local` provider needs Linux, root, bubblewrap, util-linux
 * (nsenter, setpriv, fstrim), socat (the sandbox's forwarder to the egress proxy), e2fsprogs and
 * mount (each computer's disk is a loop-mounted ext4 image), loop devices, namespaces that can be
 * created, and the memory and pids cgroup controllers (v1 or v2; cpu is used when present). It
 * needs no firewall and no network tools: a computer's network namespace holds only loopback.
 * Where that is not possible, Roost stops with a message naming what is missing; the unisolated
 * `process` provider runs only when asked for explicitly (ROOST_COMPUTER_PROVIDER=process).
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
  /** `unshare` of mount, pid, network, uts and ipc namespaces works. */
  namespaces: HostCheck;
  /** bubblewrap can start a sandbox with its own pid and network namespaces. */
  sandbox: HostCheck;
  /** A loop device is free for a computer's disk image. */
  loopDevices: HostCheck;
  /** Which cgroup version provides each controller (undefined: not available). */
  cgroups: Record<CgroupController, 1 | 2 | undefined>;
  /** What the local provider lacks here, each with how to fix it; empty when it can run. */
  missing: string[];
  /** Whether the isolated `local` provider can run on this host. */
  localAvailable: boolean;
  /** A one-paragraph human summary: what is missing and how to proceed. */
  message: string;
}

export interface DetectOptions {
  /** @default process.platform */
  platform?: string;
  /** @default process.getuid */
  getuid?: () => number;
  /** Finds a tool's path. @default PATH-style search of `searchPath`, then the usual sbin and bin folders */
  findTool?: (name: string) => Promise<string | undefined>;
  /** Folders to search first for tools (PATH-style). */
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

function failed(result: CommandResult): string {
  return (
    result.stderr.trim() ||
    result.stdout.trim() ||
    `exit ${result.exitCode ?? result.signal}`
  ).split("\n")[0]!;
}

/** Probes the host. Never throws for a missing capability: it is reported instead. */
export async function detectHost(options: DetectOptions = {}): Promise<HostReport> {
  const platform = options.platform ?? process.platform;
  const root = (options.getuid !== undefined ? options.getuid() : process.getuid?.()) === 0;
  const findTool = options.findTool ?? ((name: string) => findExecutable(name, options.searchPath));
  const run = options.run ?? runCommand;

  const toolNames = [...hostToolNames, ...diskToolNames];
  const packageOf = { ...hostToolPackages, ...diskToolPackages };
  const tools = {} as Record<HostToolName | DiskToolName, string | undefined>;
  for (const name of toolNames)
    tools[name] = platform === "linux" ? await findTool(name) : undefined;
  const unshare = platform === "linux" ? await findTool("unshare") : undefined;

  const skipped = (why: string): HostCheck => ({ ok: false, detail: `not tried: ${why}` });
  const probe = async (
    file: string | undefined,
    what: string,
    args: string[],
  ): Promise<HostCheck> => {
    if (platform !== "linux") return skipped("not Linux");
    if (!root) return skipped("not root");
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
  const [namespaces, sandbox, loopDevices] = await Promise.all([
    probe(unshare, "unshare", [
      "--mount",
      "--pid",
      "--net",
      "--uts",
      "--ipc",
      "--fork",
      "/bin/true",
    ]),
    probe(tools.bwrap, "bubblewrap", [
      "--ro-bind",
      "/",
      "/",
      "--proc",
      "/proc",
      "--dev",
      "/dev",
      "--unshare-pid",
      "--unshare-net",
      "--unshare-ipc",
      "--unshare-uts",
      "--die-with-parent",
      "/bin/true",
    ]),
    probe(tools.losetup, "loop devices", ["--find"]),
  ]);

  const discovery =
    platform === "linux"
      ? await (options.discoverCgroups ?? discoverCgroups)().catch(() => undefined)
      : undefined;
  const cgroups: Record<CgroupController, 1 | 2 | undefined> = discovery?.controllers ?? {
    memory: undefined,
    pids: undefined,
    cpu: undefined,
    freezer: undefined,
  };

  const missing: string[] = [];
  if (platform !== "linux") missing.push(`Linux (this is ${platform})`);
  if (platform === "linux" && !root) {
    missing.push("root (Roost creates namespaces, cgroups and one uid per computer)");
  }
  const absent = toolNames.filter((name) => platform === "linux" && tools[name] === undefined);
  if (absent.length > 0) {
    const packages = [...new Set(absent.map((name) => packageOf[name]))];
    missing.push(`${absent.join(", ")} (Debian: apt-get install ${packages.join(" ")})`);
  }
  for (const check of [namespaces, sandbox, loopDevices]) {
    if (!check.ok && !check.detail.startsWith("not tried")) missing.push(`working ${check.detail}`);
  }
  const controllers = (["memory", "pids"] as const).filter(
    (name) => platform === "linux" && cgroups[name] === undefined,
  );
  if (controllers.length > 0) {
    missing.push(
      `the cgroup controller${controllers.length > 1 ? "s" : ""} ${controllers.join(" and ")} (enable them in the kernel or the cgroup mounts)`,
    );
  }
  const localAvailable = missing.length === 0;
  const message = localAvailable
    ? `This host can isolate computers (local provider: bubblewrap, network namespaces with loopback only, ext4 disk images, cgroup v${cgroups.memory} memory, v${cgroups.pids} pids${cgroups.cpu === undefined ? ", no cpu controller: CPU is not limited" : `, v${cgroups.cpu} cpu`}).`
    : `This host cannot isolate computers (the local provider), because it lacks: ${missing.join("; ")}. ${processProviderHint}`;
  return {
    platform,
    root,
    tools,
    namespaces,
    sandbox,
    loopDevices,
    cgroups,
    missing,
    localAvailable,
    message,
  };
}

export type ComputerProviderKind = "local" | "process";

export interface ProviderChoice {
  kind: ComputerProviderKind;
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
      if (!report.localAvailable) throw new ConfigError(report.message);
      return { kind: "local" };
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
