/**
 * Port previews. Two layers:
 *
 *  1. the tunnel alone: a real gateway, a real worker process and a TCP server on its loopback
 *     (as with the `process` provider): time to open a tunnel and get 100 bytes back, and the
 *     throughput of a 64 MiB stream;
 *  2. end to end: a real Roost with real computers (`--provider local` as root, or `process`),
 *     `python3 -m http.server` started inside the computer by a bot turn, fetched through the
 *     API with the bearer token and through a browser link's preview host: p50 latency of a small
 *     file, throughput of a 64 MiB one, and the Roost process's resident memory around them.
 *
 *   node bench/ports.ts [--provider local|process] [--rounds 200] [--skip-roost]
 */
import { createHash } from "node:crypto";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { makeComputerDirs, spawnWorker, startTestGateway } from "../src/gateway/testing/index.ts";
import { rawRequest } from "../test/support/raw-http.ts";
import { waitFor } from "../test/support/wait.ts";
import { rssMiB, startBenchRoost, summarize } from "./support.ts";

const { values } = parseArgs({
  options: {
    provider: { type: "string", default: process.getuid?.() === 0 ? "local" : "process" },
    rounds: { type: "string", default: "200" },
    "skip-roost": { type: "boolean", default: false },
  },
});
const rounds = Number.parseInt(values.rounds, 10);
const bigBytes = 64 * 1024 * 1024;
const mib = bigBytes / 1024 / 1024;

async function timed(label: string, body: () => Promise<unknown>): Promise<void> {
  for (let index = 0; index < 10; index++) await body();
  const samples: number[] = [];
  for (let index = 0; index < rounds; index++) {
    const started = performance.now();
    await body();
    samples.push(performance.now() - started);
  }
  console.log(summarize(label, samples));
}

/** Reads a whole HTTP answer, hashing it, and reports MiB/s. */
function download(
  url: string,
  headers: Record<string, string>,
): Promise<{ ms: number; sha256: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, setHost: headers.host === undefined }, (response) => {
        const hash = createHash("sha256");
        let size = 0;
        response.on("data", (chunk: Buffer) => {
          hash.update(chunk);
          size += chunk.length;
        });
        response.on("end", () => {
          if (size !== bigBytes) return reject(new Error(`short answer: ${size} bytes`));
          resolve({ ms: performance.now() - started, sha256: hash.digest("hex") });
        });
        response.on("error", reject);
      })
      .on("error", reject);
  });
}

// ── 1. the tunnel alone ─────────────────────────────────────────────────────────────────────────
{
  const gw = await startTestGateway();
  const dirs = makeComputerDirs("roost-bench-ports-");
  gw.tokens.set("bench-token", "cmp_bench");
  const worker = spawnWorker({ gatewayUrl: gw.url, token: "bench-token", dirs });
  const chunk = Buffer.alloc(64 * 1024, 7);
  // allowHalfOpen: the client's end (after its request) must not end the answer.
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    socket.once("data", (request) => {
      if (request.toString() !== "big") {
        socket.end(Buffer.alloc(100, 1));
        return;
      }
      let sent = 0;
      const pump = () => {
        while (sent < bigBytes) {
          sent += chunk.length;
          if (!socket.write(chunk)) return socket.once("drain", pump);
        }
        socket.end();
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    await gw.gateway.waitForWorker("cmp_bench", 15_000);
    await timed("tunnel: open, 100 bytes back, closed", async () => {
      const stream = await gw.gateway.openTunnel("cmp_bench", port);
      stream.end("small");
      for await (const _ of stream) {
        // drain
      }
    });
    for (let round = 0; round < 3; round++) {
      const started = performance.now();
      const stream = await gw.gateway.openTunnel("cmp_bench", port);
      stream.end("big");
      let size = 0;
      for await (const part of stream) size += (part as Buffer).length;
      const ms = performance.now() - started;
      if (size !== bigBytes) throw new Error(`short stream: ${size}`);
      console.log(
        `tunnel: 64 MiB round ${round + 1}: ${ms.toFixed(0)} ms (${(mib / (ms / 1000)).toFixed(0)} MiB/s)`,
      );
    }
  } finally {
    await worker.stop();
    await gw.close();
    server.close();
    dirs.remove();
  }
}

// ── 2. end to end ───────────────────────────────────────────────────────────────────────────────
if (!values["skip-roost"]) {
  const { roost, api } = await startBenchRoost({
    ROOST_COMPUTER_PROVIDER: values.provider,
    ROOST_FOLLOW_UP_WINDOW_MS: "200",
    ROOST_RATE_LIMIT_PER_MINUTE: "0",
  });
  const token = roost.token();
  const bearer = { authorization: `Bearer ${token}` };
  try {
    const conversation = (await api.createConversation((await api.createBot("bench")).id)).id;
    const run = async (text: string) => {
      const before = (await api.steps(conversation)).filter((step) => step.kind === "reply").length;
      await api.send(conversation, text);
      await api.waitForSteps(conversation, "reply", before + 1, 120_000);
    };
    const port = values.provider === "local" ? 8000 : 18_000 + Math.floor(Math.random() * 1000);
    await run(
      `$ mkdir -p bench-site && echo hello > bench-site/small.txt && head -c ${bigBytes} /dev/urandom > bench-site/big.bin`,
    );
    await run(`bg cd bench-site && exec python3 -m http.server ${port} --bind 127.0.0.1`);
    await waitFor(
      async () =>
        (
          await rawRequest(`${roost.url}/v1/computers/me/ports/${port}/small.txt`, {
            headers: bearer,
          })
        ).status === 200,
      { timeoutMs: 30_000, what: "the server inside to answer" },
    );
    const made = await rawRequest(`${roost.url}/v1/computers/me/preview-links`, {
      method: "POST",
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ port }),
    });
    const linkUrl = new URL(String(made.json.url));
    const host = linkUrl.host;
    const opened = await rawRequest(`${roost.url}${linkUrl.pathname}${linkUrl.search}`, {
      headers: { host },
    });
    const cookie = String(opened.headers["set-cookie"]?.[0]).split(";")[0]!;

    console.log(`end to end (${values.provider} provider), python3 -m http.server inside:`);
    // The two ways in alternate, so a change in the machine's load hits both alike.
    const viaApi = async () => {
      const answer = await rawRequest(`${roost.url}/v1/computers/me/ports/${port}/small.txt`, {
        headers: bearer,
      });
      if (answer.text !== "hello\n") throw new Error(`unexpected answer ${answer.status}`);
    };
    const viaHost = async () => {
      const answer = await rawRequest(`${roost.url}/small.txt`, { headers: { host, cookie } });
      if (answer.text !== "hello\n") throw new Error(`unexpected answer ${answer.status}`);
    };
    // With `process` the server listens on the host's loopback: its own latency, for comparison.
    const direct = async () => {
      const answer = await rawRequest(`http://127.0.0.1:${port}/small.txt`);
      if (answer.text !== "hello\n") throw new Error(`unexpected answer ${answer.status}`);
    };
    const ways =
      values.provider === "process"
        ? ([
            ["api", viaApi],
            ["host", viaHost],
            ["direct", direct],
          ] as const)
        : ([
            ["api", viaApi],
            ["host", viaHost],
          ] as const);
    const samples = { api: [] as number[], host: [] as number[], direct: [] as number[] };
    for (let index = 0; index < 10; index++) await Promise.all([viaApi(), viaHost()]);
    for (let index = 0; index < rounds; index++) {
      for (const [key, body] of ways) {
        const started = performance.now();
        await body();
        samples[key].push(performance.now() - started);
      }
    }
    console.log(summarize("  GET small.txt, API path with the bearer token", samples.api));
    console.log(summarize("  GET small.txt, preview host with the link's cookie", samples.host));
    if (samples.direct.length > 0)
      console.log(summarize("  GET small.txt, straight to the server (no Roost)", samples.direct));
    const pid = roost.pid()!;
    const rssBefore = rssMiB(pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMiB(pid))), 20);
    try {
      for (let round = 0; round < 3; round++) {
        const viaApi = await download(`${roost.url}/v1/computers/me/ports/${port}/big.bin`, bearer);
        const viaHost = await download(`${roost.url}/big.bin`, { host, cookie });
        if (viaApi.sha256 !== viaHost.sha256) throw new Error("the two downloads differ");
        console.log(
          `  64 MiB round ${round + 1}: API path ${viaApi.ms.toFixed(0)} ms (${(mib / (viaApi.ms / 1000)).toFixed(0)} MiB/s), preview host ${viaHost.ms.toFixed(0)} ms (${(mib / (viaHost.ms / 1000)).toFixed(0)} MiB/s)`,
        );
      }
    } finally {
      clearInterval(sampler);
    }
    console.log(
      `  Roost's RSS: ${rssBefore.toFixed(0)} MiB before the downloads, at most ${rssPeak.toFixed(0)} MiB during them (6 × 64 MiB)`,
    );
  } finally {
    await roost.stop();
  }
}
