/**
 * The local provider's one resolve step: option > default, validated once. The provider reads no
 * environment variables; the server's configuration passes values in.
 */
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../../errors/index.ts";
import type { LocalIsolation } from "../provider.ts";
import { workerNodeOptions } from "../worker-build.ts";
import type { CgroupLimits } from "./cgroups.ts";
import { minimumDiskBytes } from "./disk-image.ts";
import { insidePaths } from "./sandbox.ts";
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

/** One listening host socket of an awake computer; closed when the computer sleeps. */
export interface SocketListener {
  close(): Promise<void>;
}

/**
 * The host-side ends of an awake computer's sockets (docs/computers.md, "Network"): the only
 * things its sandbox can reach. The platform serves them with the gateway and the egress proxy;
 * the provider creates them in the computer's runtime folder, hands them to the computer's uid
 * (mode 0600) and mounts them into the sandbox.
 */
export interface SandboxSockets {
  /** Serve the computer's worker on a unix socket created at `socketPath` (the gateway's `listenComputer`). */
  gateway(computerId: string, socketPath: string): Promise<SocketListener>;
  /**
   * Serve the computer's way out: the HTTP proxy and SOCKS5 sockets (the egress proxy's
   * `listenComputer`). Absent: the computer reaches nothing but the gateway, and no proxy
   * variables are set.
   */
  egress?(
    computerId: string,
    paths: { http: string; socks: string },
  ): Promise<SocketListener & { trust?: EgressTrust }>;
}

/**
 * Certificates the egress side asks the computer to trust: the vault's CA for this computer
 * (docs/vault.md). The provider mounts them read-only and points the usual variables at them.
 */
export interface EgressTrust {
  /** The computer's CA alone (NODE_EXTRA_CA_CERTS). */
  caPem: string;
  /** The public roots and the computer's CA (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO, CURL_CA_BUNDLE). */
  bundlePem: string;
}

export interface LocalProviderOptions {
  /** Folder holding one folder per computer, its durable disk: `<dataDir>/<computerId>/`. */
  dataDir: string;
  /** Serves each awake computer's gateway and egress sockets. */
  sockets: SandboxSockets;
  /** Where the provider's operational messages go (disk resizes and moves, a missing seccomp filter). @default dropped */
  log?: (message: string) => void;
  /** Told when a sandbox ended without sleep() (its supervisor exited or was killed). Must not throw. */
  onExit?: (computerId: string, detail: string) => void;
  /** Per-computer limits; each field defaults to {@link defaultLimits}. */
  limits?: Partial<ComputerLimits>;
  /** Computer slot N runs as host uid and gid `uidBase + N` (as root; without root every computer runs as the server's uid). @default 200000 */
  uidBase?: number;
  /** How many uids from `uidBase` Roost may use. @default 65536 */
  uidCount?: number;
  /**
   * Host-wide slot registry, shared by every Roost server on the host (without root: by every
   * server of this uid). @default /var/lib/roost/local as root, otherwise `$TMPDIR/roost-<uid>/registry`
   */
  registryDir?: string;
  /**
   * Host-wide runtime folder, best on a tmpfs (it holds the computers' sockets).
   * @default /run/roost/local as root, otherwise `$TMPDIR/roost-<uid>/local`
   */
  runDir?: string;
  /** Name of Roost's folder in each cgroup hierarchy. @default "roost" */
  cgroupName?: string;
  /**
   * Spare sandboxes kept ready for wakes (spares.ts; `full` isolation only: without root there
   * are none), 0 to 4. A wake that finds one claims it instead of starting Node. @default 0
   */
  spares?: number;
  /** How long after a claim its replacement starts (it would share the CPU with the wake). @default 1000 */
  spareDelayMs?: number;
  /** The Roost checkout whose src/, node_modules/ and package.json are mounted at /opt/roost. @default this checkout */
  roostRoot?: string;
  /** The Node binary mounted at /opt/node/bin/node. @default process.execPath */
  nodePath?: string;
  /** The worker's command line inside the sandbox. @default node, workerNodeOptions, /opt/roost/src/worker/main.ts */
  workerArgv?: readonly string[];
  /** Paths of the host tools. @default found in PATH folders and the usual sbin and bin folders */
  tools?: Partial<HostTools>;
  /** PATH-style folder list to search for host tools instead of the usual sbin and bin folders (ROOST_TOOLS_PATH). */
  searchPath?: string;
}

export interface ResolvedLocalProviderOptions {
  /** `full` as root; `unprivileged` otherwise (docs/computers.md, "Without root"). */
  isolation: LocalIsolation;
  /**
   * The per-uid folder the unprivileged defaults live in (`$TMPDIR/roost-<uid>`), which must be
   * this uid's alone; undefined as root or when both folders are given.
   */
  privateDir: string | undefined;
  dataDir: string;
  sockets: SandboxSockets;
  onExit: (computerId: string, detail: string) => void;
  log: (message: string) => void;
  limits: ComputerLimits;
  uidBase: number;
  slots: number;
  registryDir: string;
  runDir: string;
  cgroupName: string;
  spares: number;
  spareDelayMs: number;
  roostRoot: string;
  nodePath: string;
  workerArgv: readonly string[];
  tools: Partial<HostTools>;
  searchPath: string | undefined;
}

const thisCheckout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

function positive(name: string, value: number, integer: boolean): number {
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new ConfigError(
      `local provider: ${name} must be a positive ${integer ? "integer" : "number"} (got ${value})`,
    );
  }
  return value;
}

function spareCount(value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > 4)
    throw new ConfigError(
      `local provider: spares must be a whole number from 0 to 4 (ROOST_COMPUTER_SPARES), got ${value}`,
    );
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
  if (typeof options.sockets?.gateway !== "function") {
    throw new ConfigError(
      "local provider: sockets.gateway is required (it serves each computer's gateway socket; the platform passes the gateway's listenComputer)",
    );
  }
  if (limits.diskBytes < minimumDiskBytes) {
    throw new ConfigError(
      `local provider: limits.diskBytes must be at least ${minimumDiskBytes} (32 MiB; ROOST_COMPUTER_DISK_BYTES), got ${limits.diskBytes}`,
    );
  }
  const uid = process.getuid?.() ?? 0;
  const isolation: LocalIsolation = uid === 0 ? "full" : "unprivileged";
  // Without root, /run and /var/lib are not ours: a folder of this uid's own (checked at start).
  const privateDir =
    isolation === "unprivileged" &&
    (options.registryDir === undefined || options.runDir === undefined)
      ? path.join(tmpdir(), `roost-${uid}`)
      : undefined;
  const uidBase = positive("uidBase", options.uidBase ?? 200_000, true);
  const uidCount = positive("uidCount", options.uidCount ?? 65_536, true);
  if (uidBase < 1000)
    throw new ConfigError(
      `local provider: uidBase ${uidBase} would overlap system users (use 100000 or more)`,
    );
  return {
    isolation,
    privateDir,
    dataDir: path.resolve(options.dataDir),
    sockets: options.sockets,
    onExit: options.onExit ?? (() => undefined),
    log: options.log ?? (() => undefined),
    limits,
    uidBase,
    slots: uidCount,
    registryDir: path.resolve(
      options.registryDir ??
        (privateDir === undefined ? "/var/lib/roost/local" : path.join(privateDir, "registry")),
    ),
    runDir: path.resolve(
      options.runDir ??
        (privateDir === undefined ? "/run/roost/local" : path.join(privateDir, "local")),
    ),
    cgroupName: options.cgroupName ?? "roost",
    spares: isolation === "full" ? spareCount(options.spares ?? 0) : 0,
    spareDelayMs: Math.max(0, options.spareDelayMs ?? 1000),
    roostRoot: path.resolve(options.roostRoot ?? thisCheckout),
    nodePath: path.resolve(options.nodePath ?? process.execPath),
    workerArgv: options.workerArgv ?? [
      insidePaths.node,
      ...workerNodeOptions,
      `${insidePaths.roost}/src/worker/main.ts`,
    ],
    tools: options.tools ?? {},
    searchPath: options.searchPath,
  };
}
