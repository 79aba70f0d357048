/**
 * A running tool's live output in the terminal, capped the way the model's copy is (the worker
 * keeps a head and a tail with a note, src/worker/shell-tool.ts): a command that prints 200,000
 * lines shows its first lines live, then one line that says where the full output is, then the
 * last lines of the tool's result.
 *
 * Invariants:
 *   LIVE1 per tool call, at most `headLines` lines and `headBytes` bytes of live output are
 *         printed; a line longer than what is left is cut and marked with `…`.
 *   LIVE2 once a call is capped, nothing more of it is printed live. When its result arrives, one
 *         `… ` line says how much was not shown and, when the worker cut the output, the file
 *         holding all of it; then at most `tailLines` last lines of each stream of the result.
 *   LIVE3 what is printed after the cap comes from the result (the record), never from the live
 *         stream, which the worker itself stops after 1 MiB.
 */
import type { Api, ShellCompletedOutput } from "../protocol/index.ts";

export interface LiveOutputLimits {
  /** @default 40 */
  headLines?: number;
  /** @default 8192 */
  headBytes?: number;
  /** @default 10 */
  tailLines?: number;
}

type Stream = "stdout" | "stderr";

interface CallOutput {
  /** Text of the current line, not yet ended by a newline, per stream. */
  partial: Record<Stream, string>;
  /** Lines printed live, per stream. */
  shown: Record<Stream, number>;
  linesLeft: number;
  bytesLeft: number;
  capped: boolean;
}

export interface LiveOutput {
  /** A `tool-output` event: the lines to print now (without the gutter). */
  push(callId: string, stream: Stream, data: string): string[];
  /** True once the call's live output reached the cap (LIVE2). */
  capped(callId: string): boolean;
  /** The call's result arrived: the lines to print before its summary (a partial line, or LIVE2's). */
  finish(payload: Api.ToolPayload): string[];
  /** The turn ended without results for these calls (it was stopped): what to print for them. */
  abandon(callId: string): string[];
}

export function createLiveOutput(limits: LiveOutputLimits = {}): LiveOutput {
  const headLines = limits.headLines ?? 40;
  const headBytes = limits.headBytes ?? 8192;
  const tailLines = limits.tailLines ?? 10;
  const calls = new Map<string, CallOutput>();

  const callFor = (callId: string): CallOutput => {
    let call = calls.get(callId);
    if (call === undefined) {
      call = {
        partial: { stdout: "", stderr: "" },
        shown: { stdout: 0, stderr: 0 },
        linesLeft: headLines,
        bytesLeft: headBytes,
        capped: false,
      };
      calls.set(callId, call);
    }
    return call;
  };

  /** LIVE1: prints `line` if it fits; cuts it and caps the call when it does not. */
  const emit = (call: CallOutput, stream: Stream, line: string, out: string[]) => {
    if (call.capped) return;
    if (call.linesLeft <= 0) {
      call.capped = true;
      return;
    }
    const bytes = Buffer.byteLength(line);
    if (bytes > call.bytesLeft) {
      out.push(`${cutToBytes(line, call.bytesLeft)}…`);
      call.shown[stream]++;
      call.capped = true;
      return;
    }
    out.push(line);
    call.shown[stream]++;
    call.linesLeft--;
    call.bytesLeft -= bytes;
  };

  const flushPartials = (call: CallOutput, out: string[]) => {
    for (const stream of ["stdout", "stderr"] as const) {
      if (call.partial[stream] !== "") emit(call, stream, call.partial[stream], out);
      call.partial[stream] = "";
    }
  };

  return {
    push(callId, stream, data) {
      const call = callFor(callId);
      const out: string[] = [];
      if (call.capped) return out;
      const lines = (call.partial[stream] + data).split("\n");
      call.partial[stream] = lines.pop() ?? "";
      for (const line of lines) emit(call, stream, line, out);
      // A line that never ends must not grow without bound either.
      if (!call.capped && Buffer.byteLength(call.partial[stream]) > call.bytesLeft) {
        emit(call, stream, call.partial[stream], out);
        call.partial[stream] = "";
      }
      return out;
    },

    capped: (callId) => calls.get(callId)?.capped === true,

    finish(payload) {
      const call = calls.get(payload.callId);
      calls.delete(payload.callId);
      if (call === undefined) return [];
      const out: string[] = [];
      flushPartials(call, out);
      if (!call.capped) return out;
      const shell = shellResult(payload.details);
      if (shell === undefined) return [...out, "… more output not shown"]; // LIVE2
      for (const stream of ["stdout", "stderr"] as const) {
        out.push(...restOf(shell, stream, call.shown[stream], tailLines));
      }
      return out;
    },

    abandon(callId) {
      const call = calls.get(callId);
      calls.delete(callId);
      if (call === undefined) return [];
      const out: string[] = [];
      flushPartials(call, out);
      if (call.capped) out.push("… more output not shown");
      return out;
    },
  };
}

/** LIVE2/LIVE3: the part of one stream of the result that the live view did not show. */
function restOf(
  shell: ShellResult,
  stream: Stream,
  shownLines: number,
  tailLines: number,
): string[] {
  const text = shell[stream];
  if (text === "") return [];
  const truncated = shell[`${stream}Truncated`];
  const path = shell[`${stream}Path`];
  const lines = splitLines(text);
  if (truncated) {
    // The worker kept head + marker + tail: the lines after its marker are the end of the output.
    const marker = lines.findLastIndex((line) => cutMarker.test(line));
    const tail = lines.slice(marker + 1).filter((line, index) => index > 0 || line !== "");
    const where = path === undefined ? "" : `; full output: ${path}`;
    return [
      `… ${stream} continues (${formatSize(shell[`${stream}Bytes`])} in all)${where}`,
      ...tail.slice(-tailLines),
    ];
  }
  const rest = lines.slice(shownLines);
  if (rest.length <= tailLines) return rest;
  const hidden = rest.length - tailLines;
  return [
    `… ${hidden.toLocaleString("en")} more line${hidden === 1 ? "" : "s"} of ${stream}`,
    ...rest.slice(-tailLines),
  ];
}

/** The note the worker puts where it cut a stream (src/worker/jobs.ts readStreamText). */
const cutMarker = /^\[\.\.\. \d+ bytes omitted; the full output is in .+ \.\.\.\]$/;

type ShellResult = Pick<
  ShellCompletedOutput,
  | "stdout"
  | "stderr"
  | "stdoutBytes"
  | "stderrBytes"
  | "stdoutTruncated"
  | "stderrTruncated"
  | "stdoutPath"
  | "stderrPath"
>;

/** The shell tool's result fields in a tool step's `details` (src/tools formats them), if it is one. */
function shellResult(details: Record<string, unknown>): ShellResult | undefined {
  const { stdout, stderr, stdoutBytes, stderrBytes, stdoutTruncated, stderrTruncated } = details;
  if (
    typeof stdout !== "string" ||
    typeof stderr !== "string" ||
    typeof stdoutBytes !== "number" ||
    typeof stderrBytes !== "number" ||
    typeof stdoutTruncated !== "boolean" ||
    typeof stderrTruncated !== "boolean"
  )
    return undefined;
  const optionalString = (value: unknown) => (typeof value === "string" ? value : undefined);
  return {
    stdout,
    stderr,
    stdoutBytes,
    stderrBytes,
    stdoutTruncated,
    stderrTruncated,
    stdoutPath: optionalString(details.stdoutPath),
    stderrPath: optionalString(details.stderrPath),
  };
}

function splitLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

function cutToBytes(text: string, bytes: number): string {
  const buffer = Buffer.from(text);
  if (buffer.length <= bytes) return text;
  let end = Math.max(0, bytes);
  // Never cut inside a UTF-8 sequence.
  while (end > 0 && ((buffer[end] ?? 0) & 0xc0) === 0x80) end--;
  return buffer.subarray(0, end).toString("utf8");
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
