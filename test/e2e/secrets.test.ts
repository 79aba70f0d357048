/**
 * Secrets end to end (docs/secrets.md): a secret set through the API reaches the computer's shell
 * as an environment variable, every result, event and step shows `[REDACTED]` instead (plain and
 * base64), a write of the mark over the value is refused and the file keeps it (CT9), a
 * `request_secret` becomes the owner's notification, and afterwards no file of the data dir
 * outside the computer's own disk, Restate's journal included, holds the value; after a restart the
 * value still reaches the shell.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFile, readdir } from "node:fs/promises";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../support/api-client.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { openEventStream } from "../support/sse.ts";

/** Every regular file under `dir`, skipping `skip` (relative paths). */
async function filesUnder(dir: string, skip: (path: string) => boolean): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isFile() && !skip(relative(dir, path))) out.push(path);
  }
  return out;
}

describe(`secrets end to end (${testComputerProvider} provider, demo model)`, () => {
  let dataDir: string;
  let roost: RoostProcess;
  let api: ReturnType<typeof apiClient>;
  const value = `sk-test-${randomBytes(12).toString("hex")}`;
  const marker = `journal-marker-${randomUUID()}`;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-secrets-"));
    roost = await createRoostProcess({
      dataDir,
      env: { ROOST_COMPUTER_PROVIDER: testComputerProvider, ROOST_FOLLOW_UP_WINDOW_MS: "200" },
    });
    await roost.start();
    api = apiClient(roost.url, roost.token);
  });
  afterAll(async () => {
    await roost?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function turn(conversationId: string, text: string) {
    const before = (await api.steps(conversationId)).filter((step) => step.kind === "reply").length;
    await api.send(conversationId, text);
    const steps = await api.waitForSteps(conversationId, "reply", before + 1, 90_000);
    return steps.filter((step) => step.kind === "tool").at(-1)!;
  }

  it("a brokered secret is only its placeholder inside the computer (the vault tests cover the swap)", async () => {
    const bot = await api.createBot("brokered");
    await api.call("PUT", `/v1/bots/${bot.id}/secrets/BROKERED_TOKEN`, {
      value,
      broker: { hosts: ["api.example.com"] },
    });
    const conversation = await api.createConversation(bot.id);
    const shell = await turn(conversation.id, `$ echo "token=$BROKERED_TOKEN"`);
    expect(String(shell.payload.output)).toContain("token=roost-secret:BROKERED_TOKEN");
    expect(String(shell.payload.output)).not.toContain("[REDACTED]");
  });

  it("the shell gets the value; results, events and steps show [REDACTED]; the journal never holds it", async () => {
    const bot = await api.createBot("secrets");
    await api.call("PUT", `/v1/bots/${bot.id}/secrets/DEMO_TOKEN`, { value });
    const conversation = await api.createConversation(bot.id);
    const stream = await openEventStream(
      `${roost.url}/v1/conversations/${conversation.id}/events`,
      roost.token(),
    );
    try {
      const shell = await turn(
        conversation.id,
        `$ echo "plain $DEMO_TOKEN"; printf %s "$DEMO_TOKEN" | base64; echo "len \${#DEMO_TOKEN} ${marker}"`,
      );
      const output = String(shell.payload.output);
      expect(output).toContain("plain [REDACTED]");
      expect(output).toContain(`len ${value.length} ${marker}`); // the shell had the real value
      expect(output).not.toContain(value);
      expect(output).not.toContain(Buffer.from(value).toString("base64").slice(0, 20));

      // CT9: the model sees the mark in the file; writing it back is refused; the value stays.
      await turn(conversation.id, `$ echo "KEY=$DEMO_TOKEN" > app.env`);
      const read = await turn(conversation.id, "read app.env");
      expect(String(read.payload.output)).toContain("KEY=[REDACTED]");
      const write = await turn(conversation.id, "write app.env KEY=[REDACTED]");
      expect(write.payload).toMatchObject({ name: "write", isError: true });
      expect(String(write.payload.output)).toMatch(
        /holds a secret value that you see as \[REDACTED\]/,
      );
      const intact = await turn(
        conversation.id,
        `$ test "$(cat app.env)" = "KEY=$DEMO_TOKEN" && echo intact`,
      );
      expect(String(intact.payload.output)).toContain("intact");
      // SECR13: a download through the API is redacted too.
      const download = await fetch(
        `${roost.url}/v1/computers/me/files/content?path=${encodeURIComponent("/workspace/app.env")}`,
        { headers: { authorization: `Bearer ${roost.token()}` } },
      );
      expect(download.status).toBe(200);
      expect(await download.text()).toBe("KEY=[REDACTED]\n");

      // SECR12: a missing secret becomes the owner's card; no value passes the tool.
      const requested = await turn(conversation.id, "request secret STRIPE_KEY to charge the card");
      expect(requested.payload).toMatchObject({ name: "request_secret", isError: false });
      const notifications = await api.call<{
        notifications: { kind: string; subjectId: string }[];
      }>("GET", "/v1/notifications");
      expect(notifications.notifications).toContainEqual(
        expect.objectContaining({ kind: "secret_request", subjectId: "STRIPE_KEY" }),
      );

      const steps = JSON.stringify(await api.steps(conversation.id));
      expect(steps).not.toContain(value);
      expect(JSON.stringify(stream.events)).not.toContain(value);
      expect(stream.events.some((event) => event.event === "tool-output")).toBe(true);
    } finally {
      await stream.close();
    }

    await roost.stop();
    // The computer's own disk (its workspace, its job logs) is the user's: the value is there by
    // design. Everything else Roost keeps, Restate's journal included, must not hold it.
    const files = await filesUnder(dataDir, (path) => path.startsWith("computers/"));
    expect(files.some((file) => file.includes(`${join(dataDir, "restate")}`))).toBe(true);
    const needles = [value, Buffer.from(value).toString("base64").slice(0, 24)];
    let markerSeen = false;
    for (const file of files) {
      const bytes = await readFile(file);
      for (const needle of needles)
        expect(bytes.includes(needle), relative(dataDir, file)).toBe(false);
      if (file.startsWith(join(dataDir, "restate")) && bytes.includes(marker)) markerSeen = true;
    }
    // The search can see what Restate's journal holds: the command's own text is in it.
    expect(markerSeen).toBe(true);

    // SECR5: after a restart the key file opens what was sealed before it.
    await roost.start();
    const after = await turn(conversation.id, `$ echo "again \${#DEMO_TOKEN} $DEMO_TOKEN"`);
    expect(String(after.payload.output)).toContain(`again ${value.length} [REDACTED]`);
  });
});
