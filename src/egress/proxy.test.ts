/**
 * The proxy against real servers on 127.0.0.1 (allowed only by exact address rules, which is
 * itself P4 at work). The same behaviour against test hosts in network namespaces is in
 * proxy.netns.test.ts.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect } from "node:net";
import os from "node:os";
import path from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { openStore } from "../store/index.ts";
import type { Store } from "../store/index.ts";
import { auditTo } from "./audit.ts";
import {
  createEgressProxy,
  type EgressLogEntry,
  type EgressProxy,
  type EgressProxyOptions,
} from "./proxy.ts";
import type { EgressAddress } from "./proxy.ts";
import {
  connectThroughProxy,
  exchange,
  requestThroughProxy,
  startEchoServer,
} from "./testing/index.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Harness {
  proxy: EgressProxy;
  address: EgressAddress;
  entries: EgressLogEntry[];
  lookups: string[];
}

async function startProxy(
  names: Record<string, string[]> = {},
  options: Partial<EgressProxyOptions> = {},
): Promise<Harness> {
  const entries: EgressLogEntry[] = [];
  const lookups: string[] = [];
  const proxy = createEgressProxy({
    resolve: async (hostname) => {
      lookups.push(hostname);
      const addresses = names[hostname];
      if (addresses === undefined)
        throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      return addresses;
    },
    onRequest: (entry) => {
      entries.push(entry);
    },
    log: () => undefined,
    ...options,
  });
  cleanups.push(() => proxy.close());
  const address = await proxy.listen("127.0.0.1", 0);
  proxy.assign("127.0.0.1", "cmp_a");
  return { proxy, address, entries, lookups };
}

/** An origin server that answers with what it received. */
async function startOrigin(): Promise<{ port: number; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const server: Server = createServer((request, response) => {
    requests.push(request);
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

describe("plain HTTP through the proxy", () => {
  it("forwards an allowed request to the checked address, rewriting Host and hop-by-hop headers", async () => {
    const origin = await startOrigin();
    const { proxy, address, entries, lookups } = await startProxy({
      "allowed.test": ["127.0.0.1"],
    });
    proxy.setPolicy("cmp_a", {
      mode: "allowlist-only",
      allow: [`allowed.test:${origin.port}`, `127.0.0.1:${origin.port}`],
    });

    const response = await requestThroughProxy(
      address,
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
      resolvedAddress: "127.0.0.1",
      decision: "allowed",
      status: 200,
    });
    expect(entry.bytesUp).toBeGreaterThan(0);
    expect(entry.bytesDown).toBeGreaterThan(0);
    expect(proxy.stats()).toMatchObject({ allowed: 1, denied: 0, open: 0 });
  });

  it("refuses a host that is not allowed with a clear 403, without resolving it, and logs it", async () => {
    const { proxy, address, entries, lookups } = await startProxy({ "denied.test": ["127.0.0.1"] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["allowed.test"] });
    const response = await requestThroughProxy(address, "http://denied.test/");
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

  it("refuses an allowed name that resolves to a loopback address (DNS rebinding)", async () => {
    const origin = await startOrigin();
    const { proxy, address, entries } = await startProxy({ "rebind.test": ["127.0.0.1"] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`rebind.test:${origin.port}`] });
    const response = await requestThroughProxy(address, `http://rebind.test:${origin.port}/`);
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

  it("checks IP literals, including numeric and IPv4-mapped forms", async () => {
    const origin = await startOrigin();
    const { proxy, address } = await startProxy();
    proxy.setPolicy("cmp_a", { mode: "allow-all" });
    for (const host of [
      "127.0.0.1",
      "2130706433",
      "0x7f.1",
      "[::ffff:127.0.0.1]",
      "[::1]",
      "0.0.0.0",
    ]) {
      const response = await requestThroughProxy(address, `http://${host}:${origin.port}/`);
      expect(response.status, host).toBe(403);
      expect(response.body, host).toMatch(/an address of the Roost host itself/);
    }
    proxy.setPolicy("cmp_a", { mode: "allow-all", allow: [`127.0.0.1:${origin.port}`] });
    expect((await requestThroughProxy(address, `http://2130706433:${origin.port}/`)).status).toBe(
      200,
    );
    expect(origin.requests).toHaveLength(1);
  });

  it("refuses connections from sources that belong to no computer", async () => {
    const { proxy, address, entries } = await startProxy();
    proxy.unassign("127.0.0.1");
    const response = await requestThroughProxy(address, "http://allowed.test/");
    expect(response.status).toBe(403);
    expect(response.body).toMatch(/connections from 127\.0\.0\.1 do not belong to any computer/);
    expect(entries[0]).toMatchObject({
      computerId: null,
      code: "unknown-computer",
      decision: "denied",
    });
  });

  it("answers non-proxy requests with 400", async () => {
    const { address } = await startProxy();
    const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const socket = connect({ host: address.host, port: address.port });
      let data = "";
      socket.on("data", (chunk: Buffer) => (data += chunk.toString()));
      socket.on("end", () => resolve({ status: Number(data.split(" ")[1]), body: data }));
      socket.on("error", reject);
      socket.write("GET /just/a/path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatch(/this is a proxy; send absolute URLs/);
    const https = await requestThroughProxy(address, "https://x.test/");
    expect(https.status).toBe(400);
    expect(https.body).toMatch(/goes through CONNECT/);
    expect((await requestThroughProxy(address, "http://x.test:0/")).status).toBe(400);
    expect((await requestThroughProxy(address, "http://user:pw@x.test/")).status).toBe(400);
  });

  it("refuses a request that already went through the proxy (loop)", async () => {
    const origin = await startOrigin();
    const { proxy, address } = await startProxy();
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`127.0.0.1:${origin.port}`] });
    const response = await requestThroughProxy(address, `http://127.0.0.1:${origin.port}/`, {
      headers: { via: "1.1 roost-egress" },
    });
    expect(response.status).toBe(403);
    expect(response.body).toMatch(/came through this proxy already/);
  });

  it("answers 502 when a name does not resolve or the destination refuses", async () => {
    const { proxy, address, entries } = await startProxy({});
    const closed = await startEchoServer("127.0.0.1");
    await closed.close(); // a port nothing listens on any more
    proxy.setPolicy("cmp_a", {
      mode: "allowlist-only",
      allow: ["nowhere.test", `127.0.0.1:${closed.address.port}`],
    });
    const unresolvable = await requestThroughProxy(address, "http://nowhere.test/");
    expect(unresolvable.status).toBe(502);
    expect(unresolvable.headers["x-roost-egress"]).toBe("error");
    expect(unresolvable.body).toMatch(/could not resolve nowhere\.test \(ENOTFOUND\)/);
    const refused = await requestThroughProxy(address, `http://127.0.0.1:${closed.address.port}/`);
    expect(refused.status).toBe(502);
    expect(refused.body).toMatch(/could not connect to 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    expect(entries.map((entry) => entry.code)).toEqual(["unresolvable", "upstream-failed"]);
  });

  it("gives up on a resolver that does not answer", async () => {
    const { proxy, address } = await startProxy(
      {},
      { resolve: () => new Promise(() => undefined), dnsTimeoutMs: 100 },
    );
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["slow.test"] });
    const response = await requestThroughProxy(address, "http://slow.test/");
    expect(response.status).toBe(502);
    expect(response.body).toMatch(/could not resolve slow\.test \(ETIMEOUT\)/);
  });

  it("refuses request headers beyond maxHeaderSize", async () => {
    const { proxy, address } = await startProxy({}, { maxHeaderSize: 2048 });
    proxy.setPolicy("cmp_a", { mode: "allow-all" });
    const response = await requestThroughProxy(address, "http://x.test/", {
      headers: { "x-big": "a".repeat(4096) },
    });
    expect(response.status).toBe(431);
  });
});

describe("CONNECT tunnels", () => {
  it("tunnels to an allowed destination and logs the bytes when it closes", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, address, entries } = await startProxy({ "tls.test": ["127.0.0.1"] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`127.0.0.1:${echo.address.port}`] });
    const tunnel = await connectThroughProxy(address, `tls.test:${echo.address.port}`);
    expect(tunnel.status).toBe(200);
    expect(await exchange(tunnel.socket, "ping")).toBe("ping");
    expect(proxy.stats().open).toBe(1);
    tunnel.socket.end();
    const entry = await waitFor(() => entries[0]);
    expect(entry).toMatchObject({
      computerId: "cmp_a",
      method: "CONNECT",
      host: "tls.test",
      resolvedAddress: "127.0.0.1",
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
    const { proxy, address, entries } = await startProxy({ "tls.test": ["127.0.0.1"] });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["tls.test:*"] }); // name only: P4 refuses
    const refused = await connectThroughProxy(address, `tls.test:${echo.address.port}`);
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

  it("refuses tunnels to the proxy itself, even when its address is allowed", async () => {
    const { proxy, address, entries } = await startProxy();
    proxy.setPolicy("cmp_a", { mode: "allow-all", allow: ["127.0.0.1:*"] });
    const refused = await connectThroughProxy(address, `127.0.0.1:${address.port}`);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatch(/is this egress proxy itself/);
    const viaLocalhost = await connectThroughProxy(address, `[::ffff:127.0.0.1]:${address.port}`);
    expect(viaLocalhost.status).toBe(403);
    expect(entries.map((entry) => entry.code)).toEqual(["proxy-loop", "proxy-loop"]);
  });

  it("rejects malformed CONNECT targets with 400", async () => {
    const { address } = await startProxy();
    for (const authority of [
      "no-port.test",
      "x.test:0",
      "x.test:99999",
      "user@x.test:443",
      "::1:443",
    ]) {
      const result = await connectThroughProxy(address, authority);
      expect(result.status, authority).toBe(400);
    }
  });

  it("a policy change closes an open tunnel it no longer allows, at once", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, address, entries } = await startProxy({}, { recheckIntervalMs: 60_000 });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`127.0.0.1:${echo.address.port}`] });
    const tunnel = await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`);
    expect(await exchange(tunnel.socket, "before")).toBe("before");

    // A change that still allows it keeps it open.
    proxy.setPolicy("cmp_a", {
      mode: "allowlist-only",
      allow: [`127.0.0.1:${echo.address.port}`, "other.test"],
    });
    expect(await exchange(tunnel.socket, "still")).toBe("still");

    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["other.test"] });
    await waitFor(() => tunnel.socket.destroyed || tunnel.socket.readableEnded, {
      timeoutMs: 5_000,
      what: "tunnel closed",
    });
    const entry = await waitFor(() => entries[0]);
    expect(entry).toMatchObject({ decision: "allowed", status: 200 });
    expect(entry.reason).toMatch(
      /^closed, no longer allowed: roost egress: 127\.0\.0\.1:\d+ is not on this computer's allowlist/,
    );
    // And new tunnels are refused.
    expect((await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`)).status).toBe(403);
  });

  it("closes a tunnel that is idle for idleTimeoutMs", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, address, entries } = await startProxy({}, { idleTimeoutMs: 200 });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`127.0.0.1:${echo.address.port}`] });
    const tunnel = await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`);
    expect(await exchange(tunnel.socket, "x")).toBe("x");
    await once(tunnel.socket, "close");
    const entry = await waitFor(() => entries[0]);
    expect(entry.reason).toMatch(/was idle for 200 ms; closed/);
  });

  it("limits open connections per computer", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const { proxy, address } = await startProxy({}, { maxConnectionsPerComputer: 2 });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`127.0.0.1:${echo.address.port}`] });
    const first = await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`);
    const second = await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`);
    const third = await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`);
    expect([first.status, second.status, third.status]).toEqual([200, 200, 429]);
    expect(third.body).toMatch(/already has 2 open connections/);
    first.socket.destroy();
    await waitFor(() => proxy.stats().open === 1);
    const fourth = await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`);
    expect(fourth.status).toBe(200);
    second.socket.destroy();
    fourth.socket.destroy();
  });
});

describe("lifecycle and deadlines", () => {
  it("cuts a client that never finishes its headers after headersTimeoutMs", async () => {
    const { address } = await startProxy({}, { headersTimeoutMs: 300 });
    const socket = connect({ host: address.host, port: address.port });
    cleanups.push(() => void socket.destroy());
    socket.on("error", () => undefined);
    socket.resume(); // read to the end, or "close" never comes
    await once(socket, "connect");
    socket.write("GET http://slow.test/ HTTP/1.1\r\nHost: slow.test\r\n"); // no blank line, ever
    const started = Date.now();
    await once(socket, "close");
    expect(Date.now() - started).toBeLessThan(5_000);
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
    const { proxy, address, entries } = await startProxy();
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`127.0.0.1:${port}`] });
    const pending = requestThroughProxy(address, `http://127.0.0.1:${port}/held`);
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

  it("removeComputer, close() and the abort signal end open tunnels", async () => {
    const echo = await startEchoServer("127.0.0.1");
    cleanups.push(() => echo.close());
    const controller = new AbortController();
    const { proxy, address } = await startProxy({}, { signal: controller.signal });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`127.0.0.1:${echo.address.port}`] });

    const first = await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`);
    proxy.removeComputer("cmp_a");
    await once(first.socket, "close");
    expect(proxy.policyOf("cmp_a").mode).toBe("defaults-and-allowlist");
    expect((await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`)).status).toBe(403); // unknown source now

    proxy.assign("127.0.0.1", "cmp_a");
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`127.0.0.1:${echo.address.port}`] });
    const second = await connectThroughProxy(address, `127.0.0.1:${echo.address.port}`);
    controller.abort();
    await once(second.socket, "close");
    await waitFor(() => proxy.stats().open === 0);
    await expect(connectThroughProxy(address, `127.0.0.1:${echo.address.port}`)).rejects.toThrow();
  });

  it("validates policies on setPolicy", () => {
    const proxy = createEgressProxy({ log: () => undefined });
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
    const { proxy, address } = await startProxy({}, { onRequest: sink });
    proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`127.0.0.1:${origin.port}`] });
    expect((await requestThroughProxy(address, "http://denied.test/")).status).toBe(403);
    expect((await requestThroughProxy(address, `http://127.0.0.1:${origin.port}/`)).status).toBe(
      200,
    );
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
      host: "127.0.0.1",
      resolvedAddress: "127.0.0.1",
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
      sourceAddress: "10.0.0.2",
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
