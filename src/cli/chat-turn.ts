/**
 * One turn of `roost chat`: send a message, follow the bot's turn and stream it to the terminal;
 * and choosing the bot and conversation. Used by the one-shot chat (chat.ts) and the interactive
 * session (chat-session.ts).
 *
 * Output: the bot's text goes to stdout as it is generated. Everything else (tool steps, notes,
 * the spinner) is decoration: on a terminal it is styled and interleaved with the text; when
 * stdout is not a terminal, stdout carries only the plain text and the decoration goes to stderr
 * (the spinner only ever draws on a terminal stderr).
 */
import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { booleanOption, stringOption, type ParsedArgs } from "./args.ts";
import type { Api } from "../protocol/index.ts";
import { ApiError, ConnectionError, type RoostClient } from "./client.ts";
import { followReply, type EndStep } from "../protocol/index.ts";
import {
  CliError,
  createSpinner,
  onInterrupt,
  paint,
  type CliIo,
  type OutputStream,
} from "./io.ts";
import { createLiveOutput } from "./live-output.ts";
import { createStopper } from "./stopper.ts";

const demoNote = "(demo model — configure a provider, see docs/models.md)";

/** How one turn ended: the step that ended it (and whether Ctrl-C asked for it), or the user quit. */
export type TurnOutcome = { end: "quit" } | { end: EndStep; requested: boolean };

/** The exit status of a one-shot chat for how its turn ended; prints what the text did not say. */
export function turnExitCode(outcome: TurnOutcome, io: CliIo): number {
  if (outcome.end === "quit") return 130;
  const end = outcome.end;
  switch (end.kind) {
    case "reply":
      return 0;
    case "no_reply":
      io.stderr.write(`(no reply needed: ${end.payload.reason})\n`);
      return 0;
    case "error":
      io.stderr.write(`roost: ${end.payload.message} (${end.payload.code})\n`);
      return 1;
    case "interrupted":
      // Stopped from here (Ctrl-C), or by the owner elsewhere (the web app's stop button).
      return outcome.requested ? 130 : 1;
  }
}

/**
 * Sends one message and follows the bot's turn to its end, streaming it to the terminal. Ctrl-C
 * stops the turn (stopper.ts); a second one quits (`{end: "quit"}`).
 */
export async function runTurn(options: {
  client: RoostClient;
  io: CliIo;
  bot: Api.Bot;
  conversation: Api.Conversation;
  text: string;
}): Promise<TurnOutcome> {
  const { client, io, bot, conversation, text } = options;
  const abort = new AbortController();
  const view = createChatView(io, bot.name);
  const stopper = createStopper({
    interrupt: () => client.interrupt(conversation.id),
    notice: (text) => view.notice(text),
  });
  const stopListening = onInterrupt(io, () => stopper.press());
  try {
    const end = await Promise.race([
      stopper.quit,
      (async () => {
        // Subscribe first, so no event of this turn can be missed; `hello` means the subscription exists.
        const events = await client.openEvents(conversation.id, abort.signal);
        const hello = await events.next();
        if (hello.done === true || hello.value.type !== "hello") {
          throw new CliError(
            `the events stream of conversation ${conversation.id} closed before it started; try again`,
          );
        }
        view.working();
        stopper.sending();
        const posted = await send(client, conversation.id, text);
        stopper.running();
        return followReply({
          events,
          reconnect: () => client.openEvents(conversation.id, abort.signal),
          listSteps: async (after, limit) =>
            (await client.listSteps(conversation.id, { after, limit })).steps,
          afterSeq: posted.seq,
          onDelta: (event) => (event.reset === true ? view.retrying() : view.delta(event.text)),
          onStep: (step) => view.step(step),
          onEvent: (event) => {
            if (event.type === "computer") view.computer(event.state);
            else view.toolOutput(event.callId, event.stream, event.data);
          },
          signal: abort.signal,
        });
      })(),
    ]);
    view.close();
    if (end === "quit") {
      io.stderr.write("\n");
      return { end: "quit" };
    }
    return { end, requested: stopper.requested };
  } finally {
    view.close();
    stopListening();
    stopper.close();
    abort.abort();
  }
}

/** Posts the message; a retry after a lost connection or a 5xx reuses its clientMessageId, so it is stored once. */
async function send(
  client: RoostClient,
  conversationId: string,
  text: string,
): Promise<Api.PostedMessage> {
  const clientMessageId = randomUUID();
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.postMessage(conversationId, { text, clientMessageId });
    } catch (error) {
      const retryable =
        error instanceof ConnectionError || (error instanceof ApiError && error.status >= 500);
      if (!retryable || attempt >= 3) throw error;
      await delay(250 * attempt);
    }
  }
}

export async function pickConversation(
  client: RoostClient,
  args: ParsedArgs,
  io: CliIo,
): Promise<{ bot: Api.Bot; conversation: Api.Conversation }> {
  const botName = stringOption(args, "bot");
  const conversationId = stringOption(args, "conversation");
  if (conversationId !== undefined) {
    const conversation = await client.getConversation(conversationId);
    const bot = await client.getBot(conversation.botId);
    if (botName !== undefined && bot.name !== botName) {
      throw new CliError(
        `conversation ${conversationId} is with bot "${bot.name}", not "${botName}" (drop --bot or pick another conversation)`,
        2,
      );
    }
    return { bot, conversation };
  }
  const bot = await pickBot(client, botName, io);
  const latest = booleanOption(args, "new")
    ? undefined
    : (await client.listConversations({ botId: bot.id, limit: 1 }))[0];
  return { bot, conversation: latest ?? (await client.createConversation({ botId: bot.id })) };
}

export async function pickBot(
  client: RoostClient,
  name: string | undefined,
  io: CliIo,
): Promise<Api.Bot> {
  const bots = await client.listBots();
  if (name !== undefined) {
    const bot = bots.find((candidate) => candidate.name === name);
    if (bot !== undefined) return bot;
    const known =
      bots.length === 0
        ? "you have no bots yet"
        : `your bots: ${bots.map((candidate) => candidate.name).join(", ")}`;
    throw new CliError(
      `no bot named "${name}" (${known}; create it with \`roost bots create ${name}\`)`,
    );
  }
  const first = bots[0];
  if (first !== undefined) return first;
  try {
    const created = await client.createBot({ name: "assistant" });
    io.stderr.write(
      `${paint(io, io.stderr, "dim", `roost: you had no bots, so I created one named "assistant" (model ${created.effectiveModel})`)}\n`,
    );
    return created;
  } catch (error) {
    // Another client created it at the same moment.
    if (error instanceof ApiError && error.code === "conflict") {
      const again = (await client.listBots()).find((candidate) => candidate.name === "assistant");
      if (again !== undefined) return again;
    }
    throw error;
  }
}

interface ChatView {
  /** The bot is working: show the spinner if nothing is being written. */
  working(): void;
  delta(text: string): void;
  /** The model call is being retried: what was streamed belongs to the failed attempt. */
  retrying(): void;
  step(step: Api.Step): void;
  /** The computer changed state: say so in the spinner while it is not awake. */
  computer(state: Api.ComputerState): void;
  /** Output of a running computer tool, as it streams (shown dimmed, line by line, capped). */
  toolOutput(callId: string, stream: "stdout" | "stderr", data: string): void;
  /** A note of the chat itself (Ctrl-C), shown like the decoration. */
  notice(text: string): void;
  close(): void;
}

function createChatView(io: CliIo, botName: string): ChatView {
  const out = io.stdout;
  const side: OutputStream = io.stdout.isTTY === true ? io.stdout : io.stderr;
  const spinner = createSpinner(io, io.stderr);
  let atLineStart = true;
  /** Text streamed since the last model or reply step (to print only what the deltas missed). */
  let streamed = "";
  let demoNoted = false;
  let computerNote = "";
  const live = createLiveOutput();
  /** Tool calls of this turn by id, to name them when the turn is stopped. */
  const calls = new Map<string, Api.ToolCall>();
  /** Calls that streamed output and have no result yet. */
  const streaming = new Set<string>();

  const write = (text: string) => {
    if (text === "") return;
    spinner.stop();
    out.write(text);
    atLineStart = text.endsWith("\n");
  };
  const endLine = () => {
    if (!atLineStart) write("\n");
  };
  const note = (text: string) => {
    spinner.stop();
    if (side === out) endLine();
    side.write(`${text}\n`);
  };
  const outputLines = (lines: string[]) => {
    for (const line of lines) note(paint(io, side, "dim", `  │ ${line}`));
  };
  const working = () => {
    const capped = [...streaming].some((callId) => live.capped(callId));
    const label = `${botName} is working…${computerNote}${capped ? " (output continues)" : ""}`;
    // The spinner shares the terminal with the text: it only draws at the start of a line.
    if (out.isTTY !== true || atLineStart) spinner.start(label);
  };

  return {
    working,
    delta(text) {
      streamed += text;
      write(text);
    },
    retrying() {
      if (streamed !== "") {
        endLine();
        note(paint(io, side, "dim", "(the model call failed part-way; retrying)"));
      }
      streamed = "";
      working();
    },
    step(step) {
      switch (step.kind) {
        case "model":
        case "reply": {
          const text = step.payload.text;
          // Deltas are hints: print whatever part of the text they did not deliver.
          if (text.startsWith(streamed)) write(text.slice(streamed.length));
          streamed = "";
          endLine();
          if (step.kind === "model") {
            for (const call of step.payload.toolCalls) calls.set(call.id, call);
          } else if (step.payload.model === "demo" && !demoNoted) {
            demoNoted = true;
            note(paint(io, side, "dim", demoNote));
          }
          break;
        }
        case "tool":
          streaming.delete(step.payload.callId);
          outputLines(live.finish(step.payload));
          note(paint(io, side, "dim", `⚙ ${describeToolStep(step.payload)}`));
          break;
        case "interrupted": {
          endLine();
          for (const callId of streaming) outputLines(live.abandon(callId));
          streaming.clear();
          note(paint(io, side, "yellow", `⏹ ${describeInterrupted(step.payload, calls)}`));
          break;
        }
        case "error":
          endLine();
          break;
        case "budget_reached":
          // The turn is parked, not over: it goes on when the budget is raised (docs/usage.md).
          endLine();
          note(paint(io, side, "yellow", `⏸ ${step.payload.message}`));
          break;
        case "approval":
          // The turn waits for the owner (docs/approvals.md): `roost approvals` answers it.
          endLine();
          note(paint(io, side, "yellow", describeApprovalStep(step.payload)));
          break;
        case "message":
        case "summary":
        case "no_reply":
          // A summary is for the model's prompt; the transcript keeps every message. A turn
          // that needed no reply is said when the chat ends.
          break;
        default: {
          const unknown: never = step;
          void unknown;
        }
      }
      if (
        step.kind !== "reply" &&
        step.kind !== "error" &&
        step.kind !== "interrupted" &&
        step.kind !== "summary" &&
        step.kind !== "no_reply" &&
        step.kind !== "budget_reached" &&
        step.kind !== "approval"
      )
        working();
    },
    toolOutput(callId, stream, data) {
      streaming.add(callId);
      outputLines(live.push(callId, stream, data));
      working();
    },
    computer(state) {
      computerNote = state === "awake" || state === "connected" ? "" : ` (computer ${state})`;
      working();
    },
    notice(text) {
      endLine();
      note(paint(io, side, "dim", text));
    },
    close() {
      spinner.stop();
      if (out.isTTY === true) endLine();
    },
  };
}

/** `stopped by you (cancelled shell: sleep 60)`: what an `interrupted` step stopped, in one line. */
export function describeInterrupted(
  payload: Api.InterruptedPayload,
  calls: ReadonlyMap<string, Api.ToolCall> = new Map(),
): string {
  const tools = payload.stopped.flatMap((stopped) => {
    if (stopped.kind !== "tool") return [];
    const call = calls.get(stopped.callId);
    const argument = call === undefined ? undefined : mainArgument(call.input);
    return [argument === undefined ? stopped.name : `${stopped.name}: ${oneLine(argument, 60)}`];
  });
  return tools.length === 0 ? "stopped by you" : `stopped by you (cancelled ${tools.join(", ")})`;
}

/** `shell: echo hi → exit 0`: a tool step in one line. */
export function describeToolStep(payload: Api.ToolPayload): string {
  const argument = oneLine(mainArgument(payload.input) ?? JSON.stringify(payload.input) ?? "", 80);
  const exitCode = payload.details.exitCode;
  let outcome: string;
  if (typeof exitCode === "number") outcome = `exit ${exitCode}`;
  else if (payload.isError) outcome = `error: ${oneLine(payload.output, 60)}`;
  else outcome = "ok";
  return `${payload.name}: ${argument} → ${outcome}`;
}

/** The argument that says what a tool call does: its command, path, URL or query. */
function mainArgument(input: unknown): string | undefined {
  if (typeof input !== "object" || input === null) return undefined;
  const fields = input as Record<string, unknown>;
  for (const key of ["command", "path", "url", "query"]) {
    const value = fields[key];
    if (typeof value === "string") return value;
  }
  return undefined;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** One line for an approval step: waiting (with how to answer) or how it was settled. */
export function describeApprovalStep(payload: Api.ApprovalPayload): string {
  if (payload.state === "pending")
    return `⏸ ${payload.tool} needs approval: ${payload.reason}. Answer with \`roost approvals approve ${payload.approvalId}\` or \`roost approvals deny ${payload.approvalId}\`.`;
  return `${payload.state === "approved" ? "✓" : "✗"} ${payload.tool}: ${payload.state}`;
}
