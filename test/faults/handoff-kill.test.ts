/**
 * kill -9 while a bot waits for a person to take over its screen (issue 13 §2): the bot calls
 * `ask_user_to_take_over`, its turn parks durably and the owner is notified with a link to the
 * live view; the whole platform (Roost and its restate-server) is SIGKILLed; after the restart
 * the turn still waits, and the owner's hand-back resumes it with the tool's answer (HOF1–HOF3).
 * The model is a fake OpenAI-compatible server in this process, which counts its requests.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../../src/models/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, killPlatform, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

describe("faults: a bot waiting for a person to take over its screen", () => {
  let dataDir: string | undefined;
  let roost: RoostProcess | undefined;
  let fake: FakeOpenAiServer | undefined;
  afterEach(async () => {
    await roost?.stop();
    await fake?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    roost = undefined;
    fake = undefined;
    dataDir = undefined;
  });

  it("kill -9 while parked: after the restart it still waits, and the hand-back resumes it once", async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-handoff-fault-"));
    fake = await startFakeOpenAiServer((_request, index) =>
      index === 0
        ? {
            type: "completion",
            toolCalls: [
              { name: "ask_user_to_take_over", arguments: { reason: "Log in to example.com" } },
            ],
          }
        : { type: "completion", textChunks: ["done after the hand-back"] },
    );
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_MODEL: "openai-compatible:fake-model",
        ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_MEMORY_PASS: "off",
        ROOST_MODEL_TITLES: "off", // nor the title request after the first reply
      },
    });
    await roost.start();
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("browser");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "log in for me");
    type Notifications = {
      notifications: { kind: string; title: string; body: string; subjectId: string | null }[];
    };
    const notified = await waitFor(
      async () =>
        (await api.call<Notifications>("GET", "/v1/notifications")).notifications.find(
          (each) => each.kind === "needs_input",
        ),
      { what: "the owner to be notified of the handoff" },
    );
    expect(notified.title).toBe("browser asks you to take over its screen");
    expect(notified.body).toContain("Log in to example.com");
    expect(notified.body).toContain(`/c/${conversation.id}?screen=s-${bot.id}`);

    // Dead while parked: after the restart nothing fired, the turn still waits.
    await killPlatform(roost);
    await roost.start();
    expect(fake.requests).toHaveLength(1);

    // The owner hands back (nobody took control: the hand-back alone resumes the bot).
    const handBack = (token: string) =>
      fetch(`${roost!.url}/v1/computers/me/screens/s-${bot.id}/control`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${token}` },
      });
    const answer = await handBack(roost.token());
    expect(answer.status).toBe(204);
    const steps = await api.waitForSteps(conversation.id, "reply", 1, 60_000);
    expect(steps.at(-1)!.payload.text).toBe("done after the hand-back");
    const tool = steps.find((step) => step.kind === "tool");
    expect(JSON.stringify(tool?.payload)).toContain("The person handed the screen back");
    expect(fake.requests).toHaveLength(2);
    // A second hand-back finds nobody waiting.
    expect((await handBack(roost.token())).status).toBe(404);
    await waitFor(
      async () =>
        (await api.call<{ state: string }>("GET", `/v1/conversations/${conversation.id}`)).state ===
        "idle",
    );
  });
});
