/**
 * Skills end to end: Roost as a child process with its real Restate and a real computer — the
 * `local` provider (root, namespaces: the worker copies the skills as the computer's own user)
 * and the `process` provider. A skill with a script is uploaded through the API; a bot runs
 * `bash ~/skills/<name>/run.sh` and gets its output; a changed skill runs in its new version at
 * the next turn; a deleted one is gone from ~/skills. The prompt's index and the `skill` tool
 * are checked with a fake OpenAI-compatible model and the demo model's `skill <name>`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipReason } from "../../src/computers/local/testing/index.ts";
import {
  startFakeOpenAiServer,
  type FakeOpenAiRequest,
  type FakeOpenAiServer,
} from "../../src/models/testing/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { skillMarkdown, tarArchive } from "../../src/skills/testing/archives.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

const providers = [
  { name: "local", skip: await skipReason("test/e2e/skills.test.ts (local provider)") },
  { name: "process", skip: undefined },
] as const;

const systemOf = (request: FakeOpenAiRequest) =>
  JSON.stringify(
    request.body?.messages?.find((message) => message.role === "system")?.content ?? "",
  );

for (const provider of providers) {
  describe.skipIf(provider.skip !== undefined)(
    `skills end to end (${provider.name} provider)`,
    () => {
      let dataDir: string;
      let roost: RoostProcess;
      let fake: FakeOpenAiServer;
      let api: ReturnType<typeof apiClient>;

      const request = async (method: string, path: string, body?: Uint8Array, type?: string) => {
        const response = await fetch(`${roost.url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${roost.token()}`,
            ...(type === undefined ? {} : { "content-type": type }),
          },
          ...(body === undefined ? {} : { body }),
        });
        return { status: response.status, text: await response.text() };
      };
      const putSkill = (name: string, script: string) =>
        request(
          "PUT",
          `/v1/skills/${name}/archive`,
          tarArchive([
            { path: `${name}/`, type: "5" },
            {
              path: `${name}/SKILL.md`,
              data: skillMarkdown(name, `Says something (${name})`, `# ${name}\nRun run.sh.`),
            },
            { path: `${name}/run.sh`, data: script, mode: 0o755 },
          ]),
          "application/x-tar",
        );

      /** One demo-model turn: the tool step it made. */
      async function turn(conversationId: string, text: string) {
        const before = (await api.steps(conversationId)).filter(
          (step) => step.kind === "reply",
        ).length;
        await api.send(conversationId, text);
        const steps = await api.waitForSteps(conversationId, "reply", before + 1, 90_000);
        return steps.filter((step) => step.kind === "tool").at(-1)!.payload;
      }
      const stdoutOf = (payload: Record<string, unknown>) =>
        (payload.details as { stdout?: string } | undefined)?.stdout;

      beforeAll(async () => {
        dataDir = mkdtempSync(join(tmpdir(), `roost-e2e-skills-${provider.name}-`));
        fake = await startFakeOpenAiServer(() => ({ type: "completion", textChunks: ["ok"] }));
        roost = await createRoostProcess({
          dataDir,
          env: {
            ROOST_COMPUTER_PROVIDER: provider.name,
            ROOST_FOLLOW_UP_WINDOW_MS: "200",
            ROOST_MEMORY_PASS: "false",
            ROOST_MODEL_TITLES: "false", // the test reads the last request: the turn's own
            ROOST_MODEL: "openai-compatible:fake-model",
            ROOST_OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
          },
        });
        await roost.start();
        api = apiClient(roost.url, roost.token);
      }, 120_000);
      afterAll(async () => {
        await roost?.stop();
        await fake?.close();
        rmSync(dataDir, { recursive: true, force: true });
      });

      it("a bot runs a skill's script from ~/skills; a change runs in its new version at the next turn; a delete removes it", async () => {
        expect((await putSkill("hello-tool", "#!/bin/sh\necho hello-v1\n")).status).toBe(201);
        const bot = await api.createBot("skilled", "demo");
        const conversation = await api.createConversation(bot.id);

        const first = await turn(conversation.id, "$ bash ~/skills/hello-tool/run.sh");
        expect(first).toMatchObject({ name: "shell", isError: false });
        expect(stdoutOf(first)).toBe("hello-v1\n");
        // The worker wrote the files as the computer's own user.
        const owner = await turn(
          conversation.id,
          "$ stat -c %u ~/skills/hello-tool/run.sh ~/skills/hello-tool; id -u",
        );
        const [file, folder, user] = stdoutOf(owner)!.trim().split("\n");
        expect([file, folder]).toEqual([user, user]);
        if (provider.name === "local") expect(user).not.toBe("0");

        expect((await putSkill("hello-tool", "#!/bin/sh\necho hello-v2\n")).status).toBe(200);
        const second = await turn(conversation.id, "$ bash ~/skills/hello-tool/run.sh");
        expect(stdoutOf(second)).toBe("hello-v2\n");

        expect((await request("DELETE", "/v1/skills/hello-tool")).status).toBe(204);
        const gone = await turn(
          conversation.id,
          "$ test -e ~/skills/hello-tool && echo present || echo gone",
        );
        expect(stdoutOf(gone)).toBe("gone\n");
      });

      it("the demo model's `skill <name>` reads the body through the skill tool; a limited bot is refused others", async () => {
        expect((await putSkill("reader", "echo reader\n")).status).toBe(201);
        expect((await putSkill("other", "echo other\n")).status).toBe(201);
        const bot = await api.createBot("reads", "demo");
        const conversation = await api.createConversation(bot.id);
        const read = await turn(conversation.id, "skill reader");
        expect(read).toMatchObject({ name: "skill", isError: false });
        expect(read.output).toContain("# reader\nRun run.sh.");
        expect(read.output).toContain("- run.sh (12 bytes, executable)");

        const limited = await api.call<Api.Bot>("POST", "/v1/bots", {
          name: "limited",
          model: "demo",
          skills: ["other"],
        });
        const limitedConversation = await api.createConversation(limited.id);
        const refused = await turn(limitedConversation.id, "skill reader");
        expect(refused).toMatchObject({ name: "skill", isError: true });
        expect(refused.output).toMatch(/You may not use the skill "reader".*you may use: other/);
      });

      it("the prompt lists each usable skill's name and description only, and a limited bot's only its own", async () => {
        expect((await putSkill("indexed-a", "echo a\n")).status).toBeLessThan(300);
        expect((await putSkill("indexed-b", "echo b\n")).status).toBeLessThan(300);
        const all = await api.createBot("index-all");
        const limited = await api.call<Api.Bot>("POST", "/v1/bots", {
          name: "index-limited",
          skills: ["indexed-b"],
        });
        const lastSystem = async (botId: string) => {
          const conversation = await api.createConversation(botId);
          const seen = fake.requests.length;
          await api.send(conversation.id, "hello");
          await api.waitForSteps(conversation.id, "reply", 1, 60_000);
          const asked = fake.requests.slice(seen).at(-1)!;
          return {
            system: systemOf(asked),
            tools: (asked.body?.tools ?? []).map((tool) => tool.function?.name),
          };
        };
        const everything = await lastSystem(all.id);
        expect(everything.system).toContain("# Skills");
        expect(everything.system).toContain("- indexed-a: Says something (indexed-a)");
        expect(everything.system).toContain("- indexed-b: Says something (indexed-b)");
        expect(everything.system).toContain("its files are in ~/skills/<name>/ on your computer");
        expect(everything.system).not.toContain("Run run.sh.");
        expect(everything.tools).toContain("skill");
        const own = await lastSystem(limited.id);
        expect(own.system).toContain("- indexed-b:");
        expect(own.system).not.toContain("indexed-a");
      });
    },
  );
}
