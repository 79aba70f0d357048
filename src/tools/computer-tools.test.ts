import { describe, expect, it } from "vitest";
import { createMemoryDurable, type MemoryDurable } from "../engine/testing/index.ts";
import type { Store } from "../store/index.ts";
import { RoostError } from "../errors/index.ts";
import { asleepMessage, createComputerTools, notConnectedMessage } from "./computer-tools.ts";
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
    gatewayCall?: (request: unknown, signal: AbortSignal | undefined) => Promise<unknown>;
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
    call: async (computerId: string, request: unknown, callOptions: { signal?: AbortSignal }) => {
      calls.push(["gateway", computerId, request]);
      if (options.gatewayCall !== undefined)
        return options.gatewayCall(request, callOptions.signal);
      return { ok: true, output: completed };
    },
  };
  const router = createToolRouter({
    sources: [createComputerTools({ store, gateway: gateway as never, providerKind: "process" })],
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
      { callId: "call_abc", tool: "shell", input: { command: "echo hi" }, timeoutMs: 30_000 },
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
