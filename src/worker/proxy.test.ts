/**
 * The worker behind an HTTP proxy: the real gateway on 127.0.0.1, a real CONNECT proxy in front
 * of it (test/support/connect-proxy.ts), and the worker dialling through it. Also the rules that
 * choose the proxy from the environment (PX1) and keep its password out of the log (PX3).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startRoostWorker, type RoostWorkerProcess } from "../../test/support/roost-worker.ts";
import { startConnectProxy, type ConnectProxy } from "../../test/support/connect-proxy.ts";
import { waitFor } from "../../test/support/wait.ts";
import { createGateway } from "../gateway/index.ts";
import { makeComputerDirs, startTestGateway, type TestGateway } from "../gateway/testing/index.ts";
import { bypassesProxy, connectThroughProxy, describeProxy, proxyFor } from "./proxy.ts";
import { startWorker, type Worker } from "./worker.ts";

describe("choosing the proxy from the environment (PX1)", () => {
  const wss = new URL("wss://roost.example.com/v1/gateway");
  const ws = new URL("ws://roost.example.com:8080/v1/gateway");

  it("uses HTTPS_PROXY for wss:// and HTTP_PROXY for ws://, lower case first, a bare host:port as http", () => {
    const env = {
      HTTPS_PROXY: "http://upper:3128",
      https_proxy: "http://lower:3128",
      HTTP_PROXY: "plain:8080",
    };
    expect(proxyFor(wss, env)?.href).toBe("http://lower:3128/");
    expect(proxyFor(ws, env)?.href).toBe("http://plain:8080/");
    expect(proxyFor(wss, { HTTP_PROXY: "http://only-http:1" })).toBeUndefined();
    expect(proxyFor(new URL("ws+unix:///run/roost/gateway.sock:/v1/gateway"), env)).toBeUndefined();
  });

  it("refuses a SOCKS proxy with a message instead of ignoring it", () => {
    expect(() => proxyFor(wss, { HTTPS_PROXY: "socks5://proxy:1080" })).toThrow(
      /http:\/\/ or https:\/\/ proxy.*SOCKS proxies are not supported/,
    );
  });

  it("NO_PROXY exempts exact names, subdomains, addresses, CIDR ranges, ports and *", () => {
    const target = (url: string) => new URL(url);
    expect(bypassesProxy(target("wss://roost.example.com/"), "example.com")).toBe(true);
    expect(bypassesProxy(target("wss://roost.example.com/"), ".example.com")).toBe(true);
    expect(bypassesProxy(target("wss://roost.example.com/"), "*.example.com")).toBe(true);
    expect(bypassesProxy(target("wss://roost.example.com/"), "ample.com")).toBe(false); // not a suffix match by letters
    expect(bypassesProxy(target("wss://roost.example.com/"), "other.org, *")).toBe(true);
    expect(bypassesProxy(target("ws://10.1.2.3:7700/"), "10.0.0.0/8")).toBe(true);
    expect(bypassesProxy(target("ws://10.1.2.3:7700/"), "10.1.2.3")).toBe(true);
    expect(bypassesProxy(target("ws://10.1.2.3:7700/"), "192.168.0.0/16")).toBe(false);
    expect(bypassesProxy(target("ws://[::1]:7700/"), "::1")).toBe(true);
    expect(bypassesProxy(target("ws://host:7700/"), "host:7700")).toBe(true);
    expect(bypassesProxy(target("ws://host:7700/"), "host:7701")).toBe(false);
    expect(bypassesProxy(target("wss://host/"), "host:443")).toBe(true);
    expect(
      proxyFor(target("wss://roost.example.com/"), {
        HTTPS_PROXY: "http://proxy:3128",
        NO_PROXY: "example.com",
      }),
    ).toBeUndefined();
  });

  it("a proxy's password is never part of its description (PX3)", () => {
    expect(describeProxy(new URL("http://alice:s3cret@proxy.internal:3128"))).toBe(
      "http://proxy.internal:3128",
    );
  });
});

describe("the worker through a real CONNECT proxy", () => {
  let gw: TestGateway | undefined;
  let proxy: ConnectProxy | undefined;
  let worker: Worker | undefined;
  const dirs = makeComputerDirs("roost-proxy-worker-");
  afterEach(async () => {
    await worker?.close();
    await proxy?.close();
    await gw?.close();
    worker = proxy = gw = undefined;
  });

  async function start(proxyUrl: string, log: string[]) {
    gw = await startTestGateway();
    gw.tokens.set("tok", "cmp_proxied");
    worker = await startWorker({
      gatewayUrl: gw.url,
      token: "tok",
      tokenFile: undefined,
      stateDir: dirs.stateDir,
      workspace: dirs.workspace,
      commandEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dirs.home },
      proxy: new URL(proxyUrl),
      backoff: { initialDelayMs: 20, maxDelayMs: 100 },
      log: (line) => log.push(line),
    });
    return { gw, worker };
  }

  it("connects through the proxy (with its credentials) and runs a call; the password is never logged", async () => {
    proxy = await startConnectProxy({ credentials: "worker:p@ss word" });
    const log: string[] = [];
    const { gw } = await start(
      `http://worker:${encodeURIComponent("p@ss word")}@127.0.0.1:${proxy.port}`,
      log,
    );
    await gw.gateway.waitForWorker("cmp_proxied", 10_000);
    expect(proxy.tunnels).toEqual([`127.0.0.1:${gw.port}`]);
    expect(proxy.refused).toEqual([]);
    const result = await gw.gateway.call("cmp_proxied", {
      callId: "through-proxy",
      tool: "shell",
      input: { command: "echo via-proxy" },
      timeoutMs: 10_000,
    });
    expect(result).toMatchObject({ ok: true, output: { exitCode: 0, stdout: "via-proxy\n" } });
    expect(log.join("\n")).not.toContain("p@ss");
  });

  it("a proxy that refuses the tunnel is reported and retried; the worker never goes around it", async () => {
    proxy = await startConnectProxy({ allow: () => false });
    const log: string[] = [];
    const { gw, worker } = await start(proxy.url, log);
    await waitFor(() => (proxy?.refused.length ?? 0) >= 2, {
      what: "two refused CONNECTs (a retry after the first)",
    });
    expect(log.join("\n")).toMatch(/cannot reach the gateway through the proxy .*refused CONNECT/);
    expect(gw.gateway.isConnected("cmp_proxied")).toBe(false);
    expect(gw.events.filter((event) => event.type === "connected")).toEqual([]);
    expect(worker.stats().connectAttempts).toBeGreaterThanOrEqual(2);
  });

  it("a proxy that demands credentials the worker lacks answers 407, and that is what the log says", async () => {
    proxy = await startConnectProxy({ credentials: "worker:secret" });
    const log: string[] = [];
    await start(proxy.url, log);
    await waitFor(() => log.some((line) => line.includes("407")), { what: "the 407 in the log" });
    expect(proxy.tunnels).toEqual([]);
  });

  it("a proxy that never answers CONNECT times out instead of hanging the worker", async () => {
    const { createServer } = await import("node:net");
    const accepted = new Set<import("node:net").Socket>();
    const silent = createServer((socket) => accepted.add(socket)); // reads nothing, says nothing
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      await expect(
        connectThroughProxy(
          new URL(`http://127.0.0.1:${port}`),
          { host: "127.0.0.1", port: 9 },
          { timeoutMs: 200 },
        ),
      ).rejects.toThrow(/no answer to CONNECT 127\.0\.0\.1:9 within 200 ms/);
    } finally {
      for (const socket of accepted) socket.destroy();
      await new Promise<void>((resolve) => {
        silent.close(() => resolve());
      });
    }
  });
});

describe("wss:// through a CONNECT proxy (PX2)", () => {
  it("TLS is with the gateway itself and checked against the server's name, not the proxy's", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-proxy-tls-"));
    const workers: RoostWorkerProcess[] = [];
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost",
      ],
      { stdio: "ignore" },
    );
    const https = createHttpsServer({
      key: readFileSync(join(dir, "key.pem")),
      cert: readFileSync(join(dir, "cert.pem")),
    });
    const gateway = createGateway({
      server: https,
      verifyToken: async (token) => (token === "tls-token" ? { computerId: "cmp_tls" } : undefined),
    });
    const gw = { gateway };
    await new Promise<void>((resolve) => https.listen(0, "127.0.0.1", resolve));
    const port = (https.address() as { port: number }).port;
    const proxy = await startConnectProxy();
    const dirs = makeComputerDirs("roost-proxy-tls-worker-");
    const start = (server: string) => {
      const worker = startRoostWorker({
        args: [
          "--server",
          server,
          "--token",
          "tls-token",
          "--workspace",
          dirs.workspace,
          "--metrics-port",
          "0",
        ],
        home: dirs.home,
        env: { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: join(dir, "cert.pem") },
      });
      workers.push(worker);
      return worker;
    };
    try {
      // The certificate names `localhost`: dialled by that name, through the proxy, it connects.
      start(`https://localhost:${port}`);
      await gw.gateway.waitForWorker("cmp_tls", 30_000);
      expect(proxy.tunnels).toContain(`localhost:${port}`);
      await workers[0]?.stop();
      await waitFor(() => !gw.gateway.isConnected("cmp_tls"), { what: "the first worker gone" });

      // The same server by an address the certificate does not name: the proxy tunnels it, and
      // the worker refuses the certificate.
      const mismatched = start(`https://127.0.0.1:${port}`);
      await waitFor(() => /altnames|ERR_TLS_CERT_ALTNAME_INVALID/.test(mismatched.output()), {
        timeoutMs: 30_000,
        what: "the certificate to be refused for the wrong name",
      });
      expect(proxy.tunnels).toContain(`127.0.0.1:${port}`);
      expect(gw.gateway.isConnected("cmp_tls")).toBe(false);
    } finally {
      for (const worker of workers) await worker.stop();
      await proxy.close();
      await gateway.close();
      https.closeAllConnections();
      await new Promise<void>((resolve) => https.close(() => resolve()));
      dirs.remove();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
