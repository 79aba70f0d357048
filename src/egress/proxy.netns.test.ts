/**
 * The proxy against REAL test hosts in network namespaces this test creates: a "test host"
 * namespace (an HTTP server and a TCP echo server on a private 10.213.x.y/30 address that exists
 * only inside it, in a range this test's operator opens with `allowPrivate`) and a "computer"
 * namespace that has nothing but loopback: its only way out is its unix socket to the proxy.
 * Needs root and iproute2; skipped with a printed reason otherwise, never when CI=true.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { networkInterfaces } from "node:os";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { openStore, type Store } from "../store/index.ts";
import { auditTo } from "./audit.ts";
import { createEgressProxy, type EgressLogEntry, type EgressProxy } from "./proxy.ts";
import {
  connectThroughProxy,
  exchange,
  requestThroughProxy,
  socksRequest,
} from "./testing/index.ts";
import {
  createNamespace,
  deleteNamespace,
  freeSubnet,
  ip,
  netnsSkip,
  type Namespace,
} from "./testing/netns.ts";

const skipReason = netnsSkip("egress");

/** The test host: an HTTP server on :8080 and a TCP echo server on :9000, inside the namespace. */
const testHostScript = `
const http = require("node:http");
const net = require("node:net");
const web = http.createServer((request, response) => {
  console.log("request " + request.method + " " + request.url + " via=" + (request.headers.via || ""));
  response.end("hello from the test host: " + request.method + " " + request.url);
});
const echo = net.createServer((socket) => { socket.on("error", () => socket.destroy()); socket.pipe(socket); });
let ready = 0;
const up = () => { if (++ready === 2) console.log("ready"); };
// Every address of the namespace (it has two); nothing outside the namespace is bound.
web.listen(8080, "0.0.0.0", up);
echo.listen(9000, "0.0.0.0", up);
`;

/** A client inside the computer namespace: one request through its proxy socket, result as JSON. */
const computerClientScript = `
const http = require("node:http");
const [socketPath, url] = process.argv.slice(1);
const request = http.request({ socketPath, path: url, headers: { host: new URL(url).host }, timeout: 10000 }, (response) => {
  let body = "";
  response.on("data", (chunk) => (body += chunk));
  response.on("end", () => { console.log(JSON.stringify({ status: response.statusCode, egress: response.headers["x-roost-egress"] || null, body })); });
});
request.on("timeout", () => { console.log(JSON.stringify({ error: "timeout" })); request.destroy(); });
request.on("error", (error) => console.log(JSON.stringify({ error: error.code || String(error) })));
request.end();
`;

async function runInNamespace(namespace: string, script: string, args: string[]): Promise<string> {
  const child = spawn("ip", ["netns", "exec", namespace, process.execPath, "-e", script, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  try {
    await once(child, "exit");
  } finally {
    clearTimeout(timer);
  }
  return output.trim();
}

describe.skipIf(skipReason !== undefined)(
  "egress proxy with test hosts in network namespaces",
  () => {
    const suffix = randomBytes(3).toString("hex");
    const subnet = skipReason === undefined ? freeSubnet() : "10.213.0";
    const secondAddress = `${subnet}.10`;
    const created: { name: string; hostInterface: string }[] = [];
    let testHost: Namespace;
    /** Like a computer's sandbox: a network namespace with only loopback. */
    let computer: { name: string };
    let server: ChildProcess | undefined;
    const requestsSeen: string[] = [];
    const cleanups: (() => Promise<void> | void)[] = [];

    beforeAll(async () => {
      try {
        created.push({ name: `roost-eg-${suffix}-h`, hostInterface: `reg${suffix}h` });
        testHost = createNamespace(`roost-eg-${suffix}-h`, `reg${suffix}`, subnet, 0);
        created.push({ name: `roost-eg-${suffix}-c`, hostInterface: `rec${suffix}h` });
        computer = { name: `roost-eg-${suffix}-c` };
        ip("netns", "add", computer.name);
        ip("-n", computer.name, "link", "set", "lo", "up");
        // A second address for the test host, so one host can be allowed and another denied.
        ip("-n", testHost.name, "addr", "add", `${secondAddress}/32`, "dev", `reg${suffix}n`);
        ip("route", "add", `${secondAddress}/32`, "dev", testHost.hostInterface);
        const child = spawn(
          "ip",
          ["netns", "exec", testHost.name, process.execPath, "-e", testHostScript],
          { stdio: ["ignore", "pipe", "inherit"] },
        );
        server = child;
        let buffered = "";
        child.stdout.on("data", (chunk: Buffer) => {
          buffered += chunk.toString();
          const lines = buffered.split("\n");
          buffered = lines.pop() ?? "";
          requestsSeen.push(...lines);
        });
        await waitFor(() => requestsSeen.includes("ready") || child.exitCode !== null, {
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
      const left = spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout;
      expect(left).not.toContain(`roost-eg-${suffix}`);
    });

    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    interface Harness {
      proxy: EgressProxy;
      /** cmp_a's HTTP proxy socket and SOCKS5 socket. */
      http: string;
      socks: string;
      entries: EgressLogEntry[];
      lookups: string[];
    }

    async function startProxy(
      options: { recheckIntervalMs?: number; extraHostAddresses?: string[]; store?: Store } = {},
    ): Promise<Harness> {
      const entries: EgressLogEntry[] = [];
      const lookups: string[] = [];
      const names: Record<string, string[]> = {
        "allowed.test": [testHost.innerAddress],
        "denied.test": [secondAddress],
        "rebind.test": [testHost.innerAddress],
        "loopback.test": ["127.0.0.1"],
        "veth.test": [testHost.hostAddress],
        "mixed.test": [testHost.innerAddress, "127.0.0.1"],
      };
      const sink = options.store === undefined ? undefined : auditTo(options.store);
      const dir = mkdtempSync(path.join(os.tmpdir(), "roost-egress-ns-"));
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
          sink?.(entry);
        },
        // The operator of this test opened the test hosts' subnet (ROOST_EGRESS_ALLOW_PRIVATE).
        allowPrivate: [`${subnet}.0/24`],
        ...(options.recheckIntervalMs === undefined
          ? {}
          : { recheckIntervalMs: options.recheckIntervalMs }),
        ...(options.extraHostAddresses === undefined
          ? {}
          : {
              hostAddresses: () => [
                ...Object.values(networkInterfaces()).flatMap((list) =>
                  (list ?? []).map((entry) => entry.address),
                ),
                ...(options.extraHostAddresses ?? []),
              ],
            }),
      });
      cleanups.push(async () => {
        await proxy.close();
        await sink?.flush();
        rmSync(dir, { recursive: true, force: true });
      });
      const sockets = {
        http: path.join(dir, "a-http.sock"),
        socks: path.join(dir, "a-socks.sock"),
      };
      await proxy.listenComputer("cmp_a", sockets);
      return { proxy, ...sockets, entries, lookups };
    }

    it("an allowed host answers through the proxy (its private address explicitly allowed)", async () => {
      const { proxy, http, entries } = await startProxy();
      proxy.setPolicy("cmp_a", {
        mode: "allowlist-only",
        allow: ["allowed.test:8080", `${testHost.innerAddress}:8080`],
      });
      const byName = await requestThroughProxy(http, "http://allowed.test:8080/by-name");
      expect(byName).toMatchObject({ status: 200, body: "hello from the test host: GET /by-name" });
      const byAddress = await requestThroughProxy(
        http,
        `http://${testHost.innerAddress}:8080/by-address`,
      );
      expect(byAddress).toMatchObject({
        status: 200,
        body: "hello from the test host: GET /by-address",
      });
      await waitFor(() => requestsSeen.includes("request GET /by-address via=1.1 roost-egress"));
      expect(requestsSeen).toContain("request GET /by-name via=1.1 roost-egress");
      await waitFor(() => entries.length === 2);
      expect(entries[0]).toMatchObject({
        computerId: "cmp_a",
        host: "allowed.test",
        port: 8080,
        resolvedAddress: testHost.innerAddress,
        decision: "allowed",
        status: 200,
      });
    });

    it("a denied host gets a clear 403 that is written to the audit log, and is never contacted", async () => {
      const directory = mkdtempSync(path.join(os.tmpdir(), "roost-egress-"));
      const store = await openStore({ kind: "sqlite", path: path.join(directory, "roost.db") });
      cleanups.push(async () => {
        await store.close();
        rmSync(directory, { recursive: true, force: true });
      });
      const { proxy, http } = await startProxy({ store });
      proxy.setPolicy("cmp_a", {
        mode: "allowlist-only",
        allow: ["allowed.test:8080", `${testHost.innerAddress}:8080`],
      });
      const response = await requestThroughProxy(http, "http://denied.test:8080/should-not-arrive");
      expect(response.status).toBe(403);
      expect(response.headers["x-roost-egress"]).toBe("denied");
      expect(response.body).toBe(
        "roost egress: denied.test:8080 is not on this computer's allowlist (policy: allowlist-only). IP rules match requests for those addresses, not names (names are looked up only for domain rules). Add it in the computer's network settings.\n",
      );
      const rows = await waitFor(async () => {
        const list = await store.listAudit({ limit: 10 });
        return list.some((row) => row.action === "egress.denied") ? list : undefined;
      });
      expect(rows.find((row) => row.action === "egress.denied")).toMatchObject({
        accountId: null,
        target: "cmp_a",
        detail: expect.objectContaining({
          host: "denied.test",
          port: 8080,
          status: 403,
          code: "not-allowed",
        }),
      });
      // The allowed request next to it reaches the host; the denied one never did.
      expect((await requestThroughProxy(http, "http://allowed.test:8080/after")).status).toBe(200);
      await waitFor(() => requestsSeen.some((line) => line.startsWith("request GET /after")));
      expect(requestsSeen.some((line) => line.includes("/should-not-arrive"))).toBe(false);
      // The denied host is real: allowed, it answers.
      proxy.setPolicy("cmp_a", {
        mode: "allowlist-only",
        allow: ["denied.test:8080", `${secondAddress}:8080`],
      });
      expect(await requestThroughProxy(http, "http://denied.test:8080/now-allowed")).toMatchObject({
        status: 200,
        body: "hello from the test host: GET /now-allowed",
      });
    });

    it("a name that resolves to a private or host address is refused without an exact IP allow", async () => {
      const { proxy, http, entries } = await startProxy();
      // Every name below is allowed by a domain rule; only their addresses are wrong.
      proxy.setPolicy("cmp_a", {
        mode: "allowlist-only",
        allow: ["rebind.test:*", "loopback.test:8080"],
      });
      const privateAddress = await requestThroughProxy(http, "http://rebind.test:8080/rebind");
      expect(privateAddress.status).toBe(403);
      expect(privateAddress.body).toContain(
        `rebind.test:8080 resolves to ${testHost.innerAddress}, a private address`,
      );
      const loopback = await requestThroughProxy(http, "http://loopback.test:8080/");
      expect(loopback.status).toBe(403);
      expect(loopback.body).toContain("resolves to 127.0.0.1, an address of the Roost host itself");
      const tunnel = await connectThroughProxy(http, "rebind.test:9000");
      expect(tunnel.status).toBe(403);

      // With the test host's range allowed: the test host is fine, but one bad address among a
      // name's addresses refuses the name, and the range does not open the host's own veth address.
      proxy.setPolicy("cmp_a", {
        mode: "allowlist-only",
        allow: ["mixed.test:8080", "veth.test:8080", `${subnet}.0/24:8080`],
      });
      const mixed = await requestThroughProxy(http, "http://mixed.test:8080/mixed");
      expect(mixed.status).toBe(403);
      expect(mixed.body).toContain("resolves to 127.0.0.1");
      const veth = await requestThroughProxy(http, "http://veth.test:8080/veth");
      expect(veth.status).toBe(403);
      expect(veth.body).toContain(
        `resolves to ${testHost.hostAddress}, an address of the Roost host itself`,
      );
      expect(requestsSeen.some((line) => /\/(rebind|mixed|veth)/.test(line))).toBe(false);
      expect(
        entries.filter((entry) => entry.decision === "denied").map((entry) => entry.code),
      ).toEqual([
        "private-address",
        "host-address",
        "private-address",
        "host-address",
        "host-address",
      ]);
    });

    it("tunnels to the test host, and a policy change cuts the open tunnel", async () => {
      const { proxy, http, entries } = await startProxy({ recheckIntervalMs: 60_000 });
      proxy.setPolicy("cmp_a", {
        mode: "allowlist-only",
        allow: ["allowed.test:9000", `${testHost.innerAddress}:9000`],
      });
      const tunnel = await connectThroughProxy(http, "allowed.test:9000");
      expect(tunnel.status).toBe(200);
      expect(await exchange(tunnel.socket, "hello over the tunnel")).toBe("hello over the tunnel");
      const closed = once(tunnel.socket, "close");
      proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: ["allowed.test:9000"] }); // IP allow removed
      await closed;
      const entry = await waitFor(() =>
        entries.find((candidate) => candidate.method === "CONNECT"),
      );
      expect(entry).toMatchObject({
        decision: "allowed",
        status: 200,
        resolvedAddress: testHost.innerAddress,
      });
      expect(entry.bytesUp).toBe("hello over the tunnel".length);
      expect(entry.reason).toContain(
        `closed, no longer allowed: roost egress: allowed.test:9000 resolves to ${testHost.innerAddress}, a private address`,
      );
    });

    it("the periodic re-check closes a tunnel whose destination became refused", async () => {
      const extraHostAddresses: string[] = [];
      const { proxy, http, entries } = await startProxy({
        recheckIntervalMs: 200,
        extraHostAddresses,
      });
      proxy.setPolicy("cmp_a", { mode: "allowlist-only", allow: [`${subnet}.0/29:9000`] });
      const tunnel = await connectThroughProxy(http, `${testHost.innerAddress}:9000`);
      expect(await exchange(tunnel.socket, "one")).toBe("one");
      const closed = once(tunnel.socket, "close");
      // No setPolicy call: the host now has this address (P4: a range no longer allows it), and
      // only the timer can notice.
      extraHostAddresses.push(testHost.innerAddress);
      const started = Date.now();
      await closed;
      expect(Date.now() - started).toBeLessThan(5_000);
      const entry = await waitFor(() => entries[0]);
      expect(entry.reason).toContain("an address of the Roost host itself");
    });

    it("a computer in a namespace with only loopback reaches hosts through its socket alone, as its policy allows", async () => {
      const { proxy, http, socks } = await startProxy();
      proxy.setPolicy("cmp_a", {
        mode: "allowlist-only",
        allow: [
          "allowed.test:8080",
          `${testHost.innerAddress}:8080`,
          `${testHost.innerAddress}:9000`,
        ],
      });
      // The computer's namespace has nothing but loopback: no route to the test host at all.
      expect(
        spawnSync("ip", ["-n", computer.name, "-o", "link"], { encoding: "utf8" }).stdout,
      ).toMatch(/^1: lo:[^\n]*\n$/);
      expect(
        await runInNamespace(computer.name, directClientScript, [testHost.innerAddress, "8080"]),
      ).toBe("ENETUNREACH");
      const run = async (url: string) =>
        JSON.parse(await runInNamespace(computer.name, computerClientScript, [http, url])) as {
          status?: number;
          egress?: string | null;
          body?: string;
          error?: string;
        };
      expect(await run("http://allowed.test:8080/from-computer")).toMatchObject({
        status: 200,
        body: "hello from the test host: GET /from-computer",
      });
      expect(await run("http://denied.test:8080/from-computer-denied")).toMatchObject({
        status: 403,
        egress: "denied",
      });
      // The host side of a veth is the host: refused (P3).
      expect(await run(`http://${testHost.hostAddress}:8080/`)).toMatchObject({
        status: 403,
        egress: "denied",
      });
      // SOCKS5 to the test host's echo server (from the host side of the socket, as the forwarder would).
      const tunnel = await socksRequest(socks, testHost.innerAddress, 9000);
      expect(tunnel.reply).toBe(0);
      expect(await exchange(tunnel.socket, "over socks")).toBe("over socks");
      tunnel.socket.destroy();
      expect((await socksRequest(socks, secondAddress, 9000)).reply).toBe(2);
      // Another computer's socket carries its own policy, not this one's.
      const other = {
        http: http.replace("a-http", "b-http"),
        socks: socks.replace("a-socks", "b-socks"),
      };
      await proxy.listenComputer("cmp_b", other);
      expect((await requestThroughProxy(other.http, "http://allowed.test:8080/")).status).toBe(403);
    });
  },
);

/** A direct TCP connection from inside the computer namespace, bypassing the proxy. */
const directClientScript = `
const [host, port] = process.argv.slice(1);
const socket = require("node:net").connect({ host, port: Number(port) });
socket.setTimeout(3000, () => { console.log("timeout"); socket.destroy(); });
socket.on("connect", () => { console.log("connected"); socket.destroy(); });
socket.on("error", (error) => console.log(error.code || String(error)));
`;
