/**
 * Host preparation at `roost up` (and so `npm start`): on a fresh Debian or Ubuntu machine the
 * isolated `local` provider lacks bubblewrap and socat (and, on a minimal image, e2fsprogs), which
 * the OS package manager provides. Run as root, Roost installs them itself before it starts, so
 * that the README's `npm install && npm start` runs isolated computers there; elsewhere it stops
 * with the message of detect.ts, which names the exact command to run (`sudo apt-get install -y …`).
 *
 * Invariants:
 *   HOST1 nothing is installed unless the local provider is wanted (ROOST_COMPUTER_PROVIDER is
 *         `auto` or `local`), missing packages are all it lacks, the server runs as root on Linux
 *         with apt-get, and ROOST_INSTALL_SYSTEM_PACKAGES is not 0.
 *   HOST2 before anything runs, one line on the terminal says what is installed, with which
 *         command, and how to turn it off.
 *   HOST3 the package manager's output goes to the log file (and the debug log), never to the
 *         terminal; a failure reports the command, its exit status, its last lines, the log file
 *         and what to do.
 *   HOST4 `apt-get update` runs only after an install failed for lack of package lists (none, or
 *         stale ones), and then the install is tried once more.
 *   HOST5 after an install the host is probed again: what start-up goes on with is what is
 *         there, not what was meant to be installed.
 */
import { spawn } from "node:child_process";
import { appendFile, mkdir } from "node:fs/promises";
import path from "node:path";
import { RoostError } from "../errors/index.ts";
import { silentLogger, type Logger } from "../log/index.ts";
import { detectHost, type HostReport } from "./detect.ts";

export interface PackageCommandResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Set when it was stopped for running past its time. */
  timedOut: boolean;
}

/**
 * Runs one package manager command to completion, handing everything it prints to `onOutput`
 * (HOST3). The seam of this module: {@link runPackageCommand} runs a real process; tests pass one
 * that records the commands and changes what the next probe finds.
 */
export type PackageCommandRunner = (
  file: string,
  args: readonly string[],
  options: { env: Record<string, string>; timeoutMs: number; onOutput: (text: string) => void },
) => Promise<PackageCommandResult>;

export interface HostSetupOptions {
  /** ROOST_COMPUTER_PROVIDER: nothing is installed for `process` (HOST1). */
  provider: "auto" | "local" | "process";
  /** ROOST_INSTALL_SYSTEM_PACKAGES (HOST1). */
  installSystemPackages: boolean;
  /** ROOST_TOOLS_PATH: where tools (apt-get included) are looked for. */
  searchPath: string | undefined;
  /** Where the package manager's output is appended (HOST3). */
  logFile: string;
  /** Prints a line on the terminal (HOST2). */
  notice: (line: string) => void;
  /** @default silent */
  logger?: Logger;
  /** Probes the host (HOST5: called again after an install). @default detectHost with `searchPath` */
  detect?: () => Promise<HostReport>;
  /** @default runPackageCommand */
  run?: PackageCommandRunner;
}

export interface HostSetup {
  /** The host as the local provider will find it. */
  report: HostReport;
  /** The packages that were installed (empty when none was). */
  installed: string[];
}

/** The environment of apt-get: no questions, messages in English (HOST4 reads them). */
const aptEnvironment = {
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  DEBIAN_FRONTEND: "noninteractive",
  LC_ALL: "C",
};
const installTimeoutMs = 15 * 60_000;
const updateTimeoutMs = 5 * 60_000;
/** What apt-get says when its package lists are missing, or too old to name what the mirror has. */
const listsMissing =
  /Unable to locate package|has no installation candidate|is not available, but is referred to|Failed to fetch|404\s+Not Found/i;
const tailBytes = 8 * 1024;
const tailLines = 12;

/**
 * Installs what the local provider lacks when it may (HOST1), and returns the host as it is then
 * (HOST5). Throws a RoostError when the install fails; otherwise leaves refusing to the caller
 * (chooseComputerProvider throws the report's message).
 */
export async function prepareHost(options: HostSetupOptions): Promise<HostSetup> {
  const detect = options.detect ?? (() => detectHost({ searchPath: options.searchPath }));
  const logger = options.logger ?? silentLogger;
  const report = await detect();
  const packages = report.missingPackages;
  // HOST1
  if (options.provider === "process" || report.localAvailable || !report.onlyPackagesMissing) {
    return { report, installed: [] };
  }
  if (!options.installSystemPackages) {
    return {
      report: {
        ...report,
        message: `${report.message} (ROOST_INSTALL_SYSTEM_PACKAGES=0 is set, so Roost did not install them itself.)`,
      },
      installed: [],
    };
  }
  if (!report.root || report.aptGet === undefined || report.platform !== "linux") {
    return { report, installed: [] };
  }

  const aptGet = report.aptGet;
  const command = `apt-get install -y ${packages.join(" ")}`;
  // HOST2
  options.notice(
    `roost: installing ${packages.join(" ")} for isolated computers (${command}); set ROOST_INSTALL_SYSTEM_PACKAGES=0 to do it yourself`,
  );
  const started = Date.now();
  const run = options.run ?? runPackageCommand;
  await mkdir(path.dirname(options.logFile), { recursive: true, mode: 0o700 });
  const step = async (args: string[], timeoutMs: number) => {
    const line = `apt-get ${args.join(" ")}`;
    await appendFile(options.logFile, `# ${new Date().toISOString()} ${line}\n`, { mode: 0o600 });
    let tail = "";
    let pending = "";
    let writes = Promise.resolve();
    const result = await run(aptGet, args, {
      env: aptEnvironment,
      timeoutMs,
      onOutput: (text) => {
        tail = (tail + text).slice(-tailBytes);
        // HOST3: in order, to the file; line by line, to the debug log.
        writes = writes.then(() => appendFile(options.logFile, text)).catch(() => undefined);
        const lines = (pending + text).split("\n");
        pending = lines.pop() ?? "";
        for (const entry of lines) if (entry.trim() !== "") logger.debug(`apt-get: ${entry}`);
      },
    });
    await writes;
    return { line, result, tail };
  };
  const install = () =>
    step(
      // Waits for another apt (unattended-upgrades on a new machine) instead of failing at once.
      ["install", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=120", ...packages],
      installTimeoutMs,
    );
  const succeeded = (outcome: Awaited<ReturnType<typeof step>>) =>
    outcome.result.exitCode === 0 && !outcome.result.timedOut;

  let outcome = await install();
  if (!succeeded(outcome) && listsMissing.test(outcome.tail)) {
    // HOST4
    logger.info("the package lists are missing or out of date; running apt-get update", {
      packages,
    });
    const update = await step(["update"], updateTimeoutMs);
    if (!succeeded(update)) throw installFailure(update, packages, command, options.logFile);
    outcome = await install();
  }
  if (!succeeded(outcome)) throw installFailure(outcome, packages, command, options.logFile);
  logger.info("installed system packages for isolated computers", {
    packages,
    ms: Date.now() - started,
    log: options.logFile,
  });
  return { report: await detect(), installed: packages }; // HOST5
}

function installFailure(
  outcome: { line: string; result: PackageCommandResult; tail: string },
  packages: readonly string[],
  command: string,
  logFile: string,
): RoostError {
  const { result } = outcome;
  const status = result.timedOut
    ? "was stopped: it ran too long"
    : result.signal !== null
      ? `was killed by ${result.signal}`
      : `exited with status ${result.exitCode}`;
  const last = outcome.tail
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== "")
    .slice(-tailLines);
  return new RoostError(
    "unavailable",
    [
      `installing ${packages.join(" ")} for isolated computers failed: \`${outcome.line}\` ${status}.`,
      ...(last.length > 0 ? ["Its last lines:", ...last.map((line) => `  ${line}`)] : []),
      `All of its output is in ${logFile}. Fix what it says and start Roost again, or install them yourself (${command}) and start with ROOST_INSTALL_SYSTEM_PACKAGES=0.`,
    ].join("\n"),
    { details: { packages: [...packages], exitCode: result.exitCode, logFile } },
  );
}

/** The real runner: a child process with no terminal, its output to `onOutput`, stopped at its time limit. */
export const runPackageCommand: PackageCommandRunner = (file, args, options) =>
  new Promise((resolve, reject) => {
    const child = spawn(file, [...args], {
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
    }, options.timeoutMs);
    const forward = (chunk: Buffer) => options.onOutput(chunk.toString("utf8"));
    child.stdout.on("data", forward);
    child.stderr.on("data", forward);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new RoostError("unavailable", `could not run ${file}: ${error.message}`));
    });
    child.once("close", (exitCode, signal) => {
      clearTimeout(timer);
      resolve({ exitCode, signal, timedOut });
    });
  });
