/**
 * The vault in the egress proxy, against real HTTPS and HTTP servers on 127.0.0.1 with their own
 * test CA. A user's policy can never reach 127.0.0.1 (P3), so, as in proxy.test.ts, the test
 * names a public address that the proxy's dialer delivers to the local servers. The same
 * against test hosts in network namespaces is vault.netns.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { connect, type Server } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { createEgressProxy, type EgressLogEntry, type EgressProxy } from "../egress/index.ts";
import { connectThroughProxy, requestThroughProxy } from "../egress/testing/index.ts";
import { createVaultAuthority } from "./authority.ts";
import { placeholderFor, type BrokeredSecret } from "./broker.ts";
import { createFixedBrokeredSecrets, httpsThroughProxy } from "./testing/index.ts";
import { createVault, type VaultSwap } from "./vault.ts";
import { createCertificateAuthority, issueServerCertificate } from "./x509.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const publicAddress = "93.184.216.34";
const value = "sk-live-4f9a1c2e7b3d5a6f8e0c";
const token: BrokeredSecret = { name: "API_TOKEN", value, hosts: ["api.vault.test"] };
const upstreamCa = createCertificateAuthority({ commonName: "Upstream test CA" });

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** Answers with what it received; `/echo` sends the value back, split byte by byte. */
function answer(seen: Seen[]) {
  return (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const entry = {
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers as Record<string, string>,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      seen.push(entry);
      if (request.url === "/echo") {
        const auth = entry.headers.authorization ?? "";
        response.writeHead(200, { "x-echo": auth, "content-type": "text/plain" });
        const text = `plain ${auth} b64 ${Buffer.from(auth).toString("base64")} url ${encodeURIComponent(auth)} end`;
        const bytes = Buffer.from(text);
        let index = 0;
        const next = () => {
          if (index >= bytes.length) return response.end();
          response.write(bytes.subarray(index, index + 1));
          index += 1;
          setImmediate(next);
        };
        next();
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(entry));
    });
  };
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  );
  const bound = server.address();
  return bound !== null && typeof bound === "object" ? bound.port : 0;
}

/** An HTTPS origin for `host`, its certificate from `ca` (the upstream's own test CA). */
async function startHttpsOrigin(host: string, ca = upstreamCa) {
  const seen: Seen[] = [];
  const leaf = issueServerCertificate({ ca, host });
  const server = createHttpsServer({ cert: leaf.certPem, key: leaf.keyPem }, answer(seen));
  return { port: await listen(server), seen };
}

async function startHttpOrigin() {
  const seen: Seen[] = [];
  return { port: await listen(createHttpServer(answer(seen))), seen };
}

async function startVault(options: { upstreamCa?: string[]; maxConnections?: number } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "roost-vault-"));
  const secrets = createFixedBrokeredSecrets({ cmp_a: [token] });
  const authority = createVaultAuthority({ dir: path.join(dir, "vault") });
  const swaps: VaultSwap[] = [];
  const entries: EgressLogEntry[] = [];
  const vault = createVault({
    secrets,
    authority,
    upstreamCa: options.upstreamCa ?? [upstreamCa.certPem],
    onSwap: (swap) => {
      swaps.push(swap);
    },
  });
  const proxy: EgressProxy = createEgressProxy({
    resolve: (hostname) =>
      hostname === "loopback.vault.test"
        ? Promise.resolve(["127.0.0.1"]) // the Roost host itself (P3)
        : hostname.endsWith(".vault.test")
          ? Promise.resolve([publicAddress])
          : Promise.reject(Object.assign(new Error("not found"), { code: "ENOTFOUND" })),
    connect: (address, port) =>
      connect({ host: address === publicAddress ? "127.0.0.1" : address, port }),
    onRequest: (entry) => {
      entries.push(entry);
    },
    intercept: vault,
    ...(options.maxConnections === undefined
      ? {}
      : { maxConnectionsPerComputer: options.maxConnections }),
  });
  cleanups.push(async () => {
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const addComputer = async (computerId: string) => {
    const sockets = {
      http: path.join(dir, `${computerId}-http.sock`),
      socks: path.join(dir, `${computerId}-socks.sock`),
    };
    await proxy.listenComputer(computerId, sockets);
    proxy.setPolicy(computerId, { mode: "allowlist-only", allow: ["*.vault.test:*"] });
    return sockets.http;
  };
  const http = await addComputer("cmp_a");
  const computerCa = (await authority.trustFor("cmp_a")).caPem;
  return { proxy, http, secrets, authority, swaps, entries, computerCa, addComputer };
}

const withPlaceholder = { authorization: `Bearer ${placeholderFor("API_TOKEN")}` };

describe("HTTPS to a brokered host", () => {
  it("the allowed host receives the real value; the computer sees the vault CA and never the value", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, swaps, entries, computerCa } = await startVault();
    const result = await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/v1/me`, {
      ca: [computerCa],
      headers: { ...withPlaceholder, "x-other": placeholderFor("OTHER") },
    });
    expect(result.status).toBe(200);
    expect(result.issuer).toBe("Roost vault CA for computer cmp_a");
    const upstream = origin.seen[0];
    expect(upstream?.headers.authorization).toBe(`Bearer ${value}`);
    expect(upstream?.headers["x-other"]).toBe(placeholderFor("OTHER")); // VLT1: no such secret
    expect(upstream?.headers.host).toBe(`api.vault.test:${origin.port}`);
    // The origin echoed its headers: the computer gets them redacted (VLT3).
    expect(result.body).not.toContain(value);
    expect(result.body).toContain("Bearer [REDACTED]");
    expect(swaps).toEqual([
      expect.objectContaining({
        computerId: "cmp_a",
        name: "API_TOKEN",
        host: "api.vault.test",
        port: origin.port,
        method: "GET",
        where: "header",
      }),
    ]);
    expect(JSON.stringify(swaps)).not.toContain(value);
    await waitFor(() => entries.length >= 2 || undefined);
    expect(entries.filter((entry) => entry.intercepted === true)).toHaveLength(2); // request + CONNECT
  });

  it("a host the secret does not list is tunnelled untouched and receives the placeholder", async () => {
    const origin = await startHttpsOrigin("other.vault.test");
    const { http, swaps, computerCa } = await startVault();
    const result = await httpsThroughProxy(http, `https://other.vault.test:${origin.port}/`, {
      ca: [computerCa, upstreamCa.certPem],
      headers: withPlaceholder,
    });
    expect(result.status).toBe(200);
    expect(result.issuer).toBe("Upstream test CA"); // end to end: the vault did not terminate it
    expect(origin.seen[0]?.headers.authorization).toBe(`Bearer ${placeholderFor("API_TOKEN")}`);
    expect(swaps).toEqual([]);
  });

  it("redaction holds when the origin echoes the value byte by byte, base64 and URL-encoded, and in a header", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, computerCa } = await startVault();
    const result = await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/echo`, {
      ca: [computerCa],
      headers: { authorization: placeholderFor("API_TOKEN") },
    });
    expect(origin.seen[0]?.headers.authorization).toBe(value);
    expect(result.headers["x-echo"]).toBe("[REDACTED]");
    expect(result.body).toBe("plain [REDACTED] b64 [REDACTED] url [REDACTED] end");
  });

  it("swaps inside Basic credentials", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, computerCa } = await startVault();
    const basic = Buffer.from(`user:${placeholderFor("API_TOKEN")}`).toString("base64");
    await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/`, {
      ca: [computerCa],
      headers: { authorization: `Basic ${basic}` },
    });
    const sent = origin.seen[0]?.headers.authorization ?? "";
    expect(Buffer.from(sent.replace("Basic ", ""), "base64").toString()).toBe(`user:${value}`);
  });

  it("swaps the body only for a secret brokered with body: true", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, secrets, computerCa } = await startVault();
    const body = JSON.stringify({ key: placeholderFor("API_TOKEN") });
    await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/a`, {
      ca: [computerCa],
      method: "POST",
      body,
    });
    expect(origin.seen[0]?.body).toBe(body);
    secrets.set("cmp_a", [{ ...token, body: true }]);
    const result = await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/b`, {
      ca: [computerCa],
      method: "POST",
      body,
    });
    expect(origin.seen[1]?.body).toBe(JSON.stringify({ key: value }));
    expect(origin.seen[1]?.headers["content-length"]).toBe(String(origin.seen[1]?.body.length));
    expect(result.body).not.toContain(value);
  });

  it("the Host header sent inside the TLS session does not redirect the request", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, computerCa } = await startVault();
    await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/`, {
      ca: [computerCa],
      headers: { ...withPlaceholder, host: "evil.example.com" },
    });
    expect(origin.seen[0]?.headers.host).toBe(`api.vault.test:${origin.port}`);
  });
});

describe("the upstream's certificate is verified (attacks)", () => {
  it("an upstream whose certificate does not chain to a trusted root gets nothing: 502, value never sent", async () => {
    const rogue = createCertificateAuthority({ commonName: "Rogue CA" });
    const origin = await startHttpsOrigin("api.vault.test", rogue);
    const { http, swaps, computerCa } = await startVault();
    const result = await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/`, {
      ca: [computerCa],
      headers: withPlaceholder,
    });
    expect(result.status).toBe(502);
    expect(result.body).toMatch(/roost vault: TLS to api\.vault\.test:\d+ failed/);
    expect(result.body).toContain("ROOST_VAULT_UPSTREAM_CA_FILE");
    expect(origin.seen).toEqual([]);
    expect(swaps).toEqual([]);
  });

  it("an upstream certificate for another name is refused", async () => {
    const origin = await startHttpsOrigin("not-the-api.example.com");
    const { http, computerCa } = await startVault();
    const result = await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/`, {
      ca: [computerCa],
      headers: withPlaceholder,
    });
    expect(result.status).toBe(502);
    expect(result.body).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID|does not match/);
    expect(origin.seen).toEqual([]);
  });

  it("a client that does not trust its vault CA fails the handshake and nothing is sent", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, entries } = await startVault();
    await expect(
      httpsThroughProxy(http, `https://api.vault.test:${origin.port}/`, {
        ca: [upstreamCa.certPem],
        headers: withPlaceholder,
      }),
    ).rejects.toThrow(/self-signed|unable to verify|certificate/i);
    expect(origin.seen).toEqual([]);
    const entry = await waitFor(() => entries.find((e) => e.method === "CONNECT"));
    expect(entry.intercepted).toBe(true);
  });
});

describe("other computers, bad input, floods and races (attacks)", () => {
  it("another computer's placeholder for the same name is not swapped: it has no such secret", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { addComputer, authority, swaps } = await startVault();
    const httpB = await addComputer("cmp_b");
    const result = await httpsThroughProxy(httpB, `https://api.vault.test:${origin.port}/`, {
      ca: [(await authority.trustFor("cmp_b")).caPem, upstreamCa.certPem],
      headers: withPlaceholder,
    });
    expect(result.issuer).toBe("Upstream test CA"); // not intercepted for cmp_b
    expect(origin.seen[0]?.headers.authorization).toBe(`Bearer ${placeholderFor("API_TOKEN")}`);
    expect(swaps).toEqual([]);
    // cmp_b's CA is its own: cmp_a's CA does not sign for it.
    expect((await authority.trustFor("cmp_b")).caPem).not.toBe(
      (await authority.trustFor("cmp_a")).caPem,
    );
  });

  it("a brokered host the egress policy refuses stays refused: 403 before any TLS, no swap", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { proxy, http, swaps, entries, computerCa } = await startVault();
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["other.vault.test:*"] });
    const result = await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/`, {
      ca: [computerCa],
      headers: withPlaceholder,
    });
    expect(result.status).toBe(403);
    expect(result.headers["x-roost-egress"]).toBe("denied");
    expect(origin.seen).toEqual([]);
    expect(swaps).toEqual([]);
    const entry = await waitFor(() => entries[0]);
    expect(entry.intercepted).toBeUndefined();
  });

  it("a brokered host whose name points at the Roost host (loopback) is refused, never swapped (P3 before E9)", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, secrets, swaps, computerCa } = await startVault();
    secrets.set("cmp_a", [{ ...token, hosts: ["loopback.vault.test"] }]);
    const result = await httpsThroughProxy(http, `https://loopback.vault.test:${origin.port}/`, {
      ca: [computerCa],
      headers: withPlaceholder,
    });
    expect(result.status).toBe(403);
    expect(result.body).toMatch(/the Roost host itself/);
    expect(origin.seen).toEqual([]);
    expect(swaps).toEqual([]);
  });

  it("an absolute-form request inside the TLS session is refused with 400", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, computerCa } = await startVault();
    const tunnel = await connectThroughProxy(http, `api.vault.test:${origin.port}`);
    const { connect: tlsConnect } = await import("node:tls");
    const secure = tlsConnect({
      socket: tunnel.socket,
      servername: "api.vault.test",
      ca: [computerCa],
    });
    await new Promise((resolve) => secure.once("secureConnect", resolve));
    const text = await new Promise<string>((resolve) => {
      let received = "";
      secure.on("data", (chunk: Buffer) => (received += chunk.toString()));
      secure.on("end", () => resolve(received));
      secure.on("close", () => resolve(received));
      secure.write(
        "GET http://evil.example.com/ HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\n\r\n",
      );
    });
    expect(text).toMatch(/^HTTP\/1\.1 400/);
    expect(text).toContain("origin-form");
    expect(origin.seen).toEqual([]);
  });

  it("a WebSocket upgrade to a brokered host is a 501, and garbage inside TLS just closes; nothing is sent", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, computerCa } = await startVault();
    const { connect: tlsConnect } = await import("node:tls");
    const session = async (bytes: string) => {
      const tunnel = await connectThroughProxy(http, `api.vault.test:${origin.port}`);
      const secure = tlsConnect({
        socket: tunnel.socket,
        servername: "api.vault.test",
        ca: [computerCa],
      });
      await new Promise((resolve) => secure.once("secureConnect", resolve));
      return new Promise<string>((resolve) => {
        let received = "";
        secure.on("data", (chunk: Buffer) => (received += chunk.toString()));
        secure.on("error", () => resolve(received));
        secure.on("close", () => resolve(received));
        secure.write(bytes);
      });
    };
    const upgrade = await session(
      `GET /ws HTTP/1.1\r\nHost: api.vault.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nAuthorization: ${placeholderFor("API_TOKEN")}\r\n\r\n`,
    );
    expect(upgrade).toMatch(/^HTTP\/1\.1 501/);
    expect(upgrade).toContain("not brokered");
    const garbage = await session("\x00\x01 not http at all\r\n\r\n");
    expect(garbage).not.toContain(value);
    expect(origin.seen).toEqual([]);
  });

  it("a body over the swap limit is refused with 413 and nothing is sent", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, secrets, computerCa } = await startVault();
    secrets.set("cmp_a", [{ ...token, body: true }]);
    const result = await httpsThroughProxy(http, `https://api.vault.test:${origin.port}/`, {
      ca: [computerCa],
      method: "POST",
      body: Buffer.alloc(1_048_577, 0x61),
    }).catch((error: unknown) => ({ status: 0, body: String(error) }));
    if (result.status !== 0) expect(result.status).toBe(413);
    expect(origin.seen).toEqual([]);
  });

  it("a flood of parallel intercepted requests: each is swapped once, audited once, none leaks", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, swaps, computerCa } = await startVault();
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        httpsThroughProxy(http, `https://api.vault.test:${origin.port}/n${index}`, {
          ca: [computerCa],
          headers: withPlaceholder,
        }),
      ),
    );
    expect(results.every((result) => result.status === 200)).toBe(true);
    expect(results.some((result) => result.body.includes(value))).toBe(false);
    expect(origin.seen).toHaveLength(40);
    expect(origin.seen.every((seen) => seen.headers.authorization === `Bearer ${value}`)).toBe(
      true,
    );
    expect(swaps).toHaveLength(40);
  });

  it("race: a secret removed between two requests is not swapped into the second", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, secrets, computerCa } = await startVault();
    const url = `https://api.vault.test:${origin.port}/`;
    const options = { ca: [computerCa, upstreamCa.certPem], headers: withPlaceholder };
    const first = await httpsThroughProxy(http, url, options);
    secrets.set("cmp_a", []);
    const second = await httpsThroughProxy(http, url, options);
    expect(first.issuer).toBe("Roost vault CA for computer cmp_a");
    expect(second.issuer).toBe("Upstream test CA");
    expect(origin.seen.map((seen) => seen.headers.authorization)).toEqual([
      `Bearer ${value}`,
      `Bearer ${placeholderFor("API_TOKEN")}`,
    ]);
  });

  it("race: a secret removed while a keep-alive session is open is not swapped into its next request", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { http, secrets, computerCa } = await startVault();
    const tunnel = await connectThroughProxy(http, `api.vault.test:${origin.port}`);
    const { connect: tlsConnect } = await import("node:tls");
    const secure = tlsConnect({
      socket: tunnel.socket,
      servername: "api.vault.test",
      ca: [computerCa],
    });
    await new Promise((resolve) => secure.once("secureConnect", resolve));
    let received = "";
    secure.on("data", (chunk: Buffer) => (received += chunk.toString()));
    const ask = async (path: string, count: number) => {
      secure.write(
        `GET ${path} HTTP/1.1\r\nHost: api.vault.test\r\nAuthorization: ${placeholderFor("API_TOKEN")}\r\n\r\n`,
      );
      await waitFor(() => origin.seen.length === count && /\r\n0\r\n\r\n$/.test(received));
    };
    await ask("/first", 1);
    secrets.set("cmp_a", []);
    received = "";
    await ask("/second", 2);
    secure.destroy();
    expect(origin.seen.map((seen) => seen.headers.authorization)).toEqual([
      value,
      placeholderFor("API_TOKEN"),
    ]);
  });

  it("a policy change closes an open intercepted session at once (E5)", async () => {
    const origin = await startHttpsOrigin("api.vault.test");
    const { proxy, http, computerCa, entries } = await startVault();
    const tunnel = await connectThroughProxy(http, `api.vault.test:${origin.port}`);
    const { connect: tlsConnect } = await import("node:tls");
    const secure = tlsConnect({
      socket: tunnel.socket,
      servername: "api.vault.test",
      ca: [computerCa],
    });
    await new Promise((resolve) => secure.once("secureConnect", resolve));
    const closed = new Promise((resolve) => secure.once("close", resolve));
    proxy.setPolicy("cmp_a", { mode: "none" });
    await closed;
    const entry = await waitFor(() => entries.find((e) => e.method === "CONNECT"));
    expect(entry.reason).toMatch(/no longer allowed/);
  });
});

describe("plain HTTP to a brokered host", () => {
  it("swaps the header for the allowed host and redacts the echo; other hosts get the placeholder", async () => {
    const origin = await startHttpOrigin();
    const { http, secrets } = await startVault();
    secrets.set("cmp_a", [{ ...token, hosts: ["api.vault.test"] }]);
    const allowed = await requestThroughProxy(http, `http://api.vault.test:${origin.port}/x`, {
      headers: withPlaceholder,
    });
    const other = await requestThroughProxy(http, `http://other.vault.test:${origin.port}/y`, {
      headers: withPlaceholder,
    });
    expect(origin.seen.map((seen) => seen.headers.authorization)).toEqual([
      `Bearer ${value}`,
      `Bearer ${placeholderFor("API_TOKEN")}`,
    ]);
    expect(origin.seen[0]?.headers["accept-encoding"]).toBe("identity");
    expect(allowed.body).not.toContain(value);
    expect(allowed.body).toContain("[REDACTED]");
    expect(other.body).toContain(placeholderFor("API_TOKEN"));
  });
});
