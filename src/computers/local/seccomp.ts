/**
 * The seccomp filter of every process in a local computer: a classic-BPF program, assembled here
 * and handed to bubblewrap (`--seccomp FD`), which loads it just before it runs the supervisor, so
 * the supervisor, the worker and everything they start inherit it (a filter cannot be removed).
 *
 * Without it, a computer's user can create a user namespace (`unshare -U -r`), become root in
 * it, and then reach kernel code that normally needs privileges: a network namespace of its own
 * with nf_tables and packet sockets, mounts of filesystems, and more. That code is where most
 * local privilege escalations of recent years were found. The filter closes those doors and
 * leaves everything else alone (docs/computers.md, "System calls").
 *
 * Invariants:
 *   SECC1 on x86_64, every system call of another ABI (i386 through `int 0x80`, x32) fails with
 *         ENOSYS, so a rule cannot be bypassed by calling the same thing under another number.
 *   SECC2 no process in a computer can create or enter a namespace of any kind through
 *         unshare, clone or setns; clone3, whose flags sit in memory the filter cannot read,
 *         fails with ENOSYS, which makes libc fall back to clone (whose flags are checked).
 *   SECC3 no packet sockets and no netfilter netlink sockets (nf_tables, the old iptables
 *         interfaces, conntrack): `socket(AF_PACKET, …)` and `socket(AF_NETLINK, …,
 *         NETLINK_NETFILTER)` fail with EPERM. Other netlink sockets (`ip addr` uses one) work.
 *   SECC4 the calls listed in {@link refusedCalls} fail with EPERM (or ENOSYS where programs
 *         expect that to mean "not here" and fall back).
 *   SECC5 ptrace stays: gdb and strace work on the computer's own processes. A computer's pid
 *         namespace shows only its own processes, and the two that run as root (bubblewrap's
 *         reaper and the supervisor) cannot be traced by the computer's uid.
 */

/** What `struct seccomp_data` holds where (include/uapi/linux/seccomp.h). */
const dataOffset = { nr: 0, arch: 4, argLow: (index: number) => 16 + 8 * index } as const;

// Classic BPF opcodes (include/uapi/linux/bpf_common.h).
const ldAbsWord = 0x20; // BPF_LD | BPF_W | BPF_ABS
const jumpEqual = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const jumpSet = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const returnK = 0x06; // BPF_RET | BPF_K

const retAllow = 0x7fff_0000;
const retErrno = 0x0005_0000;
const EPERM = 1;
const ENOSYS = 38;

const AUDIT_ARCH_X86_64 = 0xc000_003e;
const X32_SYSCALL_BIT = 0x4000_0000;
const CLONE_NEWNS = 0x0002_0000;
const CLONE_NEWCGROUP = 0x0200_0000;
const CLONE_NEWUTS = 0x0400_0000;
const CLONE_NEWIPC = 0x0800_0000;
const CLONE_NEWUSER = 0x1000_0000;
const CLONE_NEWPID = 0x2000_0000;
const CLONE_NEWNET = 0x4000_0000;
/** CLONE_NEWTIME is 0x80: in clone it is CSIGNAL's range, so it is checked in unshare only. */
const CLONE_NEWTIME = 0x0000_0080;
const AF_NETLINK = 16;
const AF_PACKET = 17;
const NETLINK_NETFILTER = 12;

const namespaceFlags =
  CLONE_NEWNS |
  CLONE_NEWCGROUP |
  CLONE_NEWUTS |
  CLONE_NEWIPC |
  CLONE_NEWUSER |
  CLONE_NEWPID |
  CLONE_NEWNET;

/** x86_64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl). */
export const x86_64 = {
  socket: 41,
  clone: 56,
  ptrace: 101,
  pivot_root: 155,
  mount: 165,
  umount2: 166,
  init_module: 175,
  delete_module: 176,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  unshare: 272,
  perf_event_open: 298,
  setns: 308,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  clone3: 435,
  mount_setattr: 442,
} as const;

type CallName = keyof typeof x86_64;

/**
 * SECC4: refused outright. Mounting (old and new API) and pivot_root, kernel keyrings, eBPF,
 * perf events, userfaultfd (a favourite of kernel exploits for stopping the kernel mid-copy),
 * loading kernels and modules. Most already need a capability the computer lacks; refusing them
 * here also holds inside any namespace the computer might still find a way to make. io_uring is
 * a large kernel surface that programs use only as an optional fast path: ENOSYS makes them
 * fall back to ordinary reads and writes.
 */
export const refusedCalls: ReadonlyArray<{ name: CallName; errno: "EPERM" | "ENOSYS" }> = [
  ...(
    [
      "setns",
      "mount",
      "umount2",
      "pivot_root",
      "open_tree",
      "move_mount",
      "fsopen",
      "fsconfig",
      "fsmount",
      "fspick",
      "mount_setattr",
      "keyctl",
      "add_key",
      "request_key",
      "bpf",
      "perf_event_open",
      "userfaultfd",
      "kexec_load",
      "kexec_file_load",
      "init_module",
      "finit_module",
      "delete_module",
    ] as const
  ).map((name) => ({ name, errno: "EPERM" as const })),
  ...(["clone3", "io_uring_setup", "io_uring_enter", "io_uring_register"] as const).map((name) => ({
    name,
    errno: "ENOSYS" as const,
  })),
];

interface Instruction {
  code: number;
  k: number;
  /** Label to jump to when the condition holds (conditional jumps); the next instruction if unset. */
  whenTrue?: string;
  whenFalse?: string;
}
type Line = Instruction | { label: string };

const load = (offset: number): Instruction => ({ code: ldAbsWord, k: offset });
const jumpIf = (
  code: number,
  k: number,
  targets: { whenTrue?: string; whenFalse?: string },
): Instruction => ({ code, k, ...targets });
const give = (value: number): Instruction => ({ code: returnK, k: value });

/** Resolves labels to the forward offsets classic BPF wants and encodes `struct sock_filter`s. */
export function assemble(lines: readonly Line[]): Buffer {
  const instructions: Instruction[] = [];
  const labels = new Map<string, number>();
  for (const line of lines) {
    if ("label" in line) labels.set(line.label, instructions.length);
    else instructions.push(line);
  }
  const program = Buffer.alloc(instructions.length * 8);
  instructions.forEach((instruction, index) => {
    const offset = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const target = labels.get(label);
      if (target === undefined) throw new Error(`seccomp: unknown label ${label}`);
      const distance = target - index - 1;
      if (distance < 0 || distance > 255)
        throw new Error(`seccomp: the jump to ${label} is out of range (${distance})`);
      return distance;
    };
    program.writeUInt16LE(instruction.code, index * 8);
    program.writeUInt8(offset(instruction.whenTrue), index * 8 + 2);
    program.writeUInt8(offset(instruction.whenFalse), index * 8 + 3);
    program.writeUInt32LE(instruction.k >>> 0, index * 8 + 4);
  });
  return program;
}

/** The filter for x86_64 (the only architecture it is written and tested for). */
export function x86_64Filter(): Buffer {
  const lines: Line[] = [
    load(dataOffset.arch),
    jumpIf(jumpEqual, AUDIT_ARCH_X86_64, { whenFalse: "enosys" }), // SECC1
    load(dataOffset.nr),
    jumpIf(jumpSet, X32_SYSCALL_BIT, { whenTrue: "enosys" }), // SECC1
    jumpIf(jumpEqual, x86_64.unshare, { whenTrue: "unshare" }), // SECC2
    jumpIf(jumpEqual, x86_64.clone, { whenTrue: "clone" }), // SECC2
    jumpIf(jumpEqual, x86_64.socket, { whenTrue: "socket" }), // SECC3
  ];
  for (const call of refusedCalls) {
    lines.push(
      jumpIf(jumpEqual, x86_64[call.name], {
        whenTrue: call.errno === "EPERM" ? "eperm" : "enosys",
      }),
    ); // SECC4
  }
  lines.push(
    give(retAllow),
    { label: "unshare" },
    load(dataOffset.argLow(0)),
    jumpIf(jumpSet, namespaceFlags | CLONE_NEWTIME, { whenTrue: "eperm" }),
    give(retAllow),
    { label: "clone" },
    load(dataOffset.argLow(0)),
    jumpIf(jumpSet, namespaceFlags, { whenTrue: "eperm" }),
    give(retAllow),
    { label: "socket" },
    load(dataOffset.argLow(0)),
    jumpIf(jumpEqual, AF_PACKET, { whenTrue: "eperm" }),
    jumpIf(jumpEqual, AF_NETLINK, { whenFalse: "allow" }),
    load(dataOffset.argLow(2)),
    jumpIf(jumpEqual, NETLINK_NETFILTER, { whenTrue: "eperm" }),
    { label: "allow" },
    give(retAllow),
    { label: "eperm" },
    give(retErrno | EPERM),
    { label: "enosys" },
    give(retErrno | ENOSYS),
  );
  return assemble(lines);
}

export type SeccompChoice = { kind: "filter"; program: Buffer } | { kind: "none"; warning: string };

/**
 * The filter for the architecture Node runs on. On any other than x86_64 there is none (its
 * system call numbers differ and no filter for them has been tested): the computer then runs
 * as before, and the warning says so at every start.
 */
export function seccompFilterFor(arch: string = process.arch): SeccompChoice {
  if (arch === "x64") return { kind: "filter", program: x86_64Filter() };
  return {
    kind: "none",
    warning: `local provider: WARNING: no seccomp filter on ${arch} (only x86_64 has one): computers on this host can create user namespaces and reach nf_tables, packet sockets, mount and the other calls the filter refuses (docs/computers.md, "System calls")`,
  };
}
