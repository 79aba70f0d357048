/**
 * `roost conversations show` of a long conversation, against a small real server on 127.0.0.1
 * that speaks the steps route's wire format (pages of at most `limit`, `lastSeq`): every step is
 * printed once, in order, across pages; and the one-line renderings of the timeline.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Api } from "../protocol/index.ts";
import { formatAge, renderStep } from "./conversations.ts";
import type { CliIo } from "./io.ts";
import { runCli } from "./main.ts";

const stepCount = 2500;
const conversation: Api.Conversation = {
  id: "conv_long",
  botId: "bot_1",
  title: "A long one",
  lastSeq: stepCount,
  state: "idle",
  place: "direct",
  createdAt: "2026-12-01T10:00:00.000Z",
  updatedAt: "2026-12-01T10:00:00.000Z",
};
const steps: Api.Step[] = Array.from({ length: stepCount }, (_, index) => ({
  seq: index + 1,
  id: `msg_${index + 1}`,
  turnId: null,
  kind: "message",
  payload: { messageId: `msg_${index + 1}`, text: `line ${index + 1}`, authorAccountId: "acct_1" },
  createdAt: "2026-12-01T10:00:00.000Z",
}));
const pageRequests: string[] = [];

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((request, response) => {
    const at = new URL(request.url ?? "/", "http://localhost");
    const json = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    if (request.headers.authorization !== "Bearer roost_test")
      return json(401, { error: { code: "unauthorized", message: "bad token" } });
    if (at.pathname === "/v1/conversations/conv_long") return json(200, conversation);
    if (at.pathname === "/v1/bots/bot_1") return json(200, { id: "bot_1", name: "scribe" });
    if (at.pathname === "/v1/conversations/conv_long/steps") {
      pageRequests.push(at.search);
      const after = Number(at.searchParams.get("after") ?? "0");
      const limit = Number(at.searchParams.get("limit") ?? "500");
      if (limit > 1000) return json(400, { error: { code: "invalid_request", message: "limit" } });
      return json(200, { steps: steps.slice(after, after + limit), lastSeq: stepCount });
    }
    return json(404, { error: { code: "not_found", message: "no such conversation" } });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  let stderr = "";
  const io: CliIo = {
    stdout: { write: (text: string) => out.push(text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: (async function* () {})(),
    env: { ROOST_URL: url, ROOST_TOKEN: "roost_test" },
  };
  const code = await runCli(argv, io);
  return { code, stdout: out.join(""), stderr };
}

describe("roost conversations show of a long conversation", () => {
  it("prints every step once, in order, page after page", async () => {
    pageRequests.length = 0;
    const result = await run(["conversations", "show", "conv_long"]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("A long one (conv_long, with scribe)");
    expect(lines.slice(1)).toEqual(steps.map((step) => `you › line ${step.seq}`));
    expect(pageRequests).toEqual([
      "?after=0&limit=1000",
      "?after=1000&limit=1000",
      "?after=2000&limit=1000",
    ]);
  });

  it("--json is one JSON document with the conversation and every step", async () => {
    const result = await run(["conversations", "show", "conv_long", "--json"]);
    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout) as {
      conversation: Api.Conversation;
      steps: Api.Step[];
    };
    expect(parsed.conversation).toEqual(conversation);
    expect(parsed.steps).toEqual(steps);
  });

  it("an unknown id says it is not in the account and how to find ids", async () => {
    const result = await run(["conversations", "show", "conv_nope"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'roost: no conversation "conv_nope" in your account (see `roost conversations list` for the ids)\n',
    );
  });
});

describe("the timeline as text", () => {
  it("renders each kind of step in one line, as roost chat does", () => {
    const base = { id: "s", turnId: "t", createdAt: "2026-12-01T10:00:00.000Z" };
    const calls = new Map<string, Api.ToolCall>();
    const model = renderStep(
      {
        ...base,
        seq: 1,
        kind: "model",
        payload: {
          text: "",
          toolCalls: [{ id: "call_1", name: "shell", input: { command: "sleep 9" } }],
          model: "demo",
          usage: { inputTokens: 1, outputTokens: 1 },
        },
      },
      "bot",
      calls,
    );
    expect(model).toBeUndefined();
    expect(
      renderStep(
        {
          ...base,
          seq: 2,
          kind: "interrupted",
          payload: {
            reason: "owner",
            stopped: [{ kind: "tool", callId: "call_1", name: "shell" }],
          },
        },
        "bot",
        calls,
      ),
    ).toBe("⏹ stopped by you (cancelled shell: sleep 9)");
    expect(
      renderStep(
        {
          ...base,
          seq: 3,
          kind: "error",
          payload: { code: "model_failed", message: "boom" },
        },
        "bot",
        calls,
      ),
    ).toBe("✗ error: boom (model_failed)");
  });

  it("ages read like people say them", () => {
    const now = Date.parse("2026-12-01T12:00:00.000Z");
    expect(formatAge("2026-12-01T11:59:30.000Z", now)).toBe("just now");
    expect(formatAge("2026-12-01T11:55:00.000Z", now)).toBe("5 min ago");
    expect(formatAge("2026-12-01T09:00:00.000Z", now)).toBe("3 h ago");
    expect(formatAge("2026-11-28T12:00:00.000Z", now)).toBe("3 d ago");
    expect(formatAge("2026-01-02T12:00:00.000Z", now)).toBe("2026-01-02");
  });
});
