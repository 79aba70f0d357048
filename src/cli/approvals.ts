/** `roost approvals [list]`, `roost approvals approve ID`, `roost approvals deny ID` (docs/approvals.md). */
import { booleanOption, stringOption, table, type Command, type CommandGroup } from "./args.ts";
import type { Api } from "../protocol/index.ts";
import { clientEnvironment, clientFor, clientOptions } from "./client-config.ts";
import { paint } from "./io.ts";

const jsonOption = {
  json: { type: "boolean", description: "print JSON instead of text" },
} as const;

const states: readonly Api.ApprovalState[] = ["pending", "approved", "denied", "expired"];

/** What a call asks to do, in one line: the shell command, the path, or the input as JSON. */
export function describeCall(approval: Pick<Api.Approval, "tool" | "input">): string {
  const input = approval.input as Record<string, unknown> | null;
  const field = input?.command ?? input?.path ?? input?.url;
  const text = typeof field === "string" ? field : JSON.stringify(approval.input);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

const listCommand: Command = {
  spec: {
    name: "approvals list",
    summary: "List tool calls waiting for your approval (or settled ones).",
    synopsis: "[options]",
    options: {
      state: {
        type: "string",
        value: "STATE",
        description: "pending (the default), approved, denied, expired, or all",
      },
      ...jsonOption,
      ...clientOptions,
    },
    positionals: { min: 0, max: 0, names: "" },
    environment: clientEnvironment,
  },
  async run(args, io) {
    const state = stringOption(args, "state") ?? "pending";
    if (state !== "all" && !states.includes(state as Api.ApprovalState)) {
      io.stderr.write(`--state must be one of ${states.join(", ")} or all\n`);
      return 2;
    }
    const approvals = await clientFor(args, io).listApprovals(
      state === "all" ? undefined : (state as Api.ApprovalState),
    );
    if (booleanOption(args, "json")) {
      io.stdout.write(`${JSON.stringify(approvals, null, 2)}\n`);
      return 0;
    }
    if (approvals.length === 0) {
      io.stderr.write(state === "pending" ? "nothing waits for your approval\n" : "none\n");
      return 0;
    }
    const lines = table([
      ["ID", "STATE", "TOOL", "CALL", "WHY", "EXPIRES"],
      ...approvals.map((approval) => [
        approval.id,
        approval.state,
        approval.tool,
        describeCall(approval),
        approval.review === null
          ? approval.reason
          : `${approval.reason} [review: ${approval.review.decision}]`,
        approval.state === "pending" ? approval.expiresAt : "",
      ]),
    ]);
    lines.forEach((line, index) =>
      io.stdout.write(`${index === 0 ? paint(io, io.stdout, "bold", line) : line}\n`),
    );
    return 0;
  },
};

function decisionCommand(decision: "approve" | "deny"): Command {
  return {
    spec: {
      name: `approvals ${decision}`,
      summary:
        decision === "approve"
          ? "Let a waiting tool call run."
          : "Refuse a waiting tool call (the bot is told).",
      synopsis: "ID [options]",
      options: {
        remember: {
          type: "string",
          value: "PATTERN",
          description: `also add a rule to the bot's policy that ${decision === "approve" ? "allows" : "denies"} calls of this tool matching PATTERN`,
        },
        ...jsonOption,
        ...clientOptions,
      },
      positionals: { min: 1, max: 1, names: "ID" },
      environment: clientEnvironment,
      examples: [`roost approvals ${decision} apr_0123 --remember "git push origin *"`],
    },
    async run(args, io) {
      const remember = stringOption(args, "remember");
      const approval = await clientFor(args, io).decideApproval(args.positionals[0] ?? "", {
        decision,
        ...(remember === undefined ? {} : { remember }),
      });
      if (booleanOption(args, "json")) io.stdout.write(`${JSON.stringify(approval, null, 2)}\n`);
      else
        io.stdout.write(
          `${approval.state} ${approval.tool}: ${describeCall(approval)}${approval.remembered === null ? "" : ` (remembered "${approval.remembered}")`}\n`,
        );
      return 0;
    },
  };
}

export const approvalsGroup: CommandGroup = {
  name: "approvals",
  summary: "Answer the tool calls your bots wait to make (alone: list the waiting ones).",
  defaultCommand: "list",
  commands: [listCommand, decisionCommand("approve"), decisionCommand("deny")],
};
