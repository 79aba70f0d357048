/**
 * `roost approvals` against the real platform (embedded Restate, SQLite, the demo model): the
 * default policy asks before `rm -rf` outside /tmp; the CLI lists the waiting call with the bot's
 * stated reason and approves it, and the same turn runs it once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { apiClient } from "../../test/support/api-client.ts";
import { defineToolSource, serverTool } from "../tools/index.ts";
import type { CliIo } from "./io.ts";
import { runCli } from "./main.ts";
import { startCliPlatform, type CliPlatform } from "./testing/index.ts";

let started: CliPlatform;
const ran: string[] = [];
beforeAll(async () => {
  started = await startCliPlatform({
    env: { ROOST_FOLLOW_UP_WINDOW_MS: "100", ROOST_MEMORY_PASS: "off" },
    toolSources: [
      defineToolSource("test", [
        serverTool({
          name: "shell",
          description: "Pretends to run a command.",
          input: z.strictObject({ command: z.string() }),
          run: async ({ command }) => {
            ran.push(command);
            return { output: `ran ${command}`, isError: false };
          },
        }),
      ]),
    ],
  });
}, 120_000);
afterAll(async () => started?.close());

async function roost(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const io: CliIo = {
    stdout: { write: (text: string) => (stdout += text), isTTY: false },
    stderr: { write: (text: string) => (stderr += text), isTTY: false },
    stdin: Object.assign((async function* () {})(), { isTTY: false }),
    env: { ROOST_URL: started.url, ROOST_TOKEN: started.adminToken },
  };
  const code = await runCli(argv, io);
  return { code, stdout, stderr };
}

describe("roost approvals", () => {
  it("lists the waiting call with its reason, approves it, and the turn runs it once", async () => {
    const api = apiClient(started.url, () => started.adminToken);
    const bot = await api.createBot("cleaner", "demo");
    const conversation = await api.createConversation(bot.id);
    expect((await roost(["approvals"])).stderr).toContain("nothing waits for your approval");

    await api.send(conversation.id, "because the disk is full: $ rm -rf /srv/old");
    await api.waitForSteps(conversation.id, "approval");
    const listed = await roost(["approvals"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("rm -rf /srv/old");
    expect(listed.stdout).toContain("the default policy asks before shell");
    const id = /apr_[0-9a-f]+/.exec(listed.stdout)?.[0];
    expect(id).toBeDefined();
    const json = JSON.parse((await roost(["approvals", "list", "--json"])).stdout) as {
      botReason: string;
    }[];
    expect(json[0]?.botReason).toBe("the disk is full");

    const approved = await roost(["approvals", "approve", id!]);
    expect(approved).toMatchObject({ code: 0, stdout: "approved shell: rm -rf /srv/old\n" });
    await api.waitForSteps(conversation.id, "reply");
    expect(ran).toEqual(["rm -rf /srv/old"]);

    const again = await roost(["approvals", "deny", id!]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already approved");
    const missing = await roost(["approvals", "approve", "apr_missing"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("apr_missing");
    expect((await roost(["approvals", "--state", "sometimes"])).code).toBe(2);
    expect((await roost(["approvals", "--state", "all"])).stdout).toContain(id!);
  });
});
