/**
 * `roost chat` floods the terminal (issue 8 §5.9): a real command on a real computer (the
 * `process` provider: the real worker, its real output streaming and truncation) through the
 * real platform, with `roost chat` as a child process rendering it.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCliPlatform, type CliPlatform } from "./testing/index.ts";

const mainPath = fileURLToPath(new URL("./main.ts", import.meta.url));

let roost: CliPlatform | undefined;

beforeAll(async () => {
  roost = await startCliPlatform({ env: { ROOST_COMPUTER_PROVIDER: "process" } });
}, 120_000);
afterAll(async () => {
  await roost?.close();
});

async function chat(
  text: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [mainPath, "chat", "--new", text], {
    env: { PATH: process.env.PATH ?? "", ROOST_URL: roost!.url, ROOST_TOKEN: roost!.adminToken },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  try {
    const [code] = (await once(child, "close")) as [number | null];
    return { code, stdout, stderr };
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

describe("roost chat: a running tool's output on the terminal", () => {
  it("seq 1 200000 shows its first 40 lines live, where the full output is, and its last 10 lines", async () => {
    const result = await chat("$ seq 1 200000");
    expect(result.code).toBe(0);
    // stdout is not a terminal: the tool's output is decoration, on stderr.
    const lines = result.stderr.split("\n").filter((line) => line.startsWith("  │ "));
    const shown = lines.map((line) => line.slice(4));
    expect(shown.slice(0, 40)).toEqual(Array.from({ length: 40 }, (_, index) => String(index + 1)));
    expect(shown[40]).toMatch(/^… stdout continues \(1\.2 MiB in all\); full output: \/\S+$/);
    expect(shown.slice(41)).toEqual(
      Array.from({ length: 10 }, (_, index) => String(199_991 + index)),
    );
    expect(result.stderr).toContain("⚙ shell: seq 1 200000 → exit 0\n");
    // Before: 1 MiB of live output. Now a screenful.
    expect(result.stderr.length).toBeLessThan(2000);
  });

  it("a short command's output is shown whole, live", async () => {
    const result = await chat("$ seq 1 5");
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      / {2}│ 1\n {2}│ 2\n {2}│ 3\n {2}│ 4\n {2}│ 5\n⚙ shell: seq 1 5 → exit 0\n/,
    );
  });
});
