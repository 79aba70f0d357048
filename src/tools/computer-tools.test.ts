import { describe, expect, it } from "vitest";
import { asleepMessage, createComputerTools } from "./computer-tools.ts";
import type { ControlPlaneClient } from "../computers/index.ts";
import type { Store } from "../store/index.ts";
import { RoostError } from "../errors/index.ts";

const context = {
  accountId: "acct_1",
  botId: "bot_1",
  conversationId: "conv_1",
  turnId: "turn_1",
  callId: "turn_1:0:0",
};

function router(state: string, calls: unknown[] = []) {
  const controlPlane = {
    ensureAwake: async (_id: string, request: { allowWake: boolean }) => {
      calls.push(["ensureAwake", request]);
      return {
        id: "cmp_1",
        state: request.allowWake ? "awake" : state,
        lastActiveAt: null,
        holders: 0,
        failure: null,
      };
    },
    touch: async () => undefined,
    release: async (...args: unknown[]) => void calls.push(["release", ...args]),
  } as unknown as ControlPlaneClient;
  const store = {
    ensureComputer: async () => ({
      id: "cmp_1",
      accountId: "acct_1",
      provider: "process",
      createdAt: 0,
    }),
  } as unknown as Store;
  const gateway = {
    call: async (computerId: string, request: unknown) => {
      calls.push(["call", computerId, request]);
      return {
        ok: true,
        output: {
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
        },
      };
    },
  };
  return createComputerTools({
    store,
    controlPlane,
    gateway: gateway as never,
    providerKind: "process",
  });
}

describe("computer tools", () => {
  it("describes every tool in at most 4,000 characters (description + schema)", async () => {
    const specs = await router("awake").specs({ accountId: "acct_1", botId: "bot_1" });
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
    const calls: unknown[] = [];
    const result = await router("asleep", calls).execute("list", {}, context);
    expect(result).toMatchObject({ output: asleepMessage, isError: true });
    expect(asleepMessage).toBe(
      "The computer is asleep. Use Shell or Read to wake it, then try again.",
    );
    expect(calls.filter((call) => (call as unknown[])[0] === "call")).toHaveLength(0);
  });

  it("lets shell wake the computer, sends the journal's call id and converts timeoutSeconds", async () => {
    const calls: unknown[] = [];
    const result = await router("asleep", calls).execute(
      "shell",
      { command: "echo hi", timeoutSeconds: 30 },
      context,
    );
    expect(result.output).toContain("Exit code 0");
    expect(result.output).toContain("hi");
    expect(calls[0]).toEqual([
      "ensureAwake",
      { accountId: "acct_1", holder: "turn_1", allowWake: true },
    ]);
    expect(calls[1]).toEqual([
      "call",
      "cmp_1",
      { callId: "turn_1:0:0", tool: "shell", input: { command: "echo hi" }, timeoutMs: 30_000 },
    ]);
  });

  it("reports a computer that cannot be woken as a tool error, at once", async () => {
    const failing = createComputerTools({
      store: {
        ensureComputer: async () => ({
          id: "cmp_1",
          accountId: "acct_1",
          provider: "local",
          createdAt: 0,
        }),
      } as unknown as Store,
      controlPlane: {
        ensureAwake: async () => {
          throw new RoostError(
            "computer_unavailable",
            "waking the computer failed: no worker within 60 s",
          );
        },
      } as unknown as ControlPlaneClient,
      gateway: { call: async () => ({ ok: true, output: {} }) } as never,
      providerKind: "local",
    });
    const result = await failing.execute("shell", { command: "true" }, context);
    expect(result).toMatchObject({
      isError: true,
      output: "The computer could not be woken: waking the computer failed: no worker within 60 s",
    });
  });

  it("rejects bad input with a message the model can act on", async () => {
    const result = await router("awake").execute("edit", { path: "f" }, context);
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/Invalid input for edit/);
    expect((await router("awake").execute("rm", {}, context)).output).toContain("no tool named");
  });
});
