/**
 * `roost worker` as a real child process (`node src/cli/main.ts worker …`), as a user would run
 * it on their own machine, for end-to-end tests and benchmarks. Its environment is built from
 * nothing but what the caller passes (plus PATH and HOME), so a proxy setting of the machine
 * running the tests never leaks into it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

export interface RoostWorkerProcess {
  readonly child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM (the worker disconnects cleanly), SIGKILL after 5 s; resolves once it exited. */
  stop(): Promise<void>;
}

export function startRoostWorker(options: {
  args: string[];
  home: string;
  env?: Record<string, string>;
}): RoostWorkerProcess {
  const child = spawn(process.execPath, ["src/cli/main.ts", "worker", ...options.args], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: options.home,
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null)
      resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  return {
    child,
    output: () => output,
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
