/**
 * One open conversation, kept live and consistent with the server (ARCHITECTURE.md §4: "clients
 * subscribe to 'something changed (seq N)' and fetch; a gap makes them reload from the store").
 *
 * Invariants:
 *   F1 steps are applied in seq order, each once: the feed keeps a cursor (the highest seq it
 *      holds) and only ever loads steps after it, from the steps endpoint, never from events.
 *   F2 events are applied strictly in the order they arrived; a `changed` (or `hello`) waits for
 *      its steps before the next event is applied. Any seq above the cursor is a gap and is
 *      loaded, so missed events cost nothing.
 *   F3 a broken or ended stream is reopened by itself with jittered exponential backoff that
 *      resets only after a connection stayed up a while; its `hello` carries the latest seq, so
 *      what happened meanwhile is loaded (F2). Only a 4xx other than 408/429 stops it.
 *   F4 streamed text is a preview: each piece remembers the highest seq announced before it
 *      arrived, and is dropped once a `model`, `reply`, `error` or `interrupted` step of its turn
 *      with a higher seq is applied (that step holds the final text). A reload mid-turn simply starts with no
 *      preview and shows the rest as it streams.
 *   F5 a message shows at once as pending and is retried with the same client message id, so
 *      the server stores it once; it leaves the pending list when its step is applied.
 *   F6 a stop asked for (`stop()`) shows as `stopping` until the turn it stopped ends (its
 *      `interrupted` step, or the turn going idle); a failed request shows why in `stopProblem`.
 */
import { ApiError, type ApiClient } from "../api/client.ts";
import { readEventStream } from "../api/event-stream.ts";
import type { ComputerState, Step, StreamEvent, TurnState } from "../api/types.ts";

/** Steps loaded when a conversation opens; older ones load on demand. */
export const initialWindow = 300;
const pageSize = 1000;
/** Characters of a running call's live output kept for display (its tail). */
const liveOutputLimit = 16_000;

export type FeedStatus = "connecting" | "live" | "reconnecting" | "failed";

export interface PendingMessage {
  clientMessageId: string;
  text: string;
  /** Upload ids sent with it (docs/uploads.md). */
  attachments?: readonly string[];
  status: "sending" | "sent" | "failed";
  error?: string;
  messageId?: string;
}

export interface FeedSnapshot {
  readonly status: FeedStatus;
  /** What is wrong with the connection, in plain words (set while reconnecting or failed). */
  readonly problem: string | undefined;
  readonly problemCode: string | undefined;
  /** True once the first `hello` was applied. */
  readonly loaded: boolean;
  readonly steps: readonly Step[];
  readonly hasEarlier: boolean;
  readonly loadingEarlier: boolean;
  readonly turnState: TurnState;
  readonly turnId: string | null;
  /** The text streaming in for the running model call, if any. */
  readonly streaming: string;
  readonly pending: readonly PendingMessage[];
  readonly computerState: ComputerState | undefined;
  /** The turns holding the computer, as the stream last said (undefined: not said yet). */
  readonly computerHeldByTurns: number | undefined;
  /** Live output of running tool calls by call id (the tail, while the call runs). */
  readonly toolOutput: Readonly<Record<string, string>>;
  readonly lastSeq: number;
  /** A stop of the running turn was asked for and it has not ended yet (F6). */
  readonly stopping: boolean;
  /** Why the last stop could not be asked for, in plain words. */
  readonly stopProblem: string | undefined;
  /** The newest title the stream announced (an automatic title, docs/chat.md "Titles"). */
  readonly title: string | undefined;
}

interface Segment {
  turnId: string;
  /** Highest seq announced before this piece arrived (F4). */
  after: number;
  text: string;
}

export interface FeedOptions {
  /** Backoff before the n-th reconnect (from 1). @default 400 ms × 2^(n-1), at most 15 s, jittered */
  reconnectDelayMs?: (attempt: number) => number;
  /** A connection that lived this long resets the backoff. @default 5000 */
  stableAfterMs?: number;
}

const defaultDelay = (attempt: number) =>
  Math.min(15_000, 400 * 2 ** (attempt - 1)) * (0.6 + Math.random() * 0.4);

export class ConversationFeed {
  readonly conversationId: string;
  private readonly api: ApiClient;
  private readonly options: FeedOptions;
  private readonly listeners = new Set<() => void>();
  private readonly abort = new AbortController();
  private wakeReconnect: (() => void) | undefined;
  private started = false;
  private emitTimer: ReturnType<typeof setTimeout> | undefined;

  private cursor = 0;
  private windowStart = 0;
  private announced = 0;
  private segments: Segment[] = [];
  private state: FeedSnapshot = {
    status: "connecting",
    problem: undefined,
    problemCode: undefined,
    loaded: false,
    steps: [],
    hasEarlier: false,
    loadingEarlier: false,
    turnState: "idle",
    turnId: null,
    streaming: "",
    pending: [],
    computerState: undefined,
    computerHeldByTurns: undefined,
    toolOutput: {},
    lastSeq: 0,
    stopping: false,
    stopProblem: undefined,
    title: undefined,
  };

  constructor(api: ApiClient, conversationId: string, options: FeedOptions = {}) {
    this.api = api;
    this.conversationId = conversationId;
    this.options = options;
  }

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    if (!this.started) this.start();
    return () => this.listeners.delete(listener);
  };

  readonly getSnapshot = (): FeedSnapshot => this.state;

  /**
   * Resolves once the events stream is open (its `hello` applied), or after `timeoutMs`. A new
   * conversation waits for it before its first message, so the reply streams in from the start.
   */
  ready(timeoutMs = 3000): Promise<void> {
    this.start();
    if (this.state.loaded) return Promise.resolve();
    return new Promise((resolve) => {
      const listener = () => {
        if (this.state.loaded || this.state.status === "failed") finish();
      };
      const finish = () => {
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve();
      };
      const timer = setTimeout(finish, timeoutMs);
      this.listeners.add(listener);
    });
  }

  get closed(): boolean {
    return this.abort.signal.aborted;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    void this.run();
  }

  close(): void {
    this.abort.abort();
    this.wakeReconnect?.();
    if (this.emitTimer !== undefined) clearTimeout(this.emitTimer);
  }

  /** Reconnect now instead of waiting out the backoff (the browser came back online, say). */
  nudge(): void {
    this.wakeReconnect?.();
  }

  /** F5: shows the message at once and sends it; the bot may be working (it joins the turn). */
  async send(text: string, attachments: readonly string[] = []): Promise<void> {
    const pending: PendingMessage = {
      clientMessageId: crypto.randomUUID(),
      text,
      ...(attachments.length === 0 ? {} : { attachments }),
      status: "sending",
    };
    this.update({ pending: [...this.state.pending, pending] }, true);
    await this.deliver(pending.clientMessageId);
  }

  /** Branches (docs/chat.md): ask the last message again; the old reply stays in the record. */
  async regenerate(): Promise<void> {
    await this.api.regenerate(this.conversationId, crypto.randomUUID());
  }

  /** Branches: send an edited version of a message; what followed it stays in the record. */
  async edit(messageId: string, text: string): Promise<void> {
    await this.api.editMessage(this.conversationId, messageId, text, crypto.randomUUID());
  }

  /** F6: asks the server to stop the running turn. */
  async stop(): Promise<void> {
    if (this.state.stopping) return;
    this.update({ stopping: true, stopProblem: undefined }, true);
    try {
      const answer = await this.api.interrupt(this.conversationId);
      // Nothing was running (the turn ended meanwhile): there is nothing to wait for.
      if (!answer.interrupted) this.update({ stopping: false }, true);
    } catch (error) {
      this.update({ stopping: false, stopProblem: describe(error) }, true);
    }
  }

  async retry(clientMessageId: string): Promise<void> {
    this.patchPending(clientMessageId, { status: "sending", error: undefined });
    await this.deliver(clientMessageId);
  }

  discard(clientMessageId: string): void {
    this.update(
      {
        pending: this.state.pending.filter(
          (message) => message.clientMessageId !== clientMessageId,
        ),
      },
      true,
    );
  }

  async loadEarlier(): Promise<void> {
    if (this.state.loadingEarlier || this.windowStart === 0) return;
    this.update({ loadingEarlier: true }, true);
    try {
      const from = Math.max(0, this.windowStart - initialWindow);
      const { steps } = await this.api.listSteps(
        this.conversationId,
        from,
        this.windowStart - from,
        this.abort.signal,
      );
      const older = steps.filter((step) => step.seq > from && step.seq <= this.windowStart);
      this.windowStart = from;
      this.update(
        { steps: [...older, ...this.state.steps], hasEarlier: from > 0, loadingEarlier: false },
        true,
      );
    } catch (error) {
      this.update(
        { loadingEarlier: false, problem: describe(error), problemCode: codeOf(error) },
        true,
      );
    }
  }

  private async deliver(clientMessageId: string): Promise<void> {
    const message = this.state.pending.find(
      (candidate) => candidate.clientMessageId === clientMessageId,
    );
    if (message === undefined) return;
    try {
      const ack = await this.api.sendMessage(
        this.conversationId,
        message.text,
        clientMessageId,
        message.attachments,
      );
      if (ack.seq <= this.cursor) {
        this.update(
          {
            pending: this.state.pending.filter(
              (candidate) => candidate.clientMessageId !== clientMessageId,
            ),
          },
          true,
        );
      } else {
        this.patchPending(clientMessageId, { status: "sent", messageId: ack.messageId });
      }
    } catch (error) {
      this.patchPending(clientMessageId, { status: "failed", error: describe(error) });
    }
  }

  private patchPending(clientMessageId: string, patch: Partial<PendingMessage>): void {
    this.update(
      {
        pending: this.state.pending.map((message) =>
          message.clientMessageId === clientMessageId ? { ...message, ...patch } : message,
        ),
      },
      true,
    );
  }

  /** F3 */
  private async run(): Promise<void> {
    let attempt = 0;
    while (!this.closed) {
      let connectedAt: number | undefined;
      try {
        await readEventStream(
          this.api.eventsUrl(this.conversationId),
          this.api.authorization,
          async (event) => {
            if (event.type === "hello") connectedAt = Date.now();
            await this.apply(event);
          },
          this.abort.signal,
        );
        if (this.closed) return;
        this.update(
          {
            status: "reconnecting",
            problem: "The live connection closed; reconnecting.",
            problemCode: "network",
          },
          true,
        );
      } catch (error) {
        if (this.closed) return;
        if (
          error instanceof ApiError &&
          !error.retryable &&
          error.status >= 400 &&
          error.status < 500 &&
          error.status !== 408
        ) {
          this.update({ status: "failed", problem: error.message, problemCode: error.code }, true);
          return;
        }
        this.update(
          { status: "reconnecting", problem: describe(error), problemCode: codeOf(error) },
          true,
        );
      }
      if (
        connectedAt !== undefined &&
        Date.now() - connectedAt >= (this.options.stableAfterMs ?? 5000)
      )
        attempt = 0;
      attempt++;
      await this.pause((this.options.reconnectDelayMs ?? defaultDelay)(attempt));
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeReconnect = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeReconnect = done;
    });
  }

  /** F2 */
  private async apply(event: StreamEvent): Promise<void> {
    switch (event.type) {
      case "hello": {
        this.announced = Math.max(this.announced, event.seq);
        if (!this.state.loaded) {
          this.windowStart = Math.max(0, event.seq - initialWindow);
          this.cursor = this.windowStart;
        }
        await this.catchUp(event.seq);
        if (event.state === "idle") this.segments = [];
        this.update(
          {
            status: "live",
            problem: undefined,
            problemCode: undefined,
            loaded: true,
            hasEarlier: this.windowStart > 0,
            turnState: event.state,
            streaming: this.streamingText(),
          },
          true,
        );
        return;
      }
      case "changed":
        this.announced = Math.max(this.announced, event.seq);
        await this.catchUp(event.seq);
        return;
      case "delta": {
        // F4
        const last = this.segments.at(-1);
        if (event.reset === true) {
          if (last !== undefined && last.turnId === event.turnId && last.after === this.announced)
            last.text = "";
        } else if (
          last !== undefined &&
          last.turnId === event.turnId &&
          last.after === this.announced
        )
          last.text += event.text;
        else this.segments.push({ turnId: event.turnId, after: this.announced, text: event.text });
        this.state = { ...this.state, turnState: "working", turnId: event.turnId };
        this.update({ streaming: this.streamingText() });
        return;
      }
      case "turn":
        if (event.state === "idle")
          this.segments = this.segments.filter((segment) => segment.turnId !== event.turnId);
        this.state = { ...this.state, turnState: event.state, turnId: event.turnId };
        this.update(
          {
            streaming: this.streamingText(),
            ...(event.state === "idle" ? { stopping: false, stopProblem: undefined } : {}),
          },
          true,
        );
        return;
      case "computer":
        this.update(
          {
            computerState: event.state,
            ...(event.heldByTurns === undefined ? {} : { computerHeldByTurns: event.heldByTurns }),
          },
          true,
        );
        return;
      case "renamed":
        this.update({ title: event.title }, true);
        return;
      case "tool-output": {
        const previous = this.state.toolOutput[event.callId] ?? "";
        const next = (previous + event.data).slice(-liveOutputLimit);
        this.update({ toolOutput: { ...this.state.toolOutput, [event.callId]: next } });
        return;
      }
    }
  }

  /** F1: loads every step after the cursor up to `upTo`. */
  private async catchUp(upTo: number): Promise<void> {
    while (this.cursor < upTo) {
      const { steps } = await this.api.listSteps(
        this.conversationId,
        this.cursor,
        Math.min(pageSize, upTo - this.cursor),
        this.abort.signal,
      );
      const fresh = steps.filter((step) => step.seq > this.cursor).sort((a, b) => a.seq - b.seq);
      if (fresh.length === 0) return;
      this.cursor = fresh.at(-1)?.seq ?? this.cursor;
      this.absorb(fresh);
    }
  }

  private absorb(fresh: Step[]): void {
    const messageIds = new Set<string>();
    let toolOutput = this.state.toolOutput;
    let stopping = this.state.stopping;
    for (const step of fresh) {
      if (step.kind === "interrupted") stopping = false; // F6
      if (step.kind === "message") messageIds.add(step.payload.messageId);
      if (step.kind === "tool" && step.payload.callId in toolOutput) {
        const { [step.payload.callId]: _done, ...rest } = toolOutput;
        toolOutput = rest;
      }
      if (
        (step.kind === "model" ||
          step.kind === "reply" ||
          step.kind === "error" ||
          step.kind === "interrupted" ||
          step.kind === "no_reply") &&
        step.turnId !== null
      ) {
        const turnId = step.turnId;
        this.segments = this.segments.filter(
          (segment) => !(segment.turnId === turnId && segment.after < step.seq),
        ); // F4
      }
    }
    const pending = this.state.pending.filter(
      (message) => message.messageId === undefined || !messageIds.has(message.messageId),
    ); // F5
    this.update(
      {
        steps: [...this.state.steps, ...fresh],
        pending: pending.length === this.state.pending.length ? this.state.pending : pending,
        streaming: this.streamingText(),
        toolOutput,
        lastSeq: this.cursor,
        stopping,
      },
      true,
    );
  }

  private streamingText(): string {
    const turnId = this.state.turnId ?? this.segments.at(-1)?.turnId;
    return this.segments
      .filter((segment) => segment.turnId === turnId)
      .map((segment) => segment.text)
      .join("");
  }

  private update(patch: Partial<FeedSnapshot>, now = false): void {
    this.state = { ...this.state, ...patch };
    if (now) {
      if (this.emitTimer !== undefined) clearTimeout(this.emitTimer);
      this.emitTimer = undefined;
      this.emit();
    } else if (this.emitTimer === undefined) {
      // Text deltas come many per second: redraw at most every frame or so.
      this.emitTimer = setTimeout(() => {
        this.emitTimer = undefined;
        this.emit();
      }, 32);
    }
  }

  private emit(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

function describe(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

function codeOf(error: unknown): string {
  return error instanceof ApiError ? error.code : "internal";
}
