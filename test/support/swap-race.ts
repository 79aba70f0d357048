/**
 * The swap attack on the files API: a loop that swaps two names as fast as it can with
 * renameat2(RENAME_EXCHANGE), atomically, so a path flips between what the user made (a file, a
 * folder) and a symbolic link to something outside. Written in Python (ctypes) because Node has
 * no renameat2; it runs on the host (as the `process` provider's computers do) or inside a
 * computer (python3 from the host's /usr, which the local sandbox mounts read-only).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";

/** Where python3 is on this host, or undefined. */
export const python3 = ["/usr/bin/python3", "/usr/local/bin/python3"].find((file) =>
  existsSync(file),
);

/**
 * `python3 -c <script> <stop-file> <a> <b> [<a> <b> …]`: exchanges each pair until the stop file
 * exists (or 120 s pass), then prints how many swaps it made and writes the number to
 * `<stop-file>.count`.
 */
export const swapScript = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
stop, names = sys.argv[1], sys.argv[2:]
pairs = [(names[i].encode(), names[i + 1].encode()) for i in range(0, len(names), 2)]
swaps, deadline = 0, time.time() + 120
print("swapping", flush=True)
while not os.path.exists(stop) and time.time() < deadline:
    for a, b in pairs:
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            sys.exit("renameat2 failed: " + os.strerror(ctypes.get_errno()))
        swaps += 1
# Written whole, then renamed: a reader never sees the file empty.
with open(stop + ".count.tmp", "w") as count:
    count.write(str(swaps))
os.rename(stop + ".count.tmp", stop + ".count")
print("swaps", swaps, flush=True)
`;

export interface SwapLoop {
  /** Stops the loop and resolves with the number of swaps it made. */
  stop(): Promise<number>;
}

/** Starts the swap loop on this host for the given pairs of absolute paths. */
export async function startSwapLoop(
  stopFile: string,
  pairs: readonly (readonly [string, string])[],
): Promise<SwapLoop> {
  if (python3 === undefined) throw new Error("python3 is not installed");
  const child: ChildProcess = spawn(python3, ["-c", swapScript, stopFile, ...pairs.flat()], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (data: Buffer) => (output += data.toString()));
  child.stderr?.on("data", (data: Buffer) => (output += data.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (output.includes("swapping")) resolve();
    };
    child.stdout?.on("data", check);
    child.once("exit", () => reject(new Error(`the swap loop exited early: ${output}`)));
  });
  return {
    async stop() {
      writeFileSync(stopFile, "");
      const killer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(killer);
      const match = /swaps (\d+)/.exec(output);
      if (match === null) throw new Error(`the swap loop failed: ${output}`);
      return Number(match[1]);
    },
  };
}
