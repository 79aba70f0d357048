/**
 * The sandbox's seccomp filter (seccomp.ts): first the program itself, run by a small classic-BPF
 * interpreter over the cases that matter; then the attacks it stops, run as a bot would run them
 * (the Shell tool, through the real worker in a real sandbox); then the everyday programs that
 * must keep working under it.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLocalProvider, type LocalProvider } from "./local-provider.ts";
import { assemble, seccompFilterFor, x86_64, x86_64Filter } from "./seccomp.ts";
import { runCommand } from "./system.ts";
import {
  makeTempDir,
  shellStdout,
  skipReason,
  startTestGateway,
  uniqueId,
  type TestGateway,
} from "./testing/index.ts";

const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_I386 = 0x40000003;
const allow = 0x7fff0000;
const eperm = 0x00050001;
const enosys = 0x00050026;

/** Runs a seccomp program over one `struct seccomp_data` (only what filters read: nr, arch, args). */
function evaluate(program: Buffer, call: { nr: number; arch?: number; args?: number[] }): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(call.nr, 0);
  data.writeUInt32LE(call.arch ?? AUDIT_ARCH_X86_64, 4);
  (call.args ?? []).forEach((value, index) => data.writeBigUInt64LE(BigInt(value), 16 + 8 * index));
  let accumulator = 0;
  for (let pc = 0; pc < program.length / 8;) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    pc += 1;
    switch (code) {
      case 0x20: // ld [k]
        accumulator = data.readUInt32LE(k);
        break;
      case 0x15: // jeq #k
        pc += accumulator === k ? jt : jf;
        break;
      case 0x45: // jset #k
        pc += (accumulator & k) !== 0 ? jt : jf;
        break;
      case 0x06: // ret #k
        return k;
      default:
        throw new Error(`unexpected BPF opcode 0x${code.toString(16)}`);
    }
  }
  throw new Error("the program ran off its end");
}

describe("seccomp program", () => {
  const program = x86_64Filter();
  const CLONE_NEWUSER = 0x10000000;
  const forkFlags = 0x01200011; // SIGCHLD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID
  const threadFlags = 0x003d0f00; // what glibc's pthread_create passes

  test("ordinary calls, fork, threads and ptrace are allowed (SECC5)", () => {
    for (const nr of [0, 1, 2, 59, 60, 231, x86_64.ptrace])
      expect(evaluate(program, { nr })).toBe(allow);
    expect(evaluate(program, { nr: x86_64.clone, args: [forkFlags] })).toBe(allow);
    expect(evaluate(program, { nr: x86_64.clone, args: [threadFlags] })).toBe(allow);
    expect(evaluate(program, { nr: x86_64.unshare, args: [0x00000400] })).toBe(allow); // CLONE_FILES
  });

  test("SECC2 user namespaces (and every other kind) through unshare and clone: EPERM", () => {
    expect(evaluate(program, { nr: x86_64.unshare, args: [CLONE_NEWUSER] })).toBe(eperm);
    expect(evaluate(program, { nr: x86_64.unshare, args: [0x40000000] })).toBe(eperm); // NEWNET
    expect(evaluate(program, { nr: x86_64.unshare, args: [0x80] })).toBe(eperm); // NEWTIME
    expect(evaluate(program, { nr: x86_64.clone, args: [forkFlags | CLONE_NEWUSER] })).toBe(eperm);
    // The flags' upper half does not hide them.
    expect(
      evaluate(program, { nr: x86_64.clone, args: [0xffffffff00000000 + CLONE_NEWUSER] }),
    ).toBe(eperm);
    expect(evaluate(program, { nr: x86_64.setns })).toBe(eperm);
  });

  test("SECC2 clone3 is ENOSYS, so libc falls back to clone", () => {
    expect(evaluate(program, { nr: x86_64.clone3 })).toBe(enosys);
  });

  test("SECC3 packet and netfilter sockets: EPERM; inet, unix and route netlink are allowed", () => {
    expect(evaluate(program, { nr: x86_64.socket, args: [17, 3, 0] })).toBe(eperm); // AF_PACKET
    expect(evaluate(program, { nr: x86_64.socket, args: [16, 3, 12] })).toBe(eperm); // NETFILTER
    expect(evaluate(program, { nr: x86_64.socket, args: [16, 3, 0] })).toBe(allow); // ROUTE
    expect(evaluate(program, { nr: x86_64.socket, args: [2, 1, 0] })).toBe(allow); // AF_INET
    expect(evaluate(program, { nr: x86_64.socket, args: [10, 2, 0] })).toBe(allow); // AF_INET6
    expect(evaluate(program, { nr: x86_64.socket, args: [1, 1, 0] })).toBe(allow); // AF_UNIX
  });

  test("SECC4 mounts, keyrings, bpf, perf, userfaultfd, kexec and modules: EPERM; io_uring: ENOSYS", () => {
    for (const name of [
      "mount",
      "umount2",
      "pivot_root",
      "fsopen",
      "fsmount",
      "move_mount",
      "open_tree",
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
    ] as const)
      expect(evaluate(program, { nr: x86_64[name] }), name).toBe(eperm);
    for (const name of ["io_uring_setup", "io_uring_enter", "io_uring_register"] as const)
      expect(evaluate(program, { nr: x86_64[name] }), name).toBe(enosys);
  });

  test("SECC1 calls of another ABI cannot go around the rules: x32 and i386 are ENOSYS", () => {
    expect(evaluate(program, { nr: 0x40000000 | x86_64.unshare, args: [CLONE_NEWUSER] })).toBe(
      enosys,
    );
    expect(evaluate(program, { nr: 0x40000000 })).toBe(enosys);
    // i386's unshare is 310; any i386 call at all is refused.
    expect(evaluate(program, { nr: 310, arch: AUDIT_ARCH_I386, args: [CLONE_NEWUSER] })).toBe(
      enosys,
    );
    expect(evaluate(program, { nr: 3, arch: AUDIT_ARCH_I386 })).toBe(enosys);
  });

  test("an architecture without a filter gets none, with a warning that says what that means", () => {
    const choice = seccompFilterFor("arm64");
    expect(choice.kind).toBe("none");
    expect(choice.kind === "none" && choice.warning).toMatch(
      /no seccomp filter on arm64.*user namespaces/,
    );
    expect(seccompFilterFor("x64").kind).toBe("filter");
  });

  test("the assembler refuses a label it cannot reach", () => {
    expect(() => assemble([{ code: 0x15, k: 1, whenTrue: "nowhere" }])).toThrow(/unknown label/);
  });
});

const skip = await skipReason("seccomp.test.ts");

describe.skipIf(skip !== undefined || process.arch !== "x64")("seccomp in a computer", () => {
  let dataDir: { path: string; remove: () => Promise<void> };
  let gateway: TestGateway;
  let provider: LocalProvider;
  const id = uniqueId("seccomp");

  /** A command as a bot's Shell tool runs it: through the worker, in the user's cgroup. */
  const shell = async (command: string, timeoutMs = 60_000) =>
    shellStdout(
      await gateway.call("shell", { command: `(${command}) 2>&1; echo "exit=$?"`, timeoutMs }),
    );
  /** A raw system call through Python's ctypes: prints the errno name, or "ok". */
  const syscall = (nr: number, ...args: number[]) =>
    shell(
      `python3 -c 'import ctypes, errno, os; libc = ctypes.CDLL(None, use_errno=True); r = libc.syscall(${[nr, ...args].join(", ")}); print("ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])'`,
    );

  beforeAll(async () => {
    dataDir = await makeTempDir();
    gateway = await startTestGateway();
    provider = await createLocalProvider({
      dataDir: dataDir.path,
      sockets: {
        gateway: (computerId, socketPath) => gateway.listenComputer(computerId, socketPath),
      },
    });
    await provider.create(id);
    await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "seccomp-token" });
    await gateway.waitForHello(1);
  });

  afterAll(async () => {
    try {
      await provider?.destroy(id);
      await provider?.close();
    } finally {
      await gateway?.close();
      await dataDir?.remove();
    }
  });

  test("the worker and every command run under the filter (X4)", async () => {
    expect(await shell("grep -E '^Seccomp:' /proc/self/status /proc/1/status")).toMatch(
      /\/proc\/self\/status:Seccomp:\s+2\n/,
    );
    const exec = await provider.exec(id, ["grep", "^Seccomp:", "/proc/self/status"]);
    expect(exec.stdout).toMatch(/Seccomp:\s+2/);
  });

  test("attack: `unshare -U -r true` (a user namespace, root inside it) fails", async () => {
    expect(await shell("unshare -U -r true")).toMatch(
      /unshare failed: Operation not permitted\nexit=1/,
    );
    expect(await shell("unshare -U -r -n ip link")).toMatch(/Operation not permitted\nexit=1/);
    // The host allows it to the same user outside the filter: the filter is what stops it.
    const outside = await runCommand("setpriv", [
      "--reuid=65534",
      "--regid=65534",
      "--clear-groups",
      "unshare",
      "-U",
      "-r",
      "true",
    ]);
    expect(outside.exitCode).toBe(0);
  });

  test("attack: a packet socket (`socket(AF_PACKET, SOCK_RAW)`) fails", async () => {
    expect(
      await shell(`python3 -c "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)"`),
    ).toMatch(/PermissionError: \[Errno 1\] Operation not permitted\nexit=1/);
    // Inside a user namespace of its own (the way to get CAP_NET_RAW without the filter).
    expect(
      await shell(
        `unshare -U -r -n python3 -c "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)"`,
      ),
    ).toMatch(/Operation not permitted\nexit=1/);
  });

  test("attack: `nft list ruleset` and a netfilter netlink socket fail", async () => {
    expect(await shell("/usr/sbin/nft list ruleset")).toMatch(
      /Operation not permitted[\s\S]*exit=[1-9]/,
    );
    expect(
      await shell(
        `python3 -c "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)"`,
      ),
    ).toMatch(/PermissionError: \[Errno 1\] Operation not permitted\nexit=1/);
    expect(await shell("unshare -U -r -n /usr/sbin/nft list ruleset")).toMatch(
      /Operation not permitted[\s\S]*exit=[1-9]/,
    );
    // A route netlink socket (what `ip addr` uses) still works.
    expect(await shell("ip -brief addr show lo")).toMatch(/^lo .*\nexit=0/);
  });

  test("attack: mount, keyrings, bpf, perf events, userfaultfd and module loading fail; clone3 and io_uring are ENOSYS", async () => {
    expect(await shell("mkdir -p /tmp/m && mount -t tmpfs none /tmp/m")).toMatch(/exit=(1|32)/);
    expect(await syscall(x86_64.mount, 0, 0, 0, 0, 0)).toBe("EPERM\nexit=0\n");
    expect(await syscall(x86_64.keyctl, 0, -3, 0)).toBe("EPERM\nexit=0\n"); // KEYCTL_GET_KEYRING_ID
    expect(await syscall(x86_64.add_key, 0, 0, 0, 0, 0)).toBe("EPERM\nexit=0\n");
    expect(await syscall(x86_64.bpf, 0, 0, 0)).toBe("EPERM\nexit=0\n");
    expect(await syscall(x86_64.perf_event_open, 0, 0, -1, -1, 0)).toBe("EPERM\nexit=0\n");
    expect(await syscall(x86_64.userfaultfd, 0)).toBe("EPERM\nexit=0\n");
    expect(await syscall(x86_64.finit_module, -1, 0, 0)).toBe("EPERM\nexit=0\n");
    expect(await syscall(x86_64.setns, -1, 0)).toBe("EPERM\nexit=0\n");
    expect(await syscall(x86_64.clone3, 0, 0)).toBe("ENOSYS\nexit=0\n");
    expect(await syscall(x86_64.io_uring_setup, 1, 0)).toBe("ENOSYS\nexit=0\n");
    // x32: the same unshare under the x32 numbering.
    expect(await syscall(0x40000000 + x86_64.unshare, 0x10000000)).toBe("ENOSYS\nexit=0\n");
  });

  test("gdb-style tracing of the computer's own processes still works (SECC5)", async () => {
    expect(
      await shell(
        `python3 -c 'import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    time.sleep(30); os._exit(0)
r = libc.ptrace(16, pid, 0, 0)
print("attached" if r == 0 else os.strerror(ctypes.get_errno()))
os.kill(pid, signal.SIGKILL)'`,
      ),
    ).toBe("attached\nexit=0\n");
  });

  test("everyday programs keep working: bash, python3 with threads, node, git, curl, tar", async () => {
    expect(await shell("bash -c 'echo $((6 * 7))'")).toBe("42\nexit=0\n");
    expect(
      await shell(
        `python3 -c "import threading, subprocess; t = threading.Thread(target=print, args=('thread',)); t.start(); t.join(); print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())"`,
      ),
    ).toBe("thread\nchild\nexit=0\n");
    expect(
      await shell(
        `node -e "const { Worker } = require('node:worker_threads'); new Worker('require(\\'node:worker_threads\\').parentPort.postMessage(7)', { eval: true }).on('message', (m) => { console.log('worker', m); process.exit(0); })"`,
      ),
    ).toBe("worker 7\nexit=0\n");
    expect(
      await shell(
        "cd /workspace && rm -rf repo && git init -q repo && cd repo && echo hi > a && git add a && git -c user.email=a@b -c user.name=a commit -qm one && git log --oneline | wc -l",
      ),
    ).toBe("1\nexit=0\n");
    expect(await shell("curl -sS file:///etc/hostname")).toBe("computer\nexit=0\n");
    expect(
      await shell(
        "cd /tmp && mkdir -p t/d && echo x > t/d/f && tar -czf t.tgz t && rm -r t && tar -xzf t.tgz && cat t/d/f",
      ),
    ).toBe("x\nexit=0\n");
  });

  test("pip and npm install into the home", async () => {
    // A wheel made on the spot (a zip with its metadata): pip installs it offline into a venv.
    const pip = await shell(
      `set -e
python3 - <<'PY'
import zipfile
with zipfile.ZipFile("/tmp/hello_roost-1.0-py3-none-any.whl", "w") as wheel:
    wheel.writestr("hello_roost/__init__.py", "def hi():\\n    return 'hi from pip'\\n")
    info = "hello_roost-1.0.dist-info/"
    wheel.writestr(info + "METADATA", "Metadata-Version: 2.1\\nName: hello-roost\\nVersion: 1.0\\n")
    wheel.writestr(info + "WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    wheel.writestr(info + "RECORD", "")
PY
python3 -m venv ~/venv
~/venv/bin/pip install -q --no-index /tmp/hello_roost-1.0-py3-none-any.whl
~/venv/bin/python -c "import hello_roost; print(hello_roost.hi())"`,
      180_000,
    );
    expect(pip).toMatch(/hi from pip\nexit=0\n$/);
    const npm = await shell(
      `set -e
mkdir -p /tmp/npkg && cd /tmp/npkg
printf '{"name":"hello-roost","version":"1.0.0","main":"index.js"}' > package.json
echo 'module.exports = () => "hi from npm";' > index.js
npm pack --silent >/dev/null
mkdir -p ~/app && cd ~/app
npm install --offline --no-audit --no-fund --silent /tmp/npkg/hello-roost-1.0.0.tgz
node -e 'console.log(require("hello-roost")())'`,
      180_000,
    );
    expect(npm).toMatch(/hi from npm\nexit=0\n$/);
  });
});
