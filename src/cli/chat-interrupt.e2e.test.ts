/**
 * Ctrl-C in `roost chat` against the real platform and a real computer (the `process` provider).
 * The CLI side alone is tested in chat-interrupt.test.ts against a server that speaks the
 * interrupt contract; this file runs it end to end.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { startCliPlatform, type CliPlatform } from "./testing/index.ts";

const mainPath = fileURLToPath(new URL("./main.ts", import.meta.url));

let roost: CliPlatform | undefined;
beforeAll(async () => {
  roost = await startCliPlatform({ env: { ROOST_COMPUTER_PROVIDER: "process" } });
}, 120_000);
afterAll(async () => {
  await roost?.close();
});

/** Whether a process other than `except` (the chat itself, whose arguments hold it) runs `marker`. */
function running(marker: string, except: number | undefined): boolean {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== except)
    .some((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").includes(marker);
      } catch {
        return false; // it ended meanwhile
      }
    });
}

describe("roost chat: Ctrl-C on the real platform", () => {
  it("Ctrl-C during `sleep …; echo finished` kills the command, records the stop and exits 130", async () => {
    const child = spawn(
      process.execPath,
      [mainPath, "chat", "--new", "$ sleep 62.5; echo finished"],
      {
        env: {
          PATH: process.env.PATH ?? "",
          ROOST_URL: roost!.url,
          ROOST_TOKEN: roost!.adminToken,
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const closed = once(child, "close");
    try {
      await waitFor(() => running("sleep 62.5", child.pid), {
        timeoutMs: 60_000,
        what: "the command to run on the computer",
      });
      child.kill("SIGINT");
      // Before the server serves the interrupt, the chat says it could not stop the turn.
      await waitFor(() => stderr.includes("could not stop") || child.exitCode !== null, {
        what: "the chat to stop the turn",
      });
      expect(stderr).not.toContain("could not stop the turn");
      const [code] = (await closed) as [number | null];
      expect({ code, stderr }).toMatchObject({ code: 130 });
      expect(stderr).toContain("⏹ stopped by you (cancelled shell: sleep 62.5; echo finished)\n");
      expect(stdout).not.toContain("finished");
      await waitFor(() => !running("sleep 62.5", child.pid), {
        what: "the command's process to be gone",
      });
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });
});
