import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { RoostError } from "../errors/index.ts";
import { closeCodes, PROTOCOL_VERSION } from "../protocol/index.ts";
import type { ShellCompletedOutput } from "../protocol/index.ts";
import type { CallResult } from "./gateway.ts";
import {
  makeComputerDirs,
  rawClient,
  spawnWorker,
  startTestGateway,
  waitFor,
  waitForWorkerProcess,
} from "./testing/index.ts";
import type { TestComputerDirs, TestGateway, WorkerProcess } from "./testing/index.ts";

/** A gateway with one connected worker process for computer `cmp_a`. */
async function withWorker(
  test: (setup: {
    gw: TestGateway;
    worker: WorkerProcess;
    dirs: TestComputerDirs;
  }) => Promise<void>,
  options: Parameters<typeof startTestGateway>[0] = {},
): Promise<void> {
  const gw = await startTestGateway(options);
  const dirs = makeComputerDirs();
  gw.tokens.set("token-a", "cmp_a");
  const worker = spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs });
  try {
    await waitForWorkerProcess(gw.gateway, "cmp_a", worker);
    await test({ gw, worker, dirs });
  } finally {
    await worker.stop();
    await gw.close();
    dirs.remove();
  }
}

function completed(result: CallResult): ShellCompletedOutput {
  if (!result.ok) throw new Error(`call failed: ${result.error.code}: ${result.error.message}`);
  const output = result.output as ShellCompletedOutput;
  if (output.kind !== "completed") throw new Error("expected a completed shell call");
  return output;
}

describe("gateway and worker over a real WebSocket", () => {
  it("runs `echo hi > f && cat f` on the computer, then reads f", async () => {
    await withWorker(async ({ gw }) => {
      const shell = await gw.gateway.call("cmp_a", {
        callId: "c1",
        tool: "shell",
        input: { command: "echo hi > f && cat f" },
        timeoutMs: 10_000,
      });
      expect(completed(shell)).toMatchObject({ exitCode: 0, stdout: "hi\n" });
      const read = await gw.gateway.call("cmp_a", {
        callId: "c2",
        tool: "read",
        input: { path: "f" },
        timeoutMs: 10_000,
      });
      expect(read).toMatchObject({ ok: true, output: { kind: "text", content: "hi" } });
    });
  });

  it("runs write, edit (not-unique error included), list and glob through the gateway", async () => {
    await withWorker(async ({ gw, dirs }) => {
      const call = (callId: string, tool: string, input: unknown) =>
        gw.gateway.call("cmp_a", { callId, tool, input, timeoutMs: 10_000 });
      expect(
        await call("w1", "write", { path: "src/a.txt", content: "one two one" }),
      ).toMatchObject({ ok: true, output: { created: true } });
      expect(
        await call("e1", "edit", { path: "src/a.txt", oldString: "one", newString: "1" }),
      ).toMatchObject({
        ok: false,
        error: { code: "not_unique" },
      });
      expect(
        await call("e2", "edit", { path: "src/a.txt", oldString: "two", newString: "2" }),
      ).toEqual({
        ok: true,
        output: { path: path.join(dirs.workspace, "src/a.txt"), replacements: 1 },
      });
      expect(readFileSync(path.join(dirs.workspace, "src/a.txt"), "utf8")).toBe("one 2 one");
      expect(await call("l1", "list", { path: "src" })).toMatchObject({
        ok: true,
        output: { entries: [{ name: "a.txt", type: "file", sizeBytes: 9 }] },
      });
      expect(await call("g1", "glob", { pattern: "**/*.txt" })).toMatchObject({
        ok: true,
        output: { matches: ["src/a.txt"] },
      });
    });
  });

  it("streams chunks before the result arrives", async () => {
    await withWorker(async ({ gw }) => {
      const seen: string[] = [];
      const result = await gw.gateway.call(
        "cmp_a",
        {
          callId: "s1",
          tool: "shell",
          input: { command: "echo first; sleep 0.5; echo second >&2; sleep 0.3" },
          timeoutMs: 10_000,
        },
        { onChunk: (chunk) => seen.push(`${chunk.stream}:${chunk.data}`) },
      );
      seen.push("result");
      expect(seen).toEqual(["stdout:first\n", "stderr:second\n", "result"]);
      expect(completed(result)).toMatchObject({ stdout: "first\n", stderr: "second\n" });
    });
  });

  it("truncates long output and names the file with the full text", async () => {
    await withWorker(async ({ gw }) => {
      const output = completed(
        await gw.gateway.call("cmp_a", {
          callId: "t1",
          tool: "shell",
          input: { command: "seq 1 200000" },
          timeoutMs: 10_000,
        }),
      );
      expect(output.stdoutTruncated).toBe(true);
      expect(output.stdout).toMatch(/^1\n2\n/);
      expect(output.stdout).toMatch(/199999\n200000\n$/);
      expect(readFileSync(output.stdoutPath!, "utf8").split("\n")).toHaveLength(200_001);
    });
  });

  it("repeated call id returns the recorded result without re-running", async () => {
    await withWorker(async ({ gw, dirs }) => {
      const request = {
        callId: "r1",
        tool: "shell",
        input: { command: "echo run >> runs; date +%s%N" },
        timeoutMs: 10_000,
      };
      const first = await gw.gateway.call("cmp_a", request);
      const second = await gw.gateway.call("cmp_a", request);
      expect(second).toEqual(first);
      expect(readFileSync(path.join(dirs.workspace, "runs"), "utf8")).toBe("run\n");
    });
  });

  it("attaches concurrent callers of one call id to one execution", async () => {
    await withWorker(async ({ gw, dirs }) => {
      const request = {
        callId: "r2",
        tool: "shell",
        input: { command: "echo run >> runs; sleep 0.3; echo done" },
        timeoutMs: 10_000,
      };
      const [a, b] = await Promise.all([
        gw.gateway.call("cmp_a", request),
        gw.gateway.call("cmp_a", request),
      ]);
      expect(a).toEqual(b);
      expect(readFileSync(path.join(dirs.workspace, "runs"), "utf8")).toBe("run\n");
    });
  });

  it("reports tool failures as results, and rejects an invalid call", async () => {
    await withWorker(async ({ gw }) => {
      expect(
        await gw.gateway.call("cmp_a", {
          callId: "f1",
          tool: "read",
          input: { path: "missing" },
          timeoutMs: 5000,
        }),
      ).toMatchObject({
        ok: false,
        error: { code: "not_found" },
      });
      await expect(
        gw.gateway.call("cmp_a", { callId: "", tool: "read", input: {}, timeoutMs: 5000 }),
      ).rejects.toMatchObject({ code: "invalid_request" });
    });
  });

  it("cancels the worker's command when the only caller aborts", async () => {
    await withWorker(async ({ gw, dirs }) => {
      const controller = new AbortController();
      const call = gw.gateway.call(
        "cmp_a",
        {
          callId: "k1",
          tool: "shell",
          input: { command: "echo started; sleep 20; echo never > never" },
          timeoutMs: 30_000,
        },
        { signal: controller.signal, onChunk: () => controller.abort() },
      );
      await expect(call).rejects.toMatchObject({ name: "AbortError" });
      // The repeated call returns the recorded cancellation rather than running again.
      const again = await gw.gateway.call("cmp_a", {
        callId: "k1",
        tool: "shell",
        input: { command: "x" },
        timeoutMs: 30_000,
      });
      expect(again).toMatchObject({ ok: false, error: { code: "cancelled" } });
      expect(() => readFileSync(path.join(dirs.workspace, "never"))).toThrow();
    });
  });

  it("waitForWorker resolves on hello and fails with computer_unavailable after its timeout", async () => {
    const gw = await startTestGateway();
    const dirs = makeComputerDirs();
    gw.tokens.set("token-a", "cmp_a");
    let worker: WorkerProcess | undefined;
    try {
      await expect(gw.gateway.waitForWorker("cmp_a", 100)).rejects.toMatchObject({
        code: "computer_unavailable",
      });
      const waiting = gw.gateway.waitForWorker("cmp_a", 30_000);
      expect(gw.gateway.isConnected("cmp_a")).toBe(false);
      worker = spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs });
      const info = await waiting;
      expect(info.workerId).toMatch(/^wrk_/);
      expect(info.capabilities).toEqual(
        expect.arrayContaining(["shell", "read", "write", "edit", "list", "glob", "shell_status"]),
      );
      expect(gw.gateway.isConnected("cmp_a")).toBe(true);
      expect(gw.gateway.worker("cmp_a")?.bootId).toBe(info.bootId);
    } finally {
      await worker?.stop();
      await gw.close();
      dirs.remove();
    }
  });

  it("keeps the worker id across worker restarts and gives each process a new boot id", async () => {
    await withWorker(async ({ gw, worker, dirs }) => {
      const first = gw.gateway.worker("cmp_a")!;
      await worker.stop();
      await waitFor(() => !gw.gateway.isConnected("cmp_a"), {
        message: "the worker to disconnect",
      });
      const second = spawnWorker({ gatewayUrl: gw.url, token: "token-a", dirs });
      try {
        await waitForWorkerProcess(gw.gateway, "cmp_a", second);
        const info = gw.gateway.worker("cmp_a")!;
        expect(info.workerId).toBe(first.workerId);
        expect(info.bootId).not.toBe(first.bootId);
      } finally {
        await second.stop();
      }
    });
  });

  it("disconnect() closes the connection and fails pending calls as retryable", async () => {
    await withWorker(async ({ gw }) => {
      const outcome = gw.gateway
        .call("cmp_a", {
          callId: "d1",
          tool: "shell",
          input: { command: "sleep 2" },
          timeoutMs: 10_000,
        })
        .then(
          () => undefined,
          (reason: unknown) => reason,
        );
      await waitFor(
        () => gw.events.some((event) => event.type === "call_received" && event.callId === "d1"),
        { message: "the worker to ack d1" },
      );
      await gw.gateway.disconnect("cmp_a");
      const error = await outcome;
      expect(error).toBeInstanceOf(RoostError);
      expect(error).toMatchObject({ code: "computer_unavailable", retryable: true });
      expect(gw.events).toContainEqual(
        expect.objectContaining({
          type: "disconnected",
          computerId: "cmp_a",
          code: closeCodes.disconnected,
        }),
      );
    });
  });

  it("fails a call with computer_unavailable when no worker connects in time", async () => {
    const gw = await startTestGateway({ workerWaitMs: 200 });
    try {
      await expect(
        gw.gateway.call("cmp_x", {
          callId: "n1",
          tool: "read",
          input: { path: "f" },
          timeoutMs: 5000,
        }),
      ).rejects.toMatchObject({
        code: "computer_unavailable",
      });
    } finally {
      await gw.close();
    }
  });
});

describe("gateway protocol enforcement", () => {
  it("refuses a missing, wrong or expired token with 401 before any WebSocket exists", async () => {
    const gw = await startTestGateway();
    try {
      const missing = await rawClient(gw.url, undefined);
      expect(missing.opened).toMatchObject({
        ok: false,
        status: 401,
        body: expect.stringMatching(/Authorization: Bearer/),
      });
      const wrong = await rawClient(gw.url, "not-a-token");
      expect(wrong.opened).toMatchObject({
        ok: false,
        status: 401,
        body: expect.stringMatching(/invalid or expired/),
      });
      expect(gw.events.filter((event) => event.type === "upgrade_refused")).toHaveLength(2);
    } finally {
      await gw.close();
    }
  });

  it("another computer's token never receives this computer's calls", async () => {
    const gw = await startTestGateway({ workerWaitMs: 500 });
    const dirs = makeComputerDirs();
    gw.tokens.set("token-b", "cmp_b");
    // The hello claims nothing about the computer; B's worker is B's because of B's token.
    const worker = spawnWorker({ gatewayUrl: gw.url, token: "token-b", dirs });
    try {
      await waitForWorkerProcess(gw.gateway, "cmp_b", worker);
      await expect(
        gw.gateway.call("cmp_a", {
          callId: "x1",
          tool: "shell",
          input: { command: "echo leaked > leaked" },
          timeoutMs: 5000,
        }),
      ).rejects.toMatchObject({ code: "computer_unavailable" });
      expect(gw.events.filter((event) => event.type === "call_sent")).toEqual([]);
      expect(() => readFileSync(path.join(dirs.workspace, "leaked"))).toThrow();
    } finally {
      await worker.stop();
      await gw.close();
      dirs.remove();
    }
  });

  it("malformed frame closes only that connection, another worker keeps working", async () => {
    await withWorker(async ({ gw }) => {
      gw.tokens.set("token-c", "cmp_c");
      const bad = await rawClient(gw.url, "token-c");
      bad.hello();
      await waitFor(() => gw.gateway.isConnected("cmp_c"), { message: "the raw client's hello" });
      bad.ws.send("{ this is not json");
      expect(await bad.closed).toEqual({
        code: closeCodes.protocolError,
        reason: "frame is not valid JSON",
      });

      const schemaBad = await rawClient(gw.url, "token-c");
      schemaBad.hello();
      await waitFor(() => gw.gateway.isConnected("cmp_c"));
      schemaBad.ws.send(JSON.stringify({ type: "result", callId: "z", ok: "yes" }));
      expect((await schemaBad.closed).code).toBe(closeCodes.protocolError);

      const result = await gw.gateway.call("cmp_a", {
        callId: "m1",
        tool: "shell",
        input: { command: "echo still fine" },
        timeoutMs: 10_000,
      });
      expect(completed(result).stdout).toBe("still fine\n");
    });
  });

  it("oversize frame refused: the connection closes with 1009 and a reason", async () => {
    const gw = await startTestGateway({ maxFrameBytes: 64 * 1024 });
    gw.tokens.set("token-c", "cmp_c");
    try {
      const client = await rawClient(gw.url, "token-c");
      client.hello();
      await waitFor(() => gw.gateway.isConnected("cmp_c"));
      client.ws.send(
        JSON.stringify({
          type: "chunk",
          callId: "c",
          stream: "stdout",
          data: "x".repeat(100 * 1024),
        }),
      );
      const closed = await client.closed;
      expect(closed.code).toBe(closeCodes.messageTooBig);
      expect(closed.reason).toMatch(/exceeds the 65536-byte limit/);
      // Beyond the hard cap ws refuses the frame itself, still with 1009.
      const huge = await rawClient(gw.url, "token-c");
      huge.hello();
      await waitFor(() => gw.gateway.isConnected("cmp_c"));
      huge.ws.send("x".repeat(200 * 1024));
      expect((await huge.closed).code).toBe(closeCodes.messageTooBig);
    } finally {
      await gw.close();
    }
  });

  it("closes connections that break the sequence: a call before hello, an old protocol, no hello at all", async () => {
    const gw = await startTestGateway({ helloTimeoutMs: 300 });
    gw.tokens.set("token-c", "cmp_c");
    try {
      const early = await rawClient(gw.url, "token-c");
      early.ws.send(JSON.stringify({ type: "ping" }));
      expect(await early.closed).toEqual({
        code: closeCodes.protocolError,
        reason: "expected hello first, got ping",
      });

      const old = await rawClient(gw.url, "token-c");
      old.hello({ protocol: 99 });
      expect((await old.closed).code).toBe(closeCodes.unsupportedProtocol);

      const silent = await rawClient(gw.url, "token-c");
      expect((await silent.closed).code).toBe(closeCodes.helloTimeout);

      const binary = await rawClient(gw.url, "token-c");
      binary.hello();
      await waitFor(() => gw.gateway.isConnected("cmp_c"));
      binary.ws.send(Buffer.from([1, 2, 3]));
      expect((await binary.closed).code).toBe(closeCodes.protocolError);
    } finally {
      await gw.close();
    }
  });

  it("a second connection for the same computer replaces the first", async () => {
    const gw = await startTestGateway();
    gw.tokens.set("token-c", "cmp_c");
    try {
      const first = await rawClient(gw.url, "token-c");
      first.hello({ bootId: "boot_1" });
      await waitFor(() => gw.gateway.worker("cmp_c")?.bootId === "boot_1");
      const second = await rawClient(gw.url, "token-c");
      second.hello({ bootId: "boot_2" });
      expect((await first.closed).code).toBe(closeCodes.replaced);
      expect(gw.gateway.worker("cmp_c")?.bootId).toBe("boot_2");
      expect(second.received[0]).toMatchObject({
        type: "welcome",
        computerId: "cmp_c",
        protocol: PROTOCOL_VERSION,
      });
      second.ws.close();
      await second.closed;
    } finally {
      await gw.close();
    }
  });

  it("pings, and drops a connection that stops answering", async () => {
    const gw = await startTestGateway({ heartbeatMs: 100, heartbeatTimeoutMs: 350 });
    gw.tokens.set("token-c", "cmp_c");
    try {
      const client = await rawClient(gw.url, "token-c");
      client.hello();
      await waitFor(
        () => client.received.some((frame) => (frame as { type: string }).type === "ping"),
        { message: "a ping" },
      );
      expect((await client.closed).code).toBe(closeCodes.heartbeatTimeout);
      expect(gw.gateway.isConnected("cmp_c")).toBe(false);
    } finally {
      await gw.close();
    }
  });

  it("acks a result for an unknown call id, so the worker can forget it", async () => {
    const gw = await startTestGateway();
    gw.tokens.set("token-c", "cmp_c");
    try {
      const client = await rawClient(gw.url, "token-c");
      client.hello();
      await waitFor(() => gw.gateway.isConnected("cmp_c"));
      client.ws.send(JSON.stringify({ type: "result", callId: "ghost", ok: true, output: null }));
      await waitFor(() =>
        client.received.some(
          (frame) => (frame as { type: string; callId?: string }).callId === "ghost",
        ),
      );
      expect(client.received).toContainEqual({ type: "ack", callId: "ghost" });
      client.ws.close();
      await client.closed;
    } finally {
      await gw.close();
    }
  });

  it("turns output that does not match the tool's schema into an invalid_output result", async () => {
    const gw = await startTestGateway();
    gw.tokens.set("token-c", "cmp_c");
    try {
      const client = await rawClient(gw.url, "token-c");
      client.ws.on("message", (data: Buffer) => {
        const frame = JSON.parse(data.toString()) as { type: string; callId?: string };
        if (frame.type === "call")
          client.ws.send(
            JSON.stringify({
              type: "result",
              callId: frame.callId,
              ok: true,
              output: { nonsense: true },
            }),
          );
      });
      client.hello();
      await waitFor(() => gw.gateway.isConnected("cmp_c"));
      const result = await gw.gateway.call("cmp_c", {
        callId: "o1",
        tool: "list",
        input: {},
        timeoutMs: 5000,
      });
      expect(result).toMatchObject({ ok: false, error: { code: "invalid_output" } });
      client.ws.close();
      await client.closed;
    } finally {
      await gw.close();
    }
  });
});
