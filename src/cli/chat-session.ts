/**
 * `roost chat` without a message: an interactive session. Each line is a message, sent when the
 * previous reply is complete and streamed like a one-shot chat (chat-turn.ts); lines starting
 * with `/` are the session's own commands.
 *
 * Invariants:
 *   SES1 one turn at a time: the next line is read only after the previous turn ended, so a
 *        piped stdin sends its lines one by one, each after the reply to the one before.
 *   SES2 a stdin that ends (Ctrl-D, or the end of a pipe) ends the session only after the turn
 *        it sent is complete: its reply is never cut off.
 *   SES3 Ctrl-C during a turn stops the turn (stopper.ts) and the session goes on; a second
 *        Ctrl-C during it quits (exit 130). At the prompt, Ctrl-C clears the line, and a second
 *        one in a row quits.
 *   SES4 the terminal is in readline's raw mode only while the prompt is shown; during a turn the
 *        terminal's Ctrl-C is the process's SIGINT, which the turn's stopper listens to.
 *   SES5 the history file is written only by a terminal session, with mode 0600 (it holds what
 *        was said), and keeps the last `historyLimit` lines.
 */
import { appendFileSync, chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import type { Api } from "../protocol/index.ts";
import { ApiError, ConnectionError, type RoostClient } from "./client.ts";
import { pickBot, runTurn } from "./chat-turn.ts";
import { CliError, paint, type CliIo, type InputStream, type OutputStream } from "./io.ts";

/** What one line of the session asks for. */
export type SessionLine =
  | { kind: "message"; text: string }
  | { kind: "empty" }
  | { kind: "new" }
  | { kind: "bot"; name: string }
  | { kind: "help" }
  | { kind: "quit" }
  | { kind: "invalid"; message: string };

export const sessionHelp = [
  "/new          start a new conversation with this bot",
  "/bot NAME     switch to the bot NAME (a new conversation with it)",
  "/help         show this help",
  "/quit         end the session (or Ctrl-D)",
  "Ctrl-C stops the bot's turn; at the prompt, Ctrl-C twice quits. ↑/↓ go through earlier lines.",
  "A line starting with // sends a message that starts with /.",
].join("\n");

export function parseSessionLine(line: string): SessionLine {
  const text = line.replace(/\r$/, "");
  if (text.trim() === "") return { kind: "empty" };
  if (text.startsWith("//")) return { kind: "message", text: text.slice(1) };
  if (!text.startsWith("/")) return { kind: "message", text };
  const [command = "", ...rest] = text.trim().split(/\s+/);
  switch (command) {
    case "/new":
      return rest.length === 0
        ? { kind: "new" }
        : { kind: "invalid", message: "/new takes no argument" };
    case "/bot":
      return rest.length === 1 && rest[0] !== undefined
        ? { kind: "bot", name: rest[0] }
        : { kind: "invalid", message: "usage: /bot NAME (one bot name, see `roost bots list`)" };
    case "/help":
    case "/?":
      return { kind: "help" };
    case "/quit":
    case "/exit":
      return { kind: "quit" };
    default:
      return {
        kind: "invalid",
        message: `unknown command ${command} (/help lists them; start with // to send a message that starts with /)`,
      };
  }
}

/** Where the session's lines come from: the terminal (readline) or a pipe. */
interface LineSource {
  /** The next line, or undefined when input ended (Ctrl-D, the end of a pipe, Ctrl-C twice). */
  next(): Promise<string | undefined>;
  close(): void;
}

/** SES1: lines of a non-terminal stdin, read lazily, one per call. */
function createPipedLines(input: InputStream): LineSource {
  const iterator = input[Symbol.asyncIterator]();
  const decoder = new TextDecoder();
  let buffer = "";
  let ended = false;
  return {
    async next() {
      for (;;) {
        const newline = buffer.indexOf("\n");
        if (newline >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          return line;
        }
        if (ended) {
          if (buffer === "") return undefined;
          const line = buffer;
          buffer = "";
          return line;
        }
        const chunk = await iterator.next();
        if (chunk.done === true) {
          ended = true;
          buffer += decoder.decode();
        } else {
          const value: string | Uint8Array = chunk.value;
          buffer += typeof value === "string" ? value : decoder.decode(value, { stream: true });
        }
      }
    },
    close() {
      void iterator.return?.();
    },
  };
}

export const historyLimit = 1000;

/** The history file: ROOST_CHAT_HISTORY, else $XDG_STATE_HOME/roost/chat-history; undefined for none. */
export function historyPath(env: Record<string, string | undefined>): string | undefined {
  const configured = env.ROOST_CHAT_HISTORY;
  if (configured === "off") return undefined;
  if (configured !== undefined && configured !== "") return configured;
  const state =
    env.XDG_STATE_HOME !== undefined && env.XDG_STATE_HOME !== ""
      ? env.XDG_STATE_HOME
      : env.HOME !== undefined && env.HOME !== ""
        ? join(env.HOME, ".local", "state")
        : undefined;
  return state === undefined ? undefined : join(state, "roost", "chat-history");
}

/** Earlier lines, newest first (readline's order); an unreadable file is no history. */
export function loadHistory(path: string | undefined): string[] {
  if (path === undefined) return [];
  try {
    return (
      readFileSync(path, "utf8")
        .split("\n")
        .filter((line) => line !== "")
        // A line said twice in a row is one step back, as in the session that said it.
        .filter((line, index, lines) => line !== lines[index - 1])
        .slice(-historyLimit)
        .reverse()
    );
  } catch {
    return [];
  }
}

/** SES5: appends one line; rewrites the file with the last lines once it is twice the limit. */
export function appendHistory(path: string | undefined, line: string): void {
  if (path === undefined || line.includes("\n")) return;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    appendFileSync(path, `${line}\n`, { mode: 0o600 });
    chmodSync(path, 0o600);
    const lines = readFileSync(path, "utf8").split("\n").filter(Boolean);
    if (lines.length > 2 * historyLimit)
      writeFileSync(path, `${lines.slice(-historyLimit).join("\n")}\n`, { mode: 0o600 });
  } catch {
    // History is a convenience: a read-only home must not break the chat.
  }
}

interface TerminalStreams {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

function terminalStreams(io: CliIo): TerminalStreams | undefined {
  const input = io.stdin as unknown as Partial<NodeJS.ReadableStream>;
  const output = io.stdout as unknown as Partial<NodeJS.WritableStream>;
  if (io.stdin.isTTY !== true || io.stdout.isTTY !== true) return undefined;
  if (typeof input.on !== "function" || typeof output.on !== "function") return undefined;
  return { input: input as NodeJS.ReadableStream, output: output as NodeJS.WritableStream };
}

/** SES3, SES4: a readline prompt per line, closed again before the turn runs. */
function createTerminalLines(
  streams: TerminalStreams,
  prompt: () => string,
  notice: (text: string) => void,
  history: { path: string | undefined; lines: string[] },
): LineSource {
  let current: ReturnType<typeof createInterface> | undefined;
  return {
    next() {
      return new Promise((resolve) => {
        const rl = createInterface({
          input: streams.input,
          output: streams.output,
          terminal: true,
          history: history.lines,
          historySize: historyLimit,
          removeHistoryDuplicates: true,
        });
        current = rl;
        let settled = false;
        let interrupts = 0;
        const finish = (line: string | undefined) => {
          if (settled) return;
          settled = true;
          rl.close();
          current = undefined;
          resolve(line);
        };
        rl.on("line", (line) => {
          if (line.trim() !== "") {
            // readline keeps `history` newest first and already holds this line.
            history.lines = [...(rl as unknown as { history: string[] }).history];
            appendHistory(history.path, line);
          }
          finish(line);
        });
        rl.on("SIGINT", () => {
          interrupts++;
          if (interrupts >= 2 && rl.line === "") {
            streams.output.write("\n");
            finish(undefined);
            return;
          }
          if (rl.line !== "") interrupts = 1;
          streams.output.write("\n");
          notice("(Ctrl-C again or Ctrl-D to quit)");
          rl.write(null, { ctrl: true, name: "u" });
          rl.prompt();
        });
        rl.on("close", () => {
          if (!settled) streams.output.write("\n");
          finish(undefined);
        });
        rl.setPrompt(prompt());
        rl.prompt();
      });
    },
    close() {
      current?.close();
    },
  };
}

/** Runs the session until input ends or the user quits; 1 when any turn failed, 130 on a quit mid-turn. */
export async function runSession(options: {
  client: RoostClient;
  io: CliIo;
  bot: Api.Bot;
  conversation: Api.Conversation;
}): Promise<number> {
  const { client, io } = options;
  let { bot, conversation } = options;
  const side: OutputStream = io.stdout.isTTY === true ? io.stdout : io.stderr;
  const note = (text: string) => side.write(`${paint(io, side, "dim", text)}\n`);
  const streams = terminalStreams(io);
  const source =
    streams === undefined
      ? createPipedLines(io.stdin)
      : createTerminalLines(
          streams,
          () => `${paint(io, io.stdout, "bold", "you ›")} `,
          note,
          (() => {
            const path = historyPath(io.env);
            return { path, lines: loadHistory(path) };
          })(),
        );
  const where = () => `${bot.name}, conversation "${conversation.title}" (${conversation.id})`;
  note(`chatting with ${where()}; /help for commands`);
  let failed = false;
  try {
    for (;;) {
      const line = await source.next(); // SES1, SES2
      if (line === undefined) return failed ? 1 : 0;
      const parsed = parseSessionLine(line);
      try {
        switch (parsed.kind) {
          case "empty":
            break;
          case "help":
            side.write(`${sessionHelp}\n`);
            break;
          case "quit":
            return failed ? 1 : 0;
          case "invalid":
            note(parsed.message);
            break;
          case "new":
            conversation = await client.createConversation({ botId: bot.id });
            note(`new conversation with ${where()}`);
            break;
          case "bot":
            bot = await pickBot(client, parsed.name, io);
            conversation = await client.createConversation({ botId: bot.id });
            note(`now chatting with ${where()}`);
            break;
          case "message": {
            const outcome = await runTurn({ client, io, bot, conversation, text: parsed.text });
            if (outcome.end === "quit") return 130; // SES3
            const end = outcome.end;
            if (end.kind === "error") {
              failed = true;
              io.stderr.write(`roost: ${end.payload.message} (${end.payload.code})\n`);
            } else if (end.kind === "no_reply") {
              note(`(no reply needed: ${end.payload.reason})`);
            }
            break;
          }
          default: {
            const unknown: never = parsed;
            void unknown;
          }
        }
      } catch (error) {
        // A failed command or send is reported and the session goes on (an unknown bot, a
        // conversation deleted elsewhere, Roost restarting).
        if (
          !(error instanceof CliError) &&
          !(error instanceof ApiError) &&
          !(error instanceof ConnectionError)
        )
          throw error;
        failed = true;
        io.stderr.write(
          `roost: ${error.message}${error instanceof ApiError ? ` (${error.code})` : ""}\n`,
        );
        // Deleted elsewhere (the web app, `roost conversations rm`) while the session was open.
        if (error instanceof ApiError && error.status === 404 && parsed.kind === "message")
          note(`(conversation ${conversation.id} is gone; /new starts another)`);
      }
    }
  } finally {
    source.close();
  }
}
