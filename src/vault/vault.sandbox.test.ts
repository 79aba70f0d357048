/**
 * The vault end to end with a REAL local computer (bubblewrap sandbox, only loopback, its proxy
 * sockets as the only way out) and an outside test host in a namespace serving HTTPS from its own
 * test CA. The computer is given its CA the way the platform gives it (the egress hook's
 * `trust`): curl, Node's fetch and Python reach the brokered host with only the placeholder in
 * their environment; the host gets the value; the computer sees neither the value in its
 * environment, its files nor what came back. Needs root, bubblewrap, util-linux, socat and
 * iproute2; skipped with a printed reason otherwise, never in CI.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLocalProvider, type LocalProvider } from "../computers/local/local-provider.ts";
import {
  makeTempDir,
  skipReason,
  startOutsideHost,
  uniqueId,
  type OutsideHost,
} from "../computers/local/testing/index.ts";
import { createEgressProxy, type EgressProxy } from "../egress/index.ts";
import { createGateway, type Gateway } from "../gateway/index.ts";
import { createVaultAuthority } from "./authority.ts";
import { brokeredEnvironment, placeholderFor } from "./broker.ts";
import { createFixedBrokeredSecrets } from "./testing/index.ts";
import { createVault, type VaultSwap } from "./vault.ts";
import { createCertificateAuthority, issueServerCertificate } from "./x509.ts";

const skip = await skipReason("vault.sandbox.test.ts");

/** HTTPS on 8443 (cert argv[2], key argv[3]); appends what arrived to argv[4]; echoes it back. */
const outsideScript = `
const [address, cert, key, log] = process.argv.slice(1);
const fs = require("node:fs");
require("node:https").createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (q, s) => {
  const auth = q.headers.authorization || "";
  fs.appendFileSync(log, JSON.stringify({ url: q.url, auth }) + "\\n");
  s.end("echo: " + auth + "\\n");
}).listen(8443, address, () => console.log("ready"));
`;

const hasPython = spawnSync("python3", ["-c", "import ssl, urllib.request"]).status === 0;

describe.skipIf(skip !== undefined)("the vault with a real local computer", () => {
  const value = `sk-${randomBytes(16).toString("hex")}`;
  const id = uniqueId("vault");
  let dataDir: { path: string; remove: () => Promise<void> };
  let files: { path: string; remove: () => Promise<void> };
  let provider: LocalProvider;
  let gateway: Gateway;
  let gatewayServer: Server;
  let proxy: EgressProxy;
  let outside: OutsideHost;
  const swaps: VaultSwap[] = [];
  let logFile = "";

  const sh = async (command: string) => {
    const result = await provider.exec(id, ["bash", "-c", command], { timeoutMs: 30_000 });
    return { ...result, output: result.stdout + result.stderr };
  };

  beforeAll(async () => {
    dataDir = await makeTempDir();
    files = await makeTempDir("roost-vault-files-");
    logFile = path.join(files.path, "arrived.log");
    await writeFile(logFile, "");
    const upstreamCa = createCertificateAuthority({ commonName: "outside test CA" });
    outside = await startOutsideHost({
      script: outsideScript,
      args: async (address) => {
        const leaf = issueServerCertificate({ ca: upstreamCa, host: address });
        await writeFile(path.join(files.path, "server.crt"), leaf.certPem);
        await writeFile(path.join(files.path, "server.key"), leaf.keyPem);
        return [path.join(files.path, "server.crt"), path.join(files.path, "server.key"), logFile];
      },
    });
    const authority = createVaultAuthority({ dir: path.join(files.path, "vault") });
    const secrets = createFixedBrokeredSecrets({
      [id]: [{ name: "API_TOKEN", value, hosts: [outside.address] }],
    });
    gatewayServer = createServer();
    gateway = createGateway({
      server: gatewayServer,
      verifyToken: async (token) =>
        token === `tok-${id}` ? { computerId: id, boundToSocket: true } : undefined,
    });
    proxy = createEgressProxy({
      intercept: createVault({
        secrets,
        authority,
        upstreamCa: [upstreamCa.certPem],
        onSwap: (swap) => void swaps.push(swap),
      }),
    });
    provider = await createLocalProvider({
      dataDir: dataDir.path,
      sockets: {
        gateway: (computerId, socketPath) => gateway.listenComputer(computerId, socketPath),
        // As the platform does (provider-selection.ts): the sockets and the computer's CA.
        egress: async (computerId, paths) => ({
          ...(await proxy.listenComputer(computerId, paths)),
          trust: await authority.trustFor(computerId),
        }),
      },
    });
    proxy.setPolicy(id, { mode: "allowlist-only", allow: [`${outside.address}:8443`] });
    await provider.create(id);
    await provider.wake(id, {
      gatewayUrl: "ws://unused.invalid/v1/gateway",
      workerToken: `tok-${id}`,
      env: brokeredEnvironment([{ name: "API_TOKEN" }]),
    });
    await gateway.waitForWorker(id, 30_000);
  });

  afterAll(async () => {
    try {
      await provider?.destroy(id).catch(() => undefined);
      await provider?.close();
    } finally {
      await gateway?.close();
      await proxy?.close();
      await outside?.close();
      await files?.remove();
      await dataDir?.remove();
    }
  });

  test("the computer trusts its vault CA: a read-only bundle and SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO", async () => {
    const result = await sh(
      'for v in SSL_CERT_FILE NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE GIT_SSL_CAINFO CURL_CA_BUNDLE; do echo "$v=${!v}"; done; grep -c "BEGIN CERTIFICATE" /run/roost/ca-bundle.pem; echo x >> /run/roost/ca-bundle.pem || echo read-only',
    );
    expect(result.stdout).toContain("SSL_CERT_FILE=/run/roost/ca-bundle.pem");
    expect(result.stdout).toContain("NODE_EXTRA_CA_CERTS=/run/roost/vault-ca.pem");
    expect(result.stdout).toContain("REQUESTS_CA_BUNDLE=/run/roost/ca-bundle.pem");
    expect(result.stdout).toContain("GIT_SSL_CAINFO=/run/roost/ca-bundle.pem");
    expect(Number(result.stdout.split("\n")[5])).toBeGreaterThan(100);
    expect(result.stdout).toContain("read-only");
  });

  test("curl, Node's fetch and Python send the placeholder; the brokered host gets the value; the computer sees only [REDACTED]", async () => {
    const url = `https://${outside.address}:8443`;
    const curl = await sh(`curl -sS -H "Authorization: Bearer $API_TOKEN" ${url}/curl`);
    expect(curl.output).toBe("echo: Bearer [REDACTED]\n");
    const node = await sh(
      `node -e 'fetch("${url}/node", { headers: { authorization: "Bearer " + process.env.API_TOKEN } }).then((r) => r.text()).then((t) => process.stdout.write(t), (e) => console.log(String(e.cause ?? e)))'`,
    );
    expect(node.output).toBe("echo: Bearer [REDACTED]\n");
    if (hasPython) {
      const python = await sh(
        `python3 -c 'import os, urllib.request as u; print(u.urlopen(u.Request("${url}/python", headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]})).read().decode(), end="")'`,
      );
      expect(python.output).toBe("echo: Bearer [REDACTED]\n");
    }
    const arrived = (await readFile(logFile, "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { url: string; auth: string });
    expect(arrived.map((entry) => entry.auth)).toEqual(arrived.map(() => `Bearer ${value}`));
    expect(arrived.map((entry) => entry.url)).toEqual([
      "/curl",
      "/node",
      ...(hasPython ? ["/python"] : []),
    ]);
    expect(swaps.map((swap) => swap.name)).toEqual(arrived.map(() => "API_TOKEN"));

    // Not in the computer's environment nor anywhere in its files.
    const env = await sh("env");
    expect(env.stdout).toContain(`API_TOKEN=${placeholderFor("API_TOKEN")}`);
    expect(env.stdout).not.toContain(value);
    const grep = await sh(
      `grep -rl -- '${value}' /home /workspace /tmp /run/roost /var/lib/roost 2>/dev/null; echo "exit=$?"`,
    );
    expect(grep.stdout.trim()).toBe("exit=1");
  });
});
