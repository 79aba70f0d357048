/**
 * Prints what the built-in service balancer costs and what a killed node costs: invocation
 * latency through the real restate-server straight to one SDK endpoint and through the balancer
 * in front of two, throughput at a concurrency, and, with one node killed in the middle of a run,
 * how many invocations completed and the slowest one (Restate's retry on the other node).
 * Run: `node bench/service-balancer.ts [invocations]`.
 */
import http2 from "node:http2";
import type { Socket } from "node:net";
import * as restate from "@restatedev/restate-sdk";
import { registerDeployment, startEmbeddedRestate } from "../src/engine/index.ts";
import { callIngress, freePorts, makeTempDir } from "../src/engine/testing/index.ts";
import { startServiceBalancer } from "../src/platform/index.ts";
import { summarize } from "./support.ts";

const invocations = Number(process.argv[2] ?? "300");

function node(name: string) {
  const object = restate.object({
    name: "Bench",
    handlers: {
      add: async (ctx: restate.ObjectContext, amount: number): Promise<string> => {
        ctx.set("count", ((await ctx.get<number>("count")) ?? 0) + amount);
        return name;
      },
    },
  });
  const server = http2.createServer(
    restate.createEndpointHandler({ services: [object], logger: () => undefined }),
  );
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  return {
    async listen() {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    },
    kill() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

async function run(
  ingressUrl: string,
  label: string,
  count: number,
  concurrency: number,
  during?: (done: number) => void,
) {
  const latencies: number[] = [];
  const answeredBy = new Map<string, number>();
  let next = 0;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = next++;
        const at = performance.now();
        const by = await callIngress<string>(ingressUrl, `Bench/${label}-${index}/add`, 1);
        latencies.push(performance.now() - at);
        answeredBy.set(by, (answeredBy.get(by) ?? 0) + 1);
        during?.(++done);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${summarize(`${label} (concurrency ${concurrency})`, latencies)}; ${(count / seconds).toFixed(0)} invocations/s; answered by ${[...answeredBy].map(([by, n]) => `${by}: ${n}`).join(", ")}`,
  );
}

const dir = await makeTempDir();
const engine = await startEmbeddedRestate({ dataDir: dir.path, ...(await freePorts()) });
const nodeA = node("A");
const nodeB = node("B");
const urlA = await nodeA.listen();
const urlB = await nodeB.listen();
const balancer = await startServiceBalancer({ nodes: [urlA, urlB], port: 0, probeIntervalMs: 200 });
try {
  await registerDeployment(engine.adminUrl, urlA);
  await run(engine.ingressUrl, "direct to node A", invocations, 1);
  await run(engine.ingressUrl, "direct to node A", invocations, 20);
  await registerDeployment(engine.adminUrl, balancer.url);
  await run(engine.ingressUrl, "through the balancer", invocations, 1);
  await run(engine.ingressUrl, "through the balancer", invocations, 20);
  let killedAt = 0;
  await run(engine.ingressUrl, "node A killed at half", invocations, 20, (done) => {
    if (done === Math.floor(invocations / 2) && killedAt === 0) {
      killedAt = performance.now();
      nodeA.kill();
    }
  });
  console.log(
    `every one of ${invocations} invocations completed with node A killed at half; balancer nodes: ${JSON.stringify(balancer.nodes())}`,
  );
} finally {
  await balancer.close();
  nodeB.kill();
  await engine.close();
  await dir.remove();
}
