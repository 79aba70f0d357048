/**
 * Experiment the conversation loop depends on (restate-server 1.7.12, @restatedev/restate-sdk 1.17.2):
 * an exclusive virtual-object handler stores `ctx.request().id` in state and waits on
 * `ctx.signal(name).orTimeout(ms)`; a shared handler of the same object (not queued behind the
 * exclusive one) reads the id and resolves the signal with `ctx.invocation(id).signal(name).resolve()`.
 */
import { describe, expect, test } from "vitest";
import {
  registerDeployment,
  startEmbeddedRestate,
  type EmbeddedRestate,
  type EngineEvent,
} from "./index.ts";
import {
  attachIngress,
  callIngress,
  freePorts,
  makeTempDir,
  queryAdmin,
  sendIngress,
  serveServices,
  waitFor,
  waiter,
  type WaitOutcome,
} from "./testing/index.ts";

describe("signal from a shared handler", () => {
  test("wakes an exclusive handler waiting with a timeout, times out without it, and survives a restate SIGKILL", async () => {
    const dir = await makeTempDir();
    const service = await serveServices([waiter]);
    const events: EngineEvent[] = [];
    let engine: EmbeddedRestate | undefined;
    try {
      engine = await startEmbeddedRestate({
        dataDir: dir.path,
        ...(await freePorts()),
        onEvent: (e) => events.push(e),
      });
      await registerDeployment(engine.adminUrl, service.url);
      const ingressUrl = engine.ingressUrl;
      const adminUrl = engine.adminUrl;

      // 1. Resolved by the shared handler while the exclusive one holds the object's lock.
      const first = await sendIngress(ingressUrl, "Waiter/c1/wait", 30_000);
      await waitFor("the shared handler to find the waiting invocation", async () =>
        (await callIngress<boolean>(ingressUrl, "Waiter/c1/wake", "hello")) ? true : undefined,
      );
      const wokenAt = performance.now();
      expect(await attachIngress<WaitOutcome>(ingressUrl, first)).toEqual({ resolved: "hello" });
      console.info(
        `[figures] shared-handler signal to exclusive handler result: ${Math.round(performance.now() - wokenAt)} ms`,
      );

      // 2. Nobody resolves it: the timeout wins.
      expect(await callIngress<WaitOutcome>(ingressUrl, "Waiter/c2/wait", 300)).toEqual({
        timedOut: true,
      });

      // 3. restate-server SIGKILLed while the handler waits: after the restart the signal still lands.
      const third = await sendIngress(ingressUrl, "Waiter/c3/wait", 60_000);
      await waitFor("the waiting invocation id in state", async () => {
        const rows = await queryAdmin<{ key: string }>(
          adminUrl,
          "SELECT key FROM state WHERE service_name = 'Waiter' AND service_key = 'c3'",
        );
        return rows.some((row) => row.key === "waiting") ? true : undefined;
      });
      const firstPid = engine.pid!;
      process.kill(firstPid, "SIGKILL");
      await waitFor("the restarted server", () =>
        events.find((event) => event.type === "ready" && event.pid !== firstPid),
      );
      await waitFor("the shared handler after the restart", async () =>
        (await callIngress<boolean>(ingressUrl, "Waiter/c3/wake", "after-restart"))
          ? true
          : undefined,
      );
      expect(await attachIngress<WaitOutcome>(ingressUrl, third)).toEqual({
        resolved: "after-restart",
      });
    } finally {
      await engine?.close();
      await service.close();
      await dir.remove();
    }
  });
});
