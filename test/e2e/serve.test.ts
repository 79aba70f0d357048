/**
 * Roost as a server for other agents' clients (docs/serve.md), end to end against `roost up`
 * with its embedded Restate and the demo model (which echoes): the official MCP SDK client on
 * `/v1/mcp`, and `POST /v1/chat/completions` with the `openai` SDK and read as raw SSE. With the attacks: another account's bot, no or a bad token,
 * a huge message, a model name with path tricks, a flood.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import { rawRequest } from "../support/raw-http.ts";
import { waitFor } from "../support/wait.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

describe("Roost as a server: /v1/mcp and /v1/chat/completions (demo model)", () => {
  let dataDir: string;
  let roost: RoostProcess;
  let api: ReturnType<typeof apiClient>;
  let otherToken: string;
  /** The provider of the bot "broken", which refuses every call (400: not retried). */
  let provider: FakeOpenAiServer;
  /** Calls asking it to "hold the line" wait for this, then answer. */
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));

  beforeAll(async () => {
    provider = await startFakeOpenAiServer(async (request) => {
      if (!JSON.stringify(request.body).includes("hold the line"))
        return { type: "error", status: 400, message: "this model is broken on purpose" };
      await gate;
      return { type: "completion", textChunks: ["held", " and released"] };
    });
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-serve-"));
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_RATE_LIMIT_BURST: "60",
        ROOST_MODEL: "demo",
        ROOST_MAX_EVENT_STREAMS: "3",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: provider.baseUrl,
      },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
    await api.createBot("echo bot!");
    const other = await api.call<{ token: string }>("POST", "/v1/accounts", { name: "other" });
    otherToken = other.token;
    await apiClient(roost.url, () => otherToken).createBot("theirs");
    await apiClient(roost.url, () => otherToken).createBot("broken", "openai-compatible:fake");
  }, 120_000);
  afterAll(async () => {
    await roost?.stop();
    await provider?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function mcpClient(token: string) {
    const client = new Client({ name: "roost-e2e", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${roost.url}/v1/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    return client;
  }

  const completions = (
    body: unknown,
    token = roost.token(),
    headers: Record<string, string> = {},
  ) =>
    fetch(`${roost.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        ...headers,
      },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });

  /** The `data:` lines of an SSE answer. */
  async function sseData(response: Response): Promise<string[]> {
    const text = await response.text();
    return text
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trim());
  }

  it("the MCP SDK's client lists the caller's bots as ask_ tools and asks one", async () => {
    const client = await mcpClient(roost.token());
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["ask_echo_bot_"]);
      expect(tools[0]?.inputSchema.properties).toHaveProperty("message");
      const result = await client.callTool({
        name: "ask_echo_bot_",
        arguments: { message: "hello from mcp" },
      });
      expect(result.isError).not.toBe(true);
      expect(result.content).toEqual([
        { type: "text", text: expect.stringContaining('You said: "hello from mcp"') as string },
      ]);
    } finally {
      await client.close();
    }
  });

  it("MCP: another account sees only its own bots and cannot call ours", async () => {
    const client = await mcpClient(otherToken);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["ask_theirs", "ask_broken"]);
      const result = await client.callTool({ name: "ask_echo_bot_", arguments: { message: "x" } });
      expect(result.isError).toBe(true);
      // A bot whose turn fails answers a tool error saying why.
      const failed = await client.callTool({ name: "ask_broken", arguments: { message: "x" } });
      expect(failed.isError).toBe(true);
      expect(JSON.stringify(failed.content)).toContain("model_error");
    } finally {
      await client.close();
    }
  });

  it("MCP: no token or a bad token is 401", async () => {
    for (const authorization of [undefined, "Bearer not-a-token"]) {
      const response = await fetch(`${roost.url}/v1/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(authorization === undefined ? {} : { authorization }),
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(response.status).toBe(401);
    }
    await expect(mcpClient("not-a-token")).rejects.toThrow();
  });

  it("MCP: a message over the limit is refused by the tool's schema", async () => {
    const client = await mcpClient(roost.token());
    try {
      const result = await client.callTool({
        name: "ask_echo_bot_",
        arguments: { message: "x".repeat(100_001) },
      });
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toContain("100000");
    } finally {
      await client.close();
    }
  });

  it("streams the reply as chat.completion.chunk events ending with [DONE]", async () => {
    const response = await completions({
      model: "echo bot!",
      stream: true,
      messages: [
        { role: "system", content: "ignored" },
        { role: "user", content: "an earlier turn the client replays" },
        { role: "assistant", content: "an earlier answer" },
        { role: "user", content: [{ type: "text", text: "stream me" }] },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const conversationId = response.headers.get("x-roost-conversation");
    expect(conversationId).toMatch(/\S/);
    const data = await sseData(response);
    expect(data.at(-1)).toBe("[DONE]");
    const chunks = data.slice(0, -1).map(
      (line) =>
        JSON.parse(line) as {
          object: string;
          model: string;
          choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[];
        },
    );
    expect(chunks.every((chunk) => chunk.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe("stop");
    expect(chunks.length).toBeGreaterThan(3); // the demo model streams in pieces
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("");
    expect(text).toContain('You said: "stream me"');
    // OAI1: only the last user message reached the bot, in a new conversation.
    const steps = await api.steps(conversationId!);
    const messages = steps.filter((step) => step.kind === "message");
    expect(messages.map((step) => step.payload.text)).toEqual(["stream me"]);
  });

  it("answers one chat.completion without stream, and continues a conversation by header", async () => {
    const first = await completions({
      model: "echo bot!",
      messages: [{ role: "user", content: "first" }],
    });
    expect(first.status).toBe(200);
    const conversationId = first.headers.get("x-roost-conversation")!;
    const body = (await first.json()) as {
      object: string;
      choices: { message: { role: string; content: string }; finish_reason: string }[];
      usage: { total_tokens: number };
    };
    expect(body.object).toBe("chat.completion");
    expect(body.choices[0]?.message).toMatchObject({ role: "assistant" });
    expect(body.choices[0]?.message.content).toContain('You said: "first"');
    expect(body.choices[0]?.finish_reason).toBe("stop");
    expect(typeof body.usage.total_tokens).toBe("number");

    const second = await completions(
      { model: "echo bot!", messages: [{ role: "user", content: "second" }] },
      roost.token(),
      { "x-roost-conversation": conversationId },
    );
    expect(second.status).toBe(200);
    expect(second.headers.get("x-roost-conversation")).toBe(conversationId);
    const messages = (await api.steps(conversationId)).filter((step) => step.kind === "message");
    expect(messages.map((step) => step.payload.text)).toEqual(["first", "second"]);
  });

  it("the openai SDK talks to a bot, streaming and not, and lists the bots as models", async () => {
    const openai = new OpenAI({ baseURL: `${roost.url}/v1`, apiKey: roost.token(), maxRetries: 0 });
    const models = await openai.models.list();
    expect(models.data.map((model) => model.id)).toEqual(["echo bot!"]);
    const completion = await openai.chat.completions.create({
      model: "echo bot!",
      messages: [{ role: "user", content: "via the sdk" }],
    });
    expect(completion.choices[0]?.message.content).toContain('You said: "via the sdk"');
    const stream = await openai.chat.completions.create({
      model: "echo bot!",
      stream: true,
      messages: [{ role: "user", content: "streamed via the sdk" }],
    });
    let text = "";
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? "";
    }
    expect(chunks).toBeGreaterThan(3);
    expect(text).toContain('You said: "streamed via the sdk"');
    // Errors come back as the SDK's typed errors.
    await expect(
      openai.chat.completions.create({
        model: "theirs",
        messages: [{ role: "user", content: "hi" }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const stranger = new OpenAI({ baseURL: `${roost.url}/v1`, apiKey: "nope", maxRetries: 0 });
    await expect(stranger.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("lists the caller's bots as models", async () => {
    const response = await fetch(`${roost.url}/v1/models`, {
      headers: { authorization: `Bearer ${otherToken}` },
    });
    const body = (await response.json()) as { object: string; data: { id: string }[] };
    expect(body.object).toBe("list");
    expect(body.data.map((model) => model.id)).toEqual(["theirs", "broken"]);
  });

  it("another account's bot, an unknown one and path tricks are 404 in OpenAI's error shape", async () => {
    for (const model of [
      "theirs",
      "no such bot",
      "../bots/theirs",
      "%2e%2e/theirs",
      "theirs\u0000",
    ]) {
      const response = await completions({ model, messages: [{ role: "user", content: "hi" }] });
      expect(response.status, model).toBe(404);
      const body = (await response.json()) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ type: "not_found_error", code: "not_found" });
      expect(body.error.message).toEqual(expect.any(String));
    }
    // Their conversation cannot be continued by naming it.
    const theirs = await completions(
      { model: "theirs", messages: [{ role: "user", content: "mine" }] },
      otherToken,
    );
    const theirConversation = theirs.headers.get("x-roost-conversation")!;
    await theirs.text();
    const response = await completions(
      { model: "echo bot!", messages: [{ role: "user", content: "hi" }] },
      roost.token(),
      { "x-roost-conversation": theirConversation },
    );
    expect(response.status).toBe(404);
  });

  it("a bot's failed turn is 502, or an error event before [DONE] in a stream", async () => {
    const ask = { model: "broken", messages: [{ role: "user", content: "hi" }] };
    const plain = await completions(ask, otherToken);
    expect(plain.status).toBe(502);
    expect(((await plain.json()) as { error: Record<string, unknown> }).error).toMatchObject({
      type: "api_error",
      code: "model_error",
    });
    const streamed = await completions({ ...ask, stream: true }, otherToken);
    expect(streamed.status).toBe(200);
    const data = await sseData(streamed);
    expect(data.at(-1)).toBe("[DONE]");
    expect(JSON.parse(data.at(-2)!)).toMatchObject({
      error: { type: "api_error", code: "model_error" },
    });
    const sdk = new OpenAI({ baseURL: `${roost.url}/v1`, apiKey: otherToken, maxRetries: 0 });
    const stream = await sdk.chat.completions.create({
      model: "broken",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    await expect(
      (async () => {
        for await (const _chunk of stream);
      })(),
    ).rejects.toThrow(/model_error|broken/);
  });

  it("no token or a bad one is 401 with an OpenAI error type", async () => {
    const none = await fetch(`${roost.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "echo bot!", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { type: string } }).error.type).toBe(
      "authentication_error",
    );
    const bad = await completions(
      { model: "echo bot!", messages: [{ role: "user", content: "hi" }] },
      "roost_not-a-token",
    );
    expect(bad.status).toBe(401);
  });

  it("refuses a huge message with the limit, and a body over the API's limit with 413", async () => {
    const huge = await completions({
      model: "echo bot!",
      messages: [{ role: "user", content: "x".repeat(100_001) }],
    });
    expect(huge.status).toBe(400);
    expect(((await huge.json()) as { error: { message: string } }).error.message).toContain(
      "at most 100000",
    );
    // Raw, so the early answer is read even if the server stops reading the upload.
    const tooBig = await rawRequest(`${roost.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${roost.token()}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "echo bot!",
        messages: [{ role: "user", content: "x".repeat(2_000_000) }],
      }),
    });
    expect(tooBig.status).toBe(413);
    expect(tooBig.json.error?.message).toContain("bytes");
    const noUser = await completions({
      model: "echo bot!",
      messages: [{ role: "system", content: "no user" }],
    });
    expect(noUser.status).toBe(400);
    const image = await completions({
      model: "echo bot!",
      messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }],
    });
    expect(image.status).toBe(400);
    expect(await image.text()).toContain("only text content");
  });

  it("a flood meets the API's rate limit (429, rate_limit_error)", async () => {
    const flood = await api.call<{ token: string }>("POST", "/v1/accounts/me/tokens", {
      name: "flood",
    });
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        completions(
          { model: "no such bot", messages: [{ role: "user", content: "hi" }] },
          flood.token,
        ),
      ),
    );
    const limited = answers.filter((response) => response.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    const body = (await limited[0]!.json()) as { error: { type: string } };
    expect(body.error.type).toBe("rate_limit_error");
    expect(limited[0]!.headers.get("retry-after")).toMatch(/^\d+$/);
    await Promise.all(
      answers.filter((response) => !response.bodyUsed).map((response) => response.text()),
    );
  });

  it("asks waiting for their reply hold the account's streams: past the limit, 429", async () => {
    const hold = { model: "broken", messages: [{ role: "user", content: "hold the line" }] };
    const held = [1, 2, 3].map(() => completions(hold, otherToken));
    await waitFor(
      () =>
        provider.requests.filter((request) =>
          JSON.stringify(request.body).includes("hold the line"),
        ).length >= 3 || undefined,
      { timeoutMs: 30_000, what: "three asks waiting on the model" },
    );
    const refused = await completions(hold, otherToken);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe(
      "rate_limit_error",
    );
    // Another account is not affected.
    const mine = await completions({
      model: "echo bot!",
      messages: [{ role: "user", content: "ok" }],
    });
    expect(mine.status).toBe(200);
    await mine.text();
    open();
    for (const answer of await Promise.all(held)) {
      expect(answer.status).toBe(200);
      const body = (await answer.json()) as { choices: { message: { content: string } }[] };
      expect(body.choices[0]?.message.content).toBe("held and released");
    }
    // The slots are given back.
    const after = await completions(
      { model: "theirs", messages: [{ role: "user", content: "again" }] },
      otherToken,
    );
    expect(after.status).toBe(200);
    await after.text();
  });
});
