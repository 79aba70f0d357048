/**
 * The sandbox of a local computer: what bubblewrap mounts, which files the provider generates for
 * it, and the supervisor that keeps the worker running inside.
 *
 * Inside a computer:
 *   /usr /bin /lib* /sbin   the host's, read-only
 *   /etc                    the host's, read-only, with passwd, group, hosts, hostname,
 *                           resolv.conf (no name servers) and profile replaced by generated ones
 *   /home/user              the durable home ($HOME)           read-write, the computer's uid
 *   /workspace              the durable working directory      read-write, the computer's uid
 *   /var/lib/roost/worker   the worker's durable state          read-write, the computer's uid
 *   /tmp (/var/tmp)         a fresh tmpfs on every wake
 *   /opt/node/bin/node      the host's Node binary, read-only
 *   /opt/roost              Roost's src/, node_modules/ and package.json, read-only (never the
 *                           data folder, so no computer sees another's disk)
 *   /run/roost              supervisor script, job prelude, worker token and the computer's host sockets
 *                           (gateway.sock, egress-http.sock, egress-socks.sock), read-only
 *   /run/roost-cgroup       the `user` cgroup.procs files the job prelude and login profile join
 *   /proc /dev              the sandbox's own (new pid namespace; minimal devices)
 *
 * Invariants:
 *   X1 the worker and every user process run as the computer's uid and gid with no capabilities,
 *      no supplementary groups and no_new_privs (setuid binaries cannot raise it). Only two
 *      processes keep uid 0, so that user processes cannot signal them: bubblewrap's pid-1 reaper
 *      and the supervisor (a fixed script holding only CAP_SETUID, CAP_SETGID and CAP_SETPCAP,
 *      to start the worker through setpriv). A spare's worker is uid 0 with CAP_SETUID and
 *      CAP_SETGID alone until its claim, while no computer is in its sandbox (spares.ts, SP1).
 *   X2 the sandbox dies with the provider: --die-with-parent, and the pid namespace takes every
 *      process with it when its pid 1 goes.
 *   X3 the worker never sees the host environment: --clearenv, then only what the provider sets.
 *   X4 the sandbox has its own network namespace with nothing but loopback (--unshare-net); its
 *      only ways out are the unix sockets in /run/roost. The supervisor's forwarders serve the
 *      egress sockets at 127.0.0.1:3128 (HTTP proxy) and 127.0.0.1:1080 (SOCKS5) as the
 *      computer's uid, restart when they exit, and listen before the ready line.
 *   X5 every process in the computer runs under the seccomp filter (seccomp.ts): no user or
 *      other namespaces, no packet or netfilter sockets, no mounts (where the architecture has one).
 *   X6 without root (`unprivileged` isolation) the sandbox is a user namespace of its own that maps
 *      only the server's uid and gid (one namespace: bubblewrap makes no second one, so `exec`
 *      can enter it), and every process in it, the supervisor included, runs as that uid with no
 *      capabilities, an empty bounding set and no_new_privs. X1's per-computer uid does not apply;
 *      X2 to X5 do. /dev holds only null, zero, full, random, urandom and tty (no devpts: mounting
 *      it needs a second user namespace).
 *
 * X1 holds for `full` isolation (root).
 */
import { chown, lstat, mkdir, readlink, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import type { LocalIsolation } from "../provider.ts";
import { spareClaimVariable } from "../../worker/index.ts";
import { isErrno } from "./system.ts";

/** Paths as seen from inside a computer. */
export const insidePaths = {
  home: "/home/user",
  workspace: "/workspace",
  workerState: "/var/lib/roost/worker",
  tmp: "/tmp",
  node: "/opt/node/bin/node",
  roost: "/opt/roost",
  runtime: "/run/roost",
  tokenFile: "/run/roost/token",
  supervisor: "/run/roost/supervise.sh",
  /** Sourced by the worker's shell before each command (jobPrelude): joins the user cgroup. */
  jobPrelude: "/run/roost/job-prelude.sh",
  gatewaySocket: "/run/roost/gateway.sock",
  egressHttpSocket: "/run/roost/egress-http.sock",
  egressSocksSocket: "/run/roost/egress-socks.sock",
  cgroupProcs: "/run/roost-cgroup",
  /** Node's compile cache for Roost's worker, read-only (see compileCacheWarmUp). */
  compileCache: "/opt/node/compile-cache",
  /** A spare sandbox's own folder (spares.ts): its supervisor and the claim FIFO, root's alone. */
  spare: "/run/roost-spare",
  spareSupervisor: "/run/roost-spare/spare.sh",
  spareClaim: "/run/roost-spare/claim",
  /** Written into a claimed spare's /run/roost: the computer's environment and worker command. */
  adopt: "/run/roost/adopt.sh",
} as const;

/** Where the forwarders listen inside a computer (loopback of its own network namespace). */
export const forwarderPorts = { http: 3128, socks: 1080 } as const;
/** Connections one forwarder serves at once; more wait in its listen queue (X4). */
export const forwarderMaxConnections = 64;

export const insideUserName = "user";
/** The supervisor's first line on stdout: the sandbox is set up and runs as the computer's uid. */
export const readyLine = "roost-supervisor-ready";
export const insideHostname = "computer";

/** How the host's root-level system folders appear inside: bound read-only, or the same symlink. */
export type SystemMount =
  { kind: "bind"; path: string } | { kind: "symlink"; path: string; target: string };

export interface EtcOverride {
  /** File name under the provider's generated etc folder. */
  name: string;
  /** Where it is mounted inside (the host file's path, or where its symlink points below /run). */
  dest: string;
}

export interface HostLayout {
  systemMounts: SystemMount[];
  etcOverrides: EtcOverride[];
}

const systemFolders = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
export const generatedEtcFiles = [
  "passwd",
  "group",
  "hosts",
  "hostname",
  "resolv.conf",
  "profile",
] as const;

/** Reads which system folders exist (and which are merged-/usr symlinks) and where /etc files live. */
export async function readHostLayout(): Promise<HostLayout> {
  const systemMounts: SystemMount[] = [];
  for (const folder of systemFolders) {
    try {
      const info = await lstat(folder);
      if (info.isSymbolicLink())
        systemMounts.push({ kind: "symlink", path: folder, target: await readlink(folder) });
      else if (info.isDirectory()) systemMounts.push({ kind: "bind", path: folder });
    } catch (error) {
      if (!isErrno(error, "ENOENT")) throw error;
    }
  }
  const etcOverrides: EtcOverride[] = [];
  for (const name of generatedEtcFiles) {
    const hostPath = path.join("/etc", name);
    try {
      const info = await lstat(hostPath);
      if (info.isFile()) {
        etcOverrides.push({ name, dest: hostPath });
      } else if (info.isSymbolicLink()) {
        // e.g. resolv.conf -> ../run/systemd/resolve/stub-resolv.conf: /run is a fresh tmpfs inside,
        // so the generated file goes where the link points.
        const target = path.resolve("/etc", await readlink(hostPath));
        if (target.startsWith("/run/")) etcOverrides.push({ name, dest: target });
      }
    } catch (error) {
      // A file the host lacks cannot be added to the read-only /etc; programs fall back to defaults.
      if (!isErrno(error, "ENOENT")) throw error;
    }
  }
  return { systemMounts, etcOverrides };
}

export interface SandboxSpec {
  /** `full`: root, the computer's own uid (X1); `unprivileged`: a user namespace (X6). */
  isolation: LocalIsolation;
  uid: number;
  gid: number;
  /** Durable folders on the host. */
  home: string;
  workspace: string;
  workerState: string;
  /** The provider's runtime folder for this computer (holds `etc/` and `roost/`). */
  runtimeDir: string;
  /** The `user` cgroup.procs files (host paths) the job prelude and the login profile write to. */
  userProcs: readonly string[];
  env: Readonly<Record<string, string>>;
  tmpBytes: number;
  /** Roost's source checkout (its src/, node_modules/ and package.json are mounted). */
  roostRoot: string;
  nodePath: string;
  /** Host folder of the shared, read-only Node compile cache, and the folders in it. */
  compileCacheDir: string;
  compileCacheFolders: readonly string[];
  /** The uid the cache was filled as (Node names its folders after it). */
  compileCacheUid: number;
  setprivPath: string;
  /**
   * Host tools run inside the sandbox by their host path (setpriv, socat, and bwrap and setpriv
   * again by `exec`), already resolved through links; those outside the system folders bound
   * below are bound read-only at the same path.
   */
  insideTools: readonly string[];
  /** The forwarder for the egress sockets (X4); undefined when the computer has no egress. */
  socatPath: string | undefined;
  layout: HostLayout;
  /** The worker's command line inside the sandbox. */
  workerArgv: readonly string[];
  /**
   * A spare sandbox (spares.ts): its /run/roost is bound from `runStaging` (the claim binds the
   * computer's runtime folder there), `controlDir` is its /run/roost-spare, and its worker starts
   * as uid 0 with only CAP_SETUID and CAP_SETGID to wait for a claim (worker/spare-claim.ts).
   */
  spare?: { runStaging: string; controlDir: string } | undefined;
}

/** The generated files of a computer's runtime folder. */
export async function writeRuntimeFiles(spec: SandboxSpec, token: string): Promise<void> {
  const etc = path.join(spec.runtimeDir, "etc");
  const roost = path.join(spec.runtimeDir, "roost");
  await Promise.all([
    mkdir(etc, { recursive: true, mode: 0o755 }),
    // A spare has no runtime folder of its own: a claim binds the computer's onto its stage.
    spec.spare === undefined ? mkdir(roost, { recursive: true, mode: 0o755 }) : undefined,
  ]);
  const files: Record<(typeof generatedEtcFiles)[number], string> = {
    ...identityFiles(spec.uid, spec.gid),
    hosts: [
      "127.0.0.1\tlocalhost",
      `127.0.1.1\t${insideHostname}`,
      "::1\tlocalhost ip6-localhost ip6-loopback",
      "",
    ].join("\n"),
    hostname: `${insideHostname}\n`,
    "resolv.conf":
      "# A Roost computer has no DNS: the egress proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY=socks5h://…) resolves names.\n",
    profile: loginProfile,
  };
  await Promise.all([
    ...Object.entries(files).map(([name, text]) =>
      writeFile(path.join(etc, name), text, { mode: 0o644 }),
    ),
    ...(spec.spare === undefined
      ? [
          writeFile(path.join(roost, "supervise.sh"), supervisorScript(forwarders(spec)), {
            mode: 0o755,
          }),
          writeFile(path.join(roost, path.basename(insidePaths.jobPrelude)), jobPrelude, {
            mode: 0o644,
          }),
          writeToken(spec.runtimeDir, token, spec.uid, spec.gid),
        ]
      : [
          writeFile(path.join(spec.spare.controlDir, "spare.sh"), spareSupervisorScript, {
            mode: 0o755,
          }),
        ]),
  ]);
}

/** The computer's /etc/passwd and /etc/group: `user` with its uid and gid. */
export function identityFiles(uid: number, gid: number): { passwd: string; group: string } {
  return {
    // Without root the computer's uid is the server's, which may be one of these (X6).
    passwd: [
      ...(uid === 0 ? [] : ["root:x:0:0:root:/root:/usr/sbin/nologin"]),
      `${insideUserName}:x:${uid}:${gid}:Roost computer:${insidePaths.home}:/bin/bash`,
      ...(uid === 65534 ? [] : ["nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"]),
      "",
    ].join("\n"),
    group: [
      ...(gid === 0 ? [] : ["root:x:0:"]),
      `${insideUserName}:x:${gid}:`,
      ...(gid === 65534 ? [] : ["nogroup:x:65534:"]),
      "",
    ].join("\n"),
  };
}

/**
 * A spare's supervisor (spares.ts), run by bubblewrap as uid 0 with CAP_SETUID, CAP_SETGID and
 * CAP_SETPCAP like any supervisor. Its arguments are the spare worker's command (setpriv … node
 * worker). It starts the worker and waits. The host claims the spare by writing the worker's
 * claim and then sending this script SIGUSR1 (only once the worker has said it is ready, so long
 * after this script is in its `wait`, which the signal interrupts). The script then reads the
 * computer's adopt.sh from /run/roost (now the computer's runtime folder), which sets the
 * computer's environment and worker command and runs the computer's own supervise.sh with the
 * running worker adopted. A worker that exits before its claim ends the spare (the host makes
 * another).
 */
const spareSupervisorScript = `#!/bin/sh
# Supervisor of a spare Roost sandbox (generated by the local provider).
trap 'roost_claimed=1' USR1
"$@" &
roost_adopted=$!
wait "$roost_adopted"
if [ -z "\${roost_claimed-}" ]; then
  echo "supervisor: the spare worker exited before its claim" >&2
  exit 1
fi
trap - USR1
. ${insidePaths.adopt}
`;

/**
 * The computer's adopt.sh for a claimed spare: its environment (what bubblewrap would have set)
 * and worker command, then its supervise.sh, which waits for the adopted worker first.
 */
export function adoptScript(spec: SandboxSpec): string {
  if (!shellSafeEnv(spec.env))
    throw new Error("an environment variable's name is not one the supervisor's shell can export");
  const exports = Object.entries(spec.env).map(
    ([name, value]) => `export ${name}=${shellQuote(value)}`,
  );
  return `# The claimed computer's environment and worker (generated by the local provider).
unset ${Object.keys(spareOnlyEnv()).join(" ")}
${exports.join("\n")}
set -- ${[...asComputerUser(spec), ...spec.workerArgv].map(shellQuote).join(" ")}
. ${insidePaths.supervisor}
`;
}

/**
 * Whether a claimed spare can take this environment: adopt.sh exports it from a shell, which
 * takes only names of letters, digits and `_` (values are quoted). Anything else (bubblewrap sets
 * any name) means a sandbox of the computer's own.
 */
export function shellSafeEnv(env: Readonly<Record<string, string>>): boolean {
  return Object.keys(env).every((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name));
}

/** Variables only a spare's sandbox has, which its adopt.sh removes. */
export function spareOnlyEnv(): Record<string, string> {
  return { [spareClaimVariable]: insidePaths.spareClaim };
}

/** Writes the worker token atomically (the worker re-reads the file before every connection). */
export async function writeToken(
  runtimeDir: string,
  token: string,
  uid: number,
  gid: number,
): Promise<void> {
  const file = path.join(runtimeDir, "roost", "token");
  const temporary = `${file}.tmp`;
  await writeFile(temporary, token, { mode: 0o400 });
  await chown(temporary, uid, gid);
  await rename(temporary, file);
}

/**
 * What the worker's shell sources just before each command (the worker's `jobPrelude`; commands
 * run in a non-login bash, decision 0021): it moves the command's subshell ($BASHPID, not the
 * wrapper's $$) into the computer's `user` cgroup (cgroups.ts, C1/C2) before any user code runs.
 */
const jobPrelude = `# Sourced before each command of a Roost computer (generated by the local provider).
# Move this shell into the computer's "user" cgroup, where the memory and process limits apply,
# so that an out-of-memory kill or a fork bomb cannot reach the worker.
for roost_procs in ${insidePaths.cgroupProcs}/*.procs; do
  [ -w "$roost_procs" ] && echo "$BASHPID" > "$roost_procs"
done 2>/dev/null
unset roost_procs
`;

/**
 * The computer's /etc/profile, for login shells started inside (a terminal, `bash -l`): like the
 * job prelude, it moves the shell into the computer's `user` cgroup before any user code runs,
 * then does what a Debian profile does, keeping the PATH the sandbox was given.
 */
const loginProfile = `# /etc/profile of a Roost computer (generated by the local provider).
# Move this login shell into the computer's "user" cgroup, where the memory and process limits
# apply, so that an out-of-memory kill or a fork bomb cannot reach the worker.
for roost_procs in ${insidePaths.cgroupProcs}/*.procs; do
  [ -w "$roost_procs" ] && echo $$ > "$roost_procs"
done 2>/dev/null
unset roost_procs

if [ "\${PS1-}" ] && [ "\${BASH-}" ] && [ "$BASH" != "/bin/sh" ] && [ -f /etc/bash.bashrc ]; then
  . /etc/bash.bashrc
fi
if [ -d /etc/profile.d ]; then
  for i in /etc/profile.d/*.sh; do
    if [ -r "$i" ]; then . "$i"; fi
  done
  unset i
fi
`;

/**
 * setpriv's arguments that make the rest of a command line run as the computer's user (X1).
 * Without root there is nothing to switch or drop: everything in the sandbox already is that
 * user, without capabilities (X6).
 */
function asComputerUser(
  spec: Pick<SandboxSpec, "isolation" | "setprivPath" | "uid" | "gid">,
): string[] {
  if (spec.isolation === "unprivileged") return [];
  return [
    spec.setprivPath,
    `--reuid=${spec.uid}`,
    `--regid=${spec.gid}`,
    "--clear-groups",
    "--inh-caps=-all",
    "--bounding-set=-all",
    "--no-new-privs",
    "--",
  ];
}

/**
 * setpriv's arguments for a spare's worker (spares.ts; worker/spare-claim.ts): uid 0 keeping only
 * CAP_SETUID and CAP_SETGID, as ambient capabilities so that they survive the exec of Node, then
 * an empty bounding set and no_new_privs. The claim's setuid takes both away.
 */
function asSpareWorker(spec: Pick<SandboxSpec, "setprivPath">): string[] {
  const keep = "-all,+setuid,+setgid";
  return [
    spec.setprivPath,
    `--inh-caps=${keep}`,
    `--ambient-caps=${keep}`,
    "--",
    spec.setprivPath,
    "--bounding-set=-all",
    "--no-new-privs",
    "--",
  ];
}

interface Forwarder {
  port: number;
  argv: string[];
}

/** X4: socat from 127.0.0.1:PORT to each egress socket, as the computer's user. */
function forwarders(spec: SandboxSpec): Forwarder[] {
  if (spec.socatPath === undefined) return [];
  const socat = spec.socatPath;
  return (
    [
      [forwarderPorts.http, insidePaths.egressHttpSocket],
      [forwarderPorts.socks, insidePaths.egressSocksSocket],
    ] as const
  ).map(([port, socket]) => ({
    port,
    argv: [
      ...asComputerUser(spec),
      socat,
      // After one side ends, give the other this long to finish (a half-closed request).
      "-t",
      "60",
      `TCP4-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork,max-children=${forwarderMaxConnections},backlog=1024`,
      `UNIX-CONNECT:${socket}`,
    ],
  }));
}

const shellQuote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * Starts the forwarders (X4), each in a loop that starts it again a second after it exits; says
 * it is ready once they listen (at most 5 s; a background check, so the worker starts at once);
 * and runs the worker (its arguments: setpriv … node worker), starting it again when it exits
 * (a stray kill from a user process must not take the computer offline; the supervisor itself
 * keeps uid 0, out of their reach), with a back-off from 0.2 s doubling to 10 s, reset after
 * 30 s of uptime. Exit status 2 is the worker's "bad configuration": retrying cannot help.
 */
function supervisorScript(forwarding: readonly Forwarder[]): string {
  const loops = forwarding.map(
    (forwarder) => `( while :; do ${forwarder.argv.map(shellQuote).join(" ")}; sleep 1; done ) &`,
  );
  // LISTEN (0A) lines of /proc/net/tcp for 127.0.0.1 (0100007F) on each forwarder's port.
  const listening = forwarding
    .map((forwarder) => forwarder.port.toString(16).toUpperCase().padStart(4, "0"))
    .join("|");
  const ready =
    forwarding.length === 0
      ? [`echo ${readyLine}`]
      : [
          "(",
          "  tries=0",
          `  until [ "$(grep -c -E '^ *[0-9]+: 0100007F:(${listening}) 00000000:0000 0A' /proc/net/tcp)" -ge ${forwarding.length} ] || [ "$tries" -ge 500 ]; do`,
          "    sleep 0.01; tries=$((tries + 1))",
          "  done",
          `  echo ${readyLine}`,
          ") &",
        ];
  return `#!/bin/sh
# Supervisor of a Roost computer (generated by the local provider).
${[...loops, ...ready].join("\n")}
# Seconds since boot without a process of its own (date's fork and exec were on every wake's path).
seconds() { read -r seconds_up _ < /proc/uptime; seconds=\${seconds_up%.*}; }
delay_ms=200
while :; do
  seconds; started=$seconds
  # A claimed spare's worker is running already (spareSupervisorScript): wait for it first.
  if [ -n "\${roost_adopted-}" ]; then
    wait "$roost_adopted"; status=$?; roost_adopted=
  else
    "$@"; status=$?
  fi
  if [ "$status" -eq 2 ]; then
    echo "supervisor: the worker refused its configuration (exit 2); not restarting" >&2
    exit 2
  fi
  seconds; if [ $(( seconds - started )) -ge 30 ]; then delay_ms=200; fi
  echo "supervisor: worker exited with status $status; restarting in $delay_ms ms" >&2
  sleep "$((delay_ms / 1000)).$(printf %03d $((delay_ms % 1000)))"
  delay_ms=$(( delay_ms * 2 > 10000 ? 10000 : delay_ms * 2 ))
done
`;
}

/** Whether `file` (a resolved path) is inside a system folder the sandbox binds from the host. */
function isInSystemFolders(layout: HostLayout, file: string): boolean {
  return layout.systemMounts.some(
    (mount) => mount.kind === "bind" && file.startsWith(`${mount.path}/`),
  );
}

/** `--perms 0755 --dir` for every folder on the way to `target` (bubblewrap makes them 0700 otherwise). */
function parentDirs(target: string, made: Set<string>): string[] {
  const args: string[] = [];
  const parts = path
    .dirname(target)
    .split("/")
    .filter((part) => part !== "");
  let current = "";
  for (const part of parts) {
    current += `/${part}`;
    if (made.has(current)) continue;
    made.add(current);
    args.push("--perms", "0755", "--dir", current);
  }
  return args;
}

interface RuntimeMounts {
  isolation: LocalIsolation;
  layout: HostLayout;
  nodePath: string;
  roostRoot: string;
}

/** The devices of an unprivileged sandbox's /dev (X6), bound from the host's. */
const unprivilegedDevices = ["null", "zero", "full", "random", "urandom", "tty"] as const;

/** A minimal /dev: bubblewrap's own (`--dev`, with devpts) as root; X6's without. */
function devMounts(isolation: LocalIsolation): string[] {
  if (isolation === "full") return ["--dev", "/dev"];
  return [
    "--perms",
    "0755",
    "--tmpfs",
    "/dev",
    ...unprivilegedDevices.flatMap((name) => ["--dev-bind", `/dev/${name}`, `/dev/${name}`]),
    "--symlink",
    "/proc/self/fd",
    "/dev/fd",
    ...(["stdin", "stdout", "stderr"] as const).flatMap((name, fd) => [
      "--symlink",
      `/proc/self/fd/${fd}`,
      `/dev/${name}`,
    ]),
  ];
}

/** The read-only system: /usr and friends, /etc, a fresh /proc and /dev, Node and Roost under /opt. */
function runtimeMounts(spec: RuntimeMounts, made: Set<string>): string[] {
  const args: string[] = [];
  for (const mount of spec.layout.systemMounts) {
    if (mount.kind === "bind") args.push("--ro-bind", mount.path, mount.path);
    else args.push("--symlink", mount.target, mount.path);
    made.add(mount.path);
  }
  args.push("--ro-bind", "/etc", "/etc");
  args.push("--proc", "/proc", ...devMounts(spec.isolation));
  args.push("--perms", "1777", "--tmpfs", "/dev/shm");
  const binds: Array<[string, string]> = [
    [spec.nodePath, insidePaths.node],
    [path.join(spec.roostRoot, "src"), `${insidePaths.roost}/src`],
    [path.join(spec.roostRoot, "node_modules"), `${insidePaths.roost}/node_modules`],
    [path.join(spec.roostRoot, "package.json"), `${insidePaths.roost}/package.json`],
  ];
  for (const [source, dest] of binds)
    args.push(...parentDirs(dest, made), "--ro-bind", source, dest);
  return args;
}

/**
 * A one-off sandbox that fills Node's compile cache for the worker: it runs the worker's own
 * command line with no configuration (the worker loads every module, then exits 2), as the
 * server's uid (root, or without root in a user namespace: X6) without capabilities and without
 * network, writing the cache under the same /opt paths the
 * computers use. Computers then mount the cache read-only, which takes several hundred
 * milliseconds and ~30 MB of memory off every wake; none of them can write to it.
 */
export function compileCacheWarmUp(
  spec: RuntimeMounts & { compileCacheDir: string; workerArgv: readonly string[] },
): string[] {
  const made = new Set<string>(["/tmp", "/dev", "/proc", "/etc"]);
  return [
    ...(spec.isolation === "unprivileged" ? ["--unshare-user"] : []),
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--die-with-parent",
    "--cap-drop",
    "ALL",
    "--clearenv",
    "--setenv",
    "NODE_COMPILE_CACHE",
    insidePaths.compileCache,
    "--setenv",
    "PATH",
    "/usr/bin:/bin",
    ...runtimeMounts(spec, made),
    "--perms",
    "1777",
    "--tmpfs",
    "/tmp",
    ...parentDirs(insidePaths.compileCache, made),
    "--bind",
    spec.compileCacheDir,
    insidePaths.compileCache,
    "--chdir",
    "/",
    "--",
    ...spec.workerArgv,
  ];
}

/**
 * The bubblewrap options (passed through `--args FD`, which keeps host paths out of the sandbox's
 * view of pid 1's command line) and the command (which bubblewrap wants on its own command line).
 */
export function bwrapArguments(
  spec: SandboxSpec,
  statusFd: number,
  /** Where bubblewrap reads the seccomp filter (seccomp.ts); none when undefined. */
  seccompFd?: number,
): { options: string[]; command: string[] } {
  const made = new Set<string>(["/tmp", "/run", "/dev", "/proc", "/etc"]);
  const unprivileged = spec.isolation === "unprivileged";
  const args: string[] = [
    // X6: a user namespace mapping only the server's uid and gid (bubblewrap's default).
    ...(unprivileged ? ["--unshare-user"] : []),
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-net", // X4: loopback only
    "--hostname",
    insideHostname,
    "--die-with-parent", // X2
    "--new-session",
    "--cap-drop",
    "ALL",
    // X1: bubblewrap run by root keeps every capability unless told otherwise. The supervisor
    // keeps the three setpriv needs to become the computer's uid and empty the bounding set.
    // X6: without root, nothing in the sandbox keeps any.
    ...(unprivileged
      ? []
      : ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]),
    "--clearenv", // X3
  ];
  for (const [name, value] of Object.entries(spec.env)) args.push("--setenv", name, value);
  args.push(...runtimeMounts(spec, made));
  args.push("--perms", "1777", "--size", String(spec.tmpBytes), "--tmpfs", "/tmp");
  args.push("--perms", "0755", "--tmpfs", "/run");
  for (const override of spec.layout.etcOverrides) {
    args.push(...parentDirs(override.dest, made));
    args.push("--ro-bind", path.join(spec.runtimeDir, "etc", override.name), override.dest);
  }
  args.push(...parentDirs(insidePaths.tokenFile, made));
  args.push(
    "--ro-bind",
    spec.spare?.runStaging ?? path.join(spec.runtimeDir, "roost"),
    insidePaths.runtime,
  );
  if (spec.spare !== undefined) args.push("--ro-bind", spec.spare.controlDir, insidePaths.spare);
  args.push("--perms", "0755", "--dir", insidePaths.cgroupProcs);
  spec.userProcs.forEach((file, index) => {
    args.push("--bind", file, `${insidePaths.cgroupProcs}/${index}.procs`);
  });
  const binds: Array<[string, string, "--bind" | "--ro-bind"]> = [
    [spec.home, insidePaths.home, "--bind"],
    [spec.workspace, insidePaths.workspace, "--bind"],
    [spec.workerState, insidePaths.workerState, "--bind"],
  ];
  // Node keeps its compile cache per uid (`<dir>/<version>-<arch>-<hash>-<uid>`); the warm-up ran
  // as another uid (0 as root), so its folders are mounted under the computer's uid (read-only:
  // see compileCacheWarmUp).
  for (const folder of spec.compileCacheFolders) {
    const match = new RegExp(`^(.+)-${spec.compileCacheUid}$`).exec(folder);
    if (match === null) continue;
    binds.push([
      path.join(spec.compileCacheDir, folder),
      `${insidePaths.compileCache}/${match[1]}-${spec.uid}`,
      "--ro-bind",
    ]);
  }
  for (const [source, dest, kind] of binds) {
    args.push(...parentDirs(dest, made));
    args.push(kind, source, dest);
  }
  args.push(...parentDirs("/var/tmp", made), "--symlink", "../tmp", "/var/tmp");
  // Last, so that no later mount (/tmp, /run) hides them.
  for (const tool of spec.insideTools) {
    if (isInSystemFolders(spec.layout, tool)) continue;
    args.push(...parentDirs(tool, made), "--ro-bind", tool, tool);
  }
  // "/" because the supervisor, uid 0 without CAP_DAC_OVERRIDE, cannot enter the computer's 0700
  // folders; the worker starts every command in /workspace itself.
  args.push("--chdir", "/");
  args.push("--json-status-fd", String(statusFd));
  // X5: loaded last, just before the supervisor runs, so everything in the computer inherits it.
  if (seccompFd !== undefined) args.push("--seccomp", String(seccompFd));
  // X1: the supervisor keeps uid 0 (so user processes cannot signal it) with nothing but the
  // capabilities setpriv needs; the worker it starts has the computer's uid and no capabilities.
  // X6: without root both are the server's uid, without capabilities (asComputerUser is empty).
  const command =
    spec.spare === undefined
      ? ["/bin/sh", insidePaths.supervisor, ...asComputerUser(spec), ...spec.workerArgv]
      : ["/bin/sh", insidePaths.spareSupervisor, ...asSpareWorker(spec), ...spec.workerArgv];
  return { options: args, command };
}

/**
 * The first process of a sandbox or an `exec`, run by /bin/sh on the host: it writes its own pid
 * to the given cgroup.procs files (so everything it becomes starts inside the computer's limits),
 * then replaces itself with the rest of its arguments.
 * Arguments: COUNT FILE... COMMAND ARGS...
 */
export const launcherScript = `n=$1; shift
while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done
exec "$@"`;
