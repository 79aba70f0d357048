/**
 * The vault against REAL test hosts in network namespaces this test creates: a "test host"
 * namespace serving HTTPS (its certificates from its own test CA, one per name by SNI) and
 * HTTP, for two names, `api.vault.test` (the secret's host) and `other.vault.test` (not), and a
 * "computer" namespace with nothing but loopback whose only way out is its proxy socket. The
 * computer's program holds the placeholder in its environment and trusts the bundle it is given
 * (SSL_CERT_FILE), as a Roost computer does. Needs root and iproute2; skipped with a printed
 * reason otherwise, never when CI=true.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { auditTo, createEgressProxy } from "../egress/index.ts";
import {
  createNamespace,
  deleteNamespace,
  freeSubnet,
  ip,
  netnsSkip,
  type Namespace,
} from "../egress/testing/netns.ts";
import { openStore } from "../store/index.ts";
import { swapAuditTo } from "./audit.ts";
import { createVaultAuthority } from "./authority.ts";
import { brokeredEnvironment, placeholderFor } from "./broker.ts";
import { createFixedBrokeredSecrets } from "./testing/index.ts";
import { createVault } from "./vault.ts";
import { createCertificateAuthority, issueServerCertificate } from "./x509.ts";

const skipReason = netnsSkip("vault");

/** HTTPS :8443 (certificate by SNI) and HTTP :8080; logs each request as a JSON line. */
const testHostScript = `
const http = require("node:http");
const https = require("node:https");
const tls = require("node:tls");
const certs = JSON.parse(process.env.TEST_CERTS);
const contexts = Object.fromEntries(Object.entries(certs).map(([name, pair]) => [name, tls.createSecureContext(pair)]));
const handler = (scheme) => (request, response) => {
  let body = "";
  request.on("data", (chunk) => (body += chunk));
  request.on("end", () => {
    const auth = request.headers.authorization || "";
    console.log(JSON.stringify({ scheme, host: request.headers.host, url: request.url, auth, body }));
    // Echo what arrived, as an API that reflects the request in an error would.
    response.setHeader("x-echo", auth);
    response.end("you sent " + auth + " / " + Buffer.from(auth).toString("base64") + " / " + body);
  });
};
const secure = https.createServer({ SNICallback: (name, done) => done(null, contexts[name]) }, handler("https"));
const plain = http.createServer(handler("http"));
let ready = 0;
const up = () => { if (++ready === 2) console.log("ready"); };
secure.listen(8443, "0.0.0.0", up);
plain.listen(8080, "0.0.0.0", up);
`;

/**
 * The computer's program: requests through its proxy socket with the placeholder from its
 * environment, trusting SSL_CERT_FILE only; prints every byte it received and its environment.
 */
const computerScript = `
const net = require("node:net");
const tls = require("node:tls");
const fs = require("node:fs");
const [socketPath, ...urls] = process.argv.slice(1);
const ca = fs.readFileSync(process.env.SSL_CERT_FILE, "utf8");
const token = process.env.API_TOKEN;
function exchange(url) {
  return new Promise((resolve) => {
    const target = new URL(url);
    const raw = net.connect({ path: socketPath });
    let received = "";
    const request = "GET " + (target.protocol === "https:" ? target.pathname : url) + " HTTP/1.1\\r\\nHost: " + target.host +
      "\\r\\nAuthorization: Bearer " + token + "\\r\\nConnection: close\\r\\n\\r\\n";
    const done = (error) => resolve({ url, received, error: error ? String(error.code || error) : undefined });
    raw.on("error", done);
    if (target.protocol === "http:") {
      raw.on("data", (chunk) => (received += chunk));
      raw.on("close", () => done());
      raw.write(request);
      return;
    }
    let head = "";
    const onHead = (chunk) => {
      head += chunk;
      if (!head.includes("\\r\\n\\r\\n")) return;
      raw.off("data", onHead);
      received += head;
      const secure = tls.connect({ socket: raw, servername: target.hostname, ca });
      secure.on("secureConnect", () => {
        received += "[issuer " + secure.getPeerCertificate().issuer.CN + "]";
        secure.write(request);
      });
      secure.on("data", (chunk) => (received += chunk));
      secure.on("error", done);
      secure.on("close", () => done());
    };
    raw.on("data", onHead);
    raw.write("CONNECT " + target.hostname + ":" + (target.port || 443) + " HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n");
  });
}
(async () => {
  const results = [];
  for (const url of urls) results.push(await exchange(url));
  console.log(JSON.stringify({ env: process.env, results }));
})();
`;

describe.skipIf(skipReason !== undefined)("vault with test hosts in network namespaces", () => {
  const suffix = randomBytes(3).toString("hex");
  const subnet = skipReason === undefined ? freeSubnet() : "10.213.0";
  const created: { name: string; hostInterface: string }[] = [];
  let testHost: Namespace;
  let computer: { name: string };
  let server: ChildProcess | undefined;
  const seen: string[] = [];
  const upstreamCa = createCertificateAuthority({ commonName: "Test host CA" });

  beforeAll(async () => {
    try {
      created.push({ name: `roost-vt-${suffix}-h`, hostInterface: `rvh${suffix}h` });
      testHost = createNamespace(`roost-vt-${suffix}-h`, `rvh${suffix}`, subnet, 0);
      created.push({ name: `roost-vt-${suffix}-c`, hostInterface: `rvc${suffix}h` });
      computer = { name: `roost-vt-${suffix}-c` };
      ip("netns", "add", computer.name);
      ip("-n", computer.name, "link", "set", "lo", "up");
      const certs = Object.fromEntries(
        ["api.vault.test", "other.vault.test"].map((host) => {
          const leaf = issueServerCertificate({ ca: upstreamCa, host });
          return [host, { cert: leaf.certPem, key: leaf.keyPem }];
        }),
      );
      const child = spawn(
        "ip",
        ["netns", "exec", testHost.name, process.execPath, "-e", testHostScript],
        {
          stdio: ["ignore", "pipe", "inherit"],
          env: { ...process.env, TEST_CERTS: JSON.stringify(certs) },
        },
      );
      server = child;
      let buffered = "";
      child.stdout.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split("\n");
        buffered = lines.pop() ?? "";
        seen.push(...lines);
      });
      await waitFor(() => seen.includes("ready") || child.exitCode !== null, {
        timeoutMs: 20_000,
        what: "the test host in its namespace",
      });
      if (child.exitCode !== null) throw new Error(`the test host exited with ${child.exitCode}`);
    } catch (error) {
      server?.kill("SIGKILL");
      for (const namespace of created) deleteNamespace(namespace);
      throw error;
    }
  });

  afterAll(async () => {
    if (server !== undefined && server.exitCode === null) {
      server.kill("SIGKILL");
      await once(server, "exit");
    }
    for (const namespace of created) deleteNamespace(namespace);
    expect(spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout).not.toContain(
      `roost-vt-${suffix}`,
    );
  });

  it("the allowed host receives the value, another host the placeholder; the computer never sees the value, and every swap is audited", async () => {
    const value = `sk-${randomBytes(16).toString("hex")}`;
    const dir = mkdtempSync(path.join(os.tmpdir(), "roost-vault-ns-"));
    const computerDir = path.join(dir, "computer");
    const store = await openStore({ kind: "sqlite", path: path.join(dir, "roost.db") });
    const audit = swapAuditTo(store);
    const egressAudit = auditTo(store);
    const authority = createVaultAuthority({ dir: path.join(dir, "vault") });
    const secrets = createFixedBrokeredSecrets({
      cmp_a: [{ name: "API_TOKEN", value, hosts: ["api.vault.test"], accountId: "acc_owner" }],
    });
    const proxy = createEgressProxy({
      resolve: (hostname) =>
        hostname.endsWith(".vault.test")
          ? Promise.resolve([testHost.innerAddress])
          : Promise.reject(Object.assign(new Error("not found"), { code: "ENOTFOUND" })),
      allowPrivate: [`${subnet}.0/24`],
      onRequest: egressAudit,
      intercept: createVault({
        secrets,
        authority,
        upstreamCa: [upstreamCa.certPem],
        onSwap: audit,
      }),
    });
    try {
      const sockets = { http: path.join(dir, "http.sock"), socks: path.join(dir, "socks.sock") };
      await proxy.listenComputer("cmp_a", sockets);
      proxy.setPolicy("cmp_a", {
        mode: "allowlist-only",
        allow: ["*.vault.test:8080,8443", `${subnet}.0/24:8080,8443`],
      });
      // What a Roost computer is given: the bundle (public roots + its CA), and placeholders.
      const trust = await authority.trustFor("cmp_a");
      spawnSync("mkdir", ["-p", computerDir]);
      const bundle = path.join(computerDir, "ca-bundle.pem");
      writeFileSync(bundle, trust.bundlePem);
      // The test host's CA too, so the untouched tunnel to other.vault.test verifies as well.
      writeFileSync(bundle, `${trust.bundlePem}${upstreamCa.certPem}`);
      const env = {
        PATH: process.env.PATH ?? "",
        SSL_CERT_FILE: bundle,
        ...brokeredEnvironment([{ name: "API_TOKEN" }]),
      };
      const child = spawn(
        "ip",
        [
          "netns",
          "exec",
          computer.name,
          process.execPath,
          "-e",
          computerScript,
          sockets.http,
          "https://api.vault.test:8443/v1",
          "https://other.vault.test:8443/v1",
          "http://api.vault.test:8080/v1",
          "http://other.vault.test:8080/v1",
        ],
        { stdio: ["ignore", "pipe", "inherit"], env },
      );
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
      await once(child, "exit");
      const report = JSON.parse(output) as {
        env: Record<string, string>;
        results: { url: string; received: string; error?: string }[];
      };

      // The computer: placeholder in its environment; nothing it received holds the value.
      expect(report.env.API_TOKEN).toBe(placeholderFor("API_TOKEN"));
      expect(output).not.toContain(value);
      expect(output).not.toContain(Buffer.from(`Bearer ${value}`).toString("base64"));
      for (const file of readdirSync(computerDir))
        expect(readFileSync(path.join(computerDir, file), "utf8")).not.toContain(value);
      const [apiHttps, otherHttps, apiHttp, otherHttp] = report.results;
      expect(apiHttps?.error, apiHttps?.received).toBeUndefined();
      expect(apiHttps?.received).toContain("[issuer Roost vault CA for computer cmp_a]");
      expect(apiHttps?.received).toMatch(/you sent Bearer \[REDACTED\] \/ \S*\[REDACTED\]/);
      expect(apiHttps?.received).toMatch(/x-echo: Bearer \[REDACTED\]/i);
      expect(otherHttps?.received).toContain("[issuer Test host CA]"); // tunnelled untouched
      expect(otherHttps?.received).toContain(`you sent Bearer ${placeholderFor("API_TOKEN")}`);
      expect(apiHttp?.received).toContain("you sent Bearer [REDACTED]");
      expect(otherHttp?.received).toContain(`you sent Bearer ${placeholderFor("API_TOKEN")}`);

      // The test hosts: the value reached api.vault.test only.
      const requests = seen
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { scheme: string; host: string; auth: string });
      const authOf = (scheme: string, host: string) =>
        requests.filter((r) => r.scheme === scheme && r.host.startsWith(host)).map((r) => r.auth);
      expect(authOf("https", "api.vault.test")).toEqual([`Bearer ${value}`]);
      expect(authOf("https", "other.vault.test")).toEqual([
        `Bearer ${placeholderFor("API_TOKEN")}`,
      ]);
      expect(authOf("http", "api.vault.test")).toEqual([`Bearer ${value}`]);
      expect(authOf("http", "other.vault.test")).toEqual([`Bearer ${placeholderFor("API_TOKEN")}`]);

      // Every swap audited: name, host, time; never the value.
      await audit.flush();
      const rows = (await store.listAudit({ limit: 50 })).filter(
        (row) => row.action === "vault.swap",
      );
      expect(rows).toHaveLength(2);
      expect(rows.every((row) => row.accountId === "acc_owner" && row.target === "cmp_a")).toBe(
        true,
      );
      expect(rows.map((row) => row.detail)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            name: "API_TOKEN",
            host: "api.vault.test",
            port: 8443,
            where: "header",
          }),
          expect.objectContaining({
            name: "API_TOKEN",
            host: "api.vault.test",
            port: 8080,
            where: "header",
          }),
        ]),
      );
      await proxy.close();
      await egressAudit.flush();
      const all = await store.listAudit({ limit: 500 });
      expect(JSON.stringify(all)).not.toContain(value);
      // The proxy's own log marks what the vault looked inside, and only that.
      const allowed = all.filter((row) => row.action === "egress.allowed");
      const looked = allowed.filter((row) => row.detail.intercepted === true);
      expect(new Set(looked.map((row) => row.detail.host))).toEqual(new Set(["api.vault.test"]));
      expect(allowed.some((row) => row.detail.host === "other.vault.test")).toBe(true);
    } finally {
      await proxy.close();
      await audit.flush();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
