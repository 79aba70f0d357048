/**
 * The vault's added latency per request: one HTTPS request per new connection (as a tool's
 * `curl` makes it) to an origin on 127.0.0.1 with its own test CA, four ways:
 *   direct                  client → origin (no proxy)
 *   tunnelled               through the egress proxy, a host without a brokered secret (CONNECT, untouched)
 *   brokered                through the proxy, a brokered host: TLS terminated by the computer's CA,
 *                           placeholder swapped, a new verified TLS connection upstream, response redacted
 *   brokered, 64 KiB body   the same with a 64 KiB response through the redactor
 * The "added" line is brokered − tunnelled p50: what the vault costs on top of the proxy.
 * Run: `node bench/vault.ts [requests=300]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { createServer } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { createEgressProxy } from "../src/egress/index.ts";
import { createVault, createVaultAuthority, placeholderFor } from "../src/vault/index.ts";
import { createCertificateAuthority, issueServerCertificate } from "../src/vault/index.ts";
import { createFixedBrokeredSecrets, httpsThroughProxy } from "../src/vault/testing/index.ts";
import { percentile, summarize } from "./support.ts";

const requests = Number(process.argv[2] ?? 300);
const publicAddress = "93.184.216.34";
const dir = mkdtempSync(join(tmpdir(), "roost-bench-vault-"));
const upstreamCa = createCertificateAuthority({ commonName: "bench upstream CA" });
const big = Buffer.alloc(64 * 1024, 0x61);

function origin(host: string) {
  const leaf = issueServerCertificate({ ca: upstreamCa, host });
  const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (request, response) => {
    response.end(request.url === "/big" ? big : `ok ${request.headers.authorization ?? ""}`);
  });
  return new Promise<{ port: number; close: () => void }>((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve({
        port: typeof address === "object" && address !== null ? address.port : 0,
        close: () => {
          server.closeAllConnections();
          server.close();
        },
      });
    }),
  );
}

async function time(run: () => Promise<unknown>): Promise<number[]> {
  for (let index = 0; index < 20; index += 1) await run(); // warm up
  const samples: number[] = [];
  for (let index = 0; index < requests; index += 1) {
    const started = performance.now();
    await run();
    samples.push(performance.now() - started);
  }
  return samples;
}

const api = await origin("api.bench.test");
const other = await origin("other.bench.test");
const authority = createVaultAuthority({ dir: join(dir, "vault") });
const secrets = createFixedBrokeredSecrets({
  cmp_bench: [{ name: "API_TOKEN", value: "sk-bench-0123456789abcdef", hosts: ["api.bench.test"] }],
});
const proxy = createEgressProxy({
  resolve: () => Promise.resolve([publicAddress]),
  connect: (address, port) =>
    connect({ host: address === publicAddress ? "127.0.0.1" : address, port }),
  intercept: createVault({ secrets, authority, upstreamCa: [upstreamCa.certPem] }),
});
try {
  const sockets = { http: join(dir, "http.sock"), socks: join(dir, "socks.sock") };
  await proxy.listenComputer("cmp_bench", sockets);
  proxy.setPolicy("cmp_bench", { mode: "allowlist-only", allow: ["*.bench.test:*"] });
  const ca = [(await authority.trustFor("cmp_bench")).caPem, upstreamCa.certPem];
  const headers = { authorization: `Bearer ${placeholderFor("API_TOKEN")}` };

  const direct = await time(
    () =>
      new Promise((resolve, reject) => {
        const request = httpsRequest(
          {
            host: "127.0.0.1",
            port: api.port,
            servername: "api.bench.test",
            headers: { host: "api.bench.test", ...headers },
            ca,
            agent: false,
            createConnection: () =>
              tlsConnect({ host: "127.0.0.1", port: api.port, servername: "api.bench.test", ca }),
          },
          (response) => {
            response.resume();
            response.on("end", resolve);
          },
        );
        request.on("error", reject);
        request.end();
      }),
  );
  const through =
    (host: string, port: number, path = "/") =>
    () =>
      httpsThroughProxy(sockets.http, `https://${host}:${port}${path}`, { ca, headers });
  const tunnelled = await time(through("other.bench.test", other.port));
  const brokered = await time(through("api.bench.test", api.port));
  const brokeredBig = await time(through("api.bench.test", api.port, "/big"));
  const tunnelledBig = await time(through("other.bench.test", other.port, "/big"));

  console.log(summarize("direct (no proxy)          ", direct));
  console.log(summarize("tunnelled (proxy, untouched)", tunnelled));
  console.log(summarize("brokered (vault)           ", brokered));
  console.log(summarize("tunnelled, 64 KiB response  ", tunnelledBig));
  console.log(summarize("brokered, 64 KiB response   ", brokeredBig));
  const p50 = (samples: number[]) =>
    percentile(
      [...samples].sort((a, b) => a - b),
      0.5,
    );
  console.log(
    `added by the vault per request (p50, brokered − tunnelled): ${(p50(brokered) - p50(tunnelled)).toFixed(1)} ms; with a 64 KiB response: ${(p50(brokeredBig) - p50(tunnelledBig)).toFixed(1)} ms`,
  );
} finally {
  await proxy.close();
  api.close();
  other.close();
  rmSync(dir, { recursive: true, force: true });
}
