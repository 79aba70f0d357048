/**
 * What a command may touch of the outside world, passed in so tests can run commands in-process:
 * the three standard streams, the environment (the CLI's own resolve step reads `env`, never
 * `process.env`) and Ctrl-C. Plus terminal styling and the spinner, which only ever draw on a TTY.
 */
import { styleText } from "node:util";

export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface InputStream extends AsyncIterable<string | Uint8Array> {
  isTTY?: boolean;
}

export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: InputStream;
  env: Record<string, string | undefined>;
  /**
   * Calls `listener` on each Ctrl-C until the returned function is called; while anyone listens,
   * Ctrl-C does not end the process. @default the process's SIGINT
   */
  onInterrupt?(listener: () => void): () => void;
}

/** Listens for Ctrl-C through `io.onInterrupt`, or the process's SIGINT. */
export function onInterrupt(io: CliIo, listener: () => void): () => void {
  if (io.onInterrupt !== undefined) return io.onInterrupt(listener);
  process.on("SIGINT", listener);
  return () => process.removeListener("SIGINT", listener);
}

/** A failure the user can act on: printed as `roost: <message>`, exit status 1. */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

export type Style = Parameters<typeof styleText>[0];

/** Styles `text` when `stream` is a terminal and NO_COLOR is unset; plain text otherwise. */
export function paint(io: CliIo, stream: OutputStream, format: Style, text: string): string {
  const colors = stream.isTTY === true && (io.env.NO_COLOR ?? "") === "" && io.env.TERM !== "dumb";
  return colors ? styleText(format, text, { validateStream: false }) : text;
}

export interface Spinner {
  start(label: string): void;
  /** Clears the spinner's line; safe to call when it is not running. */
  stop(): void;
}

const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** A one-line spinner on `stream`; does nothing unless `stream` is a terminal. */
export function createSpinner(io: CliIo, stream: OutputStream, intervalMs = 80): Spinner {
  let timer: ReturnType<typeof setInterval> | undefined;
  let frame = 0;
  let label = "";
  const draw = () => {
    stream.write(
      `\r${paint(io, stream, "cyan", frames[frame % frames.length] ?? "")} ${paint(io, stream, "dim", label)}\x1b[K`,
    );
    frame++;
  };
  return {
    start(text) {
      if (stream.isTTY !== true) return;
      label = text;
      if (timer !== undefined) return;
      draw();
      timer = setInterval(draw, intervalMs);
      timer.unref();
    },
    stop() {
      if (timer === undefined) return;
      clearInterval(timer);
      timer = undefined;
      stream.write("\r\x1b[K");
    },
  };
}

/** Reads all of stdin as UTF-8 text. */
export async function readAll(input: InputStream): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of input)
    text += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

/** Reads one line of `input` (without its newline), or undefined when it ended first. */
export async function readLine(input: InputStream): Promise<string | undefined> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of input) {
    text += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    const newline = text.indexOf("\n");
    if (newline >= 0) return text.slice(0, newline).replace(/\r$/, "");
  }
  return text === "" ? undefined : text;
}
