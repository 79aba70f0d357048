/**
 * End to end against the real thing: `roost up` as a child process with its embedded Restate
 * server, driven only through the HTTP API.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { connect } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { openEventStream } from "../support/sse.ts";

describe("a conversation end to end (demo model, embedded Restate)", () => {
  let dataDir: string;
  let roost: RoostProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-"));
    // The default 2-minute follow-up window: a follow-up that failed to wake the loop would time out.
    roost = await createRoostProcess({ dataDir });
    await roost.start();
  });
  afterAll(async () => {
    await roost?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("writes the admin token with mode 0600 and says where", () => {
    expect(statSync(join(dataDir, "admin-token")).mode & 0o777).toBe(0o600);
    expect(roost.output()).toContain(join(dataDir, "admin-token"));
  });

  it("the loop's service endpoint refuses a request Restate did not sign (RI1)", async () => {
    // Anyone on the host can reach 127.0.0.1; only the embedded engine holds the signing key.
    const session = connect(`http://127.0.0.1:${roost.servicePort}`);
    const status = (path: string, method: string) =>
      new Promise<number>((resolve, reject) => {
        const request = session.request({
          ":method": method,
          ":path": path,
          "content-type": "application/vnd.restate.invocation.v5",
        });
        request.on("response", (headers) => resolve(Number(headers[":status"])));
        request.on("error", reject);
        request.end();
      });
    try {
      expect(await status("/discover", "GET")).toBe(401);
      expect(await status("/invoke/conversation/takeInbox", "POST")).toBe(401);
      expect(await status("/health", "GET")).toBe(200);
    } finally {
      session.close();
    }
    expect(statSync(join(dataDir, "request-identity.pem")).mode & 0o777).toBe(0o600);
  });

  it("POSTs a message and reads the streamed reply from the events stream", async () => {
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("echo");
    const conversation = await api.createConversation(bot.id);
    const stream = await openEventStream(
      `${roost.url}/v1/conversations/${conversation.id}/events`,
      roost.token(),
    );
    try {
      await stream.next((event) => event.event === "hello");
      const ack = await api.send(conversation.id, "hello there");
      expect(ack.seq).toBe(1);
      await stream.next(
        (event) => event.event === "turn" && (event.data as { state: string }).state === "idle",
      );
      const deltas = stream.events
        .filter((event) => event.event === "delta")
        .map((event) => (event.data as { text: string }).text);
      expect(deltas.length).toBeGreaterThan(1);
      const streamed = deltas.join("");
      expect(streamed).toContain('You said: "hello there"');
      const steps = await api.steps(conversation.id);
      expect(steps.map((step) => step.kind)).toEqual(["message", "reply"]);
      expect(steps[1]!.payload.text).toBe(streamed);
      expect(steps[1]!.payload.model).toBe("demo");
      const changed = stream.events
        .filter((event) => event.event === "changed")
        .map((event) => (event.data as { seq: number }).seq);
      expect(changed).toEqual([1, 2]);
    } finally {
      await stream.close();
    }
  });

  it("a repeated clientMessageId yields one message and one reply", async () => {
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("dedupe");
    const conversation = await api.createConversation(bot.id);
    const [first, second] = await Promise.all([
      api.send(conversation.id, "only once", "client-1"),
      api.send(conversation.id, "only once", "client-1"),
    ]);
    expect(second.messageId).toBe(first.messageId);
    expect(second.seq).toBe(first.seq);
    const third = await api.send(conversation.id, "only once", "client-1");
    expect(third).toMatchObject({ messageId: first.messageId, seq: first.seq, duplicate: true });
    const steps = await api.waitForSteps(conversation.id, "reply");
    expect(steps.filter((step) => step.kind === "message")).toHaveLength(1);
    expect(steps.filter((step) => step.kind === "reply")).toHaveLength(1);
  });

  it("batches messages sent together and answers follow-ups in the same loop", async () => {
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("batcher");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "first");
    await api.waitForSteps(conversation.id, "reply");
    await api.send(conversation.id, "second");
    const steps = await api.waitForSteps(conversation.id, "reply", 2);
    expect(steps.map((step) => step.kind)).toEqual(["message", "reply", "message", "reply"]);
    expect(steps.map((step) => step.seq)).toEqual([1, 2, 3, 4]);
  });
});

describe("the real provider path end to end (fake OpenAI-compatible server on 127.0.0.1)", () => {
  let dataDir: string;
  let roost: RoostProcess;
  let fake: FakeOpenAiServer;

  beforeAll(async () => {
    fake = await startFakeOpenAiServer(() => ({
      type: "completion",
      textChunks: ["Hello", " from", " the fake"],
    }));
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-provider-"));
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
      },
    });
    await roost.start();
  });
  afterAll(async () => {
    await roost?.stop();
    await fake?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("streams the provider's reply and records its token usage", async () => {
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("real");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "hi");
    const steps = await api.waitForSteps(conversation.id, "reply");
    const reply = steps.find((step) => step.kind === "reply")!;
    expect(reply.payload).toMatchObject({
      text: "Hello from the fake",
      model: "openai-compatible:fake-model",
      usage: { inputTokens: 10, outputTokens: 5 },
    });
    const body = fake.requests[0]!.body as { messages: { role: string; content: unknown }[] };
    expect(JSON.stringify(body.messages)).toContain("hi");
    expect(body.messages[0]!.role).toBe("system");
  });
});
