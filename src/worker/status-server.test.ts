/**
 * The worker's status endpoints against a real worker and a real gateway: readiness follows the
 * connection, the metrics count dials and answered calls, and nothing secret is shown (WS1).
 */
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { makeComputerDirs, startTestGateway, type TestGateway } from "../gateway/testing/index.ts";
import { renderMetrics, startStatusServer, type StatusServer } from "./status-server.ts";
import { startWorker, type Worker } from "./worker.ts";

describe("the worker's /healthz, /readyz and /metrics", () => {
  let gw: TestGateway | undefined;
  let worker: Worker | undefined;
  let status: StatusServer | undefined;
  const dirs = makeComputerDirs("roost-status-worker-");
  afterEach(async () => {
    await status?.close();
    await worker?.close();
    await gw?.close();
    status = worker = gw = undefined;
  });

  const get = async (path: string, method = "GET") => {
    const response = await fetch(`${status!.url}${path}`, { method });
    return {
      status: response.status,
      text: await response.text(),
      type: response.headers.get("content-type"),
    };
  };

  it("is not ready while the token is refused, ready once connected, and counts dials and calls by tool and outcome", async () => {
    gw = await startTestGateway();
    worker = await startWorker({
      gatewayUrl: gw.url,
      token: "rsw_not-yet-valid",
      tokenFile: undefined,
      stateDir: dirs.stateDir,
      workspace: dirs.workspace,
      commandEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dirs.home },
      backoff: { initialDelayMs: 20, maxDelayMs: 50 },
      log: () => undefined,
    });
    const started = worker;
    status = await startStatusServer({ port: 0, stats: () => started.stats() });
    expect(status.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    expect(await get("/healthz")).toMatchObject({ status: 200, text: "ok\n" });
    await waitFor(() => started.stats().connectAttempts >= 2, {
      what: "a refused dial and a retry",
    });
    expect(await get("/readyz")).toMatchObject({ status: 503 });
    const before = await get("/metrics");
    expect(before.type).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(before.text).toContain("\nroost_worker_connected 0\n");
    expect(before.text).not.toMatch(/^roost_worker_last_frame_age_seconds /m); // nothing heard yet

    gw.tokens.set("rsw_not-yet-valid", "cmp_metrics");
    await gw.gateway.waitForWorker("cmp_metrics", 10_000);
    await waitFor(async () => (await get("/readyz")).status === 200, { what: "ready" });
    const call = (callId: string, tool: string, input: unknown) =>
      gw!.gateway.call("cmp_metrics", { callId, tool, input, timeoutMs: 10_000 });
    expect(await call("c1", "shell", { command: "true" })).toMatchObject({ ok: true });
    expect(await call("c2", "shell", { command: "true" })).toMatchObject({ ok: true });
    expect(await call("c3", "read", { path: "missing.txt" })).toMatchObject({ ok: false });
    // A gateway cannot grow the metrics with names of its choosing.
    expect(await call("c4", "made-up-tool-name", {})).toMatchObject({
      ok: false,
      error: { code: "unknown_tool" },
    });

    const metrics = (await get("/metrics")).text;
    expect(metrics).toContain("\nroost_worker_connected 1\n");
    expect(metrics).toMatch(/\nroost_worker_last_frame_age_seconds \d+\.\d{3}\n/);
    expect(metrics).toMatch(/\nroost_worker_connect_attempts_total ([3-9]|\d\d+)\n/);
    expect(metrics).toContain("\nroost_worker_connections_total 1\n");
    expect(metrics).toContain('\nroost_worker_calls_total{tool="shell",outcome="ok"} 2\n');
    expect(metrics).toContain('\nroost_worker_calls_total{tool="read",outcome="error"} 1\n');
    expect(metrics).toContain('\nroost_worker_calls_total{tool="other",outcome="error"} 1\n');
    expect(metrics).not.toContain("made-up-tool-name");
    // WS1: no token, no folder of the machine.
    expect(metrics).not.toContain("rsw_");
    expect(metrics).not.toContain(dirs.workspace);
    for (const name of [
      "roost_worker_connected",
      "roost_worker_last_frame_age_seconds",
      "roost_worker_connect_attempts_total",
      "roost_worker_connections_total",
      "roost_worker_calls_total",
    ]) {
      expect(metrics).toContain(`# HELP ${name} `);
      expect(metrics).toMatch(new RegExp(`# TYPE ${name} (gauge|counter)\\n`));
    }
  });

  it("answers only GET and HEAD of its three paths, and listens on loopback only (WS1)", async () => {
    const stats = () => ({
      connected: false,
      lastHeardAt: undefined,
      connectAttempts: 0,
      connections: 0,
      calls: [],
    });
    status = await startStatusServer({ port: 0, stats });
    expect((await get("/metrics", "POST")).status).toBe(405);
    expect((await get("/healthz", "DELETE")).status).toBe(405);
    expect((await get("/metrics", "HEAD")).status).toBe(200);
    expect((await get("/../../etc/passwd")).status).toBe(404);
    expect((await get("/metrics/extra")).status).toBe(404);
    await expect(startStatusServer({ port: 0, host: "0.0.0.0", stats })).rejects.toThrow(
      /loopback only/,
    );
  });

  it("a port already in use is an error the caller sees, not a silent worker without metrics", async () => {
    const stats = () => ({
      connected: false,
      lastHeardAt: undefined,
      connectAttempts: 0,
      connections: 0,
      calls: [],
    });
    status = await startStatusServer({ port: 0, stats });
    await expect(startStatusServer({ port: status.port, stats })).rejects.toThrow(/EADDRINUSE/);
  });

  it("renders label values safely", () => {
    const text = renderMetrics(
      {
        connected: true,
        lastHeardAt: 1000,
        connectAttempts: 1,
        connections: 1,
        calls: [{ tool: 'we"ird\\tool\n', outcome: "ok", count: 1 }],
      },
      2500,
    );
    expect(text).toContain('roost_worker_calls_total{tool="we\\"ird\\\\tool\\n",outcome="ok"} 1');
    expect(text).toContain("roost_worker_last_frame_age_seconds 1.500");
  });
});
