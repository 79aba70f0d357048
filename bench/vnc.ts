/**
 * VNC through the worker's tunnel (issue 13's live view): a real gateway, a real worker process,
 * the bot's screen (Xvfb + x11vnc + Chromium on this host) and a minimal RFB client speaking over
 * `gateway.openTunnel` to the screen's VNC port, as the live view's WebSocket does. Prints:
 *
 *  - the RFB handshake (banner to ServerInit) through the tunnel;
 *  - a full 1280x800 frame (raw encoding, ~4 MB): request to the last byte, p50/p95;
 *  - an incremental update: from a `browser navigate` starting (the page then repaints) to the
 *    first byte of the update, p50/p95 (so it includes the navigation).
 *
 * Host processes, not a sandbox: the tunnel and x11vnc are what is measured.
 *
 *   node bench/vnc.ts [--rounds 20]
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import type { Duplex } from "node:stream";
import {
  makeComputerDirs,
  spawnWorker,
  startTestGateway,
  waitForWorkerProcess,
} from "../src/gateway/testing/index.ts";
import type { ScreensListOutput } from "../src/protocol/index.ts";
import { summarize } from "./support.ts";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "20" } } });
const rounds = Number.parseInt(values.rounds, 10);

/** Reads exact byte counts from a stream. */
function reader(stream: Duplex) {
  let buffered = Buffer.alloc(0);
  let wake: (() => void) | undefined;
  stream.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    wake?.();
  });
  return {
    async read(bytes: number): Promise<Buffer> {
      while (buffered.length < bytes) await new Promise<void>((resolve) => (wake = resolve));
      const out = buffered.subarray(0, bytes);
      buffered = buffered.subarray(bytes);
      return out;
    },
  };
}

let flip = 0;
const server = http.createServer((_request, response) => {
  response.setHeader("content-type", "text/html");
  response.end(
    `<!doctype html><title>VNC</title><body style="margin:0;background:${flip++ % 2 === 0 ? "#e33" : "#33e"}"><h1>frame</h1></body>`,
  );
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const gw = await startTestGateway();
gw.tokens.set("vnc-token", "cmp_vnc");
const dirs = makeComputerDirs("roost-bench-vnc-");
const worker = spawnWorker({ gatewayUrl: gw.url, token: "vnc-token", dirs });
let counter = 0;
const call = (tool: string, input: unknown) =>
  gw.gateway.call("cmp_vnc", {
    callId: `c${++counter}`,
    tool,
    input,
    timeoutMs: 120_000,
    botId: "bot_vnc",
  });
try {
  await waitForWorkerProcess(gw.gateway, "cmp_vnc", worker);
  const opened = await call("browser", { action: "navigate", url: `${base}/` });
  if (!opened.ok) throw new Error(JSON.stringify(opened.error));
  const listed = (await call("screens.list", {})) as { ok: true; output: ScreensListOutput };
  const screen = listed.output.screens[0]!;

  const handshakeStarted = performance.now();
  const tunnel = await gw.gateway.openTunnel("cmp_vnc", screen.vncPort);
  const rfb = reader(tunnel);
  await rfb.read(12); // "RFB 003.008\n"
  tunnel.write("RFB 003.008\n");
  const count = (await rfb.read(1))[0]!;
  const types = [...(await rfb.read(count))];
  if (!types.includes(1)) throw new Error(`no "None" security type: ${types.join(",")}`);
  tunnel.write(Buffer.from([1]));
  if ((await rfb.read(4)).readUInt32BE(0) !== 0) throw new Error("security failed");
  tunnel.write(Buffer.from([1])); // ClientInit: shared
  const init = await rfb.read(24);
  const width = init.readUInt16BE(0);
  const height = init.readUInt16BE(2);
  const bytesPerPixel = init[4]! / 8;
  await rfb.read(init.readUInt32BE(20)); // name
  console.log(
    `RFB handshake through the tunnel (tunnel open to ServerInit): ${(performance.now() - handshakeStarted).toFixed(1)} ms (${width}x${height}, ${bytesPerPixel * 8} bpp)`,
  );
  tunnel.write(Buffer.from([2, 0, 0, 1, 0, 0, 0, 0])); // SetEncodings: raw only

  const request = (incremental: boolean) => {
    const message = Buffer.alloc(10);
    message[0] = 3;
    message[1] = incremental ? 1 : 0;
    message.writeUInt16BE(width, 6);
    message.writeUInt16BE(height, 8);
    tunnel.write(message);
  };
  /** Reads one FramebufferUpdate; returns when its first byte and its last byte arrived. */
  const update = async () => {
    const header = await rfb.read(4);
    const firstAt = performance.now();
    if (header[0] !== 0) throw new Error(`unexpected server message ${header[0]}`);
    let bytes = 0;
    for (let rect = header.readUInt16BE(2); rect > 0; rect--) {
      const head = await rfb.read(12);
      const encoding = head.readInt32BE(8);
      if (encoding !== 0) continue; // pseudo-encodings carry no pixels here
      const size = head.readUInt16BE(4) * head.readUInt16BE(6) * bytesPerPixel;
      await rfb.read(size);
      bytes += size;
    }
    return { firstAt, lastAt: performance.now(), bytes };
  };

  const full: number[] = [];
  let fullBytes = 0;
  for (let index = 0; index < rounds + 2; index++) {
    const started = performance.now();
    request(false);
    const got = await update();
    fullBytes = got.bytes;
    if (index >= 2) full.push(got.lastAt - started);
  }
  console.log(
    summarize(
      `full frame (${(fullBytes / 1024 / 1024).toFixed(1)} MiB raw), request to last byte`,
      full,
    ),
  );

  const changes: number[] = [];
  for (let index = 0; index < rounds; index++) {
    request(true);
    // The navigation repaints the page (its background flips colour) after the call returns.
    const changed = call("browser", { action: "navigate", url: `${base}/?round=${index}` });
    const startedAt = performance.now();
    const got = await update();
    await changed;
    changes.push(got.firstAt - startedAt);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  console.log(
    summarize(
      "incremental update: from a browser navigate starting to the update's first byte",
      changes,
    ),
  );
  tunnel.destroy();
} finally {
  await worker.stop();
  await gw.close();
  server.close();
  dirs.remove();
}
