/**
 * The computer end to end: a message asks for a shell command, the loop routes it through the
 * control plane and the gateway to the worker on the computer, and the reply shows its output.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { openEventStream } from "../support/sse.ts";
import { waitFor } from "../support/wait.ts";

const provider = testComputerProvider;

describe(`the computer end to end (${provider} provider, demo model)`, () => {
  let dataDir: string;
  let roost: RoostProcess;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-computer-"));
    roost = await createRoostProcess({
      dataDir,
      env: { ROOST_COMPUTER_PROVIDER: provider, ROOST_FOLLOW_UP_WINDOW_MS: "200" },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
  });
  afterAll(async () => {
    await roost?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function turn(conversationId: string, text: string) {
    const before = (await api.steps(conversationId)).filter(
      (step) => step.kind === "reply" || step.kind === "error",
    ).length;
    await api.send(conversationId, text);
    const steps = await api.waitForSteps(conversationId, "reply", before + 1, 90_000);
    return steps;
  }

  it("runs `echo hi > f && cat f` on the computer and shows `hi`; then `read f` works", async () => {
    const bot = await api.createBot("worker");
    const conversation = await api.createConversation(bot.id);
    const stream = await openEventStream(
      `${roost.url}/v1/conversations/${conversation.id}/events`,
      roost.token(),
    );
    try {
      const steps = await turn(conversation.id, "$ echo hi > f && cat f");
      const tool = steps.find((step) => step.kind === "tool")!;
      expect(tool.payload).toMatchObject({
        name: "shell",
        isError: false,
        details: { exitCode: 0, stdout: "hi\n" },
      });
      const reply = steps.filter((step) => step.kind === "reply").at(-1)!;
      expect(reply.payload.text).toContain("hi");
      // The computer woke for the call, and said so on the events stream.
      await stream.next(
        (event) =>
          event.event === "computer" && (event.data as { state: string }).state === "awake",
      );
      expect(stream.events.some((event) => event.event === "tool-output")).toBe(true);

      const afterRead = await turn(conversation.id, "read f");
      const read = afterRead.filter((step) => step.kind === "tool").at(-1)!;
      expect(read.payload).toMatchObject({ name: "read", isError: false });
      expect(String(read.payload.output)).toContain("hi");
    } finally {
      await stream.close();
    }
  });

  it("exercises every computer tool through the demo model", async () => {
    const bot = await api.createBot("all-tools");
    const conversation = await api.createConversation(bot.id);
    const lastTool = async (text: string) =>
      (await turn(conversation.id, text)).filter((step) => step.kind === "tool").at(-1)!;
    expect((await lastTool("write notes/todo.txt buy milk")).payload).toMatchObject({
      name: "write",
      isError: false,
    });
    expect((await lastTool("edit notes/todo.txt milk => bread")).payload).toMatchObject({
      name: "edit",
      isError: false,
    });
    expect(String((await lastTool("read notes/todo.txt")).payload.output)).toContain("buy bread");
    expect(String((await lastTool("ls notes")).payload.output)).toContain("todo.txt");
    expect(String((await lastTool("glob **/*.txt")).payload.output)).toContain("notes/todo.txt");
    const started = await lastTool("bg sleep 0.2; echo done-in-background");
    const jobId = String((started.payload.details as { jobId: string }).jobId);
    expect(jobId).not.toBe("");
    await waitFor(
      async () => {
        const status = await lastTool(`job ${jobId}`);
        return String(status.payload.output).includes("done-in-background");
      },
      { timeoutMs: 30_000, what: "the background job's output" },
    );
  });

  it("reports the computer's state and wakes and sleeps it on request; files survive, processes do not", async () => {
    const bot = await api.createBot("sleeper");
    const conversation = await api.createConversation(bot.id);
    await turn(conversation.id, "$ echo persistent > keep.txt; (sleep 6017 &) ; echo started");
    expect((await api.call<{ state: string }>("GET", "/v1/computers/me")).state).toBe("awake");
    const slept = await api.sleepComputer();
    expect(slept.state).toBe("asleep");

    // Asleep + a non-waking tool → the exact error text.
    const listed = (await turn(conversation.id, "ls"))
      .filter((step) => step.kind === "tool")
      .at(-1)!;
    expect(listed.payload.output).toBe(
      "The computer is asleep. Use Shell or Read to wake it, then try again.",
    );
    expect((await api.call<{ state: string }>("GET", "/v1/computers/me")).state).toBe("asleep");

    // Asleep + Shell → wakes and runs.
    const after = (
      await turn(conversation.id, "$ cat keep.txt; pgrep -f 'slee[p] 6017' || echo no-sleepers")
    )
      .filter((step) => step.kind === "tool")
      .at(-1)!;
    expect(after.payload.details).toMatchObject({ exitCode: 0 });
    expect(String((after.payload.details as { stdout: string }).stdout)).toBe(
      "persistent\nno-sleepers\n",
    );

    const files = await api.call<{ entries: { name: string }[] }>(
      "GET",
      "/v1/computers/me/files?path=/workspace",
    );
    expect(files.entries.map((entry) => entry.name)).toContain("keep.txt");
  });

  it("restores the disk from the blob store when the local copy is gone (a move to another host)", async () => {
    const bot = await api.createBot("mover");
    const conversation = await api.createConversation(bot.id);
    await turn(
      conversation.id,
      "$ mkdir -p project && echo moved-with-me > project/notes.txt && echo saved > ~/home-file",
    );
    const computer = await api.sleepComputer();
    expect(computer.state).toBe("asleep");
    // The sleep archived the disk to the blob store; now lose the local copy entirely.
    rmSync(join(dataDir, "computers", computer.id), { recursive: true, force: true });
    const steps = await turn(conversation.id, "$ cat project/notes.txt ~/home-file");
    const tool = steps.filter((step) => step.kind === "tool").at(-1)!;
    expect(tool.payload.details).toMatchObject({ exitCode: 0, stdout: "moved-with-me\nsaved\n" });
    expect(roost.output()).toMatch(/restored snapshot generation \d+/);
  });
});
