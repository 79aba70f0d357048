/**
 * Web tools and attachments end to end: Roost as a child process with its real Restate and the
 * local provider's real sandbox, the model a fake OpenAI-compatible server that calls the tools.
 *   - `web_fetch` reads a page of a test host in a network namespace (a private 10.213.x.y
 *     address the operator opens with ROOST_EGRESS_ALLOW_PRIVATE, allowed by the computer's own
 *     policy), without waking the computer; a host off the allowlist is refused with the proxy's
 *     wording; the policy set through the API applies at the next call.
 *   - `web_search` goes to a fake SearXNG on 127.0.0.1.
 *   - An image `read` from the computer becomes a conversation attachment, listed and downloaded
 *     through the API; another account gets 404.
 * Needs root and iproute2 (the namespace); skipped with a printed reason otherwise, never in CI.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipReason } from "../../src/computers/local/testing/index.ts";
import {
  createNamespace,
  deleteNamespace,
  freeSubnet,
  netnsSkip,
  type Namespace,
} from "../../src/egress/testing/netns.ts";
import {
  startFakeOpenAiServer,
  type FakeOpenAiRequest,
  type FakeOpenAiServer,
} from "../../src/models/testing/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

const skip = netnsSkip("web tools e2e") ?? (await skipReason("test/e2e/web-tools.test.ts"));

const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

const testHostScript = `
require("node:http").createServer((request, response) => {
  response.setHeader("content-type", "text/html");
  response.end("<html><head><title>Outside</title></head><body><h1>Hello from the namespace</h1><p>web_fetch works.</p></body></html>");
}).listen(8080, "0.0.0.0", () => console.log("ready"));
`;

type Message = { role?: string; content?: unknown; tool_calls?: unknown[] };

/** The scripted model: the user's message says what to call; after the tools, it answers "done". */
function script(request: FakeOpenAiRequest) {
  const messages = (request.body?.messages ?? []) as Message[];
  const userText = String(messages.filter((message) => message.role === "user").at(-1)?.content);
  const lastUser = messages.map((message) => message.role).lastIndexOf("user");
  const toolsSince = messages.slice(lastUser).filter((message) => message.role === "tool").length;
  const [verb, argument = ""] = userText.split(" ");
  if (verb === "fetch" && toolsSince === 0)
    return {
      type: "completion" as const,
      toolCalls: [{ name: "web_fetch", arguments: { url: argument } }],
    };
  if (verb === "search" && toolsSince === 0)
    return {
      type: "completion" as const,
      toolCalls: [{ name: "web_search", arguments: { query: argument } }],
    };
  if (verb === "picture" && toolsSince === 0)
    return {
      type: "completion" as const,
      toolCalls: [
        {
          name: "shell",
          arguments: { command: `printf '%s' '${png.toString("base64")}' | base64 -d > shot.png` },
        },
      ],
    };
  if (verb === "picture" && toolsSince === 1)
    return {
      type: "completion" as const,
      toolCalls: [{ name: "read", arguments: { path: "shot.png" } }],
    };
  return { type: "completion" as const, textChunks: ["done"] };
}

describe.skipIf(skip !== undefined)("web tools and attachments end to end", () => {
  const suffix = randomBytes(3).toString("hex");
  const subnet = skip === undefined ? freeSubnet() : "10.213.0";
  let testHost: Namespace | undefined;
  let hostServer: ChildProcess | undefined;
  let searx: Server | undefined;
  const searches: string[] = [];
  let dataDir: string;
  let roost: RoostProcess | undefined;
  let fake: FakeOpenAiServer | undefined;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    testHost = createNamespace(`roost-wt-${suffix}`, `rwt${suffix}`, subnet, 0);
    hostServer = spawn(
      "ip",
      ["netns", "exec", testHost.name, process.execPath, "-e", testHostScript],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve) => hostServer!.stdout!.once("data", () => resolve()));
    searx = createServer((request, response) => {
      searches.push(request.url ?? "");
      response.setHeader("content-type", "application/json");
      response.end(
        JSON.stringify({
          query: "roost",
          results: [
            { url: "https://example.org/roost", title: "Roost", content: "Agents.", engine: "x" },
          ],
        }),
      );
    });
    await new Promise<void>((resolve) => searx!.listen(0, "127.0.0.1", resolve));
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-web-"));
    fake = await startFakeOpenAiServer(script);
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_MEMORY_PASS: "false",
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
        ROOST_EGRESS_ALLOW_PRIVATE: `${subnet}.0/24`,
        ROOST_WEB_SEARCH_PROVIDER: "searxng",
        ROOST_WEB_SEARCH_URL: `http://127.0.0.1:${(searx.address() as AddressInfo).port}`,
      },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
  }, 180_000);
  afterAll(async () => {
    await roost?.stop();
    await fake?.close();
    await new Promise((resolve) =>
      searx === undefined ? resolve(undefined) : searx.close(resolve),
    );
    hostServer?.kill("SIGKILL");
    if (testHost !== undefined) deleteNamespace(testHost);
    rmSync(dataDir, { recursive: true, force: true });
  });

  const toolSteps = async (conversationId: string, count: number) =>
    (await api.waitForSteps(conversationId, "reply", count, 90_000))
      .filter((step: TestStep) => step.kind === "tool")
      .map((step) => step.payload as unknown as Api.ToolPayload);

  it("web_fetch obeys the computer's policy, set through the API, and does not wake the computer", async () => {
    const bot = await api.createBot("reader");
    const conversation = await api.createConversation(bot.id);
    const url = `http://${testHost!.innerAddress}:8080/`;
    await api.send(conversation.id, `fetch ${url}`);
    const [refused] = await toolSteps(conversation.id, 1);
    expect(refused).toMatchObject({ name: "web_fetch", isError: true });
    expect(refused!.output).toMatch(
      /is not on this computer's allowlist \(policy: defaults-and-allowlist\)/,
    );

    await api.call("PUT", "/v1/computers/me/network-policy", {
      policy: { mode: "allowlist-only", allow: [`${testHost!.innerAddress}:8080`] },
    });
    await api.send(conversation.id, `fetch ${url}`);
    const [, fetched] = await toolSteps(conversation.id, 2);
    expect(fetched).toMatchObject({ name: "web_fetch", isError: false });
    expect(fetched!.output).toContain("# Hello from the namespace");
    expect(fetched!.output).toContain("untrusted outside content");
    // The metadata address stays refused whatever the policy.
    await api.send(conversation.id, "fetch http://169.254.169.254/latest/meta-data/");
    const [, , metadata] = await toolSteps(conversation.id, 3);
    expect(metadata!.output).toMatch(/link-local address; a computer can never reach those/);
    const computer = await api.call<{ state: string }>("GET", "/v1/computers/me");
    expect(computer.state).not.toBe("awake");
  });

  it("web_search asks the configured SearXNG and marks the results untrusted", async () => {
    const bot = await api.createBot("searcher");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "search roost");
    const [searched] = await toolSteps(conversation.id, 1);
    expect(searched).toMatchObject({ name: "web_search", isError: false });
    expect(searched!.output).toContain(
      "<untrusted-search-results>\n1. Roost\n   https://example.org/roost",
    );
    expect(searches).toEqual(["/search?q=roost&format=json"]);
  });

  it("an image read from the computer becomes an attachment; another account gets 404", async () => {
    const bot = await api.createBot("photographer");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "picture");
    const steps = await toolSteps(conversation.id, 1);
    const read = steps.find((step) => step.name === "read");
    expect(read).toMatchObject({ isError: false });
    const [attachment] = read!.details.attachments as Api.Attachment[];
    expect(attachment).toMatchObject({
      kind: "image",
      name: "shot.png",
      mimeType: "image/png",
      size: png.length,
    });
    const listed = await api.call<Api.AttachmentList>(
      "GET",
      `/v1/conversations/${conversation.id}/attachments`,
    );
    expect(listed.attachments).toEqual([attachment]);
    const download = await fetch(
      `${roost!.url}/v1/conversations/${conversation.id}/attachments/${attachment!.id}`,
      { headers: { authorization: `Bearer ${roost!.token()}` } },
    );
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(png);
    const { token: other } = await api.call<Api.CreatedAccount>("POST", "/v1/accounts", {
      name: "mallory",
    });
    const theirs = await fetch(`${roost!.url}/v1/conversations/${conversation.id}/attachments`, {
      headers: { authorization: `Bearer ${other}` },
    });
    expect(theirs.status).toBe(404);
  });
});
