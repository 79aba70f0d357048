/**
 * The service balancer against the real Restate server: two SDK endpoints ("nodes") behind one
 * balancer URL, registered by both, with request identity on. No mocks: a node is killed by
 * destroying its server's sockets, as a kill -9 would.
 */
import http2 from "node:http2";
import type { Socket } from "node:net";
import * as restate from "@restatedev/restate-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureRequestIdentity,
  registerDeployment,
  startEmbeddedRestate,
  type EmbeddedRestate,
} from "../engine/index.ts";
import {
  callIngress,
  freePorts,
  makeTempDir,
  sendIngress,
  attachIngress,
  queryAdmin,
  waitFor,
} from "../engine/testing/index.ts";
import {
  parseBalancerNodes,
  startServiceBalancer,
  type ServiceBalancer,
} from "./service-balancer.ts";

/** The same object on every node; it answers with the name of the node that ran it. */
function whereObject(node: string) {
  return restate.object({
    name: "Where",
    handlers: {
      where: async (ctx: restate.ObjectContext): Promise<string> =>
        ctx.run("which node", () => node),
      /** Waits for `wake`, then says which node finished it (the retry's, after a kill). */
      wait: async (ctx: restate.ObjectContext): Promise<string> => {
        ctx.set("waiting", ctx.request().id);
        const value = await ctx.signal<string>("wake");
        return `${value} on ${node}`;
      },
      wake: restate.handlers.object.shared(
        async (ctx: restate.ObjectSharedContext, value: string): Promise<boolean> => {
          const id = await ctx.get<string>("waiting");
          if (id === null) return false;
          ctx
            .invocation(id as restate.InvocationId)
            .signal<string>("wake")
            .resolve(value);
          return true;
        },
      ),
    },
  });
}

interface Node {
  name: string;
  url: string;
  kill(): void;
  /** As a Roost node's SIGTERM does: stop listening, GOAWAY on every session (decision 0028). */
  drain(): void;
}

async function startNode(name: string, identityKeys: string[]): Promise<Node> {
  const server = http2.createServer(
    restate.createEndpointHandler({
      services: [whereObject(name)],
      identityKeys,
      logger: () => undefined,
    }),
  );
  const sockets = new Set<Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    kill() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
    drain() {
      server.close();
      for (const session of sessions) session.close();
    },
  };
}

describe("service balancer: one URL for every node", () => {
  let restateServer: EmbeddedRestate;
  let removeDir: () => Promise<void>;
  let identityKeys: string[];
  let nodeA: Node;
  let nodeB: Node;
  let balancer: ServiceBalancer;

  beforeAll(async () => {
    const dir = await makeTempDir();
    removeDir = dir.remove;
    const identity = await ensureRequestIdentity(dir.path);
    identityKeys = [identity.publicKey];
    restateServer = await startEmbeddedRestate({
      dataDir: dir.path,
      ...(await freePorts()),
      requestIdentityPemFile: identity.privateKeyPemFile,
    });
    nodeA = await startNode("A", identityKeys);
    nodeB = await startNode("B", identityKeys);
    balancer = await startServiceBalancer({
      nodes: [nodeA.url, nodeB.url],
      port: 0,
      probeIntervalMs: 200,
    });
  }, 60_000);
  /** Until restate has the invocation running (or suspended) on a node. */
  async function waitUntilWaiting(invocationId: string): Promise<void> {
    await waitFor(`invocation ${invocationId} to wait for its signal`, async () => {
      const rows = await queryAdmin<{ status: string }>(
        restateServer.adminUrl,
        `SELECT status FROM sys_invocation WHERE id = '${invocationId}'`,
      );
      return rows[0] !== undefined && ["running", "suspended"].includes(rows[0].status)
        ? true
        : undefined;
    });
  }

  afterAll(async () => {
    await balancer?.close();
    nodeA?.kill();
    nodeB?.kill();
    await restateServer?.close();
    await removeDir?.();
  });

  it("both nodes register the one URL: the same deployment, and in-flight invocations go on", async () => {
    const first = await registerDeployment(restateServer.adminUrl, balancer.url);
    const waiting = await sendIngress(restateServer.ingressUrl, "Where/kept/wait", null);
    await waitUntilWaiting(waiting);
    // The other node starts and registers the same URL.
    const second = await registerDeployment(restateServer.adminUrl, balancer.url);
    expect(second.id).toBe(first.id);
    await callIngress<boolean>(restateServer.ingressUrl, "Where/kept/wake", "probe");
    const result = await attachIngress<string>(restateServer.ingressUrl, waiting);
    expect(result).toMatch(/^probe on [AB]$/);
  }, 60_000);

  it("spreads invocations over the nodes, with the request identity signature intact", async () => {
    const seen = new Set<string>();
    for (let index = 0; index < 8; index++) {
      seen.add(await callIngress<string>(restateServer.ingressUrl, `Where/k${index}/where`, null));
    }
    expect([...seen].sort()).toEqual(["A", "B"]);
    expect(balancer.nodes().every((node) => node.up && node.streams > 0)).toBe(true);
  }, 60_000);

  it("an unsigned request through the balancer is refused by the node, not let through", async () => {
    const session = http2.connect(balancer.url);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const request = session.request({
          ":method": "POST",
          ":path": "/invoke/Where/where",
          "content-type": "application/vnd.restate.invocation.v5",
        });
        request.once("response", (headers) => resolve(Number(headers[":status"])));
        request.once("error", reject);
        request.end();
      });
      expect(status).toBe(401);
    } finally {
      session.destroy();
    }
  });

  it("runner node killed: a waiting invocation is retried on the other node, and new ones run there", async () => {
    // Find the node that runs a waiting invocation, then kill that one.
    const before = balancer.nodes();
    const waiting = await sendIngress(restateServer.ingressUrl, "Where/survivor/wait", null);
    await waitUntilWaiting(waiting);
    const runner = balancer
      .nodes()
      .findIndex((node, index) => node.streams > before[index]!.streams);
    const [killed, other] = runner === 0 ? [nodeA, nodeB] : [nodeB, nodeA];
    killed.kill();
    await waitFor("the balancer to see the runner down", () =>
      balancer.nodes().find((node) => node.url === killed.url)?.up === false ? true : undefined,
    );
    for (let index = 0; index < 4; index++) {
      expect(
        await callIngress<string>(restateServer.ingressUrl, `Where/after${index}/where`, null),
      ).toBe(other.name);
    }
    await waitFor(
      "the waiting invocation to be running again, on B",
      async () =>
        (await callIngress<boolean>(restateServer.ingressUrl, "Where/survivor/wake", "woken")) ||
        undefined,
    );
    expect(await attachIngress<string>(restateServer.ingressUrl, waiting)).toBe(
      `woken on ${other.name}`,
    );
  }, 60_000);
});

describe("service balancer: a draining node", () => {
  it("a node that says GOAWAY gets no new stream, and no invocation attempt fails on it", async () => {
    const dir = await makeTempDir();
    const identity = await ensureRequestIdentity(dir.path);
    const engine = await startEmbeddedRestate({
      dataDir: dir.path,
      ...(await freePorts()),
      requestIdentityPemFile: identity.privateKeyPemFile,
    });
    const draining = await startNode("C", [identity.publicKey]);
    const staying = await startNode("D", [identity.publicKey]);
    // A probe far slower than the test: only the GOAWAY can tell the balancer.
    const balancer = await startServiceBalancer({
      nodes: [draining.url, staying.url],
      port: 0,
      probeIntervalMs: 60_000,
    });
    try {
      await registerDeployment(engine.adminUrl, balancer.url);
      for (let index = 0; index < 4; index++)
        await callIngress<string>(engine.ingressUrl, `Where/d${index}/where`, null);
      const before = balancer.nodes()[0]!.streams;
      expect(before).toBeGreaterThan(0);
      draining.drain();
      await waitFor("the balancer to see the GOAWAY", () =>
        balancer.nodes()[0]!.up ? undefined : true,
      );
      for (let index = 0; index < 6; index++)
        expect(await callIngress<string>(engine.ingressUrl, `Where/e${index}/where`, null)).toBe(
          "D",
        );
      expect(balancer.nodes()[0]!.streams).toBe(before);
    } finally {
      await balancer.close();
      draining.kill();
      staying.kill();
      await engine.close();
      await dir.remove();
    }
  }, 60_000);
});

describe("service balancer: its nodes", () => {
  it("refuses node URLs it cannot balance, saying what to give", () => {
    expect(() => parseBalancerNodes([])).toThrow(/at least one node \(--node http/);
    expect(() => parseBalancerNodes(["not a url"])).toThrow(/e\.g\. http:\/\/10\.0\.0\.5:9080/);
    expect(() => parseBalancerNodes(["https://10.0.0.5:9080"])).toThrow(/plain http:\/\//);
    expect(() => parseBalancerNodes(["http://10.0.0.5:9080/invoke"])).toThrow(/without a path/);
    expect(parseBalancerNodes(["http://10.0.0.5:9080/"])).toEqual(["http://10.0.0.5:9080"]);
  });

  it("answers 503 when no node can be reached, so Restate retries", async () => {
    const balancer = await startServiceBalancer({
      nodes: ["http://127.0.0.1:1"],
      port: 0,
      probeTimeoutMs: 500,
    });
    const session = http2.connect(balancer.url);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const request = session.request({ ":method": "POST", ":path": "/invoke/Where/where" });
        request.once("response", (headers) => resolve(Number(headers[":status"])));
        request.once("error", reject);
        request.end();
      });
      expect(status).toBe(503);
    } finally {
      session.destroy();
      await balancer.close();
    }
  });
});
