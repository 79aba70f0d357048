import { describe, expect, it } from "vitest";
import { describeToolStep } from "./chat.ts";
import type { Api } from "../protocol/index.ts";
import { followReply, type FollowOptions } from "../protocol/index.ts";

type ConversationEvent = Api.StreamEvent;
type StepView = Api.Step;
type StepOf<K extends Api.StepKind> = Extract<Api.Step, { kind: K }>;

const emptyPayloads: { [K in Api.StepKind]: StepOf<K>["payload"] } = {
  message: { messageId: "m", text: "", authorAccountId: "a" },
  model: { text: "", toolCalls: [], model: "demo" },
  tool: {
    callId: "c",
    name: "tool",
    input: {},
    output: "",
    isError: false,
    details: {},
    durationMs: 0,
  },
  reply: { text: "", model: "demo" },
  error: { code: "internal", message: "" },
  interrupted: { reason: "owner", stopped: [] },
  summary: { text: "", fromSeq: 1, coversThroughSeq: 1, model: "demo" },
  no_reply: { reason: "" },
  budget_reached: {
    scope: "bot",
    scopeId: "bot_1",
    limit: "tokensPerDay",
    allowed: 1,
    used: 1,
    resumesAt: "2026-01-02T00:00:00.000Z",
    message: "",
  },
  approval: {
    approvalId: "apr_1",
    callId: "c",
    tool: "shell",
    input: {},
    reason: "",
    review: null,
    state: "pending",
    expiresAt: "2026-01-02T00:00:00.000Z",
  },
};

function step<K extends Api.StepKind>(
  seq: number,
  kind: K,
  payload: Partial<StepOf<K>["payload"]> = {},
): StepView {
  return {
    seq,
    id: `s${seq}`,
    turnId: kind === "message" ? null : "t",
    kind,
    payload: { ...emptyPayloads[kind], ...payload },
    createdAt: new Date(0).toISOString(),
  } as unknown as StepOf<K>;
}

function toolPayload(payload: Partial<Api.ToolPayload>): Api.ToolPayload {
  return { ...emptyPayloads.tool, ...payload };
}

async function* stream(
  events: ConversationEvent[],
  end: "close" | Error = "close",
): AsyncGenerator<ConversationEvent> {
  for (const event of events) yield event;
  if (end instanceof Error) throw end;
}

/** A recorded follow: what was shown, in order, and which step pages were asked for. */
function recorder(record: StepView[]) {
  const shown: string[] = [];
  const pages: [number, number][] = [];
  const options: Pick<FollowOptions, "listSteps" | "onDelta" | "onStep"> = {
    listSteps: async (after, limit) => {
      pages.push([after, limit]);
      return record.filter((candidate) => candidate.seq > after).slice(0, limit);
    },
    onDelta: (event) => shown.push(`delta:${event.text}`),
    onStep: (shownStep) => shown.push(`${shownStep.seq}:${shownStep.kind}`),
  };
  return { shown, pages, options };
}

const noReconnect = async (): Promise<AsyncIterator<ConversationEvent>> => {
  throw new Error("no reconnect expected");
};

describe("followReply", () => {
  it("applies steps by seq, never beyond the changed event, and ends when the turn goes idle after the reply", async () => {
    const record = [
      step(1, "message"),
      step(2, "model", { text: "Let me look." }),
      step(3, "tool"),
      step(4, "reply", { text: "Done" }),
    ];
    const { shown, pages, options } = recorder(record);
    const end = await followReply({
      ...options,
      afterSeq: 1,
      reconnect: noReconnect,
      events: stream([
        { type: "changed", seq: 1 },
        { type: "turn", state: "working", turnId: "t" },
        { type: "delta", turnId: "t", text: "Let me look." },
        { type: "changed", seq: 2 },
        { type: "changed", seq: 3 },
        { type: "delta", turnId: "t", text: "Done" },
        { type: "changed", seq: 4 },
        { type: "turn", state: "idle", turnId: "t" },
        { type: "changed", seq: 99 },
      ]),
    });
    expect(end.seq).toBe(4);
    // Step 4 was already in the store when step 2 was announced; it still waits for its own
    // `changed`, after the deltas that precede it (F1).
    expect(shown).toEqual(["delta:Let me look.", "2:model", "3:tool", "delta:Done", "4:reply"]);
    expect(pages).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
  });

  it("ends on an error step too", async () => {
    const { options } = recorder([
      step(1, "message"),
      step(2, "error", { code: "model_error", message: "boom" }),
    ]);
    const end = await followReply({
      ...options,
      afterSeq: 1,
      reconnect: noReconnect,
      events: stream([
        { type: "changed", seq: 2 },
        { type: "turn", state: "idle", turnId: "t" },
      ]),
    });
    expect(end).toMatchObject({ kind: "error", payload: { message: "boom" } });
  });

  it("a stopped turn ends the follow with its interrupted step (F3)", async () => {
    const { shown, options } = recorder([
      step(1, "message"),
      step(2, "model", {
        toolCalls: [{ id: "c1", name: "shell", input: { command: "sleep 60" } }],
      }),
      step(3, "interrupted", {
        reason: "owner",
        stopped: [{ kind: "tool", callId: "c1", name: "shell" }],
      }),
    ]);
    const end = await followReply({
      ...options,
      afterSeq: 1,
      reconnect: noReconnect,
      events: stream([
        { type: "changed", seq: 2 },
        { type: "changed", seq: 3 },
        { type: "turn", state: "idle", turnId: "t" },
      ]),
    });
    expect(end).toMatchObject({ kind: "interrupted", payload: { reason: "owner" } });
    expect(shown).toEqual(["2:model", "3:interrupted"]);
  });

  it("does not end on the idle of a turn that has not replied after the message", async () => {
    const { shown, options } = recorder([
      step(1, "reply", { text: "old" }),
      step(2, "message"),
      step(3, "reply", { text: "new" }),
    ]);
    const end = await followReply({
      ...options,
      afterSeq: 2,
      reconnect: noReconnect,
      events: stream([
        { type: "turn", state: "idle", turnId: "earlier" },
        { type: "turn", state: "working", turnId: "t" },
        { type: "changed", seq: 3 },
        { type: "turn", state: "idle", turnId: "t" },
      ]),
    });
    expect(end.seq).toBe(3);
    expect(shown).toEqual(["3:reply"]);
  });

  it("reopens a stream that failed and loads the steps it missed (reload on gap)", async () => {
    const record = [step(1, "message"), step(2, "tool"), step(3, "reply", { text: "ok" })];
    const { shown, options } = recorder(record);
    let reconnects = 0;
    const end = await followReply({
      ...options,
      afterSeq: 1,
      reconnectDelayMs: () => 1,
      reconnect: async () => {
        reconnects++;
        return stream([{ type: "hello", seq: 3, state: "idle" }]);
      },
      events: stream(
        [{ type: "turn", state: "working", turnId: "t" }],
        new Error("socket hang up"),
      ),
    });
    expect(reconnects).toBe(1);
    expect(end.seq).toBe(3);
    expect(shown).toEqual(["2:tool", "3:reply"]);
  });

  it("gives up after maxReconnects failed reopens in a row, with the last error", async () => {
    let reconnects = 0;
    const { options } = recorder([step(1, "message")]);
    await expect(
      followReply({
        ...options,
        afterSeq: 1,
        maxReconnects: 3,
        reconnectDelayMs: () => 1,
        reconnect: async () => {
          reconnects++;
          throw new Error(`refused ${reconnects}`);
        },
        events: stream([]),
      }),
    ).rejects.toThrow("refused 3");
    expect(reconnects).toBe(3);
  });

  it("pages through long gaps", async () => {
    const record = [
      step(1, "message"),
      ...Array.from({ length: 1200 }, (_, index) => step(index + 2, "tool")),
      step(1202, "reply"),
    ];
    const { pages, options } = recorder(record);
    const end = await followReply({
      ...options,
      afterSeq: 1,
      reconnect: noReconnect,
      events: stream([
        { type: "changed", seq: 1202 },
        { type: "turn", state: "idle", turnId: "t" },
      ]),
    });
    expect(end.seq).toBe(1202);
    expect(pages).toEqual([
      [1, 500],
      [501, 500],
      [1001, 201],
    ]);
  });
});

describe("describeToolStep", () => {
  it("shows the command and its exit status", () => {
    const tool = toolPayload({
      name: "shell",
      input: { command: "echo hi" },
      output: "hi\n",
      isError: false,
      details: { exitCode: 0 },
    });
    expect(describeToolStep(tool)).toBe("shell: echo hi → exit 0");
  });

  it("shows errors on one line, shortened", () => {
    const tool = toolPayload({
      name: "read",
      input: { path: "/etc/x" },
      output: "no such file\nor directory",
      isError: true,
    });
    expect(describeToolStep(tool)).toBe("read: /etc/x → error: no such file or directory");
    const long = toolPayload({
      name: "fetch",
      input: { a: "x".repeat(200) },
      output: "",
      isError: false,
    });
    expect(describeToolStep(long)).toMatch(/^fetch: \{"a":"x+… → ok$/);
  });
});
