/**
 * `roost conversations list|show|rename|rm`: the account's conversations over the API
 * (docs/api.md "conversations"). `show` prints the timeline the way `roost chat` shows a turn.
 */
import {
  booleanOption,
  renderHelp,
  stringOption,
  table,
  UsageError,
  type Command,
  type CommandGroup,
} from "./args.ts";
import type { Api } from "../protocol/index.ts";
import { describeApprovalStep, describeInterrupted, describeToolStep } from "./chat-turn.ts";
import { ApiError, type RoostClient } from "./client.ts";
import { clientEnvironment, clientFor, clientOptions } from "./client-config.ts";
import { CliError, paint, readLine, type CliIo, type OutputStream } from "./io.ts";

const jsonOption = {
  json: { type: "boolean", description: "print JSON instead of text" },
} as const;

/** A 404 of a conversation route: missing, deleted, or another account's (the API does not say which). */
async function ownConversation<T>(id: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404)
      throw new CliError(
        `no conversation ${JSON.stringify(id)} in your account (see \`roost conversations list\` for the ids)`,
      );
    throw error;
  }
}

/** `5 min ago`, `3 h ago`, `2 d ago`, or the date for older ones. */
export function formatAge(iso: string, now = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  if (seconds < 30 * 86_400) return `${Math.floor(seconds / 86_400)} d ago`;
  return iso.slice(0, 10);
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

const listCommand: Command = {
  spec: {
    name: "conversations list",
    summary: "List the account's conversations, most recent first.",
    synopsis: "[options]",
    options: {
      bot: { type: "string", short: "b", value: "NAME", description: "only those with this bot" },
      limit: {
        type: "string",
        short: "n",
        value: "N",
        description: "at most N (1–500)",
        default: "50",
      },
      ...jsonOption,
      ...clientOptions,
    },
    positionals: { min: 0, max: 0, names: "" },
    environment: clientEnvironment,
  },
  async run(args, io) {
    const limitText = stringOption(args, "limit") ?? "50";
    const limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > 500)
      throw new UsageError(
        `roost conversations list: --limit must be a whole number from 1 to 500, got ${JSON.stringify(limitText)}`,
        renderHelp(listCommand.spec),
      );
    const client = clientFor(args, io);
    const bots = await client.listBots();
    const botName = stringOption(args, "bot");
    const bot = botName === undefined ? undefined : bots.find((each) => each.name === botName);
    if (botName !== undefined && bot === undefined)
      throw new CliError(
        `no bot named ${JSON.stringify(botName)} (your bots: ${bots.map((each) => each.name).join(", ") || "none"})`,
      );
    const conversations = await client.listConversations({
      ...(bot === undefined ? {} : { botId: bot.id }),
      limit,
    });
    if (booleanOption(args, "json")) {
      io.stdout.write(`${JSON.stringify(conversations, null, 2)}\n`);
      return 0;
    }
    if (conversations.length === 0) {
      io.stderr.write('no conversations yet (start one with `roost chat "hello"`)\n');
      return 0;
    }
    const names = new Map(bots.map((each) => [each.id, each.name]));
    const lines = table([
      ["ID", "BOT", "TITLE", "LAST ACTIVITY"],
      ...conversations.map((conversation) => [
        conversation.id,
        names.get(conversation.botId) ?? conversation.botId,
        oneLine(conversation.title, 50),
        `${formatAge(conversation.updatedAt)}${conversation.activity === undefined || conversation.activity === "idle" ? "" : ` (${conversation.activity.replace("_", " ")})`}`,
      ]),
    ]);
    lines.forEach((line, index) =>
      io.stdout.write(`${index === 0 ? paint(io, io.stdout, "bold", line) : line}\n`),
    );
    if (conversations.length === limit)
      io.stderr.write(`(the ${limit} most recent; there may be more: --limit takes up to 500)\n`);
    return 0;
  },
};

/** One step of the timeline as text, or undefined for steps that are not shown (summaries). */
export function renderStep(
  step: Api.Step,
  botName: string,
  calls: Map<string, Api.ToolCall>,
): string | undefined {
  switch (step.kind) {
    case "message": {
      const source = step.payload.source;
      const who =
        source === undefined || source.kind === "chat"
          ? "you"
          : source.kind === "bot"
            ? `bot ${source.fromBotId}`
            : source.kind;
      return `${who} › ${step.payload.text}`;
    }
    case "model":
      for (const call of step.payload.toolCalls) calls.set(call.id, call);
      return step.payload.text.trim() === "" ? undefined : `${botName} › ${step.payload.text}`;
    case "reply":
      return `${botName} › ${step.payload.text}${step.payload.model === "demo" ? " (demo model)" : ""}`;
    case "tool":
      return `⚙ ${describeToolStep(step.payload)}`;
    case "interrupted":
      return `⏹ ${describeInterrupted(step.payload, calls)}`;
    case "error":
      return `✗ error: ${step.payload.message} (${step.payload.code})`;
    case "no_reply":
      return `(no reply needed: ${step.payload.reason})`;
    case "budget_reached":
      return `⏸ ${step.payload.message}`;
    case "approval":
      return describeApprovalStep(step.payload);
    case "summary":
      return undefined;
    default: {
      const unknown: never = step;
      void unknown;
      return undefined;
    }
  }
}

/** Every step of the conversation, page by page (the API's `after` cursor), handed on as it comes. */
async function eachStep(
  client: RoostClient,
  conversationId: string,
  onStep: (step: Api.Step) => void,
): Promise<void> {
  let after = 0;
  for (;;) {
    const page = await client.listSteps(conversationId, { after, limit: 1000 });
    for (const step of page.steps) onStep(step);
    const last = page.steps.at(-1);
    if (last === undefined || last.seq >= page.lastSeq) return;
    after = last.seq;
  }
}

const showCommand: Command = {
  spec: {
    name: "conversations show",
    summary: "Print a conversation's timeline.",
    synopsis: "ID [options]",
    description:
      "Messages, replies, tool steps and stops, in order, as `roost chat` shows them. --json prints\n`{conversation, steps}` with every step as the API returns it.",
    options: { ...jsonOption, ...clientOptions },
    positionals: { min: 1, max: 1, names: "ID" },
    environment: clientEnvironment,
  },
  async run(args, io) {
    const id = args.positionals[0] ?? "";
    const client = clientFor(args, io);
    const conversation = await ownConversation(id, () => client.getConversation(id));
    const json = booleanOption(args, "json");
    if (json) {
      // Streamed step by step, so a long conversation is never held as one string.
      io.stdout.write(`{"conversation":${JSON.stringify(conversation)},"steps":[`);
      let first = true;
      await ownConversation(id, () =>
        eachStep(client, id, (step) => {
          io.stdout.write(`${first ? "" : ","}\n${JSON.stringify(step)}`);
          first = false;
        }),
      );
      io.stdout.write("\n]}\n");
      return 0;
    }
    const bot = await client.getBot(conversation.botId).catch(() => undefined);
    const botName = bot?.name ?? "bot";
    const out: OutputStream = io.stdout;
    out.write(
      `${paint(io, out, "bold", conversation.title)} ${paint(io, out, "dim", `(${conversation.id}, with ${botName})`)}\n`,
    );
    const calls = new Map<string, Api.ToolCall>();
    await ownConversation(id, () =>
      eachStep(client, id, (step) => {
        const text = renderStep(step, botName, calls);
        if (text === undefined) return;
        const styled =
          step.kind === "message" || step.kind === "reply" || step.kind === "model"
            ? text
            : paint(io, out, step.kind === "error" ? "red" : "dim", text);
        out.write(`${styled}\n`);
      }),
    );
    return 0;
  },
};

const renameCommand: Command = {
  spec: {
    name: "conversations rename",
    summary: "Rename a conversation.",
    synopsis: "ID TITLE… [options]",
    options: { ...jsonOption, ...clientOptions },
    positionals: { min: 2, max: Number.POSITIVE_INFINITY, names: "ID and TITLE" },
    environment: clientEnvironment,
  },
  async run(args, io) {
    const [id = "", ...words] = args.positionals;
    const title = words.join(" ");
    if (title.trim() === "")
      throw new UsageError(
        "roost conversations rename: the title is empty",
        renderHelp(renameCommand.spec),
      );
    const client = clientFor(args, io);
    const renamed = await ownConversation(id, () => client.renameConversation(id, title));
    if (booleanOption(args, "json")) io.stdout.write(`${JSON.stringify(renamed, null, 2)}\n`);
    else io.stdout.write(`renamed ${renamed.id} to ${JSON.stringify(renamed.title)}\n`);
    return 0;
  },
};

const rmCommand: Command = {
  spec: {
    name: "conversations rm",
    summary: "Delete a conversation with its messages and steps.",
    synopsis: "ID [options]",
    description:
      "Asks for confirmation on a terminal; with stdin not a terminal, --yes is required.",
    options: {
      yes: { type: "boolean", short: "y", description: "delete without asking" },
      ...clientOptions,
    },
    positionals: { min: 1, max: 1, names: "ID" },
    environment: clientEnvironment,
  },
  async run(args, io) {
    const id = args.positionals[0] ?? "";
    const client = clientFor(args, io);
    const conversation = await ownConversation(id, () => client.getConversation(id));
    if (!booleanOption(args, "yes")) await confirm(io, conversation);
    await ownConversation(id, () => client.deleteConversation(id));
    io.stdout.write(`deleted ${conversation.id} (${JSON.stringify(conversation.title)})\n`);
    return 0;
  },
};

async function confirm(io: CliIo, conversation: Api.Conversation): Promise<void> {
  if (io.stdin.isTTY !== true)
    throw new CliError(
      `not deleting ${conversation.id} without confirmation: stdin is not a terminal, so pass --yes`,
      2,
    );
  io.stderr.write(
    `delete ${JSON.stringify(conversation.title)} (${conversation.id}, ${conversation.lastSeq} steps)? This cannot be undone. [y/N] `,
  );
  const answer = (await readLine(io.stdin))?.trim().toLowerCase();
  if (answer !== "y" && answer !== "yes") throw new CliError("not deleted", 1);
}

export const conversationsGroup: CommandGroup = {
  name: "conversations",
  summary: "List, show, rename and delete the account's conversations.",
  commands: [listCommand, showCommand, renameCommand, rmCommand],
  defaultCommand: "list",
};
