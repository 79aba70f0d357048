import { describe, expect, it } from "vitest";
import { createMemoryDurable, type MemoryDurable } from "../engine/testing/index.ts";
import type { Store } from "../store/index.ts";
import { RoostError } from "../errors/index.ts";
import { createRedactor, createSecretRedaction } from "../secrets/index.ts";
import {
  asleepMessage,
  createComputerTools,
  notConnectedMessage,
  redactedWriteMessage,
  type ComputerSecrets,
} from "./computer-tools.ts";
import { createToolRouter } from "./router.ts";
import type { ToolCallRequest, ToolRouter } from "./types.ts";

const turn = {
  accountId: "acct_1",
  botId: "bot_1",
  conversationId: "conv_1",
  turnId: "turn_1",
};

const store = {
  ensureComputer: async () => ({
    id: "cmp_1",
    accountId: "acct_1",
    provider: "process",
    createdAt: 0,
  }),
} as unknown as Store;

const completed = {
  kind: "completed",
  exitCode: 0,
  timedOut: false,
  durationMs: 5,
  stdout: "hi\n",
  stderr: "",
  stdoutBytes: 3,
  stderrBytes: 0,
  stdoutTruncated: false,
  stderrTruncated: false,
};

interface Setup {
  router: ToolRouter;
  durable: MemoryDurable;
  calls: unknown[];
  request: (callId?: string, signal?: AbortSignal) => ToolCallRequest;
}

/** The computer tools against a test control plane (a memory object) and a test gateway. */
function setup(
  state: string,
  options: {
    ensureAwake?: (input: { allowWake: boolean }) => Promise<unknown>;
    gatewayCall?: (
      request: unknown,
      signal: AbortSignal | undefined,
      onChunk?: (chunk: { stream: "stdout" | "stderr"; data: string }) => void,
    ) => Promise<unknown>;
    secrets?: ComputerSecrets & Parameters<typeof createSecretRedaction>[0];
    published?: unknown[];
  } = {},
): Setup {
  const calls: unknown[] = [];
  const durable = createMemoryDurable({
    objects: {
      computer: async (key, handler, input) => {
        calls.push([handler, key, input]);
        if (handler !== "ensureAwake") return null;
        if (options.ensureAwake !== undefined)
          return options.ensureAwake(input as { allowWake: boolean });
        const { allowWake } = input as { allowWake: boolean };
        return {
          id: key,
          state: allowWake ? "awake" : state,
          lastActiveAt: null,
          holders: 0,
          failure: null,
        };
      },
    },
  });
  const gateway = {
    call: async (
      computerId: string,
      request: unknown,
      callOptions: {
        signal?: AbortSignal;
        onChunk?: (chunk: { stream: "stdout" | "stderr"; data: string }) => void;
      },
    ) => {
      calls.push(["gateway", computerId, request]);
      if (options.gatewayCall !== undefined)
        return options.gatewayCall(request, callOptions.signal, callOptions.onChunk);
      return { ok: true, output: completed };
    },
  };
  const events = {
    publish: (event: unknown) => options.published?.push(event),
  };
  const router = createToolRouter({
    ...(options.secrets === undefined ? {} : createSecretRedaction(options.secrets)),
    sources: [
      createComputerTools({
        store,
        gateway: gateway as never,
        events: events as never,
        providerKind: "process",
        ...(options.secrets === undefined ? {} : { secrets: options.secrets }),
      }),
    ],
  });
  return {
    router,
    durable,
    calls,
    request: (callId = "call_abc", signal = new AbortController().signal) => ({
      ...turn,
      callId,
      durable,
      signal,
    }),
  };
}

describe("computer tools", () => {
  it("describes every tool in at most 4,000 characters (description + schema)", async () => {
    const specs = await setup("awake").router.specs(turn);
    expect(specs.map((spec) => spec.name).sort()).toEqual([
      "browser",
      "computer",
      "edit",
      "glob",
      "list",
      "read",
      "shell",
      "shell_status",
      "write",
    ]);
    for (const spec of specs)
      expect(spec.description.length + JSON.stringify(spec.inputSchema).length).toBeLessThanOrEqual(
        4000,
      );
  });

  it("browser: the model's spec has no record field; the server's record and the bot id reach the worker; a screenshot becomes an image part", async () => {
    const screenshot = {
      action: "screenshot",
      url: "http://127.0.0.1:8000/",
      title: "T",
      text: "A screenshot of the page's viewport (1280x720).",
      truncated: false,
      image: { mimeType: "image/png", data: "iVBORw0KGgo=", width: 1280, height: 720 },
      downloads: [{ path: "/workspace/downloads/a.pdf", name: "a.pdf", size: 3 }],
    };
    const { router, request, calls } = setup("asleep", {
      gatewayCall: async () => ({ ok: true, output: screenshot }),
    });
    const spec = (await router.specs(turn)).find((entry) => entry.name === "browser")!;
    expect(Object.keys(spec.inputSchema.properties as object)).not.toContain("record");
    const refused = await router.execute(
      "browser",
      { action: "navigate", url: "javascript:alert(1)" },
      request(),
    );
    expect(refused).toMatchObject({ isError: true });
    expect(refused.output).toMatch(/http:\/\/ or https:\/\//);
    const result = await router.execute(
      "browser",
      { action: "screenshot", record: true },
      request("call_shot"),
    );
    expect(result.media).toEqual([{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }]);
    expect(result.output).toContain("/workspace/downloads/a.pdf");
    expect(result.details).toMatchObject({ downloads: screenshot.downloads });
    const sent = () =>
      (calls.filter((call) => (call as unknown[])[0] === "gateway").at(-1) as unknown[])[2];
    // `record` is the server's: withBrowserRecording (attachments/, REC1) sets it from the bot's
    // setting and removes the model's before the call reaches this source, which passes it on.
    expect(sent()).toMatchObject({
      tool: "browser",
      botId: "bot_1",
      input: { action: "screenshot", record: true },
    });
    await router.execute("browser", { action: "screenshot" }, request("call_shot_2"));
    expect(sent()).toMatchObject({ input: { action: "screenshot", record: false } });
  });

  it("answers a non-waking tool on a sleeping computer with the exact text, without calling the worker", async () => {
    const { router, request, calls } = setup("asleep");
    const result = await router.execute("list", {}, request());
    expect(result).toMatchObject({ output: asleepMessage, isError: true });
    expect(asleepMessage).toBe(
      "The computer is asleep. Use Shell or Read to wake it, then try again.",
    );
    expect(calls.filter((call) => (call as unknown[])[0] === "gateway")).toHaveLength(0);
  });

  it("lets shell wake the computer through a journaled call, sends the journal's call id and converts timeoutSeconds", async () => {
    const { router, request, calls, durable } = setup("asleep");
    const result = await router.execute(
      "shell",
      { command: "echo hi", timeoutSeconds: 30 },
      request("call_abc"),
    );
    expect(result.output).toContain("Exit code 0");
    expect(result.output).toContain("hi");
    expect(calls[0]).toEqual([
      "ensureAwake",
      "cmp_1",
      { accountId: "acct_1", holder: "turn_1", allowWake: true },
    ]);
    expect(calls[1]).toEqual([
      "gateway",
      "cmp_1",
      {
        callId: "call_abc",
        tool: "shell",
        input: { command: "echo hi" },
        timeoutMs: 30_000,
        botId: "bot_1",
      },
    ]);
    // CT4: the control plane was reached through the durable context's own call.
    expect(durable.journal.map((entry) => entry.type)).toEqual(["step", "call", "step"]);
  });

  it("releases its hold when the turn ends, with a journaled send", async () => {
    const { router, request, durable } = setup("awake");
    await router.execute("shell", { command: "true" }, request());
    await router.endTurn({ ...turn, durable });
    expect(durable.sent).toEqual([
      {
        target: { object: "computer", key: "cmp_1", handler: "release" },
        input: { holder: "turn_1" },
        options: {},
      },
    ]);
  });

  it("a replayed call neither wakes the computer again nor runs the command again", async () => {
    const first = setup("asleep");
    await first.router.execute("shell", { command: "echo once" }, first.request());
    const replayed = createMemoryDurable({ journal: first.durable.journal });
    const again = setup("asleep");
    const result = await again.router.execute(
      "shell",
      { command: "echo once" },
      {
        ...again.request(),
        durable: replayed,
      },
    );
    expect(result.output).toContain("hi");
    expect(again.calls).toEqual([]);
  });

  it("an attempt retried in the same process replays the turn's calls from the journal, in the same order (the engine retried after a failure)", async () => {
    const first = setup("asleep");
    await first.router.execute("shell", { command: "echo one" }, first.request("call_1"));
    await first.router.execute("shell", { command: "echo two" }, first.request("call_2"));
    // The same router (the same process) runs the next attempt: it replays the whole journal.
    const replayed = createMemoryDurable({ journal: first.durable.journal });
    const callsBefore = first.calls.length;
    for (const callId of ["call_1", "call_2"]) {
      const result = await first.router.execute(
        "shell",
        { command: "echo" },
        { ...first.request(callId), durable: replayed },
      );
      expect(result.output).toContain("hi");
    }
    expect(first.calls.length).toBe(callsBefore);
    expect(replayed.steps).toEqual([]);
  });

  it("reports a computer that cannot be woken as a tool error, at once", async () => {
    const { router, request } = setup("asleep", {
      ensureAwake: async () => {
        throw new Error("waking the computer failed: no worker within 60 s");
      },
    });
    const result = await router.execute("shell", { command: "true" }, request());
    expect(result).toMatchObject({
      isError: true,
      output: "The computer could not be woken: waking the computer failed: no worker within 60 s",
    });
  });

  it("an interrupt cancels the running call through the gateway and tells the model it was stopped (CT5)", async () => {
    const interrupt = new AbortController();
    const { router, request } = setup("awake", {
      gatewayCall: (_request, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener("abort", () => reject(new Error("cancelled")));
          setTimeout(() => interrupt.abort(), 10);
        }),
    });
    const result = await router.execute(
      "shell",
      { command: "sleep 60" },
      request("call_x", interrupt.signal),
    );
    expect(result).toMatchObject({ isError: true, details: { interrupted: true } });
    expect(result.output).toContain("stopped");
  });

  it("rejects bad input with a message the model can act on", async () => {
    const { router, request } = setup("awake");
    const result = await router.execute("edit", { path: "f" }, request());
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/Invalid input for edit/);
    expect((await router.execute("rm", {}, request())).output).toContain("no tool named");
  });

  it("answers every tool with the exact not-connected text while a self-hosted machine's worker is away, and wakes nothing (CT6)", async () => {
    const { router, request, calls } = setup("asleep", {
      ensureAwake: async () => ({
        id: "cmp_1",
        kind: "self-hosted",
        state: "disconnected",
        lastActiveAt: null,
        holders: 0,
        failure: null,
      }),
    });
    expect(notConnectedMessage).toBe(
      "Your computer (a self-hosted machine) is not connected. Start `roost worker` on it, then try again.",
    );
    const inputs: Record<string, unknown> = {
      shell: { command: "echo hi" },
      shell_status: { jobId: "job_1" },
      read: { path: "f" },
      write: { path: "f", content: "x" },
      edit: { path: "f", oldString: "a", newString: "b" },
      list: {},
      glob: { pattern: "*" },
    };
    for (const [name, input] of Object.entries(inputs)) {
      const result = await router.execute(name, input, request(`call_${name}`));
      expect(result).toMatchObject({ output: notConnectedMessage, isError: true });
    }
    expect(calls.filter((call) => (call as unknown[])[0] === "gateway")).toHaveLength(0);
  });

  it("runs the call on a connected self-hosted machine, and a worker that went away mid-call gets the same text (CT6)", async () => {
    let gatewayAnswer: () => Promise<unknown> = async () => ({ ok: true, output: completed });
    const { router, request } = setup("asleep", {
      ensureAwake: async () => ({
        id: "cmp_1",
        kind: "self-hosted",
        state: "connected",
        lastActiveAt: null,
        holders: 0,
        failure: null,
      }),
      gatewayCall: () => gatewayAnswer(),
    });
    const ran = await router.execute("shell", { command: "echo hi" }, request("call_1"));
    expect(ran).toMatchObject({ isError: false, details: { stdout: "hi\n" } });
    gatewayAnswer = async () => {
      throw new RoostError("computer_unavailable", "no worker connected for computer cmp_1");
    };
    expect(await router.execute("shell", { command: "true" }, request("call_2"))).toMatchObject({
      output: notConnectedMessage,
      isError: true,
    });
  });
});

describe("secrets on the computer (CT8, CT9)", () => {
  const value = "sk-unit-0123456789abcdef";
  const secrets = {
    envFor: async () => ({ API_KEY: value }),
    redactorFor: async () => createRedactor([value]),
  };

  it("CT8: the shell gets the secret in its environment; the journal keeps the model's input and the redacted result", async () => {
    const published: unknown[] = [];
    const { router, request, calls, durable } = setup("awake", {
      secrets,
      published,
      gatewayCall: async (_request, _signal, onChunk) => {
        // The value arrives split across three chunks of live output.
        onChunk?.({ stream: "stdout", data: `key=${value.slice(0, 5)}` });
        onChunk?.({ stream: "stdout", data: value.slice(5, 12) });
        onChunk?.({ stream: "stdout", data: `${value.slice(12)} done\n` });
        return { ok: true, output: { ...completed, stdout: `key=${value} done\n` } };
      },
    });
    const result = await router.execute(
      "shell",
      { command: "echo key=$API_KEY done", env: { OTHER: "1" } },
      request(),
    );
    const sent = calls.find((call) => (call as unknown[])[0] === "gateway") as unknown[];
    expect((sent[2] as { input: { env: Record<string, string> } }).input.env).toEqual({
      API_KEY: value,
      OTHER: "1",
    });
    expect(result.output).toContain("key=[REDACTED] done");
    expect(JSON.stringify(result)).not.toContain(value);
    expect(JSON.stringify(durable.journal)).not.toContain(value);
    const shown = published.map((event) => (event as { data: string }).data).join("");
    expect(shown).toBe("key=[REDACTED] done\n");
    for (const event of published) expect(JSON.stringify(event)).not.toContain(value.slice(0, 8));
  });

  it("CT9: a write of [REDACTED] over a file that holds the value is refused, nothing written", async () => {
    const { router, request, calls } = setup("awake", {
      secrets,
      gatewayCall: async (request) => {
        const { tool } = request as { tool: string };
        if (tool === "read")
          return {
            ok: true,
            output: {
              kind: "text",
              path: "/workspace/app.env",
              content: `KEY=${value}\nDEBUG=1\n`,
              startLine: 1,
              endLine: 2,
              truncated: false,
              sizeBytes: 40,
            },
          };
        return { ok: true, output: { path: "/workspace/app.env", bytesWritten: 1 } };
      },
    });
    const result = await router.execute(
      "write",
      { path: "app.env", content: "KEY=[REDACTED]\nDEBUG=0\n" },
      request(),
    );
    expect(result).toMatchObject({
      output: redactedWriteMessage("/workspace/app.env"),
      isError: true,
    });
    const tools = calls
      .filter((call) => (call as unknown[])[0] === "gateway")
      .map((call) => ((call as unknown[])[2] as { tool: string }).tool);
    expect(tools).toEqual(["read"]);
  });

  it("CT9: the mark is written as asked where the file holds no value (or there is no file)", async () => {
    const { router, request, calls } = setup("awake", {
      secrets,
      gatewayCall: async (request) => {
        const { tool } = request as { tool: string };
        if (tool === "read")
          return { ok: false, error: { code: "not_found", message: "no such file" } };
        return { ok: true, output: { path: "/workspace/notes.md", bytesWritten: 30 } };
      },
    });
    const result = await router.execute(
      "write",
      { path: "notes.md", content: "Redaction shows [REDACTED]." },
      request(),
    );
    expect(result.isError).toBe(false);
    const tools = calls
      .filter((call) => (call as unknown[])[0] === "gateway")
      .map((call) => ((call as unknown[])[2] as { tool: string }).tool);
    expect(tools).toEqual(["read", "write"]);
  });
  it("CT10: what a write replaced reaches only the details, redacted, and never the model's text or the journal unredacted", async () => {
    const { router, request, durable } = setup("awake", {
      secrets,
      gatewayCall: async (request) => {
        const { tool } = request as { tool: string };
        if (tool === "read")
          return { ok: false, error: { code: "not_found", message: "no such file" } };
        return {
          ok: true,
          output: {
            path: "/workspace/app.env",
            bytesWritten: 12,
            created: false,
            previous: `KEY=${value}\nDEBUG=1\n`,
          },
        };
      },
    });
    const result = await router.execute(
      "write",
      { path: "app.env", content: "DEBUG=0\nX=1\n" },
      request(),
    );
    expect(result).toMatchObject({
      output: "Replaced /workspace/app.env (12 bytes).",
      isError: false,
      details: { created: false, previous: "KEY=[REDACTED]\nDEBUG=1\n" },
    });
    expect(result.output).not.toContain("DEBUG=1");
    expect(JSON.stringify(result)).not.toContain(value);
    expect(JSON.stringify(durable.journal)).not.toContain(value);
    expect(JSON.stringify(durable.journal)).toContain("KEY=[REDACTED]");
  });
});
