import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { describe, expect, test } from "vitest";
import { EngineUnavailableError } from "./errors.ts";
import { probeRestateHealth } from "./health.ts";
import {
  connectExternalRestate,
  registerDeployment,
  startEmbeddedRestate,
  type EmbeddedRestate,
  type EngineEvent,
} from "./index.ts";
import { isProcessAlive, waitForProcessExit } from "./orphans.ts";
import {
  attachIngress,
  callIngress,
  counter,
  findProcesses,
  freePorts,
  listeningAddresses,
  makeTempDir,
  queryAdmin,
  sendIngress,
  serveServices,
  waitFor,
} from "./testing/index.ts";

const embeddedRestateModule = new URL("./embedded-restate.ts", import.meta.url).pathname;

describe("embedded restate", () => {
  test("starts, becomes healthy on 127.0.0.1 only, and a clean close leaves no process", async () => {
    const dir = await makeTempDir();
    const ports = await freePorts();
    const events: EngineEvent[] = [];
    let engine: EmbeddedRestate | undefined;
    try {
      engine = await startEmbeddedRestate({
        dataDir: dir.path,
        ...ports,
        onEvent: (event) => events.push(event),
      });
      const pid = engine.pid!;
      expect(await probeRestateHealth(engine)).toEqual({ healthy: true, problem: undefined });
      expect(existsSync(engine.files.pidFile)).toBe(true);
      expect(engine.files.config.startsWith(`${dir.path}/restate/`)).toBe(true);
      expect(existsSync(`${dir.path}/restate/roost`)).toBe(true);
      const listening = await listeningAddresses([
        ports.ingressPort,
        ports.adminPort,
        ports.nodePort,
      ]);
      expect(listening.sort()).toEqual(
        [ports.ingressPort, ports.adminPort, ports.nodePort]
          .map((port) => `127.0.0.1:${port}`)
          .sort(),
      );
      const watchdogs = await findProcesses("roost-restate-watchdog", String(pid));
      expect(watchdogs).toHaveLength(1);

      await engine.close();
      expect(await isProcessAlive(pid)).toBe(false);
      expect(await isProcessAlive(watchdogs[0]!)).toBe(false);
      expect(existsSync(engine.files.pidFile)).toBe(false);
      expect(engine.pid).toBeUndefined();
      expect(events.map((event) => event.type)).toEqual(["spawned", "ready", "exited", "closed"]);
      expect(events.find((event) => event.type === "exited")).toMatchObject({ expected: true });
      await engine.close(); // idempotent
    } finally {
      await engine?.close();
      await dir.remove();
    }
  });

  test("a registered virtual object is invoked through the ingress", async () => {
    const dir = await makeTempDir();
    const service = await serveServices([counter]);
    let engine: EmbeddedRestate | undefined;
    try {
      engine = await startEmbeddedRestate({ dataDir: dir.path, ...(await freePorts()) });
      const deployment = await registerDeployment(engine.adminUrl, service.url);
      expect(deployment.id).toMatch(/^dp_/);
      expect(deployment.services).toEqual(["Counter"]);
      // Re-registering the same URI on the next start is accepted (force).
      expect((await registerDeployment(engine.adminUrl, service.url)).id).toBe(deployment.id);

      expect(await callIngress<number>(engine.ingressUrl, "Counter/a/add", 2)).toBe(2);
      expect(await callIngress<number>(engine.ingressUrl, "Counter/a/add", 3)).toBe(5);
      expect(await callIngress<number>(engine.ingressUrl, "Counter/a/get", null)).toBe(5);
      expect(await callIngress<number>(engine.ingressUrl, "Counter/b/get", null)).toBe(0);
    } finally {
      await engine?.close();
      await service.close();
      await dir.remove();
    }
  });

  test("restate SIGKILLed: the supervisor restarts it and state survives", async () => {
    const dir = await makeTempDir();
    const service = await serveServices([counter]);
    const events: EngineEvent[] = [];
    let engine: EmbeddedRestate | undefined;
    try {
      engine = await startEmbeddedRestate({
        dataDir: dir.path,
        ...(await freePorts()),
        onEvent: (e) => events.push(e),
      });
      await registerDeployment(engine.adminUrl, service.url);
      expect(await callIngress<number>(engine.ingressUrl, "Counter/k/add", 1)).toBe(1);

      const firstPid = engine.pid!;
      const killedAt = performance.now();
      process.kill(firstPid, "SIGKILL");
      const ready = await waitFor("the restarted server to be ready", () =>
        events.find((event) => event.type === "ready" && event.pid !== firstPid),
      );
      const restartMs = performance.now() - killedAt;
      expect(engine.pid).not.toBe(firstPid);
      expect(engine.pid).toBe((ready as { pid: number }).pid);
      expect(events).toContainEqual(
        expect.objectContaining({
          type: "exited",
          pid: firstPid,
          signal: "SIGKILL",
          expected: false,
        }),
      );
      expect(events).toContainEqual(
        expect.objectContaining({ type: "restart-scheduled", attempt: 1 }),
      );
      expect(await findProcesses("roost-restate-watchdog", String(firstPid))).toEqual([]);

      expect(await callIngress<number>(engine.ingressUrl, "Counter/k/add", 1)).toBe(2);
      console.info(`[figures] restart after SIGKILL until healthy: ${Math.round(restartMs)} ms`);
    } finally {
      await engine?.close();
      await service.close();
      await dir.remove();
    }
  });

  test("service endpoint down: the invocation is retried with backoff ≤ 2 s and completes once it is back", async () => {
    const dir = await makeTempDir();
    let service = await serveServices([counter]);
    let engine: EmbeddedRestate | undefined;
    try {
      engine = await startEmbeddedRestate({ dataDir: dir.path, ...(await freePorts()) });
      await registerDeployment(engine.adminUrl, service.url);
      const port = service.port;
      await service.close();

      const invocationId = await sendIngress(engine.ingressUrl, "Counter/r/add", 7);
      const adminUrl = engine.adminUrl;
      // With 100 ms doubling to a 2 s cap, 5 attempts take ≈ 1.5 s; restate's default (500 ms, 1 min
      // cap, pause after 70) would be far slower.
      await waitFor(
        "five failed attempts",
        async () => {
          const rows = await queryAdmin<{ retry_count: number; status: string }>(
            adminUrl,
            `SELECT retry_count, status FROM sys_invocation WHERE id = '${invocationId}'`,
          );
          return (rows[0]?.retry_count ?? 0) >= 5 ? rows[0] : undefined;
        },
        10_000,
      );
      service = await serveServices([counter], port);
      const backAt = performance.now();
      expect(await attachIngress<number>(engine.ingressUrl, invocationId)).toBe(7);
      expect(performance.now() - backAt).toBeLessThan(4_000);
    } finally {
      await engine?.close();
      await service.close();
      await dir.remove();
    }
  });

  test("orphaned restate from a killed parent is cleaned up on next start", async () => {
    const dir = await makeTempDir();
    const ports = await freePorts();
    let engine: EmbeddedRestate | undefined;
    try {
      // A parent Node process that starts the engine (without the watchdog, to leave a real
      // orphan behind) and then dies by SIGKILL, with no chance to clean up.
      const script = `
        import { startEmbeddedRestate } from ${JSON.stringify(embeddedRestateModule)};
        const engine = await startEmbeddedRestate({ ...JSON.parse(process.argv[1]), watchdog: false });
        process.stdout.write(String(engine.pid) + "\\n");
        setInterval(() => {}, 1000);
      `;
      const parent = spawn(
        process.execPath,
        ["--input-type=module", "-e", script, JSON.stringify({ dataDir: dir.path, ...ports })],
        {
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      const orphanPid = await new Promise<number>((resolve, reject) => {
        let output = "";
        parent.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes("\n")) resolve(Number(output.trim()));
        });
        parent.once("exit", (code) => reject(new Error(`parent exited early with ${code}`)));
      });
      parent.kill("SIGKILL");
      await new Promise((resolve) => parent.once("exit", resolve));
      expect(await isProcessAlive(orphanPid)).toBe(true);

      const events: EngineEvent[] = [];
      engine = await startEmbeddedRestate({
        dataDir: dir.path,
        ...ports,
        onEvent: (e) => events.push(e),
      });
      expect(events[0]).toMatchObject({
        type: "orphan-terminated",
        pid: orphanPid,
        signal: "SIGTERM",
      });
      expect(await isProcessAlive(orphanPid)).toBe(false);
      expect(engine.pid).not.toBe(orphanPid);
      expect((await probeRestateHealth(engine)).healthy).toBe(true);
    } finally {
      await engine?.close();
      await dir.remove();
    }
  });

  test("parent killed: the watchdog stops restate without waiting for the next start", async () => {
    const dir = await makeTempDir();
    const ports = await freePorts();
    try {
      const script = `
        import { startEmbeddedRestate } from ${JSON.stringify(embeddedRestateModule)};
        const engine = await startEmbeddedRestate(JSON.parse(process.argv[1]));
        process.stdout.write(String(engine.pid) + "\\n");
        setInterval(() => {}, 1000);
      `;
      const parent = spawn(
        process.execPath,
        ["--input-type=module", "-e", script, JSON.stringify({ dataDir: dir.path, ...ports })],
        {
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      const serverPid = await new Promise<number>((resolve, reject) => {
        let output = "";
        parent.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes("\n")) resolve(Number(output.trim()));
        });
        parent.once("exit", (code) => reject(new Error(`parent exited early with ${code}`)));
      });
      parent.kill("SIGKILL");
      expect(await waitForProcessExit(serverPid, 15_000)).toBe(true);
      // The watchdog leaves on its next 100 ms poll.
      await waitFor("the watchdog to exit", async () =>
        (await findProcesses("roost-restate-watchdog", String(serverPid))).length === 0
          ? true
          : undefined,
      );
    } finally {
      await dir.remove();
    }
  });

  test("a taken port fails the start with restate's own reason and leaves nothing running", async () => {
    const dir = await makeTempDir();
    const ports = await freePorts();
    const blocker = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => blocker.listen(ports.ingressPort, "127.0.0.1", resolve));
    const events: EngineEvent[] = [];
    try {
      const error = await startEmbeddedRestate({
        dataDir: dir.path,
        ...ports,
        startTimeoutMs: 10_000,
        onEvent: (e) => events.push(e),
      }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(EngineUnavailableError);
      const message = (error as EngineUnavailableError).message;
      expect(message).toContain("restate-server did not start");
      expect(message).toContain(String(ports.ingressPort));
      expect((error as EngineUnavailableError).logTail).toMatch(
        /address already in use|Address in use|os error 98/i,
      );
      const spawned = events.find((event) => event.type === "spawned") as
        { pid: number } | undefined;
      expect(spawned).toBeDefined();
      expect(await isProcessAlive(spawned!.pid)).toBe(false);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
      await dir.remove();
    }
  });

  test("an aborted signal closes the engine", async () => {
    const dir = await makeTempDir();
    const controller = new AbortController();
    let engine: EmbeddedRestate | undefined;
    try {
      const events: EngineEvent[] = [];
      engine = await startEmbeddedRestate({
        dataDir: dir.path,
        ...(await freePorts()),
        signal: controller.signal,
        onEvent: (e) => events.push(e),
      });
      const pid = engine.pid!;
      controller.abort();
      await waitFor("the closed event", () => events.find((event) => event.type === "closed"));
      expect(await isProcessAlive(pid)).toBe(false);
    } finally {
      await engine?.close();
      await dir.remove();
    }
  });
});

describe("external restate", () => {
  test("connects to a running server by URL and close() leaves it running", async () => {
    const dir = await makeTempDir();
    let engine: EmbeddedRestate | undefined;
    try {
      engine = await startEmbeddedRestate({ dataDir: dir.path, ...(await freePorts()) });
      const external = await connectExternalRestate({
        ingressUrl: `${engine.ingressUrl}/`,
        adminUrl: engine.adminUrl,
      });
      expect(external.ingressUrl).toBe(engine.ingressUrl);
      await external.close();
      expect(await isProcessAlive(engine.pid!)).toBe(true);
    } finally {
      await engine?.close();
      await dir.remove();
    }
  });

  test("an unreachable Restate fails with a message naming both URLs", async () => {
    const { ingressPort, adminPort } = await freePorts();
    const error = await connectExternalRestate({
      ingressUrl: `http://127.0.0.1:${ingressPort}`,
      adminUrl: `http://127.0.0.1:${adminPort}`,
      timeoutMs: 300,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngineUnavailableError);
    expect((error as Error).message).toContain(`http://127.0.0.1:${adminPort}`);
    expect((error as Error).message).toContain("ECONNREFUSED");
  });

  test("registering with an unreachable admin API fails after the timeout with the last problem", async () => {
    const { adminPort } = await freePorts();
    const error = await registerDeployment(`http://127.0.0.1:${adminPort}`, "http://127.0.0.1:1", {
      timeoutMs: 300,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngineUnavailableError);
    expect((error as Error).message).toMatch(/could not register .* ECONNREFUSED/);
  });
});
