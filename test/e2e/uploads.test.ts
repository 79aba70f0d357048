/**
 * Uploads end to end (docs/uploads.md), against a real Roost with a real computer (the `local`
 * provider where this host can run it, else `process`): a file uploaded and attached to a message
 * appears at /workspace/attachments/<conversation>/ on the computer, the demo model is told its
 * path, and a symbolic link the bot left at /workspace/attachments cannot lead the copy outside
 * (UPW1): the copy fails, the model is told, nothing is written through the link.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipReason } from "../../src/computers/local/testing/index.ts";
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
