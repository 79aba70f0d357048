/**
 * Uploads end to end (docs/uploads.md), against a real Roost with a real computer (the `local`
 * provider where this host can run it, else `process`): a file uploaded and attached to a message
 * appears at /workspace/attachments/<conversation>/ on the computer, the demo model is told its
 * path, and a symbolic link the bot left at /workspace/attachments cannot lead the copy outside
 * (UPW1): the copy fails, the model is told, nothing is written through the link. And with a
 * fake OpenAI-compatible provider that checks image parts as OpenAI does: an attached image
 * reaches a model that reads images as an image part of the user message, and a text-only model
 * gets a note naming it instead (HIS5, MED1).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipReason } from "../../src/computers/local/testing/index.ts";
import {
  startFakeOpenAiServer,
  type FakeOpenAiRequest,
  type FakeOpenAiServer,
} from "../../src/models/testing/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

const local = await skipReason("test/e2e/uploads.test.ts (local provider)");
const providerName = local === undefined ? "local" : "process";

describe(`uploads end to end (${providerName} provider)`, () => {
  let dataDir: string;
  let roost: RoostProcess;
  let api: ReturnType<typeof apiClient>;
  let conversationId: string;

  const upload = async (name: string, type: string, body: string) => {
    const response = await fetch(
      `${roost.url}/v1/conversations/${conversationId}/uploads?name=${encodeURIComponent(name)}`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${roost.token()}`, "content-type": type },
        body,
      },
    );
    expect(response.status).toBe(201);
    return (await response.json()) as { id: string; path: string };
  };

  /** Sends a message (with attachments) and waits for its turn's reply; the turn's steps. */
  const turn = async (text: string, attachments: string[] = []): Promise<TestStep[]> => {
    const before = (await api.steps(conversationId)).length;
    const replies = (await api.steps(conversationId)).filter(
      (step) => step.kind === "reply",
    ).length;
    await api.call("POST", `/v1/conversations/${conversationId}/messages`, {
      text,
      clientMessageId: randomUUID(),
      attachments,
    });
    const steps = await api.waitForSteps(conversationId, "reply", replies + 1, 90_000);
    return steps.slice(before);
  };
  const replyOf = (steps: TestStep[]) =>
    String(steps.filter((step) => step.kind === "reply").at(-1)?.payload.text);
  const stdoutOf = (steps: TestStep[]) =>
    String(
      (steps.filter((step) => step.kind === "tool").at(-1)?.payload.details as { stdout: string })
        .stdout,
    );

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), `roost-e2e-uploads-`));
    roost = await createRoostProcess({
      dataDir,
      env: { ROOST_COMPUTER_PROVIDER: providerName, ROOST_FOLLOW_UP_WINDOW_MS: "200" },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("uploads");
    // The setup removes a link with `rm`, which the default policy would send for approval.
    await api.call("PUT", `/v1/bots/${bot.id}/tool-policy`, {
      rules: [],
      useDefaults: false,
      reviewModel: null,
    });
    conversationId = (await api.createConversation(bot.id)).id;
  }, 120_000);
  afterAll(async () => {
    await roost?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("a link at /workspace/attachments pointing outside: the copy fails, the model is told, nothing escapes", async () => {
    const setup = await turn(
      "$ mkdir -p /tmp/outside && ln -sfn /tmp/outside /workspace/attachments && ls -l /workspace/attachments",
    );
    expect(stdoutOf(setup)).toContain("/tmp/outside");
    const trap = await upload("trap.txt", "text/plain", "must not escape");
    const refused = await turn("", [trap.id]);
    expect(replyOf(refused)).toContain("could not be copied into the computer");
    expect(replyOf(refused)).toContain(trap.path);
    const outside = await turn("$ ls -A /tmp/outside; echo end");
    expect(stdoutOf(outside).trim()).toBe("end");
    await turn("$ rm /workspace/attachments");
  }, 180_000);

  it("an attached file appears at /workspace/attachments/<conversation>/ and the model reads its path", async () => {
    const notes = await upload("notes.txt", "text/plain", "hello from an upload\n");
    expect(notes.path).toBe(`/workspace/attachments/${conversationId}/notes.txt`);
    // The demo model is told where the file is: with no command, it says the path back.
    const told = await turn("", [notes.id]);
    expect(replyOf(told)).toContain(`You attached: ${notes.path} (text/plain, 21 B)`);
    const message = told.find((step) => step.kind === "message");
    expect(message?.payload.attachments).toEqual([
      { id: notes.id, name: "notes.txt", mimeType: "text/plain", size: 21, path: notes.path },
    ]);
    const listed = await turn(`$ cat ${notes.path}; ls /workspace/attachments/${conversationId}/`);
    expect(stdoutOf(listed)).toBe("hello from an upload\nnotes.txt\n");
    // A command sent with a file runs after it is copied (LOOP14: the copy comes first).
    const more = await upload("more.csv", "text/csv", "a,b\n1,2\n");
    const withCommand = await turn(`$ cat ${more.path}`, [more.id]);
    expect(stdoutOf(withCommand)).toBe("a,b\n1,2\n");
  }, 180_000);
});

// A 2x2 red PNG.
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==",
  "base64",
);

describe("attached images and models (fake OpenAI-compatible provider)", () => {
  let dataDir: string;
  let roost: RoostProcess;
  let fake: FakeOpenAiServer;
  let api: ReturnType<typeof apiClient>;
  const requests: FakeOpenAiRequest[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-upload-images-"));
    fake = await startFakeOpenAiServer((request) => {
      requests.push(request);
      return { type: "completion", textChunks: ["seen"] };
    });
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_COMPUTER_PROVIDER: "process",
        ROOST_MODEL: "openai-compatible:plain-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_MEMORY_PASS: "false",
      },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
  }, 120_000);
  afterAll(async () => {
    await roost?.stop();
    await fake?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Uploads the PNG into a new conversation of a bot on `model`, asks, and answers its request. */
  async function ask(model: string) {
    const bot = await api.createBot(`images-${model}`, model);
    const conversationId = (await api.createConversation(bot.id)).id;
    const response = await fetch(
      `${roost.url}/v1/conversations/${conversationId}/uploads?name=red.png`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${roost.token()}`, "content-type": "image/png" },
        body: png,
      },
    );
    const upload = (await response.json()) as { id: string; path: string };
    const before = requests.length;
    await api.call("POST", `/v1/conversations/${conversationId}/messages`, {
      text: "what is this?",
      clientMessageId: randomUUID(),
      attachments: [upload.id],
    });
    await api.waitForSteps(conversationId, "reply", 1, 60_000);
    const request = requests
      .slice(before)
      .find((candidate) => candidate.body?.model === model.split(":")[1]);
    const user = (request?.body?.messages ?? [])
      .filter((message) => message.role === "user")
      .at(-1);
    return { user, path: upload.path };
  }

  it("a model that reads images gets the image as an image part, with the file's path", async () => {
    const { user, path } = await ask("openai-compatible:llava-test");
    expect(user?.content).toEqual([
      {
        type: "text",
        text: `[Attached files, copied into the computer: ${path} (image/png, ${png.length} B)]\nwhat is this?`,
      },
      { type: "image_url", image_url: { url: `data:image/png;base64,${png.toString("base64")}` } },
    ]);
  }, 120_000);

  it("a text-only model gets a note naming the image instead", async () => {
    const { user, path } = await ask("openai-compatible:plain-model");
    expect(user?.content).toBe(
      `[Attached files, copied into the computer: ${path} (image/png, ${png.length} B)]\nwhat is this?\n[The message also attached 1 image (image/png, ${png.length} B); this model does not accept images, so they are not shown (their files are on the computer).]`,
    );
  }, 120_000);
});
