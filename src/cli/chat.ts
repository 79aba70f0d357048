/**
 * `roost chat`: send one message and stream the bot's answer (chat-turn.ts), or, without a
 * message on a terminal (or with --interactive), a multi-turn session (chat-session.ts).
 */
import {
  booleanOption,
  stringOption,
  UsageError,
  renderHelp,
  type Command,
  type CommandSpec,
  type ParsedArgs,
} from "./args.ts";
import { clientEnvironment, clientFor, clientOptions } from "./client-config.ts";
import { runSession } from "./chat-session.ts";
import { pickConversation, runTurn, turnExitCode } from "./chat-turn.ts";
import { readAll, type CliIo } from "./io.ts";

export { describeApprovalStep, describeInterrupted, describeToolStep } from "./chat-turn.ts";

const spec: CommandSpec = {
  name: "chat",
  summary: "Send a message to a bot and stream its answer, or chat interactively.",
  synopsis: "[options] [TEXT…]",
  description: [
    "Without --bot the account's first bot answers (one named `assistant` is created if there is none).",
    "The most recent conversation with the bot is continued unless --new or --conversation is given.",
    "Without TEXT on a terminal, an interactive session starts: each line is a message (↑/↓ for",
    "earlier lines; /new, /bot NAME, /help; Ctrl-D or Ctrl-C twice at the prompt quits).",
    "Without TEXT and with stdin piped, all of stdin is one message; with --interactive, each line",
    "of stdin is a message, sent when the previous reply is complete.",
    "Exits 1 when the bot's turn ends in an error (in a session: when any turn did).",
    "Ctrl-C while the bot works stops its turn (exit 130 once it stopped; in a session, back to the",
    "prompt); a second Ctrl-C quits at once.",
  ].join("\n"),
  options: {
    bot: { type: "string", short: "b", value: "NAME", description: "the bot to talk to (by name)" },
    conversation: {
      type: "string",
      short: "c",
      value: "ID",
      description: "continue this conversation",
    },
    new: { type: "boolean", short: "n", description: "start a new conversation" },
    interactive: {
      type: "boolean",
      short: "i",
      description: "a session: each line of stdin is a message (the default on a terminal)",
    },
    ...clientOptions,
  },
  positionals: { min: 0, max: Number.POSITIVE_INFINITY, names: "TEXT" },
  environment: [
    ...clientEnvironment,
    ["NO_COLOR", "set to print without colors"],
    [
      "ROOST_CHAT_HISTORY",
      "the session's history file (default $XDG_STATE_HOME/roost/chat-history, ~/.local/state/…); off to keep none",
    ],
  ],
  examples: [
    'roost chat "hello"',
    'roost chat --bot researcher --new "summarise today\'s notes"',
    "git diff | roost chat --bot reviewer",
    "roost chat --bot researcher",
    "printf 'hello\\nand then?\\n' | roost chat --interactive",
  ],
};

export const chatCommand: Command = { spec, run: chat };

async function chat(args: ParsedArgs, io: CliIo): Promise<number> {
  if (booleanOption(args, "new") && stringOption(args, "conversation") !== undefined) {
    throw new UsageError(
      "roost chat: use either --new or --conversation, not both",
      renderHelp(spec),
    );
  }
  if (booleanOption(args, "interactive") && args.positionals.length > 0) {
    throw new UsageError(
      "roost chat: --interactive reads the messages from stdin; give either TEXT or --interactive",
      renderHelp(spec),
    );
  }
  // Without TEXT: a session on a terminal (or when asked for); a piped stdin is one message.
  const interactive =
    args.positionals.length === 0 &&
    (booleanOption(args, "interactive") || io.stdin.isTTY === true);
  if (interactive) {
    const client = clientFor(args, io);
    const { bot, conversation } = await pickConversation(client, args, io);
    return runSession({ client, io, bot, conversation });
  }
  const text = await messageText(args, io);
  const client = clientFor(args, io);
  const { bot, conversation } = await pickConversation(client, args, io);
  const outcome = await runTurn({ client, io, bot, conversation, text });
  return turnExitCode(outcome, io);
}

async function messageText(args: ParsedArgs, io: CliIo): Promise<string> {
  if (args.positionals.length > 0) {
    const text = args.positionals.join(" ");
    if (text.trim() === "")
      throw new UsageError("roost chat: the message is empty", renderHelp(spec));
    return text;
  }
  const text = (await readAll(io.stdin)).replace(/\s+$/, "");
  if (text.trim() === "")
    throw new UsageError("roost chat: the message on stdin is empty", renderHelp(spec));
  return text;
}
