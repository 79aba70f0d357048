import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { createAdaptorServer } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEgressProxy } from "../egress/index.ts";
import { connectThroughProxy } from "../egress/testing/index.ts";
import { createWebHandler, isLoopbackAddress, isLoopbackHost } from "./index.ts";

/** What @hono/node-server hands a handler as `env`: enough for getConnInfo. */
const peer = (remoteAddress: string) => ({
  incoming: { socket: { remoteAddress, remotePort: 50000, remoteFamily: "IPv4" } },
});

describe("web handler", () => {
  let dir: string;
  let distDir: string;
  let tokenFile: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "roost-web-"));
    distDir = join(dir, "dist");
    mkdirSync(join(distDir, "assets"), { recursive: true });
    writeFileSync(
      join(distDir, "index.html"),
      `<!doctype html><title>Roost</title>${"<!-- padding -->".repeat(100)}`,
    );
    writeFileSync(
      join(distDir, "assets", "index-abc123.js"),
      `console.log("app");${" ".repeat(2000)}`,
    );
    writeFileSync(join(distDir, "favicon.svg"), "<svg/>");
    writeFileSync(join(dir, "secret.txt"), "outside");
    tokenFile = join(dir, "admin-token");
    writeFileSync(tokenFile, "roost_local-admin-token\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const get = (
    app: ReturnType<typeof createWebHandler>,
    path: string,
    headers: Record<string, string> = {},
    from = "127.0.0.1",
  ) =>
    app.fetch(
      new Request(`http://127.0.0.1:7700${path}`, {
        headers: { host: "127.0.0.1:7700", ...headers },
      }),
      peer(from),
    );

  it("serves index.html at / and for client routes, revalidated on every load", async () => {
    const app = createWebHandler({ distDir });
    for (const path of ["/", "/c/conv_abc", "/bots/bot_1/edit"]) {
      const response = await get(app, path);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("cache-control")).toBe("no-cache");
      expect(response.headers.get("content-security-policy")).toContain("default-src 'self'");
      expect(await response.text()).toContain("<title>Roost</title>");
    }
  });

  it("caches hashed assets for a year, gzips them when asked, and answers 304 to a matching ETag", async () => {
    const app = createWebHandler({ distDir });
    const response = await get(app, "/assets/index-abc123.js", { "accept-encoding": "gzip, br" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(response.headers.get("content-encoding")).toBe("gzip");
    expect(gunzipSync(new Uint8Array(await response.arrayBuffer())).toString()).toContain(
      'console.log("app")',
    );
    const etag = response.headers.get("etag")!;
    const again = await get(app, "/assets/index-abc123.js", { "if-none-match": etag });
    expect(again.status).toBe(304);
    const plain = await get(app, "/favicon.svg");
    expect(plain.headers.get("content-type")).toBe("image/svg+xml");
    expect(plain.headers.get("content-encoding")).toBeNull();
  });

  it("answers 404 for a missing file with an extension, and never serves outside the dist folder", async () => {
    const app = createWebHandler({ distDir });
    expect((await get(app, "/assets/missing-123.js")).status).toBe(404);
    for (const path of ["/../secret.txt", "/%2e%2e/secret.txt", "/assets/..%2f..%2fsecret.txt"]) {
      const response = await get(app, path);
      expect(await response.text()).not.toContain("outside");
    }
  });

  it("leaves /v1 to the API", async () => {
    const app = createWebHandler({ distDir });
    expect((await get(app, "/v1/unknown")).status).toBe(404);
    expect(await (await get(app, "/v1/unknown")).text()).not.toContain("<title>Roost</title>");
  });

  it("says how to build the app when web/dist is missing", async () => {
    const app = createWebHandler({ distDir: join(dir, "nothing-here") });
    const response = await get(app, "/");
    expect(response.status).toBe(503);
    expect(await response.text()).toContain("npm run build:web");
  });

  describe("GET /auth/local", () => {
    it("is off unless switched on", async () => {
      const response = await get(createWebHandler({ distDir }), "/auth/local");
      expect(response.status).toBe(404);
    });

    it("hands a page on this computer the admin token, never cached", async () => {
      const response = await get(
        createWebHandler({ distDir, localSignIn: { tokenFile } }),
        "/auth/local",
        { "sec-fetch-site": "same-origin" },
      );
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      expect(await response.json()).toEqual({ token: "roost_local-admin-token" });
    });

    it("refuses other machines, proxies, foreign Host names and cross-site requests", async () => {
      const app = createWebHandler({ distDir, localSignIn: { tokenFile } });
      const refused = [
        await get(app, "/auth/local", {}, "192.168.1.20"),
        await get(app, "/auth/local", {}, "::ffff:10.0.0.3"),
        await get(app, "/auth/local", { "x-forwarded-for": "203.0.113.9" }),
        await get(app, "/auth/local", { forwarded: "for=203.0.113.9" }),
        await get(app, "/auth/local", { host: "evil.example:7700" }),
        await get(app, "/auth/local", { "sec-fetch-site": "cross-site" }),
        await get(app, "/auth/local", { origin: "http://evil.example" }),
      ];
      for (const response of refused) {
        expect(response.status).toBe(403);
        const body = (await response.json()) as { token?: string; error: { message: string } };
        expect(body.token).toBeUndefined();
        expect(body.error.message).toMatch(/sign in with an API token/);
      }
    });

    it("refuses a connection the egress proxy opened, even a CONNECT tunnel with a loopback peer and no forwarding header (SIGN7, defence in depth)", async () => {
      // The proxy never connects to Roost's own ports (P3). To show what stands behind that, its
      // dialer here delivers a public address to the web server on 127.0.0.1, as a hole in P3
      // would: the request then arrives from loopback with nothing to tell it apart, but its peer
      // is one of the proxy's own outgoing sockets.
      const proxy = createEgressProxy({
        connect: (_address, port) => connect({ host: "127.0.0.1", port }),
      });
      const sockets = {
        http: join(dir, "egress-http.sock"),
        socks: join(dir, "egress-socks.sock"),
      };
      await proxy.listenComputer("cmp_a", sockets);
      proxy.setPolicy("cmp_a", { mode: "allow-all" });
      const serve = async (isProxyConnection?: (address: string, port: number) => boolean) => {
        const app = createWebHandler({
          distDir,
          localSignIn: {
            tokenFile,
            ...(isProxyConnection === undefined ? {} : { isProxyConnection }),
          },
        });
        const server = createAdaptorServer({ fetch: app.fetch });
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
        return server;
      };
      const signInThroughTunnel = async (port: number) => {
        const tunnel = await connectThroughProxy(sockets.http, `93.184.216.34:${port}`);
        expect(tunnel.status).toBe(200);
        const answer = new Promise<string>((resolve) => {
          let text = "";
          tunnel.socket.on("data", (chunk: Buffer) => (text += chunk.toString()));
          tunnel.socket.on("close", () => resolve(text));
        });
        tunnel.socket.write(
          `GET /auth/local HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
        );
        return answer;
      };
      const unguarded = await serve();
      const guarded = await serve((address, port) => proxy.isOwnConnection(address, port));
      try {
        // Without the check, such a request would get the admin token…
        const leaked = await signInThroughTunnel((unguarded.address() as AddressInfo).port);
        expect(leaked).toMatch(/^HTTP\/1\.1 200/);
        expect(leaked).toContain('{"token":"roost_local-admin-token"}');
        // …with it, it is refused.
        const refused = await signInThroughTunnel((guarded.address() as AddressInfo).port);
        expect(refused).toMatch(/^HTTP\/1\.1 403/);
        expect(refused).not.toContain("roost_local-admin-token");
        expect(refused).toContain("connections made by the egress proxy");
      } finally {
        for (const server of [unguarded, guarded])
          await new Promise<void>((resolve) => server.close(() => resolve()));
        await proxy.close();
      }
    });

    it("says what to do when the token file is gone", async () => {
      const response = await get(
        createWebHandler({ distDir, localSignIn: { tokenFile: join(dir, "no-token") } }),
        "/auth/local",
      );
      expect(response.status).toBe(503);
    });
  });

  it("recognises loopback addresses and host names", () => {
    expect(["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"].every(isLoopbackAddress)).toBe(
      true,
    );
    expect(["10.0.0.1", "::ffff:192.168.0.1", "", "0.0.0.0"].some(isLoopbackAddress)).toBe(false);
    expect(
      ["localhost:7700", "127.0.0.1", "[::1]:7700", "app.localhost"].every(isLoopbackHost),
    ).toBe(true);
    expect(
      ["evil.example", "127.0.0.1.evil.example", "localhost.evil.example"].some(isLoopbackHost),
    ).toBe(false);
  });
});
