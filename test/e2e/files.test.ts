/**
 * The files API end to end, against a real Roost with real computers: the `local` provider
 * (root, namespaces: the worker runs as the computer's uid inside its sandbox) and the `process`
 * provider (no isolation: the worker runs as the server's user on the host, root here, so the
 * worker's no-follow resolution is all that stands between a user's links and the host). The
 * attacks are staged inside the computer, through the shell tool, as a user would.
 */
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipReason } from "../../src/computers/local/testing/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { python3, swapScript } from "../support/swap-race.ts";
import { waitFor } from "../support/wait.ts";

const providers = [
  { name: "local", skip: await skipReason("test/e2e/files.test.ts (local provider)") },
  { name: "process", skip: undefined },
] as const;

for (const provider of providers) {
  describe.skipIf(provider.skip !== undefined)(
    `the files API end to end (${provider.name} provider)`,
    () => {
      let dataDir: string;
      let roost: RoostProcess;
      let api: ReturnType<typeof apiClient>;
      let conversationId: string;
      let workspaceOnHost: string;

      const request = async (method: string, path: string, body?: string | Uint8Array) => {
        const response = await fetch(`${roost.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${roost.token()}` },
          ...(body === undefined ? {} : { body }),
        });
        const bytes = Buffer.from(await response.arrayBuffer());
        return { status: response.status, bytes, text: bytes.toString("utf8") };
      };
      const q = encodeURIComponent;
      const upload = (path: string, body: string | Uint8Array) =>
        request("PUT", `/v1/computers/me/files/content?path=${q(path)}`, body);
      const download = (path: string) =>
        request("GET", `/v1/computers/me/files/content?path=${q(path)}`);

      /** Runs a shell command on the computer through a bot turn (the demo model's `$ …`). */
      async function shell(command: string): Promise<{ exitCode: number; stdout: string }> {
        const before = (await api.steps(conversationId)).filter(
          (step) => step.kind === "reply",
        ).length;
        await api.send(conversationId, `$ ${command}`);
        const steps = await api.waitForSteps(conversationId, "reply", before + 1, 90_000);
        const tool = steps.filter((step) => step.kind === "tool").at(-1)!;
        return tool.payload.details as { exitCode: number; stdout: string };
      }

      beforeAll(async () => {
        dataDir = mkdtempSync(join(tmpdir(), `roost-e2e-files-${provider.name}-`));
        roost = await createRoostProcess({
          dataDir,
          env: {
            ROOST_COMPUTER_PROVIDER: provider.name,
            ROOST_FOLLOW_UP_WINDOW_MS: "200",
            // The swap race sends thousands of requests from one token on purpose.
            ROOST_RATE_LIMIT_PER_MINUTE: "0",
          },
        });
        await roost.start();
        api = apiClient(roost.url, roost.token);
        const bot = await api.createBot("files");
        // The setup commands clean up with `rm -rf`, which the default tool policy sends to the
        // owner for approval; this bot works without the defaults (the approvals tests cover them).
        await api.call("PUT", `/v1/bots/${bot.id}/tool-policy`, {
          rules: [],
          useDefaults: false,
          reviewModel: null,
        });
        conversationId = (await api.createConversation(bot.id)).id;
        const computer = await api.call<{ id: string; provider: string }>(
          "GET",
          "/v1/computers/me",
        );
        expect(computer.provider).toBe(provider.name);
        // The local provider keeps the disk in an image mounted under mount/disk while awake.
        workspaceOnHost =
          provider.name === "local"
            ? join(dataDir, "computers", computer.id, "mount", "disk", "workspace")
            : join(dataDir, "computers", computer.id, "workspace");
      }, 120_000);
      afterAll(async () => {
        await roost?.stop();
        rmSync(dataDir, { recursive: true, force: true });
      });

      it("a listing wakes a sleeping computer, and folders an upload makes belong to the computer's user", async () => {
        await api.sleepComputer();
        expect((await api.call<{ state: string }>("GET", "/v1/computers/me")).state).toBe("asleep");
        expect((await request("GET", "/v1/computers/me/files")).status).toBe(200);
        expect((await api.call<{ state: string }>("GET", "/v1/computers/me")).state).toBe("awake");

        expect((await upload("/workspace/made/by/upload.txt", "hi")).status).toBe(201);
        const owner = await shell("stat -c %u made made/by made/by/upload.txt; id -u");
        const [folder, subfolder, file, user] = owner.stdout.trim().split("\n");
        expect([folder, subfolder, file]).toEqual([user, user, user]);
        if (provider.name === "local") {
          expect(user).not.toBe("0"); // the computer's own uid, not root
          expect(statSync(join(workspaceOnHost, "made/by")).uid).not.toBe(0);
        }
      });

      it("symlink-out upload: link -> / and link -> /etc made in the computer, then PUT /workspace/link/newdir/f is refused and nothing lands on the host", async () => {
        expect((await shell("ln -sfn / link && ln -sfn /etc etc-link && echo made")).stdout).toBe(
          "made\n",
        );
        for (const path of [
          "/workspace/link/newdir/f",
          "/workspace/etc-link/newdir/f",
          "/workspace/link/tmp/planted",
        ]) {
          const response = await upload(path, "planted");
          expect(response.status, path).toBe(403);
          expect(response.text).toMatch(/symbolic link/);
        }
        expect(existsSync("/newdir")).toBe(false);
        expect(existsSync("/etc/newdir")).toBe(false);
        expect(existsSync("/tmp/planted")).toBe(false);
        // Not in the computer's own view either: nothing was written through the links.
        const inside = await shell("ls -d /newdir /etc/newdir /tmp/planted 2>/dev/null | wc -l");
        expect(inside.stdout.trim()).toBe("0");
        expect((await download("/workspace/etc-link/passwd")).status).toBe(403);
      });

      it.skipIf(python3 === undefined)(
        "swap race: inside the computer a file and a folder swap with links to /etc/shadow and the admin token while GET and PUT run; nothing leaks and no host file changes",
        async () => {
          // Without python3 (renameat2 through ctypes) the swap cannot be staged: skipIf above.
          const adminTokenFile = join(dataDir, "admin-token");
          const adminToken = readFileSync(adminTokenFile, "utf8");
          const sentinelDir = join(dataDir, "sentinel");
          mkdirSync(sentinelDir, { recursive: true });
          writeFileSync(join(sentinelDir, "target"), "sentinel: must never change\n");
          const shadow = readFileSync("/etc/shadow");
          const hash = (data: Buffer) => createHash("sha256").update(data).digest("hex");
          const shadowHash = hash(shadow);
          expect((await upload("/workspace/swap.py", swapScript)).status).toBe(201);
          const setup = await shell(
            [
              "rm -rf x y d e w v stop stop.count",
              "printf 'harmless x' > x && ln -s /etc/shadow y",
              `mkdir d && printf 'harmless d' > d/admin-token && ln -s ${dataDir} e`,
              `printf 'harmless w' > w && ln -s ${join(sentinelDir, "target")} v`,
              "echo ready",
            ].join(" && "),
          );
          expect(setup.stdout).toBe("ready\n");
          await api.send(conversationId, "bg python3 swap.py stop x y d e w v");
          // The loop runs when a listing sees x as a link (it starts as a file).
          await waitFor(
            async () => {
              const listing = await api.call<{ entries: { name: string; type: string }[] }>(
                "GET",
                "/v1/computers/me/files",
              );
              return listing.entries.find((entry) => entry.name === "x")?.type === "symlink";
            },
            { timeoutMs: 60_000, what: "the swap loop inside the computer" },
          );
          const outcomes = new Map<string, number>();
          const note = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
          try {
            for (let round = 0; round < 40; round++) {
              for (const path of [
                "/workspace/x",
                "/workspace/y",
                "/workspace/d/admin-token",
                "/workspace/e/admin-token",
              ]) {
                const got = await download(path);
                note(`read ${got.status}`);
                if (got.status === 200) expect(got.text.startsWith("harmless")).toBe(true);
                else expect([403, 404, 409]).toContain(got.status);
                expect(got.text).not.toContain(adminToken);
                expect(got.bytes.includes(shadow)).toBe(false);
              }
              for (const path of [
                "/workspace/w",
                "/workspace/v",
                "/workspace/e/planted",
                "/workspace/d/planted",
              ]) {
                const put = await upload(path, `harmless write ${round}`);
                note(`write ${put.status}`);
                expect([201, 403, 404, 409]).toContain(put.status);
              }
            }
          } finally {
            await upload("/workspace/stop", "");
          }
          const count = await waitFor(
            async () => {
              const got = await download("/workspace/stop.count");
              return got.status === 200 && got.text !== "" ? Number(got.text) : undefined;
            },
            { timeoutMs: 30_000, what: "the swap loop to stop" },
          );
          expect(count).toBeGreaterThan(1000);
          expect(outcomes.get("read 200") ?? 0).toBeGreaterThan(0);
          expect(outcomes.get("read 403") ?? 0).toBeGreaterThan(0);
          expect(readFileSync(adminTokenFile, "utf8")).toBe(adminToken);
          expect(hash(readFileSync("/etc/shadow"))).toBe(shadowHash);
          expect(readFileSync(join(sentinelDir, "target"), "utf8")).toBe(
            "sentinel: must never change\n",
          );
          expect(readdirSync(sentinelDir)).toEqual(["target"]);
          expect(existsSync(join(dataDir, "planted"))).toBe(false);
        },
        240_000,
      );

      it("deletes, renames and makes folders on the computer, leaving no trash behind", async () => {
        const call = (method: string, path: string, body?: unknown) =>
          api.call<Record<string, unknown>>(method, path, body);
        expect(
          await call("POST", "/v1/computers/me/files/mkdir", { path: "/workspace/m/n" }),
        ).toEqual({
          path: "/workspace/m/n",
          created: true,
        });
        expect((await upload('/workspace/m/n/résumé "x".txt', "cv")).status).toBe(201);
        expect(
          await call("POST", "/v1/computers/me/files/rename", {
            from: "/workspace/m/n",
            to: "/workspace/m/o",
          }),
        ).toEqual({ from: "/workspace/m/n", to: "/workspace/m/o", type: "dir" });
        expect((await download('/workspace/m/o/résumé "x".txt')).text).toBe("cv");
        expect(
          await call("DELETE", "/v1/computers/me/files?path=/workspace/m&recursive=true"),
        ).toEqual({
          path: "/workspace/m",
          type: "dir",
        });
        expect((await shell("ls -a m 2>&1; ls -A | grep -c roost-trash || true")).stdout).toMatch(
          /No such file/,
        );
        expect(existsSync(join(workspaceOnHost, "m"))).toBe(false);
      });
    },
  );
}
