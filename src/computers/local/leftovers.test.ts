/**
 * Fault: the server is SIGKILLed while a computer is awake. Its sandbox dies with it
 * (--die-with-parent), and the next provider start removes the namespace, veth, nft chains,
 * cgroups and runtime files it left behind (L4), and unmounts its disk image (L6) with every
 * file intact.
 */
import { spawn } from "node:child_process";
import { access, readdir, readFile, realpath, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { readMounts } from "./disk-image.ts";
import { createLocalProvider } from "./local-provider.ts";
import { processStartTicks, runCommand } from "./system.ts";
import { makeTempDir, skipReason, startBannerServer, uniqueId } from "./testing/index.ts";

const skip = await skipReason("leftovers.test.ts");

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

describe.skipIf(skip !== undefined)("local provider leftovers", () => {
  test("server killed while a computer is awake: the next start removes what it left", async () => {
    const dataDir = await makeTempDir();
    const gateway = await startBannerServer("gateway", "127.0.0.1");
    const id = uniqueId("crash");
    const providerModule = fileURLToPath(new URL("./local-provider.ts", import.meta.url));
    const script = path.join(dataDir.path, "server.ts");
    await writeFile(
      script,
      `import { createLocalProvider } from ${JSON.stringify(providerModule)};
const provider = await createLocalProvider({ dataDir: ${JSON.stringify(path.join(dataDir.path, "data"))} });
await provider.create(${JSON.stringify(id)});
await provider.wake(${JSON.stringify(id)}, { gatewayUrl: "ws://127.0.0.1:${gateway.port}/v1/gateway", workerToken: "t" });
const written = await provider.exec(${JSON.stringify(id)}, ["sh", "-c", "echo kept > /workspace/kept.txt && sync"]);
if (written.exitCode !== 0) throw new Error(written.stderr);
console.log(JSON.stringify(provider.info(${JSON.stringify(id)})));
setInterval(() => undefined, 1000);
`,
    );
    const server = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      type Info = {
        slot: number;
        sandboxPid: number;
        netns: string;
        hostInterface: string;
        cgroups: Array<{ dir: string }>;
      };
      const info = await new Promise<Info>((resolve, reject) => {
        let text = "";
        server.stdout.on("data", (chunk: Buffer) => {
          text += String(chunk);
          if (text.includes("\n")) resolve(JSON.parse(text.split("\n")[0]!) as Info);
        });
        server.once("exit", (code) => reject(new Error(`the test server exited early (${code})`)));
      });
      const slot = info.slot;
      expect(await exists(`/run/netns/${info.netns}`)).toBe(true);
      const mountPoint = path.join(await realpath(dataDir.path), "data", id, "mount");
      const isMounted = async () =>
        (await readMounts()).some((entry) => entry.mountPoint === mountPoint);
      expect(await isMounted()).toBe(true);

      server.kill("SIGKILL");
      await new Promise((resolve) => server.once("exit", resolve));
      // X2: the sandbox died with its server.
      const deadline = Date.now() + 5000;
      while ((await processStartTicks(info.sandboxPid)) !== undefined && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(await processStartTicks(info.sandboxPid)).toBeUndefined();
      // It leaves its namespace, veth, rules, cgroups and awake record behind. (Not asserted here:
      // another server starting meanwhile, e.g. a parallel test file, may already sweep them.)

      const provider = await createLocalProvider({ dataDir: path.join(dataDir.path, "data") });
      try {
        expect(await exists(`/run/netns/${info.netns}`)).toBe(false);
        expect(await exists(`/sys/class/net/${info.hostInterface}`)).toBe(false);
        for (const cgroup of info.cgroups) expect(await exists(cgroup.dir)).toBe(false);
        expect(await exists(`/run/roost/local/awake/${slot}.json`)).toBe(false);
        expect(await exists(`/run/roost/local/c${slot}`)).toBe(false);
        expect(await isMounted()).toBe(false);
        const table = await runCommand("nft", ["list", "table", "inet", "roost"]);
        expect(table.stdout).not.toContain(`in-c${slot} `);
        expect(table.stdout).not.toContain(`nat-c${slot} `);
        // The computer itself is intact and wakes again on the same slot.
        expect(await provider.status(id)).toBe("stopped");
        await provider.wake(id, {
          gatewayUrl: `ws://127.0.0.1:${gateway.port}/v1/gateway`,
          workerToken: "t",
        });
        expect(provider.info(id)!.slot).toBe(slot);
        const kept = await provider.exec(id, ["cat", "/workspace/kept.txt"]);
        expect(kept.stdout).toBe("kept\n");
        expect(
          JSON.parse(await readFile(path.join(dataDir.path, "data", id, "local.json"), "utf8")),
        ).toMatchObject({ slot });
        await provider.destroy(id);
        expect(await readdir(path.join(dataDir.path, "data"))).toEqual([]);
      } finally {
        await provider.close();
      }
    } finally {
      server.kill("SIGKILL");
      if ((await readdir(path.join(dataDir.path, "data")).catch(() => [])).length > 0) {
        // A failure above left the computer: destroy it so its slot claim goes too.
        const cleanup = await createLocalProvider({ dataDir: path.join(dataDir.path, "data") });
        await cleanup.destroy(id).finally(() => cleanup.close());
      }
      await gateway.close();
      await dataDir.remove();
    }
  });
});
