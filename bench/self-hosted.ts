/**
 * A self-hosted machine (`roost worker`) on this host: how soon it serves after it starts, and the
 * shell round trip to it.
 *
 * Part 1, the platform: Roost as a child process (demo model), an account with its machine
 * registered through the API, `roost worker` started R times as a child process. For each start:
 * process start → connected (the worker's "connected" line), connected → first answer of a call
 * through the API (`GET /v1/computers/me/files`, one worker call), and the first bot turn that
 * runs `$ true` (message posted → reply stored: loop, demo model, control plane, worker). Then
 * the bot's `$ true` turn, repeated.
 *
 * Part 2, the wire: the shell round trip (`gateway.call` → result, `shell true`) over a real
 * gateway on 127.0.0.1 to `roost worker`, directly and through a CONNECT proxy, next to the
 * worker a hosted computer runs (src/worker/main.ts) for reference.
 *
 *   node bench/self-hosted.ts [--starts 5] [--turns 20] [--calls 200]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { makeComputerDirs, spawnWorker, startTestGateway } from "../src/gateway/testing/index.ts";
import type { Api } from "../src/protocol/index.ts";
import { apiClient } from "../test/support/api-client.ts";
import { startConnectProxy } from "../test/support/connect-proxy.ts";
import { startRoostWorker, type RoostWorkerProcess } from "../test/support/roost-worker.ts";
import { waitFor } from "../test/support/wait.ts";
import { startBenchRoost, summarize } from "./support.ts";

const { values } = parseArgs({
  options: {
    starts: { type: "string", default: "5" },
    turns: { type: "string", default: "20" },
    calls: { type: "string", default: "200" },
  },
});
const starts = Number(values.starts);
const turns = Number(values.turns);
const calls = Number(values.calls);

const machineRoot = mkdtempSync(join(tmpdir(), "roost-bench-machine-"));
const home = mkdtempSync(join(machineRoot, "home-"));
const workspace = mkdtempSync(join(machineRoot, "workspace-"));

async function connected(worker: RoostWorkerProcess): Promise<number> {
  return waitFor(
    () => (worker.output().includes("worker: connected to") ? performance.now() : false),
    {
      timeoutMs: 30_000,
      intervalMs: 1,
      what: "the worker's connected line",
    },
  );
}

// ── part 1: the platform ─────────────────────────────────────────────────────────────────────
{
  const { roost, api, dataDir } = await startBenchRoost({
    ROOST_COMPUTER_PROVIDER: "process",
    ROOST_FOLLOW_UP_WINDOW_MS: "0",
    ROOST_LOG_LEVEL: "warn",
  });
  let worker: RoostWorkerProcess | undefined;
  try {
    const account = await api.call<Api.CreatedAccount>("POST", "/v1/accounts", { name: "bench" });
    const owner = apiClient(roost.url, () => account.token);
    const registration = await owner.call<Api.SelfHostedRegistration>(
      "POST",
      "/v1/computers/me/self-hosted",
    );
    const bot = await owner.createBot("bench");
    const conversation = await owner.createConversation(bot.id);
    let replies = 0;
    const turn = async (text: string) => {
      const started = performance.now();
      await owner.send(conversation.id, text);
      replies += 1;
      const steps = await owner.waitForSteps(conversation.id, "reply", replies, 60_000);
      const tool = steps.filter((step) => step.kind === "tool").at(-1);
      if (tool?.payload.isError !== false) throw new Error(`turn failed: ${JSON.stringify(tool)}`);
      return performance.now() - started;
    };

    const toConnected: number[] = [];
    const toFirstCall: number[] = [];
    const firstTurn: number[] = [];
    for (let start = 0; start < starts; start += 1) {
      const spawned = performance.now();
      worker = startRoostWorker({
        args: [
          "--server",
          roost.url,
          "--token",
          registration.token,
          "--workspace",
          workspace,
          "--metrics-port",
          "0",
        ],
        home,
      });
      const at = await connected(worker);
      toConnected.push(at - spawned);
      await owner.call("GET", "/v1/computers/me/files");
      toFirstCall.push(performance.now() - at);
      firstTurn.push(await turn("$ true"));
      await worker.stop();
      await waitFor(
        async () => !(await owner.call<Api.Computer>("GET", "/v1/computers/me")).connected,
        { what: "disconnected" },
      );
    }
    worker = startRoostWorker({
      args: [
        "--server",
        roost.url,
        "--token",
        registration.token,
        "--workspace",
        workspace,
        "--metrics-port",
        "0",
      ],
      home,
    });
    await connected(worker);
    await turn("$ true");
    const steady: number[] = [];
    for (let index = 0; index < turns; index += 1) steady.push(await turn("$ true"));

    console.log(
      "part 1: Roost child process (process provider for hosted), `roost worker` child process",
    );
    console.log(summarize("  process start → connected", toConnected));
    console.log(
      summarize("  connected → first worker call through the API (files list)", toFirstCall),
    );
    console.log(summarize("  first bot turn `$ true` after connecting (post → reply)", firstTurn));
    console.log(summarize("  bot turn `$ true`, connected (post → reply)", steady));
  } finally {
    await worker?.stop();
    await roost.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// ── part 2: the wire ─────────────────────────────────────────────────────────────────────────
{
  const gw = await startTestGateway();
  const proxy = await startConnectProxy();
  const hostedDirs = makeComputerDirs("roost-bench-hosted-");
  try {
    const measure = async (computerId: string) => {
      const run = async (callId: string) => {
        const started = performance.now();
        const result = await gw.gateway.call(computerId, {
          callId,
          tool: "shell",
          input: { command: "true" },
          timeoutMs: 30_000,
        });
        if (!result.ok) throw new Error(result.error.message);
        return performance.now() - started;
      };
      const first = await run(`${computerId}-first`);
      for (let index = 0; index < 20; index += 1) await run(`${computerId}-warm-${index}`);
      const samples: number[] = [];
      for (let index = 0; index < calls; index += 1)
        samples.push(await run(`${computerId}-${index}`));
      return { first, samples };
    };
    const serverUrl = `http://127.0.0.1:${gw.port}`;
    const selfHosted = async (computerId: string, env: Record<string, string>) => {
      gw.tokens.set(`token-${computerId}`, computerId);
      const worker = startRoostWorker({
        args: [
          "--server",
          serverUrl,
          "--token",
          `token-${computerId}`,
          "--workspace",
          workspace,
          "--state-dir",
          join(machineRoot, `state-${computerId}`),
          "--metrics-port",
          "0",
        ],
        home,
        env,
      });
      try {
        await gw.gateway.waitForWorker(computerId, 30_000);
        return await measure(computerId);
      } finally {
        await worker.stop();
      }
    };
    const direct = await selfHosted("cmp_direct", {});
    const proxied = await selfHosted("cmp_proxied", { HTTP_PROXY: proxy.url, NO_PROXY: "" });
    gw.tokens.set("token-hosted", "cmp_hosted");
    const hostedWorker = spawnWorker({
      gatewayUrl: gw.url,
      token: "token-hosted",
      dirs: hostedDirs,
    });
    let hosted;
    try {
      await gw.gateway.waitForWorker("cmp_hosted", 30_000);
      hosted = await measure("cmp_hosted");
    } finally {
      await hostedWorker.stop();
    }
    console.log("part 2: gateway.call → result, `shell true`, real gateway on 127.0.0.1");
    for (const [label, figures] of [
      ["roost worker, direct", direct],
      ["roost worker, through a CONNECT proxy", proxied],
      ["hosted worker (src/worker/main.ts), for reference", hosted],
    ] as const) {
      console.log(summarize(`  ${label}`, figures.samples));
      console.log(`    first call after connecting: ${figures.first.toFixed(1)} ms`);
    }
  } finally {
    await proxy.close();
    await gw.close();
    hostedDirs.remove();
    rmSync(machineRoot, { recursive: true, force: true });
  }
}
