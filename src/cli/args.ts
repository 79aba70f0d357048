/**
 * Command specs, argument parsing (node:util parseArgs, strict) and help text. A spec is the one
 * description of a command: the parser, `--help` and usage errors are all derived from it, so
 * they cannot disagree.
 */
import { parseArgs } from "node:util";
import type { CliIo } from "./io.ts";

export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  /** Placeholder for the value in help, e.g. `NAME`. */
  value?: string;
  description: string;
  /** Environment variable that sets the same thing (shown in help). */
  env?: string;
  /** Default shown in help. */
  default?: string;
}

export interface CommandSpec {
  /** Words after `roost`, e.g. `bots create`. */
  name: string;
  summary: string;
  /** What follows the name in the usage line, e.g. `NAME [options]`. */
  synopsis: string;
  description?: string;
  options: Record<string, OptionSpec>;
  positionals: { min: number; max: number; names: string };
  /** Environment variables read by the command, beyond those tied to an option. */
  environment?: [name: string, description: string][];
  examples?: string[];
}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface ParsedArgs {
  values: OptionValues;
  positionals: string[];
}

export interface Command {
  spec: CommandSpec;
  run(args: ParsedArgs, io: CliIo): Promise<number>;
}

/** A group of subcommands, e.g. `roost bots list|create`. */
export interface CommandGroup {
  name: string;
  summary: string;
  commands: Command[];
  /** Run when the group is given no command, or only options (`roost approvals`). */
  defaultCommand?: string;
}

/** Bad command line: printed with the usage, exit status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  /** Help text printed after the message. */
  readonly usage: string;
  constructor(message: string, usage: string) {
    super(message);
    this.usage = usage;
  }
}

export const helpOption: OptionSpec = {
  type: "boolean",
  short: "h",
  description: "show this help",
};

/** True when `-h` or `--help` appears before a `--` terminator. */
export function wantsHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === "--") return false;
    if (arg === "-h" || arg === "--help") return true;
  }
  return false;
}

export function parseCommand(spec: CommandSpec, args: string[]): ParsedArgs {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {};
  for (const [name, option] of Object.entries({ ...spec.options, help: helpOption })) {
    options[name] =
      option.short === undefined
        ? { type: option.type }
        : { type: option.type, short: option.short };
  }
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args,
      options,
      strict: true,
      allowPositionals: true,
      allowNegative: false,
    });
  } catch (error) {
    throw new UsageError(`roost ${spec.name}: ${describeParseError(error)}`, renderHelp(spec));
  }
  const values: OptionValues = {};
  for (const [name, value] of Object.entries(parsed.values)) {
    if (typeof value === "string" || typeof value === "boolean") values[name] = value;
  }
  const count = parsed.positionals.length;
  if (count < spec.positionals.min) {
    throw new UsageError(`roost ${spec.name}: missing ${spec.positionals.names}`, renderHelp(spec));
  }
  if (count > spec.positionals.max) {
    const extra = parsed.positionals
      .slice(spec.positionals.max)
      .map((value) => JSON.stringify(value))
      .join(" ");
    throw new UsageError(
      `roost ${spec.name}: unexpected argument${count - spec.positionals.max > 1 ? "s" : ""} ${extra}${spec.positionals.max > 0 ? " (quote text that contains spaces)" : ""}`,
      renderHelp(spec),
    );
  }
  return { values, positionals: parsed.positionals };
}

function describeParseError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  // Node quotes the option, sometimes with its short form and a placeholder: '-b, --bot <value>'.
  const quoted = /'([^']+)'/.exec(message)?.[1] ?? "";
  const option = (/--[\w-]+/.exec(quoted) ?? /-[\w-]+/.exec(quoted))?.[0];
  if (option !== undefined) {
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown option ${option}`;
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && message.includes("argument missing"))
      return `option ${option} needs a value`;
    if (
      code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" &&
      message.includes("does not take an argument")
    )
      return `option ${option} takes no value`;
  }
  return message;
}

/** Reads a string option, or undefined. */
export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const value = args.values[name];
  return typeof value === "string" ? value : undefined;
}

export function booleanOption(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true;
}

export function renderHelp(spec: CommandSpec): string {
  const lines: string[] = [
    `Usage: roost ${spec.name} ${spec.synopsis}`.trimEnd(),
    "",
    spec.summary,
  ];
  if (spec.description !== undefined) lines.push("", ...spec.description.split("\n"));
  const rows = Object.entries({ ...spec.options, help: helpOption }).map(([name, option]) => {
    const flag = `${option.short === undefined ? "    " : `-${option.short}, `}--${name}${option.value === undefined ? "" : ` ${option.value}`}`;
    const extras = [
      option.env,
      option.default === undefined ? undefined : `default ${option.default}`,
    ].filter((extra) => extra !== undefined);
    return [
      flag,
      `${option.description}${extras.length > 0 ? ` [${extras.join(", ")}]` : ""}`,
    ] as const;
  });
  lines.push("", "Options:", ...table(rows, "  "));
  // Variables tied to an option are shown in its [brackets]; this section lists the others.
  const environment = spec.environment ?? [];
  if (environment.length > 0) {
    const tied = Object.values(spec.options).some((option) => option.env !== undefined);
    lines.push(
      "",
      tied ? "Environment (besides the variables in [brackets] above):" : "Environment:",
      ...table(environment, "  "),
    );
  }
  if (spec.examples !== undefined && spec.examples.length > 0)
    lines.push("", "Examples:", ...spec.examples.map((example) => `  ${example}`));
  return `${lines.join("\n")}\n`;
}

export function renderGroupHelp(group: CommandGroup): string {
  const lines = [
    `Usage: roost ${group.name} <command> [options]`,
    "",
    group.summary,
    "",
    "Commands:",
    ...table(
      group.commands.map(
        (command) =>
          [
            `roost ${command.spec.name} ${command.spec.synopsis}`.trimEnd(),
            command.spec.summary,
          ] as const,
      ),
      "  ",
    ),
    "",
    `Run \`roost ${group.name} <command> --help\` for a command's options.`,
  ];
  return `${lines.join("\n")}\n`;
}

/** Aligned columns; the last one is not padded. */
export function table(rows: readonly (readonly string[])[], indent = ""): string[] {
  const widths: number[] = [];
  for (const row of rows)
    row.forEach((cell, index) => (widths[index] = Math.max(widths[index] ?? 0, cell.length)));
  return rows.map((row) =>
    `${indent}${row.map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0))).join("  ")}`.trimEnd(),
  );
}
