/**
 * `mcp.call` through the call runner (calls.ts W6): a repeated call id is answered from the
 * done-log without calling the server again, also after a worker restart; a call a previous
 * worker process started but did not finish answers `interrupted` and is never re-run.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ResultFrame, WorkerFrame } from "../protocol/index.ts";
import { createCallRunner, type CallRunner } from "./calls.ts";
import { openDoneLog } from "./done-log.ts";
import { createMcpServers, type McpServers } from "./mcp-servers.ts";

let root: string;
let workspace: string;
let stateDir: string;
const opened: { runner: CallRunner; mcp: McpServers }[] = [];

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "roost-mcp-calls-"));
  workspace = path.join(root, "workspace");
  stateDir = path.join(root, "state");
  mkdirSync(workspace, { recursive: true });
  mkdirSync(stateDir, { recursive: true });
});
afterEach(async () => {
  for (const { runner, mcp } of opened.splice(0)) {
    await runner.idle();
    runner.close();
    await mcp.close();
  }
  rmSync(root, { recursive: true, force: true });
});

/** One worker process's runner (a second call is a restarted worker on the same state dir). */
async function startRunner() {
  const sent: WorkerFrame[] = [];
  const commandEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: root };
  const mcp = createMcpServers({ workspace, commandEnv });
  const doneLog = await openDoneLog(stateDir, { fsync: false });
  const runner = createCallRunner({
    workspace,
    stateDir,
    doneLog,
    commandEnv,
    fsync: false,
    mcp,
    send: (frame) => {
      sent.push(frame);
      return true;
    },
  });
  opened.push({ runner, mcp });
  const result = async (callId: string) => {
    for (;;) {
      const found = sent.find(
        (frame): frame is ResultFrame => frame.type === "result" && frame.callId === callId,
      );
      if (found !== undefined) return found;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return { runner, mcp, result, doneLog };
}

const server = {
  name: "fixture",
  command: process.execPath,
  args: [path.join(import.meta.dirname, "testing", "mcp-fixture-server.ts")],
  env: {},
};
const pidCall = (callId: string) =>
  ({
    type: "call",
    callId,
    tool: "mcp.call",
    input: { server, tool: "pid", arguments: {} },
    timeoutMs: 20_000,
  }) as const;

describe("mcp.call through the call runner", () => {
  it("W6: after a worker restart, a repeated call id is answered from the done-log, not run again", async () => {
    const first = await startRunner();
    first.runner.handleCall(pidCall("m1"));
    const answered = await first.result("m1");
    expect(answered).toMatchObject({ ok: true });
    await first.runner.idle();

    const second = await startRunner();
    second.runner.handleCall(pidCall("m1"));
    expect(await second.result("m1")).toEqual(answered);
    expect(second.mcp.running()).toBe(0); // no server was started for it
  });

  it("W6: a call started by a previous worker process and not finished answers interrupted", async () => {
    const first = await startRunner();
    await first.doneLog.markStarted("m2", "mcp.call", { timeoutMs: 20_000 });
    const second = await startRunner();
    second.runner.handleCall(pidCall("m2"));
    const answer = await second.result("m2");
    expect(answer).toMatchObject({ ok: false, error: { code: "interrupted" } });
    expect(second.mcp.running()).toBe(0);
  });

  it("mcp.tools lists; bad input is invalid_input", async () => {
    const { runner, result } = await startRunner();
    runner.handleCall({
      type: "call",
      callId: "t1",
      tool: "mcp.tools",
      input: { servers: [server] },
      timeoutMs: 20_000,
    });
    const listed = await result("t1");
    expect(listed.ok && JSON.stringify(listed.output)).toContain('"echo"');
    runner.handleCall({
      type: "call",
      callId: "t2",
      tool: "mcp.call",
      input: { server: { name: "../x" } },
      timeoutMs: 1000,
    });
    expect(await result("t2")).toMatchObject({ ok: false, error: { code: "invalid_input" } });
  });
});
