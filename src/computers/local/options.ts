/**
 * The local provider's one resolve step: option > default, validated once. The provider reads no
 * environment variables; the server's configuration passes values in.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../../errors/index.ts";
import type { CgroupLimits } from "./cgroups.ts";
import { minimumDiskBytes } from "./disk-image.ts";
import { insidePaths } from "./sandbox.ts";
import { parseAddressPool, type AddressPool } from "./slots.ts";
import type { HostTools } from "./system.ts";

/** Limits of one computer. */
export interface ComputerLimits extends CgroupLimits {
  /** Size of the computer's /tmp (a tmpfs; its pages also count against the memory limit). */
  tmpBytes: number;
  /**
   * Size of the computer's durable disk (home, workspace, worker state): its ext4 image, sparse
   * on the host (disk-image.ts). A change applies on each computer's next wake.
   */
  diskBytes: number;
}

export const defaultLimits: ComputerLimits = {
  memoryBytes: 1024 * 1024 * 1024,
  pids: 512,
  cpus: 1,
  workerMemoryBytes: 512 * 1024 * 1024,
  workerPids: 256,
  tmpBytes: 512 * 1024 * 1024,
  diskBytes: 10 * 1024 * 1024 * 1024,
};

/** A computer's network came up (it can reach the gateway and the proxy) or went down. */
export type NetworkEvent =
  | { type: "up"; computerId: string; computerAddress: string; hostAddress: string }
  | { type: "down"; computerId: string; computerAddress: string };

export interface LocalProviderOptions {
  /** Folder holding one folder per computer, its durable disk: `<dataDir>/<computerId>/`. */
  dataDir: string;
  /**
   * Where the egress proxy listens on the host (127.0.0.1, 0.0.0.0 or another local IPv4 address).
   * A computer reaches it at the host side of its veth, and HTTP_PROXY / HTTPS_PROXY point there.
   * @default none: no proxy variables, and the computer reaches nothing but the gateway
   */
  egressProxy?: { host: string; port: number };
  /**
   * Told when a computer's network comes up or goes down, e.g. to map source addresses to
   * computers in the egress proxy (`proxy.assign(computerAddress, computerId)`). Must not throw.
   */
  onNetwork?: (event: NetworkEvent) => void;
  /** Where the provider's operational messages go (disk resizes and moves, a missing seccomp filter). @default dropped */
  log?: (message: string) => void;
  /** Told when a sandbox ended without sleep() (its supervisor exited or was killed). Must not throw. */
  onExit?: (computerId: string, detail: string) => void;
  /** Per-computer limits; each field defaults to {@link defaultLimits}. */
  limits?: Partial<ComputerLimits>;
  /** IPv4 pool carved into one /30 per computer. @default "10.231.0.0/16" */
  addressPool?: string;
  /** Computer slot N runs as host uid and gid `uidBase + N`. @default 200000 */
  uidBase?: number;
  /** How many uids from `uidBase` Roost may use. @default 65536 */
  uidCount?: number;
  /** Host-wide slot registry, shared by every Roost server on the host. @default /var/lib/roost/local */
  registryDir?: string;
  /** Host-wide runtime folder, best on a tmpfs. @default /run/roost/local */
  runDir?: string;
  /** Name of Roost's folder in each cgroup hierarchy. @default "roost" */
  cgroupName?: string;
  /** The Roost checkout whose src/, node_modules/ and package.json are mounted at /opt/roost. @default this checkout */
  roostRoot?: string;
  /** The Node binary mounted at /opt/node/bin/node. @default process.execPath */
  nodePath?: string;
  /** The worker's command line inside the sandbox. @default node /opt/roost/src/worker/main.ts */
  workerArgv?: readonly string[];
  /** Paths of the host tools. @default found in PATH folders and the usual sbin and bin folders */
  tools?: Partial<HostTools>;
  /** PATH-style folder list to search for host tools before the usual folders. */
  searchPath?: string;
}

export interface ResolvedLocalProviderOptions {
  dataDir: string;
  egressProxy: { targetAddress: string; port: number } | undefined;
  onNetwork: (event: NetworkEvent) => void;
  onExit: (computerId: string, detail: string) => void;
  log: (message: string) => void;
  limits: ComputerLimits;
  pool: AddressPool;
  uidBase: number;
  slots: number;
  registryDir: string;
  runDir: string;
  cgroupName: string;
  roostRoot: string;
  nodePath: string;
  workerArgv: readonly string[];
  tools: Partial<HostTools>;
  searchPath: string | undefined;
}

const thisCheckout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** Maps a listener's host to the address a DNAT rule can deliver to (loopback for wildcard hosts). */
export function forwardTarget(host: string, what: string): string {
  const bare = host.replace(/^\[|\]$/g, "");
  if (bare === "" || bare === "localhost" || bare === "0.0.0.0") return "127.0.0.1";
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(bare)) return bare;
  throw new ConfigError(
    `local computers reach the ${what} over IPv4: give its host as an IPv4 address or localhost (got ${JSON.stringify(host)})`,
  );
}

function positive(name: string, value: number, integer: boolean): number {
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new ConfigError(
      `local provider: ${name} must be a positive ${integer ? "integer" : "number"} (got ${value})`,
    );
  }
  return value;
}

export function resolveLocalProviderOptions(
  options: LocalProviderOptions,
): ResolvedLocalProviderOptions {
  if (typeof options.dataDir !== "string" || options.dataDir.trim() === "") {
    throw new ConfigError(
      "local provider: dataDir is required (the folder that holds the computers' disks)",
    );
  }
  const limits: ComputerLimits = { ...defaultLimits };
  for (const [name, value] of Object.entries(options.limits ?? {}) as Array<
    [keyof ComputerLimits, number | undefined]
  >) {
    if (value !== undefined) limits[name] = positive(`limits.${name}`, value, name !== "cpus");
  }
  if (limits.diskBytes < minimumDiskBytes) {
    throw new ConfigError(
      `local provider: limits.diskBytes must be at least ${minimumDiskBytes} (32 MiB; ROOST_COMPUTER_DISK_BYTES), got ${limits.diskBytes}`,
    );
  }
  let pool: AddressPool;
  try {
    pool = parseAddressPool(options.addressPool ?? "10.231.0.0/16");
  } catch (error) {
    throw new ConfigError(`local provider: ${(error as Error).message}`);
  }
  const uidBase = positive("uidBase", options.uidBase ?? 200_000, true);
  const uidCount = positive("uidCount", options.uidCount ?? 65_536, true);
  if (uidBase < 1000)
    throw new ConfigError(
      `local provider: uidBase ${uidBase} would overlap system users (use 100000 or more)`,
    );
  const proxy = options.egressProxy;
  return {
    dataDir: path.resolve(options.dataDir),
    egressProxy:
      proxy === undefined
        ? undefined
        : {
            targetAddress: forwardTarget(proxy.host, "egress proxy"),
            port: positive("egressProxy.port", proxy.port, true),
          },
    onNetwork: options.onNetwork ?? (() => undefined),
    onExit: options.onExit ?? (() => undefined),
    log: options.log ?? (() => undefined),
    limits,
    pool,
    uidBase,
    slots: Math.min(pool.slots, uidCount),
    registryDir: path.resolve(options.registryDir ?? "/var/lib/roost/local"),
    runDir: path.resolve(options.runDir ?? "/run/roost/local"),
    cgroupName: options.cgroupName ?? "roost",
    roostRoot: path.resolve(options.roostRoot ?? thisCheckout),
    nodePath: path.resolve(options.nodePath ?? process.execPath),
    workerArgv: options.workerArgv ?? [insidePaths.node, `${insidePaths.roost}/src/worker/main.ts`],
    tools: options.tools ?? {},
    searchPath: options.searchPath,
  };
}
