/**
 * VNC frame latency of the live view: the time from a change on a real Xvfb display (the root
 * window's colour, set with `xsetroot`) to the FramebufferUpdate that shows it arriving at a
 * client, through the whole path a browser's live view takes — the API's VNC WebSocket, the RFB
 * filter, a tunnel over a real gateway and a real worker process, to x11vnc on the worker's
 * loopback — and, for comparison, straight over TCP to the same x11vnc.
 *
 * The worker's `screens.list` is answered by the bench (the screen manager is the browser's
 * worker code); everything else is real. x11vnc finds changes by polling the framebuffer, so
 * both figures include its polling interval; the difference is the live view's own cost.
 *
 * Each client's first 10 changes are not counted (x11vnc's polling settles after them).
 *
 *   node bench/vnc-latency.ts [--rounds 100]
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import { serve } from "@hono/node-server";
import WebSocket from "ws";
import { createApi, createLiveView } from "../src/api/index.ts";
import { issueApiToken } from "../src/auth/index.ts";
import { createEventHub } from "../src/events/index.ts";
import {
  makeComputerDirs,
  spawnWorker,
  startTestGateway,
  waitForWorkerProcess,
} from "../src/gateway/testing/index.ts";
import { openStore } from "../src/store/index.ts";
import {
  rfbClient,
  rfbSocketClient,
  startVncDisplay,
  type RfbClient,
} from "../test/support/vnc-display.ts";
import { summarize } from "./support.ts";

const run = promisify(execFile);
const { values } = parseArgs({ options: { rounds: { type: "string", default: "100" } } });
const rounds = Number(values.rounds);

const display = await startVncDisplay({ width: 1280, height: 800 });
const gw = await startTestGateway();
const dir = mkdtempSync(join(tmpdir(), "roost-bench-vnc-"));
const store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
const dirs = makeComputerDirs();
const account = await store.createAccount({ name: "bench", isAdmin: false });
const token = (await issueApiToken(store, account.id, "bench")).token;
const computer = await store.ensureComputer(account.id, "process");
gw.tokens.set("token", computer.id);
const worker = spawnWorker({ gatewayUrl: gw.url, token: "token", dirs });
await waitForWorkerProcess(gw.gateway, computer.id, worker);

const liveView = createLiveView(
  {
    computerOf: async () => computer.id,
    state: async () => "awake",
    touch: async () => undefined,
    gateway: {
      isConnected: (computerId) => gw.gateway.isConnected(computerId),
      call: async (computerId, request, options) =>
        request.tool === "screens.list"
          ? {
              ok: true,
              output: {
                screens: [
                  {
                    id: "s-bench",
                    botId: "bench",
                    width: display.width,
                    height: display.height,
                    busy: false,
                    vncPort: display.vncPort,
                    controller: null,
                  },
                ],
              },
            }
          : gw.gateway.call(computerId, request, options),
      openTunnel: (computerId, port, options) => gw.gateway.openTunnel(computerId, port, options),
    },
    ticketSecret: randomBytes(32),
  },
  store,
);
const app = createApi({
  store,
  events: createEventHub(),
  kick: async () => undefined,
  interrupt: () => false,
  health: async () => ({ ok: true, checks: {} }),
  checkModel: () => undefined,
  defaultModel: () => ({ id: "demo", isDemo: true }),
  maxBodyBytes: 1024 * 1024,
  liveView,
  limits: { requestsPerMinute: 0 },
});
const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
(server as http.Server).on("upgrade", (request, socket, head) =>
  liveView.handleUpgrade(request, socket, head),
);
await new Promise<void>((resolve) => server.once("listening", () => resolve()));
const port = (server.address() as AddressInfo).port;

/** Samples of change → update, asking for a 64x64 corner after each change. */
async function measure(client: RfbClient): Promise<number[]> {
  const { width, height } = await client.handshake();
  // One full frame first, so every later update is only the change.
  client.updateRequest(false, width, height);
  await client.readUpdate();
  const samples: number[] = [];
  const warmUp = 10; // x11vnc settles its polling after the first changes; those are not kept
  for (let round = 0; round < rounds + warmUp; round += 1) {
    const colour = `#${(round % 2 === 0 ? 0x203040 : 0x405060).toString(16)}`;
    client.updateRequest(true, 64, 64);
    await run("xsetroot", ["-solid", colour], {
      env: { ...process.env, DISPLAY: display.display },
    });
    const changed = performance.now();
    await client.readUpdate();
    if (round >= warmUp) samples.push(performance.now() - changed);
  }
  return samples;
}

try {
  const direct = net.connect(display.vncPort, "127.0.0.1");
  await new Promise<void>((resolve) => direct.once("connect", () => resolve()));
  const directSamples = await measure(rfbSocketClient(direct));
  direct.destroy();

  const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/computers/me/screens/s-bench/vnc`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  const tunnelSamples = await measure(rfbClient(ws));
  ws.close();

  console.log(`VNC frame latency (xsetroot change → FramebufferUpdate), ${rounds} rounds`);
  console.log(summarize("  straight to x11vnc over TCP", directSamples));
  console.log(summarize("  live view WebSocket (filter + tunnel + worker)", tunnelSamples));
} finally {
  await liveView.close();
  (server as http.Server).closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await worker.stop();
  dirs.remove();
  await gw.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  await display.close();
}
