/**
 * Fault: the server is SIGKILLed while a computer is awake. Its sandbox dies with it
 * (--die-with-parent), and the next provider start removes the cgroups, sockets and runtime files
 * it left behind (L4), even while the killed server is still a zombie (R2), and unmounts its
 * disk image (L6) with every file intact.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { access, readdir, readFile, realpath, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { readMounts } from "./disk-image.ts";
import { createLocalProvider } from "./local-provider.ts";
import { processStartTicks } from "./system.ts";
import {
  makeTempDir,
  skipReason,
  startTestGateway,
  uniqueId,
  type TestGateway,
} from "./testing/index.ts";

const skip = await skipReason("leftovers.test.ts");

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

type Info = {
  fromSpare: boolean;
  slot: number;
  sandboxPid: number;
  sockets: { gateway: string };
  cgroups: Array<{ dir: string }>;
};

/**
 * A test server in its own process: a provider that creates and wakes one computer, prints its
 * info and its pid, and idles. `zombieParent`: started through a parent that never reaps it, so
 * once killed it stays a zombie (state Z) until the test ends that parent.
 */
async function startServer(
  dataDir: string,
  id: string,
  options: { zombieParent?: boolean; spares?: boolean } = {},
): Promise<{ child: ChildProcess; info: Info; pid: number }> {
  const providerModule = fileURLToPath(new URL("./local-provider.ts", import.meta.url));
  const testingModule = fileURLToPath(new URL("./testing/index.ts", import.meta.url));
  const script = path.join(dataDir, `server-${randomSuffix()}.ts`);
  await writeFile(
    script,
    `import { createLocalProvider } from ${JSON.stringify(providerModule)};
import { startTestGateway } from ${JSON.stringify(testingModule)};
const gateway = await startTestGateway();
const provider = await createLocalProvider({
  dataDir: ${JSON.stringify(path.join(dataDir, "data"))},
  sockets: { gateway: (id, socketPath) => gateway.listenComputer(id, socketPath) },
  spares: ${options.spares === true ? 1 : 0},
});
await provider.create(${JSON.stringify(id)});
if (${options.spares === true} && !(await provider.spareReady())) throw new Error("no spare");
await provider.wake(${JSON.stringify(id)}, { gatewayUrl: gateway.url, workerToken: "t" });
const written = await provider.exec(${JSON.stringify(id)}, ["sh", "-c", "echo kept > /workspace/kept.txt && sync"]);
if (written.exitCode !== 0) throw new Error(written.stderr);
console.log(JSON.stringify({ pid: process.pid, info: provider.info(${JSON.stringify(id)}) }));
setInterval(() => undefined, 1000);
`,
  );
  const child = options.zombieParent
    ? // sh execs into sleep, which becomes the server's parent and never waits for it.
      spawn("/bin/sh", ["-c", `"$0" "$1" & exec sleep 600`, process.execPath, script], {
        stdio: ["ignore", "pipe", "inherit"],
      })
    : spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
  const started = await new Promise<{ info: Info; pid: number }>((resolve, reject) => {
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => {
      text += String(chunk);
      if (text.includes("\n"))
        resolve(JSON.parse(text.split("\n")[0]!) as { info: Info; pid: number });
    });
    child.once("exit", (code) => reject(new Error(`the test server exited early (${code})`)));
  });
  return { child, ...started };
}

const randomSuffix = () => Math.random().toString(36).slice(2, 8);

async function processState(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  return stat?.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
}

describe.skipIf(skip !== undefined)("local provider leftovers", () => {
  let gateway: TestGateway;
  const sockets = () => ({
    gateway: (id: string, socketPath: string) => gateway.listenComputer(id, socketPath),
  });

  test.each([
    ["started its own sandbox", false],
    ["claimed a spare sandbox (its binds hold the disk; the next start has spares off)", true],
  ])(
    "server killed while a computer is awake (it %s): the next start removes what it left",
    async (_, spares) => {
      const dataDir = await makeTempDir();
      gateway = await startTestGateway();
      const id = uniqueId("crash");
      const { child: server, info, pid } = await startServer(dataDir.path, id, { spares });
      const spareDirs = async () =>
        (await readdir("/run/roost/local/spares").catch(() => [] as string[])).filter((name) =>
          name.startsWith(`${pid}-`),
        );
      try {
        expect(info.fromSpare).toBe(spares);
        if (spares) expect((await spareDirs()).length).toBeGreaterThan(0);
        const slot = info.slot;
        expect(await exists(info.sockets.gateway)).toBe(true);
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
        // It leaves its cgroups, sockets and awake record behind. (Not asserted here: another
        // server starting meanwhile, e.g. a parallel test file, may already sweep them.)

        const provider = await createLocalProvider({
          dataDir: path.join(dataDir.path, "data"),
          sockets: sockets(),
        });
        try {
          for (const cgroup of info.cgroups) expect(await exists(cgroup.dir)).toBe(false);
          expect(await exists(`/run/roost/local/awake/${slot}.json`)).toBe(false);
          expect(await exists(`/run/roost/local/c${slot}`)).toBe(false);
          expect(await exists(info.sockets.gateway)).toBe(false);
          expect(await isMounted()).toBe(false);
          expect(await spareDirs()).toEqual([]);
          expect(
            (await readMounts()).filter((entry) =>
              entry.mountPoint.startsWith(`/run/roost/local/spares/${pid}-`),
            ),
          ).toEqual([]);
          // The computer itself is intact and wakes again on the same slot.
          expect(await provider.status(id)).toBe("stopped");
          await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "t" });
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
        await cleanUp(dataDir, id, sockets);
        await gateway.close();
        await dataDir.remove();
      }
    },
  );

  test("right after a crash, the first wake can fail (slot in use by a server that is still a zombie): zombies count as dead", async () => {
    const dataDir = await makeTempDir();
    gateway = await startTestGateway();
    const id = uniqueId("zombie");
    const {
      child: parent,
      info,
      pid,
    } = await startServer(dataDir.path, id, {
      zombieParent: true,
    });
    try {
      process.kill(pid, "SIGKILL");
      // The killed server is a zombie now, and stays one: its parent never reaps it.
      const deadline = Date.now() + 5000;
      while ((await processState(pid)) !== "Z" && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await processState(pid)).toBe("Z");

      const provider = await createLocalProvider({
        dataDir: path.join(dataDir.path, "data"),
        sockets: sockets(),
      });
      try {
        expect(await processState(pid)).toBe("Z"); // still a zombie while we wake
        await provider.wake(id, { gatewayUrl: gateway.url, workerToken: "t" });
        expect(provider.info(id)!.slot).toBe(info.slot);
        await gateway.waitForHello(1);
        await provider.destroy(id);
      } finally {
        await provider.close();
      }
    } finally {
      parent.kill("SIGKILL");
      await cleanUp(dataDir, id, sockets);
      await gateway.close();
      await dataDir.remove();
    }
  });
});

/** A failure above may have left the computer: destroy it so its slot claim goes too. */
async function cleanUp(
  dataDir: { path: string },
  id: string,
  sockets: () => Parameters<typeof createLocalProvider>[0]["sockets"],
): Promise<void> {
  if ((await readdir(path.join(dataDir.path, "data")).catch(() => [])).length === 0) return;
  const cleanup = await createLocalProvider({
    dataDir: path.join(dataDir.path, "data"),
    sockets: sockets(),
  });
  await cleanup.destroy(id).finally(() => cleanup.close());
}
