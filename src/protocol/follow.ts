/**
 * (Shared by the CLI and the API's OpenAI and MCP endpoints, src/api/ask.ts.)
 * Following a conversation until the bot has answered, the way docs/api.md tells clients to:
 * events are hints, the steps are the record.
 *
 * Invariants:
 *   F1 steps are applied in seq order, each exactly once: a `changed` event up to seq N loads the
 *      steps after the cursor and at most up to N, never beyond — the text deltas of a later step
 *      are still queued behind the `changed` that announces it.
 *   F2 a stream that ends or fails is reopened; its `hello` carries the latest seq, so the steps
 *      missed meanwhile are loaded (reload on gap) and nothing is shown twice.
 *   F3 the follow ends when the turn goes idle after a `reply`, `error` or `interrupted` step
 *      with a seq above the message that was sent. (A reply to a turn that began before the message arrived, and
 *      that did not pick it up, also counts: the API does not say which turn took a message.)
 */
import type * as Api from "./api.ts";

/** The steps that end a turn. */
export type EndStep = Extract<Api.Step, { kind: "reply" | "error" | "interrupted" | "no_reply" }>;

export function isEndStep(step: Api.Step): step is EndStep {
  return (
    step.kind === "reply" ||
    step.kind === "error" ||
    step.kind === "interrupted" ||
    step.kind === "no_reply"
  );
}

export interface FollowOptions {
  /** The open stream, its `hello` already read. */
  events: AsyncIterator<Api.StreamEvent>;
  /** Opens the stream again after it ended or failed. */
  reconnect(): Promise<AsyncIterator<Api.StreamEvent>>;
  listSteps(after: number, limit: number): Promise<Api.Step[]>;
  /** Seq of the message that was sent: steps up to it are not shown. */
  afterSeq: number;
  onDelta(event: Extract<Api.StreamEvent, { type: "delta" }>): void;
  onStep(step: Api.Step): void;
  /** Live tool output and computer state: shown while they happen, never the record. */
  onEvent?(event: Extract<Api.StreamEvent, { type: "tool-output" | "computer" }>): void;
  /** Reopen attempts in a row before giving up. @default 5 */
  maxReconnects?: number;
  /** Delay before the n-th reopen (from 1). @default 200 ms × n */
  reconnectDelayMs?: (attempt: number) => number;
  signal?: AbortSignal;
}

/** Follows the conversation until the turn ended; returns the step that ended it. */
export async function followReply(options: FollowOptions): Promise<EndStep> {
  const pageLimit = 500;
  const maxReconnects = options.maxReconnects ?? 5;
  const delay = options.reconnectDelayMs ?? ((attempt: number) => 200 * attempt);
  let events = options.events;
  let cursor = options.afterSeq;
  let finished: EndStep | undefined;
  let failures = 0;

  // F1
  const catchUp = async (upTo: number) => {
    while (cursor < upTo) {
      const steps = await options.listSteps(cursor, Math.min(upTo - cursor, pageLimit));
      if (steps.length === 0) return;
      for (const step of steps) {
        if (step.seq <= cursor) continue;
        if (step.seq > upTo) return;
        cursor = step.seq;
        options.onStep(step);
        if (isEndStep(step)) finished = step;
      }
    }
  };

  let lastError: unknown;
  for (;;) {
    options.signal?.throwIfAborted();
    let next: IteratorResult<Api.StreamEvent>;
    try {
      next = await events.next();
    } catch (error) {
      if (options.signal?.aborted === true) throw error;
      lastError = error;
      next = { done: true, value: undefined };
    }
    if (next.done === true) {
      // F2
      failures++;
      if (failures > maxReconnects) {
        throw lastError ?? new Error(`the events stream closed ${failures} times in a row`);
      }
      await sleep(delay(failures), options.signal);
      try {
        events = await options.reconnect();
        lastError = undefined;
      } catch (error) {
        lastError = error;
        events = emptyStream();
      }
      continue;
    }
    const event = next.value;
    switch (event.type) {
      case "hello":
        failures = 0;
        await catchUp(event.seq);
        if (finished !== undefined && event.state === "idle") return finished;
        break;
      case "changed":
        await catchUp(event.seq);
        break;
      case "delta":
        options.onDelta(event);
        break;
      case "turn":
        if (event.state === "idle" && finished !== undefined) return finished; // F3
        break;
      case "tool-output":
      case "computer":
        options.onEvent?.(event);
        break;
      case "renamed":
        break;
      default: {
        const unknown: never = event;
        void unknown;
      }
    }
  }
}

async function* emptyStream(): AsyncGenerator<Api.StreamEvent> {}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}
