/**
 * The proxy on a computer's unix sockets against real servers on 127.0.0.1. A user's policy can
 * never reach 127.0.0.1 (P3), so the tests name public addresses (`publicA`, `publicB`) that the
 * proxy's dialer (`connect`) delivers to those local servers, as routing would deliver them to
 * hosts on the internet. The same behaviour against test hosts in network namespaces, without
 * that dialer, is in proxy.netns.test.ts.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, createServer as createNetServer, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { access } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { createMemoryLogger } from "../log/testing/index.ts";
import { openStore } from "../store/index.ts";
import type { Store } from "../store/index.ts";
import { auditTo } from "./audit.ts";
import {
  createEgressProxy,
  parseAllowPrivate,
  type EgressLogEntry,
  type EgressProxy,
  type EgressProxyOptions,
} from "./proxy.ts";
import {
  connectThroughProxy,
  exchange,
  requestThroughProxy,
  socksRequest,
  startEchoServer,
} from "./testing/index.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Public addresses the test's dialer delivers to 127.0.0.1 (same port). */
const publicA = "93.184.216.34";
const publicB = "93.184.216.35";
/** Private addresses delivered the same way (for the operator's ROOST_EGRESS_ALLOW_PRIVATE). */
const privateA = "10.9.9.9";
const routed = new Set([publicA, publicB, privateA]);

interface Harness {
  proxy: EgressProxy;
  /** cmp_a's HTTP proxy socket and SOCKS5 socket. */
  http: string;
  socks: string;
  entries: EgressLogEntry[];
  lookups: string[];
  /** Gives another computer its sockets on the same proxy. */
  addComputer: (computerId: string) => Promise<{ http: string; socks: string }>;
}

async function startProxy(
  names: Record<string, string[]> = {},
  options: Partial<EgressProxyOptions> = {},
): Promise<Harness> {
  const entries: EgressLogEntry[] = [];
  const lookups: string[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), "roost-egress-sock-"));
  const proxy = createEgressProxy({
    resolve: async (hostname) => {
      lookups.push(hostname);
      const addresses = names[hostname];
      if (addresses === undefined)
        throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      return addresses;
    },
    connect: (address, port) =>
      connect({ host: routed.has(address) ? "127.0.0.1" : address, port }),
    onRequest: (entry) => {
      entries.push(entry);
    },
    ...options,
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
    return sockets;
  };
  const { http, socks } = await addComputer("cmp_a");
  return { proxy, http, socks, entries, lookups, addComputer };
}

/** An origin server that answers with what it received. */
async function startOrigin(): Promise<{ port: number; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const peers: { address: string; port: number }[] = [];
  const server: Server = createServer((request, response) => {
    requests.push(request);
    peers.push({
      address: request.socket.remoteAddress ?? "",
      port: request.socket.remotePort ?? 0,
    });
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      response.writeHead(200, {
        "content-type": "application/json",
        "x-origin": "yes",
        connection: "close",
      });
      response.end(
        JSON.stringify({
          method: request.method,
          url: request.url,
          headers: request.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const bound = server.address();
  return { port: bound !== null && typeof bound === "object" ? bound.port : 0, requests };
}

/** A raw client on a unix socket that reads everything until the proxy closes. */
async function rawExchange(socketPath: string, data: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ path: socketPath });
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString()));
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
    socket.write(data);
  });
}

describe("plain HTTP through the proxy", () => {
  it("forwards an allowed request to the checked address, rewriting Host and hop-by-hop headers", async () => {
    const origin = await startOrigin();
    const { proxy, http, entries, lookups } = await startProxy({ "allowed.test": [publicA] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`allowed.test:${origin.port}`] });

    const response = await requestThroughProxy(
      http,
      `http://allowed.test:${origin.port}/path?q=1`,
      {
        method: "POST",
        headers: {
          "proxy-authorization": "Basic c2VjcmV0",
          "x-custom": "kept",
          connection: "x-custom, close",
        },
        body: "hello",
      },
    );
    expect(response.status).toBe(200);
    expect(response.headers["x-origin"]).toBe("yes");
    const seen = JSON.parse(response.body) as {
      method: string;
      url: string;
      headers: Record<string, string>;
      body: string;
    };
    expect(seen).toMatchObject({ method: "POST", url: "/path?q=1", body: "hello" });
    expect(seen.headers.host).toBe(`allowed.test:${origin.port}`);
    expect(seen.headers.via).toBe("1.1 roost-egress");
    expect(seen.headers["proxy-authorization"]).toBeUndefined();
    expect(seen.headers["x-custom"]).toBeUndefined(); // named in Connection: hop-by-hop
    expect(lookups).toEqual(["allowed.test"]); // resolved once, then the address was used (E2)

    const entry = await waitFor(() => entries[0]);
    expect(entry).toMatchObject({
      computerId: "cmp_a",
      method: "POST",
      host: "allowed.test",
      port: origin.port,
      resolvedAddress: publicA,
      decision: "allowed",
      status: 200,
    });
    expect(entry.bytesUp).toBeGreaterThan(0);
    expect(entry.bytesDown).toBeGreaterThan(0);
    expect(proxy.stats()).toMatchObject({ allowed: 1, denied: 0, open: 0, computers: 1 });
  });

  it("refuses a host that is not allowed with a clear 403, without resolving it, and logs it", async () => {
    const { proxy, http, entries, lookups } = await startProxy({ "denied.test": [publicA] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["allowed.test"] });
    const response = await requestThroughProxy(http, "http://denied.test/");
    expect(response.status).toBe(403);
    expect(response.headers["x-roost-egress"]).toBe("denied");
    expect(response.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(response.body).toBe(
      "roost egress: denied.test:80 is not on this computer's allowlist (policy: allowlist-only). Add it in the computer's network settings.\n",
    );
    expect(lookups).toEqual([]);
    expect(entries).toEqual([
      expect.objectContaining({
        computerId: "cmp_a",
        host: "denied.test",
        port: 80,
        decision: "denied",
        code: "not-allowed",
        status: 403,
        bytesUp: 0,
        bytesDown: 0,
      }),
    ]);
  });

  it("an IP rule never makes the proxy resolve a name (DNS exfiltration): no lookup happens", async () => {
    const { proxy, http, lookups } = await startProxy({ "a1b2c3.exfil.test": [publicA] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`${publicA}:*`, "0.0.0.0/0:*"] });
    for (const name of ["a1b2c3.exfil.test", "secret-part-two.exfil.test"]) {
      const response = await requestThroughProxy(http, `http://${name}/`);
      expect(response.status).toBe(403);
      expect(response.body).toMatch(/names are looked up only for domain rules/);
      const tunnel = await connectThroughProxy(http, `${name}:443`);
      expect(tunnel.status).toBe(403);
      const socks = await socksRequest(http.replace("-http", "-socks"), name, 443);
      expect(socks.reply).toBe(2);
    }
    expect(lookups).toEqual([]);
    // A domain rule is what makes a name resolvable, and then only that name.
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["a1b2c3.exfil.test"] });
    await requestThroughProxy(http, "http://secret-part-two.exfil.test/");
    expect(lookups).toEqual([]);
  });

  it("refuses an allowed name that resolves to a loopback address (DNS rebinding)", async () => {
    const origin = await startOrigin();
    const { proxy, http, entries } = await startProxy({ "rebind.test": ["127.0.0.1"] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`rebind.test:${origin.port}`] });
    const response = await requestThroughProxy(http, `http://rebind.test:${origin.port}/`);
    expect(response.status).toBe(403);
    expect(response.body).toContain(
      `rebind.test:${origin.port} resolves to 127.0.0.1, an address of the Roost host itself`,
    );
    expect(origin.requests).toHaveLength(0);
    expect(entries[0]).toMatchObject({
      decision: "denied",
      code: "host-address",
      resolvedAddress: "127.0.0.1",
    });
  });

  it("a user's policy opens loopback, link-local and unspecified addresses in no form, not even by exact rules", async () => {
    const origin = await startOrigin();
    const { proxy, http } = await startProxy();
    for (const policy of [
      { mode: "allow-all" as const },
      {
        mode: "allowlist-only" as const,
        allow: ["127.0.0.1:*", "::1", "0.0.0.0/0:*", "::/0:*", "169.254.169.254:*", "0.0.0.0:*"],
      },
    ]) {
      proxy.setPolicy("cmp_a", policy);
      for (const host of [
        "127.0.0.1",
        "2130706433",
        "0x7f.1",
        "[::ffff:127.0.0.1]",
        "[::1]",
        "0.0.0.0",
        "169.254.169.254",
        "[fe80::1]",
        "[::ffff:169.254.169.254]",
      ]) {
        const response = await requestThroughProxy(http, `http://${host}:${origin.port}/`);
        expect(response.status, `${policy.mode} ${host}`).toBe(403);
        expect(response.body, host).toMatch(
          /an address of the Roost host itself|a link-local address; a computer can never reach those/,
        );
      }
    }
    expect(origin.requests).toHaveLength(0);
  });

  it("reads the host's own addresses at every check (a new host address is refused at once, no refresh delay)", async () => {
    const origin = await startOrigin();
    const hostAddresses: string[] = ["127.0.0.1"];
    const { proxy, http } = await startProxy({}, { hostAddresses: () => hostAddresses });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`${publicA}:${origin.port}`] });
    expect((await requestThroughProxy(http, `http://${publicA}:${origin.port}/`)).status).toBe(200);
    hostAddresses.push(publicA); // the host just got this address
    const refused = await requestThroughProxy(http, `http://${publicA}:${origin.port}/`);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatch(/an address of the Roost host itself/);
    expect(origin.requests).toHaveLength(1);
  });

  it("answers non-proxy requests with 400", async () => {
    const { http } = await startProxy();
    const raw = await rawExchange(
      http,
      "GET /just/a/path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    expect(Number(raw.split(" ")[1])).toBe(400);
    expect(raw).toMatch(/this is a proxy; send absolute URLs/);
    const https = await requestThroughProxy(http, "https://x.test/");
    expect(https.status).toBe(400);
    expect(https.body).toMatch(/goes through CONNECT/);
    expect((await requestThroughProxy(http, "http://x.test:0/")).status).toBe(400);
    expect((await requestThroughProxy(http, "http://user:pw@x.test/")).status).toBe(400);
  });

  it("refuses a request that already went through the proxy (loop)", async () => {
    const origin = await startOrigin();
    const { proxy, http } = await startProxy();
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`${publicA}:${origin.port}`] });
    const response = await requestThroughProxy(http, `http://${publicA}:${origin.port}/`, {
      headers: { via: "1.1 roost-egress" },
    });
    expect(response.status).toBe(403);
    expect(response.body).toMatch(/came through this proxy already/);
    expect(origin.requests).toHaveLength(0);
  });

  it("answers 502 when a name does not resolve or the destination refuses", async () => {
    const { proxy, http, entries } = await startProxy({});
    const closed = await startEchoServer("127.0.0.1");
    await closed.close(); // a port nothing listens on any more
    proxy.setPolicy("cmp_a", {
      mode: "allowlist-only",
      allow: ["nowhere.test", `${publicB}:${closed.address.port}`],
    });
    const unresolvable = await requestThroughProxy(http, "http://nowhere.test/");
    expect(unresolvable.status).toBe(502);
    expect(unresolvable.headers["x-roost-egress"]).toBe("error");
    expect(unresolvable.body).toMatch(/could not resolve nowhere\.test \(ENOTFOUND\)/);
    const refused = await requestThroughProxy(http, `http://${publicB}:${closed.address.port}/`);
    expect(refused.status).toBe(502);
    expect(refused.body).toMatch(/could not connect to 93\.184\.216\.35:\d+ \(ECONNREFUSED\)/);
    expect(entries.map((entry) => entry.code)).toEqual(["unresolvable", "upstream-failed"]);
  });

  it("gives up on a resolver that does not answer", async () => {
    const { proxy, http } = await startProxy(
      {},
      { resolve: () => new Promise(() => undefined), dnsTimeoutMs: 100 },
    );
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["slow.test"] });
    const response = await requestThroughProxy(http, "http://slow.test/");
    expect(response.status).toBe(502);
    expect(response.body).toMatch(/could not resolve slow\.test \(ETIMEOUT\)/);
  });

  it("refuses request headers beyond maxHeaderSize", async () => {
    const { proxy, http } = await startProxy({}, { maxHeaderSize: 2048 });
    proxy.setPolicy("cmp_a", { mode: "allow-all" });
    const response = await requestThroughProxy(http, "http://x.test/", {
      headers: { "x-big": "a".repeat(4096) },
    });
    expect(response.status).toBe(431);
  });

  it("records its own outgoing connections, so the platform can refuse them (E6)", async () => {
    const peers: { address: string; port: number }[] = [];
    const held = new Set<Socket>();
    const server = createNetServer((socket) => {
      held.add(socket);
      peers.push({ address: socket.remoteAddress ?? "", port: socket.remotePort ?? 0 });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => {
      for (const socket of held) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const port = (server.address() as { port: number }).port;
    const { proxy, http } = await startProxy();
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`${publicA}:${port}`] });
    const tunnel = await connectThroughProxy(http, `${publicA}:${port}`);
    expect(tunnel.status).toBe(200);
    const peer = await waitFor(() => peers[0]);
    expect(proxy.isOwnConnection(peer.address, peer.port)).toBe(true);
    expect(proxy.isOwnConnection(`::ffff:${peer.address}`, peer.port)).toBe(true);
    expect(proxy.isOwnConnection(peer.address, peer.port + 1)).toBe(false);
    tunnel.socket.destroy();
    await waitFor(() => !proxy.isOwnConnection(peer.address, peer.port), {
      what: "the closed connection forgotten",
    });
  });
});

describe("what only the operator can open", () => {
  it("private ranges stay refused unless the operator opened them, and then only by IP rules", async () => {
    const origin = await startOrigin();
    const closedDefault = await startProxy({ "db.test": [privateA] });
    closedDefault.proxy.setPolicy("cmp_a", {
      mode: "allowlist-only",
      allow: [`${privateA}:${origin.port}`, `db.test:${origin.port}`],
    });
    const refused = await requestThroughProxy(
      closedDefault.http,
      `http://${privateA}:${origin.port}/`,
    );
    expect(refused.status).toBe(403);
    expect(refused.body).toMatch(
      /only in ranges the operator opened \(ROOST_EGRESS_ALLOW_PRIVATE\)/,
    );

    const opened = await startProxy({ "db.test": [privateA] }, { allowPrivate: ["10.0.0.0/8"] });
    opened.proxy.setPolicy("cmp_a", {
      mode: "allowlist-only",
      allow: [`${privateA}:${origin.port}`],
    });
    expect(
      (await requestThroughProxy(opened.http, `http://${privateA}:${origin.port}/`)).status,
    ).toBe(200);
    // Broad rules, domain rules and allow-all still reach public addresses only (P5).
    for (const policy of [
      { mode: "allowlist-only" as const, allow: [`0.0.0.0/0:${origin.port}`] },
      { mode: "allowlist-only" as const, allow: [`db.test:${origin.port}`] },
      { mode: "allow-all" as const },
    ]) {
      opened.proxy.setPolicy("cmp_a", policy);
      const target = policy.allow?.[0]?.startsWith("db.test") === true ? "db.test" : privateA;
      const response = await requestThroughProxy(opened.http, `http://${target}:${origin.port}/`);
      expect(response.status, JSON.stringify(policy)).toBe(403);
    }
    expect(origin.requests).toHaveLength(1);
  });

  it("Roost's own ports are refused on every non-public address, even in a range the operator opened", async () => {
    const origin = await startOrigin();
    const { proxy, http, entries } = await startProxy(
      {},
      { allowPrivate: ["10.0.0.0/8"], platformPorts: () => [origin.port] },
    );
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["10.0.0.0/8:*"] });
    const response = await requestThroughProxy(http, `http://${privateA}:${origin.port}/`);
    expect(response.status).toBe(403);
    expect(response.body).toMatch(/one of Roost's own ports/);
    expect(entries[0]).toMatchObject({ code: "platform-port", decision: "denied" });
    expect(origin.requests).toHaveLength(0);
  });

  it("the operator's setting accepts private ranges only", () => {
    expect(parseAllowPrivate(["10.20.0.0/16", "fd00:1::/64", "100.64.0.0/10"])).toHaveLength(3);
    expect(() => parseAllowPrivate(["127.0.0.0/8"])).toThrow(/is loopback; only ranges inside/);
    expect(() => parseAllowPrivate(["169.254.0.0/16"])).toThrow(/is link-local/);
    expect(() => parseAllowPrivate(["0.0.0.0/0"])).toThrow(/not entirely private/);
    expect(() => parseAllowPrivate(["10.0.0.0/7"])).toThrow(/not entirely private/);
    expect(() => parseAllowPrivate(["ten"])).toThrow(/not an IP range/);
  });
});

describe("CONNECT tunnels", () => {
  it("tunnels to an allowed destination and logs the bytes when it closes", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, http, entries } = await startProxy({ "tls.test": [publicA] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`tls.test:${echo.address.port}`] });
    const tunnel = await connectThroughProxy(http, `tls.test:${echo.address.port}`);
    expect(tunnel.status).toBe(200);
    expect(await exchange(tunnel.socket, "ping")).toBe("ping");
    expect(proxy.stats().open).toBe(1);
    tunnel.socket.end();
    const entry = await waitFor(() => entries[0]);
    expect(entry).toMatchObject({
      computerId: "cmp_a",
      method: "CONNECT",
      host: "tls.test",
      resolvedAddress: publicA,
      decision: "allowed",
      status: 200,
      bytesUp: 4,
      bytesDown: 4,
    });
    expect(proxy.stats().open).toBe(0);
  });

  it("refuses before tunnelling: a 403 with the reason, and the destination never sees a connection", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, http, entries } = await startProxy({ "tls.test": ["127.0.0.1"] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["tls.test:*"] });
    const refused = await connectThroughProxy(http, `tls.test:${echo.address.port}`);
    expect(refused.status).toBe(403);
    expect(refused.headers["x-roost-egress"]).toBe("denied");
    expect(refused.body).toMatch(/resolves to 127\.0\.0\.1, an address of the Roost host itself/);
    await once(refused.socket, "close");
    expect(echo.connections()).toBe(0);
    expect(entries[0]).toMatchObject({
      method: "CONNECT",
      decision: "denied",
      code: "host-address",
    });
  });

  it("rejects malformed CONNECT targets with 400", async () => {
    const { http } = await startProxy();
    for (const authority of [
      "no-port.test",
      "x.test:0",
      "x.test:99999",
      "user@x.test:443",
      "::1:443",
    ]) {
      const result = await connectThroughProxy(http, authority);
      expect(result.status, authority).toBe(400);
    }
  });

  it("a policy change closes an open tunnel it no longer allows, at once", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, http, entries } = await startProxy({}, { recheckIntervalMs: 60_000 });
    const target = `${publicA}:${echo.address.port}`;
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [target] });
    const tunnel = await connectThroughProxy(http, target);
    expect(await exchange(tunnel.socket, "before")).toBe("before");

    // A change that still allows it keeps it open.
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [target, "other.test"] });
    expect(await exchange(tunnel.socket, "still")).toBe("still");

    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["other.test"] });
    await waitFor(() => tunnel.socket.destroyed || tunnel.socket.readableEnded, {
      timeoutMs: 5_000,
      what: "tunnel closed",
    });
    const entry = await waitFor(() => entries[0]);
    expect(entry).toMatchObject({ decision: "allowed", status: 200 });
    expect(entry.reason).toMatch(
      /^closed, no longer allowed: roost egress: 93\.184\.216\.34:\d+ is not on this computer's allowlist/,
    );
    // And new tunnels are refused.
    expect((await connectThroughProxy(http, target)).status).toBe(403);
  });

  it("closes a tunnel that is idle for idleTimeoutMs", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, http, entries } = await startProxy({}, { idleTimeoutMs: 200 });
    proxy.setPolicy("cmp_a", {
      mode: "allowlist-only",
      allow: [`${publicA}:${echo.address.port}`],
    });
    const tunnel = await connectThroughProxy(http, `${publicA}:${echo.address.port}`);
    expect(await exchange(tunnel.socket, "x")).toBe("x");
    await once(tunnel.socket, "close");
    const entry = await waitFor(() => entries[0]);
    expect(entry.reason).toMatch(/was idle for 200 ms; closed/);
  });
});

describe("SOCKS5 (RFC 1928)", () => {
  it("CONNECT to an allowed destination by name (resolved by the proxy), IPv4 and IPv6 works and is logged", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, socks, entries, lookups } = await startProxy({ "tcp.test": [publicA] });
    proxy.setPolicy("cmp_a", {
      mode: "allowlist-only",
      allow: [`tcp.test:${echo.address.port}`, `${publicB}:${echo.address.port}`],
    });
    const byName = await socksRequest(socks, "tcp.test", echo.address.port);
    expect(byName).toMatchObject({ method: 0, reply: 0 });
    expect(await exchange(byName.socket, "hello socks")).toBe("hello socks");
    byName.socket.end();
    const byAddress = await socksRequest(socks, publicB, echo.address.port);
    expect(byAddress.reply).toBe(0);
    expect(await exchange(byAddress.socket, "v4")).toBe("v4");
    byAddress.socket.end();
    expect(lookups).toEqual(["tcp.test"]);
    const logged = await waitFor(() => (entries.length === 2 ? entries : undefined));
    expect(logged[0]).toMatchObject({
      computerId: "cmp_a",
      method: "SOCKS5",
      host: "tcp.test",
      port: echo.address.port,
      resolvedAddress: publicA,
      decision: "allowed",
      status: 200,
      bytesUp: "hello socks".length,
    });
    // An IPv6 destination is parsed and judged (here: not allowed).
    const v6 = await socksRequest(socks, "2606:2800:220:1::1", echo.address.port);
    expect(v6.reply).toBe(2);
    const entry = await waitFor(() => entries[2]);
    expect(entry).toMatchObject({
      host: "2606:2800:220:1::1",
      decision: "denied",
      code: "not-allowed",
    });
  });

  it("a denied destination gets 'not allowed by ruleset', is logged as denied, and is never contacted", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, socks, entries } = await startProxy({ "loop.test": ["127.0.0.1"] });
    proxy.setPolicy("cmp_a", { mode: "allow-all" });
    for (const [host, code] of [
      ["loop.test", "host-address"],
      ["127.0.0.1", "host-address"],
      ["::1", "host-address"],
      ["169.254.169.254", "special-address"],
    ] as const) {
      const result = await socksRequest(socks, host, echo.address.port);
      expect(result.reply, host).toBe(2);
      const entry = await waitFor(() => entries.find((candidate) => candidate.host === host));
      expect(entry).toMatchObject({ method: "SOCKS5", decision: "denied", code, status: 403 });
    }
    expect(echo.connections()).toBe(0);
  });

  it("refuses BIND and UDP ASSOCIATE with 'command not supported'", async () => {
    const { proxy, socks, entries } = await startProxy();
    proxy.setPolicy("cmp_a", { mode: "allow-all" });
    expect((await socksRequest(socks, publicA, 80, { command: 2 })).reply).toBe(7);
    expect((await socksRequest(socks, publicA, 80, { command: 3 })).reply).toBe(7);
    await waitFor(() => entries.length === 2);
    expect(entries.map((entry) => entry.reason)).toEqual([
      "roost egress: SOCKS5: the BIND command is not supported; only CONNECT is.",
      "roost egress: SOCKS5: the UDP ASSOCIATE command is not supported; only CONNECT is.",
    ]);
  });

  it("answers a client without the no-authentication method, and unknown address types, as RFC 1928 says", async () => {
    const { socks } = await startProxy();
    const userPassOnly = await socksRequest(socks, publicA, 80, { methods: [2] });
    expect(userPassOnly).toMatchObject({ method: 0xff, reply: undefined });
    expect(userPassOnly.socket.destroyed).toBe(true);
    const badType = await new Promise<Buffer>((resolve, reject) => {
      const socket = connect({ path: socks });
      let data = Buffer.alloc(0);
      socket.on("data", (chunk: Buffer) => (data = Buffer.concat([data, chunk])));
      socket.on("close", () => resolve(data));
      socket.on("error", reject);
      socket.write(Buffer.from([5, 1, 0, 5, 1, 0, 9, 1, 2, 3, 4, 0, 80]));
    });
    expect([...badType]).toEqual([5, 0, 5, 8, 0, 1, 0, 0, 0, 0, 0, 0]);
  });

  it("maps upstream failures to SOCKS5 replies: unresolvable → host unreachable, refused → connection refused", async () => {
    const closed = await startEchoServer("127.0.0.1");
    await closed.close();
    const { proxy, socks } = await startProxy({});
    proxy.setPolicy("cmp_a", { mode: "allow-all" });
    expect((await socksRequest(socks, "nowhere.test", 80)).reply).toBe(4);
    expect((await socksRequest(socks, publicA, closed.address.port)).reply).toBe(5);
  });

  it("a policy change closes an open SOCKS5 tunnel, and a stalled handshake is cut (E7)", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const logger = createMemoryLogger();
    const { proxy, socks } = await startProxy({}, { headersTimeoutMs: 300, logger });
    proxy.setPolicy("cmp_a", {
      mode: "allowlist-only",
      allow: [`${publicA}:${echo.address.port}`],
    });
    const tunnel = await socksRequest(socks, publicA, echo.address.port);
    expect(await exchange(tunnel.socket, "x")).toBe("x");
    const closed = once(tunnel.socket, "close");
    proxy.setPolicy("cmp_a", { mode: "none" });
    await closed;

    const stalled = connect({ path: socks });
    stalled.on("error", () => undefined);
    stalled.resume();
    await once(stalled, "connect");
    stalled.write(Buffer.from([5])); // half a greeting, then nothing
    await once(stalled, "close");
    expect(logger.messages().join("\n")).toMatch(
      /did not finish its request headers \(or SOCKS5 handshake\) in time/,
    );
  });
});

describe("lifecycle, deadlines and limits", () => {
  it("cuts a client that never finishes its headers after headersTimeoutMs, and logs it", async () => {
    const logger = createMemoryLogger();
    const { http } = await startProxy({}, { headersTimeoutMs: 300, logger });
    const socket = connect({ path: http });
    cleanups.push(() => void socket.destroy());
    socket.on("error", () => undefined);
    socket.resume(); // read to the end, or "close" never comes
    await once(socket, "connect");
    socket.write("GET http://slow.test/ HTTP/1.1\r\nHost: slow.test\r\n"); // no blank line, ever
    await once(socket, "close");
    expect(logger.messages()).toContain(
      "a connection to the egress proxy did not finish its request headers (or SOCKS5 handshake) in time; closed",
    );
  });

  it("one computer's flood of half-open sockets stops at its limit, is logged, and leaves another computer's traffic alone (E8)", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const logger = createMemoryLogger();
    const { proxy, http, socks, addComputer } = await startProxy(
      {},
      { maxConnectionsPerComputer: 5, logger },
    );
    const other = await addComputer("cmp_b");
    for (const id of ["cmp_a", "cmp_b"])
      proxy.setPolicy(id, { mode: "allowlist-only", allow: [`${publicA}:${echo.address.port}`] });
    const flood: Socket[] = [];
    cleanups.push(() => {
      for (const socket of flood) socket.destroy();
    });
    const closedEarly: Socket[] = [];
    for (let index = 0; index < 40; index++) {
      const socket = connect({ path: index % 2 === 0 ? http : socks });
      socket.on("error", () => undefined);
      socket.on("close", () => closedEarly.push(socket));
      await once(socket, "connect");
      socket.write(index % 2 === 0 ? "GET http://x.test/ HT" : Buffer.from([5, 1]));
      flood.push(socket);
    }
    await waitFor(() => closedEarly.length >= 35, { what: "sockets over the limit closed" });
    expect(proxy.stats().sockets).toBeLessThanOrEqual(5);
    expect(logger.entries.find((entry) => entry.level === "warn")).toMatchObject({
      message:
        "a computer reached its limit of connections to the egress proxy; further ones are refused",
      fields: expect.objectContaining({ computerId: "cmp_a", limit: 5 }),
    });
    // The other computer is not affected.
    const tunnel = await connectThroughProxy(other.http, `${publicA}:${echo.address.port}`);
    expect(tunnel.status).toBe(200);
    expect(await exchange(tunnel.socket, "still here")).toBe("still here");
    tunnel.socket.destroy();
    // And once the flood ends, the computer can connect again.
    for (const socket of flood) socket.destroy();
    await waitFor(() => proxy.stats().sockets === 0);
    expect((await connectThroughProxy(http, `${publicA}:${echo.address.port}`)).status).toBe(200);
  });

  it("answers an in-flight plain request with 403 when a policy change refuses it", async () => {
    const held: (() => void)[] = [];
    const server = createServer((_request, response) => {
      held.push(() => response.end("late"));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => {
      for (const release of held) release();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const port = (server.address() as { port: number }).port;
    const { proxy, http, entries } = await startProxy();
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`${publicA}:${port}`] });
    const pending = requestThroughProxy(http, `http://${publicA}:${port}/held`);
    await waitFor(() => held.length === 1);
    proxy.setPolicy("cmp_a", { mode: "none" });
    const response = await pending;
    expect(response.status).toBe(403);
    expect(response.headers["x-roost-egress"]).toBe("denied");
    expect(response.body).toMatch(
      /closed, no longer allowed: .*has no network access \(policy: none\)/,
    );
    expect(await waitFor(() => entries[0])).toMatchObject({ decision: "allowed", status: 403 });
  });

  it("removeComputer, a computer's listener closing, close() and the abort signal end open tunnels", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const controller = new AbortController();
    const { proxy, http, addComputer } = await startProxy({}, { signal: controller.signal });
    const target = `${publicA}:${echo.address.port}`;
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [target] });

    const first = await connectThroughProxy(http, target);
    proxy.removeComputer("cmp_a");
    await once(first.socket, "close");
    expect(proxy.policyOf("cmp_a").mode).toBe("defaults-and-allowlist");
    expect((await connectThroughProxy(http, target)).status).toBe(403); // the default policy now

    // A computer's listener closing (it went to sleep) ends its tunnels and removes its sockets.
    const dir = path.dirname(http);
    const sockets = {
      http: path.join(dir, "b2-http.sock"),
      socks: path.join(dir, "b2-socks.sock"),
    };
    const listener = await proxy.listenComputer("cmp_b2", sockets);
    proxy.setPolicy("cmp_b2", { mode: "allowlist-only", allow: [target] });
    const ofB = await connectThroughProxy(sockets.http, target);
    expect(ofB.status).toBe(200);
    const ofBClosed = once(ofB.socket, "close");
    await listener.close();
    await ofBClosed;
    await expect(access(sockets.http)).rejects.toThrow(/ENOENT/);
    await expect(access(sockets.socks)).rejects.toThrow(/ENOENT/);

    const other = await addComputer("cmp_c");
    proxy.setPolicy("cmp_c", { mode: "allowlist-only", allow: [target] });
    const second = await connectThroughProxy(other.http, target);
    controller.abort();
    await once(second.socket, "close");
    await waitFor(() => proxy.stats().open === 0);
    await expect(connectThroughProxy(other.http, target)).rejects.toThrow();
  });

  it("validates policies on setPolicy", () => {
    const proxy = createEgressProxy();
    cleanups.push(() => proxy.close());
    expect(() =>
      proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["foo.*.com"] }),
    ).toThrow(/allow\[0\]: "foo\.\*\.com": a wildcard may only be the whole first label/);
    expect(
      proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["Example.COM:443"] }),
    ).toEqual({
      mode: "allowlist-only",
      allow: [{ host: "example.com", ports: [443] }],
      deny: [],
    });
  });
});

describe("audit log", () => {
  it("auditTo writes denied and allowed requests to the store's audit log", async () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), "roost-egress-"));
    const store: Store = await openStore({
      kind: "sqlite",
      path: path.join(directory, "roost.db"),
    });
    cleanups.push(async () => {
      await store.close();
      rmSync(directory, { recursive: true, force: true });
    });
    const origin = await startOrigin();
    const sink = auditTo(store);
    const { proxy, http } = await startProxy({}, { onRequest: sink });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`${publicA}:${origin.port}`] });
    expect((await requestThroughProxy(http, "http://denied.test/")).status).toBe(403);
    expect((await requestThroughProxy(http, `http://${publicA}:${origin.port}/`)).status).toBe(200);
    await waitFor(() => proxy.stats().allowed === 1);
    await sink.flush();
    const rows = await store.listAudit({ limit: 10 });
    const denied = rows.find((row) => row.action === "egress.denied");
    const allowed = rows.find((row) => row.action === "egress.allowed");
    expect(denied).toMatchObject({ accountId: null, target: "cmp_a" });
    expect(denied?.detail).toMatchObject({
      host: "denied.test",
      port: 80,
      code: "not-allowed",
      status: 403,
    });
    expect(String(denied?.detail.reason)).toMatch(/is not on this computer's allowlist/);
    expect(allowed).toMatchObject({ accountId: null, target: "cmp_a" });
    expect(allowed?.detail).toMatchObject({
      host: publicA,
      resolvedAddress: publicA,
      status: 200,
    });
  });

  it("drops allowed entries (counted) but never denied ones when the store falls behind", async () => {
    const written: { action: string; detail?: Record<string, unknown> }[] = [];
    const gates: (() => void)[] = [];
    const slowStore = {
      audit: (input: {
        accountId: string | null;
        action: string;
        target: string;
        detail?: Record<string, unknown>;
      }) =>
        new Promise<void>((resolve) => {
          gates.push(() => {
            written.push(input);
            resolve();
          });
        }),
    };
    const sink = auditTo(slowStore, { maxPending: 2 });
    const entry = (decision: "allowed" | "denied"): EgressLogEntry => ({
      computerId: "cmp_a",
      method: "GET",
      host: "x.test",
      port: 80,
      decision,
      status: decision === "allowed" ? 200 : 403,
      bytesUp: 0,
      bytesDown: 0,
      durationMs: 1,
    });
    sink(entry("allowed"));
    sink(entry("allowed"));
    sink(entry("allowed")); // dropped
    sink(entry("denied")); // never dropped
    expect(sink.dropped).toBe(1);
    for (const open of gates.splice(0)) open();
    await sink.flush();
    sink(entry("allowed"));
    for (const open of gates.splice(0)) open();
    await sink.flush();
    expect(written.map((row) => row.action)).toEqual([
      "egress.allowed",
      "egress.allowed",
      "egress.denied",
      "egress.allowed",
    ]);
    expect(written[2]?.detail?.droppedBefore).toBe(1);
  });
});
