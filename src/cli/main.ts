/**
 * The `roost` command: dispatch to the commands, print usage and errors, set the exit status
 * (0 done, 1 failed, 2 bad command line). Commands other than `up` talk to Roost only over its
 * HTTP API (client.ts).
 */
import { readFileSync } from "node:fs";
import { isRoostError } from "../errors/index.ts";
import { accountsGroup } from "./accounts.ts";
import {
  parseCommand,
  renderGroupHelp,
  renderHelp,
  table,
  UsageError,
  wantsHelp,
  type Command,
  type CommandGroup,
} from "./args.ts";
import { approvalsGroup } from "./approvals.ts";
import { botsGroup } from "./bots.ts";
import { chatCommand } from "./chat.ts";
import { createCompletionCommand } from "./completion.ts";
import { conversationsGroup } from "./conversations.ts";
import { filesGroup } from "./files.ts";
import { ApiError, ConnectionError } from "./client.ts";
import { CliError, type CliIo } from "./io.ts";
import { tokenGroup } from "./token.ts";
import { serviceBalancerCommand } from "./service-balancer.ts";
import { computerHostCommand } from "./computer-host.ts";
import { upCommand } from "./up.ts";
import { workerCommand } from "./worker.ts";

export const entries: (Command | CommandGroup)[] = [
  upCommand,
  chatCommand,
  conversationsGroup,
  botsGroup,
  filesGroup,
  approvalsGroup,
  accountsGroup,
  tokenGroup,
  workerCommand,
  serviceBalancerCommand,
  computerHostCommand,
  createCompletionCommand(() => entries),
];

function isGroup(entry: Command | CommandGroup): entry is CommandGroup {
  return "commands" in entry;
}

function entryName(entry: Command | CommandGroup): string {
  return isGroup(entry) ? entry.name : entry.spec.name;
}

export function renderMainHelp(): string {
  const rows = entries.flatMap((entry) =>
    isGroup(entry)
      ? entry.commands.map(
          (command) =>
            [
              `roost ${command.spec.name} ${command.spec.synopsis}`.trimEnd(),
              command.spec.summary,
            ] as const,
        )
      : [
          [
            `roost ${entry.spec.name} ${entry.spec.synopsis}`.trimEnd(),
            entry.spec.summary,
          ] as const,
        ],
  );
  return [
    "Usage: roost <command> [options]",
    "",
    "Roost runs always-on AI agents. `roost up` starts it; the other commands talk to it over its HTTP API.",
    "",
    "Commands:",
    ...table(rows, "  "),
    "",
    "Options for every command: -h, --help. Commands that talk to Roost also take --url (ROOST_URL)",
    "and --token (ROOST_TOKEN; default: the token in $ROOST_DATA_DIR/admin-token, data dir .roost).",
    "Run `roost <command> --help` for a command's options and environment variables.",
    "",
  ].join("\n");
}

/** Runs the CLI with `argv` (without node and the script); resolves to the exit status. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    return report(error, io);
  }
}

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) throw new UsageError("roost: missing command", renderMainHelp());
  if (name === "-h" || name === "--help" || (name === "help" && rest.length === 0)) {
    io.stdout.write(renderMainHelp());
    return 0;
  }
  if (name === "help") return dispatch([...rest, "--help"], io);
  if (name === "-v" || name === "--version") {
    io.stdout.write(`roost ${version()}\n`);
    return 0;
  }
  const entry = entries.find((candidate) => entryName(candidate) === name);
  if (entry === undefined) {
    const hint = name.startsWith("-")
      ? `unknown option ${name}`
      : `unknown command ${JSON.stringify(name)}`;
    throw new UsageError(`roost: ${hint}`, renderMainHelp());
  }
  if (!isGroup(entry)) return runCommand(entry, rest, io);

  const [subName, ...subRest] = rest;
  const fallback = entry.commands.find(
    (candidate) => candidate.spec.name === `${entry.name} ${entry.defaultCommand ?? ""}`,
  );
  if (
    fallback !== undefined &&
    (subName === undefined || (subName.startsWith("-") && !wantsHelp([subName])))
  )
    return runCommand(fallback, rest, io);
  if (subName === undefined)
    throw new UsageError(`roost ${entry.name}: missing command`, renderGroupHelp(entry));
  if (subName === "-h" || subName === "--help") {
    io.stdout.write(renderGroupHelp(entry));
    return 0;
  }
  const command = entry.commands.find(
    (candidate) => candidate.spec.name === `${entry.name} ${subName}`,
  );
  if (command === undefined) {
    const hint = subName.startsWith("-")
      ? `unknown option ${subName}`
      : `unknown command ${JSON.stringify(subName)}`;
    throw new UsageError(`roost ${entry.name}: ${hint}`, renderGroupHelp(entry));
  }
  return runCommand(command, subRest, io);
}

async function runCommand(command: Command, args: string[], io: CliIo): Promise<number> {
  if (wantsHelp(args)) {
    io.stdout.write(renderHelp(command.spec));
    return 0;
  }
  return command.run(parseCommand(command.spec, args), io);
}

function report(error: unknown, io: CliIo): number {
  if (error instanceof UsageError) {
    io.stderr.write(`${error.message}\n\n${error.usage}`);
    return 2;
  }
  if (error instanceof CliError) {
    io.stderr.write(`roost: ${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof ApiError || isRoostError(error)) {
    io.stderr.write(`roost: ${error.message} (${error.code})\n`);
    return 1;
  }
  if (error instanceof ConnectionError) {
    io.stderr.write(`roost: ${error.message}\n`);
    return 1;
  }
  io.stderr.write(
    `roost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return 1;
}

function version(): string {
  try {
    const pkg = JSON.parse(
      readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
    ) as { version?: unknown };
    return typeof pkg.version === "string" ? pkg.version : "unknown";
  } catch {
    return "unknown";
  }
}

if (import.meta.main) {
  process.exitCode = await runCli(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
  });
}
