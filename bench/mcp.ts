/**
 * MCP tool round trips (issue 15's figures):
 *   - stdio: `gateway.call` of `mcp.call` to a command server the worker runs (our fixture
 *     server's `echo`), over a real WebSocket to a real worker process started as the platform
 *     starts it, on an awake computer (the server already running);
 *   - HTTP: a call of the MCP SDK's example streamable HTTP server's `greet` from the server side,
 *     through the egress-checked fetch (a public-looking name taken to 127.0.0.1, as in the tests).
 *
 *   node bench/mcp.ts [--calls 300]
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { connect } from "node:net";
import path from "node:path";
import { parseArgs } from "node:util";
import { prepareWorkerBuild, workerNodeOptions } from "../src/computers/worker-build.ts";
import { compilePolicy, createDestinationContext, parseEgressPolicy } from "../src/egress/index.ts";
import { findFreePort } from "../src/engine/index.ts";
import { makeComputerDirs, spawnWorker, startTestGateway } from "../src/gateway/testing/index.ts";
import { createGuardedFetch, createHttpMcpClients } from "../src/mcp/index.ts";
import { summarize } from "./support.ts";

const { values } = parseArgs({ options: { calls: { type: "string", default: "300" } } });
const calls = Number.parseInt(values.calls, 10);
const require = createRequire(import.meta.url);
const examples = path.join(
  path.dirname(require.resolve("@modelcontextprotocol/sdk/client/index.js")),
  "..",
  "examples",
  "server",
);
const server = {
  name: "fixture",
  command: process.execPath,
  args: [path.resolve(import.meta.dirname, "../src/worker/testing/mcp-fixture-server.ts")],
  env: {},
};

async function timed(count: number, action: (index: number) => Promise<void>): Promise<number[]> {
  const samples: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const started = performance.now();
    await action(index);
    samples.push(performance.now() - started);
  }
  return samples;
}

// ── stdio, through the worker ─────────────────────────────────────────────────────────────────
const build = await prepareWorkerBuild();
const gw = await startTestGateway();
const dirs = makeComputerDirs("roost-bench-mcp-");
gw.tokens.set("bench-token", "cmp_bench");
const worker = spawnWorker({
  gatewayUrl: gw.url,
  token: "bench-token",
  dirs,
  nodeOptions: workerNodeOptions,
  ...(build === undefined ? {} : { entry: build.entry }),
});
try {
  await gw.gateway.waitForWorker("cmp_bench", 15_000);
  const callEcho = async (callId: string) => {
    const result = await gw.gateway.call("cmp_bench", {
      callId,
      tool: "mcp.call",
      input: { server, tool: "echo", arguments: { text: "hi" } },
      timeoutMs: 30_000,
    });
    if (!result.ok) throw new Error(`mcp.call failed: ${result.error.message}`);
  };
  const first = await timed(1, () => callEcho("first"));
  await timed(20, (index) => callEcho(`warm-${index}`));
  const stdio = await timed(calls, (index) => callEcho(`call-${index}`));
  console.log(summarize("mcp stdio first call (starts the server)", first));
  console.log(summarize("mcp stdio tool round trip (awake computer, server running)", stdio));
} finally {
  worker.child.kill("SIGKILL");
  await gw.close();
}

// ── HTTP, from the server side ────────────────────────────────────────────────────────────────
const port = await findFreePort();
const example = spawn(process.execPath, [path.join(examples, "simpleStreamableHttp.js")], {
  env: { ...process.env, MCP_PORT: String(port) },
  stdio: ["ignore", "pipe", "ignore"],
});
try {
  await new Promise<void>((resolve) => {
    example.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("listening on port")) resolve();
    });
  });
  const publicAddress = "93.184.216.34";
  const target = {
    key: "bench",
    url: `http://localhost:${port}/mcp`,
    headers: {},
    fetch: createGuardedFetch({
      policy: async () => compilePolicy(parseEgressPolicy({ mode: "allow-all" })),
      destination: createDestinationContext({}),
      resolve: async () => [publicAddress],
      connect: (address, toPort) =>
        connect(toPort, address === publicAddress ? "127.0.0.1" : address),
    }),
  };
  const http = createHttpMcpClients();
  const greet = async () => {
    await http.call(target, { tool: "greet", arguments: { name: "Ada" } }, 30_000);
  };
  const first = await timed(1, greet);
  await timed(20, greet);
  const samples = await timed(calls, greet);
  console.log(summarize("mcp http first call (connects a session)", first));
  console.log(summarize("mcp http tool round trip (session open)", samples));
  await http.close();
} finally {
  example.kill();
}
