/**
 * Running Roost (or the local provider) as a user that is not root, for the tests of the
 * unprivileged mode: which uid, a Node binary that uid can run, the command prefix that drops to
 * it, and whether this host lets it create user namespaces. Not used by production code.
 */
import { spawn } from "node:child_process";
import { constants } from "node:fs";
import { access, copyFile, mkdir, readFile, rename, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { findExecutable, runCommand } from "../system.ts";

/** The uid (and gid) the tests run as when they run as root: nobody. */
export const otherUid = 65534;

const checkout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

/** Whether this test process is root (then it drops to {@link otherUid}; otherwise it is not root already). */
const isRoot = () => process.getuid?.() === 0;

/** The uid the unprivileged tests' servers run as. */
export function unprivilegedUid(): number {
  return isRoot() ? otherUid : process.getuid!();
}

/** A command prefix that runs the rest as {@link unprivilegedUid} with no supplementary groups. */
export function asUnprivileged(): string[] {
  if (!isRoot()) return [];
  return [
    "/usr/bin/setpriv",
    `--reuid=${otherUid}`,
    `--regid=${otherUid}`,
    "--clear-groups",
    "--inh-caps=-all",
    "--",
  ];
}

/** Whether each folder from / down to `file` lets others through, and `file` lets them read and run it. */
async function openToOthers(file: string): Promise<boolean> {
  let current = path.resolve(file);
  if (((await stat(current)).mode & 0o005) !== 0o005) return false;
  while (current !== "/") {
    current = path.dirname(current);
    if (((await stat(current)).mode & 0o001) === 0) return false;
  }
  return true;
}

/**
 * A Node binary {@link unprivilegedUid} can run: this one, or (when it sits in a closed folder
 * such as /root/.cache) a copy in a folder of root's under the temp folder, made once per version.
 */
export async function nodeForUnprivileged(): Promise<string> {
  if (!isRoot() || (await openToOthers(process.execPath))) return process.execPath;
  const folder = path.join(tmpdir(), `roost-test-node-${process.version}`);
  const copy = path.join(folder, "node");
  await mkdir(folder, { recursive: true, mode: 0o755 });
  const info = await stat(folder);
  if (info.uid !== 0 || (info.mode & 0o022) !== 0)
    throw new Error(`${folder} is not root's alone; remove it`);
  const size = (await stat(process.execPath)).size;
  const current = await stat(copy).catch(() => undefined);
  if (current?.size !== size) {
    const temporary = `${copy}.${process.pid}.tmp`;
    await copyFile(process.execPath, temporary);
    await rename(temporary, copy);
  }
  await access(copy, constants.X_OK);
  return copy;
}

async function readSysctl(file: string): Promise<string | undefined> {
  return (await readFile(file, "utf8").catch(() => undefined))?.trim();
}

/**
 * Why the unprivileged tests cannot run here, or undefined when they can. With CI=true a host
 * whose kernel settings allow unprivileged user namespaces but where they still fail is a
 * failure (thrown), not a skip; so is a missing tool.
 */
export async function unprivilegedSkipReason(file: string): Promise<string | undefined> {
  const reason = await unprivilegedUnavailableReason();
  if (reason === undefined) return undefined;
  const ci = process.env.CI === "true";
  if (
    ci &&
    (reason.kind === "tool" || (reason.kind === "userns" && (await userNamespacesExpected())))
  )
    throw new Error(`${file}: this CI host should run the unprivileged tests, but ${reason.text}`);
  console.warn(`${file}: skipped: ${reason.text}`);
  return reason.text;
}

/** Whether the kernel's settings say unprivileged user namespaces are allowed. */
async function userNamespacesExpected(): Promise<boolean> {
  const clone = await readSysctl("/proc/sys/kernel/unprivileged_userns_clone"); // Debian's older kernels
  const max = await readSysctl("/proc/sys/user/max_user_namespaces");
  const apparmor = await readSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); // Ubuntu 23.10+
  return clone !== "0" && max !== "0" && apparmor !== "1";
}

async function unprivilegedUnavailableReason(): Promise<
  { kind: "tool" | "userns" | "access"; text: string } | undefined
> {
  if (process.platform !== "linux") return { kind: "access", text: "not Linux" };
  for (const tool of ["bwrap", "nsenter", "setpriv", "socat", "unshare"]) {
    if ((await findExecutable(tool, undefined)) === undefined)
      return { kind: "tool", text: `${tool} is not installed` };
  }
  const uid = unprivilegedUid();
  const node = await nodeForUnprivileged().catch((error: unknown) => error as Error);
  if (node instanceof Error) return { kind: "access", text: node.message };
  const prefix = asUnprivileged();
  const as = async (argv: string[]) => {
    const [file, ...args] = [...prefix, ...argv];
    return runCommand(file!, args, { timeoutMs: 10_000 });
  };
  const readable = await as(["/usr/bin/test", "-r", path.join(checkout, "src/worker/main.ts")]);
  if (readable.exitCode !== 0)
    return { kind: "access", text: `uid ${uid} cannot read this checkout (${checkout})` };
  const unshare = await as(["/usr/bin/unshare", "--user", "/bin/true"]);
  if (unshare.exitCode !== 0) {
    return {
      kind: "userns",
      text: `uid ${uid} cannot create a user namespace here (unshare -U: ${(unshare.stderr || unshare.stdout).trim()})`,
    };
  }
  return undefined;
}

/** The local provider in a process of {@link unprivilegedUid}'s (unprivileged-harness.ts). */
export interface UnprivilegedHarness {
  readonly isolation: string;
  /** Host pid of the harness (the provider's server process). */
  readonly pid: number;
  request<T = unknown>(op: string, fields?: Record<string, unknown>): Promise<T>;
  /** Closes the provider and waits for the process to end. */
  close(): Promise<void>;
}

export async function startUnprivilegedHarness(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<UnprivilegedHarness> {
  const node = await nodeForUnprivileged();
  const [file, ...args] = [
    ...asUnprivileged(),
    node,
    path.join(checkout, "src/computers/local/testing/unprivileged-harness.ts"),
    dataDir,
  ];
  const child = spawn(file, args, {
    cwd: checkout,
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const pending = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  let next = 1;
  let ready: ((value: { isolation: string; pid: number }) => void) | undefined;
  const started = new Promise<{ isolation: string; pid: number }>((resolve, reject) => {
    ready = resolve;
    void exited.then(() => reject(new Error(`the harness exited: ${stderr}`)));
  });
  createInterface({ input: child.stdout }).on("line", (line) => {
    const message = JSON.parse(line) as {
      ready?: boolean;
      isolation?: string;
      pid?: number;
      id?: number;
      ok?: boolean;
      value?: unknown;
      error?: string;
    };
    if (message.ready === true) {
      ready?.({ isolation: message.isolation ?? "", pid: message.pid ?? 0 });
      return;
    }
    const waiter = pending.get(message.id ?? 0);
    pending.delete(message.id ?? 0);
    if (message.ok === true) waiter?.resolve(message.value);
    else waiter?.reject(new Error(message.error ?? "failed"));
  });
  void exited.then(() => {
    for (const waiter of pending.values())
      waiter.reject(new Error(`the harness exited: ${stderr}`));
    pending.clear();
  });
  const { isolation, pid } = await started;
  return {
    isolation,
    pid,
    request<T>(op: string, fields: Record<string, unknown> = {}) {
      const id = next++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        child.stdin.write(`${JSON.stringify({ id, op, ...fields })}\n`);
      });
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin.end(`${JSON.stringify({ id: next++, op: "close" })}\n`);
        const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}
