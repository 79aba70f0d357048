import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { toolLimits, type Api } from "../protocol/index.ts";
// The worker's own truncation, so the result looks exactly like one from a computer.
import { readStreamText } from "../worker/jobs.ts";
import { createLiveOutput } from "./live-output.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-live-output-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function numbers(count: number): string {
  let text = "";
  for (let line = 1; line <= count; line++) text += `${line}\n`;
  return text;
}

/** A shell tool step's payload for `stdout`, truncated by the worker's code as a computer would. */
async function shellPayload(callId: string, stdout: string): Promise<Api.ToolPayload> {
  const file = join(dir, `${callId}.stdout`);
  await writeFile(file, stdout);
  const read = await readStreamText(file, toolLimits.shellOutputBytes);
  return {
    callId,
    name: "shell",
    input: { command: "seq" },
    output: "(the model's copy)",
    isError: false,
    durationMs: 1,
    details: {
      kind: "completed",
      exitCode: 0,
      timedOut: false,
      durationMs: 1,
      stdout: read.text,
      stderr: "",
      stdoutBytes: read.bytes,
      stderrBytes: 0,
      stdoutTruncated: read.truncated,
      stderrTruncated: false,
      ...(read.truncated ? { stdoutPath: file } : {}),
    },
  };
}

/** Streams `text` the way the worker does: chunks of up to 256 KiB, at most 1 MiB in all. */
function streamLikeWorker(
  live: ReturnType<typeof createLiveOutput>,
  callId: string,
  text: string,
): string[] {
  const printed: string[] = [];
  const streamed = Buffer.from(text).subarray(0, toolLimits.streamMaxBytes);
  for (let offset = 0; offset < streamed.length; offset += 256 * 1024) {
    const chunk = streamed.subarray(offset, offset + 256 * 1024).toString("utf8");
    printed.push(...live.push(callId, "stdout", chunk));
  }
  return printed;
}

describe("live tool output in the terminal", () => {
  it("seq 1 200000: the first 40 lines live, one line naming the full output's file, then the last 10 lines of the result", async () => {
    const live = createLiveOutput();
    const output = numbers(200_000);
    const printed = streamLikeWorker(live, "c1", output);
    expect(printed).toEqual(Array.from({ length: 40 }, (_, index) => String(index + 1)));
    expect(live.capped("c1")).toBe(true);

    const payload = await shellPayload("c1", output);
    expect(payload.details.stdoutTruncated).toBe(true);
    const end = live.finish(payload);
    expect(end[0]).toBe(
      `… stdout continues (1.2 MiB in all); full output: ${join(dir, "c1.stdout")}`,
    );
    expect(end.slice(1)).toEqual(Array.from({ length: 10 }, (_, index) => String(199_991 + index)));
    // 1.2 MiB of output became about 300 bytes on the terminal.
    expect([...printed, ...end].join("\n").length).toBeLessThan(1000);
  });

  it("output under the cap is shown whole, its last unfinished line when the result arrives", async () => {
    const live = createLiveOutput();
    expect(live.push("c1", "stdout", "one\ntw")).toEqual(["one"]);
    expect(live.push("c1", "stdout", "o\nthree")).toEqual(["two"]);
    expect(live.finish(await shellPayload("c1", "one\ntwo\nthree"))).toEqual(["three"]);
  });

  it("past the cap but not cut by the worker: says how many lines were skipped, then the tail", async () => {
    const live = createLiveOutput({ headLines: 5, tailLines: 3 });
    const output = numbers(100);
    expect(streamLikeWorker(live, "c1", output)).toEqual(["1", "2", "3", "4", "5"]);
    expect(live.finish(await shellPayload("c1", output))).toEqual([
      "… 92 more lines of stdout",
      "98",
      "99",
      "100",
    ]);
  });

  it("a line that never ends is cut at the byte cap, not buffered without bound", () => {
    const live = createLiveOutput({ headBytes: 100 });
    const printed = [
      ...live.push("c1", "stdout", "x".repeat(60)),
      ...live.push("c1", "stdout", "x".repeat(60)),
      ...live.push("c1", "stdout", "x".repeat(1_000_000)),
    ];
    expect(printed).toEqual([`${"x".repeat(100)}…`]);
    expect(live.capped("c1")).toBe(true);
  });

  it("never cuts a multi-byte character in half", () => {
    const live = createLiveOutput({ headBytes: 5 });
    // "é" is two bytes: five bytes end inside the third one.
    expect(live.push("c1", "stdout", "ééé\n")).toEqual(["éé…"]);
  });

  it("keeps each call's lines and streams apart", async () => {
    const live = createLiveOutput();
    expect(live.push("a", "stdout", "a-out")).toEqual([]);
    expect(live.push("b", "stdout", "b-out\n")).toEqual(["b-out"]);
    expect(live.push("a", "stderr", "a-err\n")).toEqual(["a-err"]);
    expect(live.finish(await shellPayload("a", "a-out"))).toEqual(["a-out"]);
  });

  it("a stopped call that was capped says so", () => {
    const live = createLiveOutput({ headLines: 1 });
    expect(live.push("c1", "stdout", "1\n2\n3\n")).toEqual(["1"]);
    expect(live.abandon("c1")).toEqual(["… more output not shown"]);
    expect(live.abandon("never-seen")).toEqual([]);
  });
});
