/**
 * Port previews through the real API on a real HTTP server, a real gateway and real worker
 * processes (one per computer), to real servers on the workers' loopback. The workers run on
 * this host, as with the `process` provider, so every computer shares the host's loopback here:
 * what keeps one account's preview from another's is the API's own checks, which is what these
 * tests attack. test/e2e/ports.test.ts runs the same previews inside isolated computers.
 */
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve, type ServerType } from "@hono/node-server";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub } from "../events/index.ts";
import type { TunnelStream } from "../gateway/index.ts";
import {
  makeComputerDirs,
  spawnWorker,
  startTestGateway,
  waitFor,
  waitForWorkerProcess,
  type TestComputerDirs,
  type TestGateway,
  type WorkerProcess,
} from "../gateway/testing/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";
import { createPortPreviews, previewCookie, previewLinkParameter } from "./computer-ports.ts";
import { createPreviewSigner } from "./preview-tokens.ts";
import { rawRequest } from "../../test/support/raw-http.ts";

interface Person {
  token: string;
  accountId: string;
  computerId: string;
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("port previews through the API", () => {
  let gw: TestGateway;
  let dir: string;
  let store: Store;
  let server: ServerType;
  let url: string;
  let alice: Person;
  let bob: Person;
  let inner: http.Server;
  let innerPort: number;
  let innerWs: WebSocketServer;
  const big = randomBytes(20 * 1024 * 1024);
  let releaseSse: (() => void) | undefined;
  const states = new Map<string, string>();
  const workers = new Map<string, { worker: WorkerProcess; dirs: TestComputerDirs }>();
  const tunnels: TunnelStream[] = [];
  const touches: string[] = [];
  const clock = { now: Date.now() };
  let app: ReturnType<typeof createApi>;

  beforeAll(async () => {
    gw = await startTestGateway({ tunnels: { maxTunnelsPerComputer: 8 } });
    // The server inside: it answers what it received, and a few special paths.
    inner = http.createServer((request, response) => {
      const path = request.url ?? "/";
      if (path === "/big") {
        response.writeHead(200, { "content-type": "application/octet-stream" });
        response.end(big);
      } else if (path === "/sse") {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.write("data: one\n\n");
        releaseSse = () => response.end("data: two\n\n");
      } else if (path === "/upload") {
        const hash = createHash("sha256");
        let size = 0;
        request.on("data", (chunk: Buffer) => {
          hash.update(chunk);
          size += chunk.length;
        });
        request.on("end", () => response.end(JSON.stringify({ size, sha256: hash.digest("hex") })));
      } else if (path === "/cookies") {
        response.setHeader("set-cookie", [
          "app=1; Path=/; Domain=evil.example; HttpOnly",
          `${previewCookie}=forged; Path=/`,
          "deep=2; Path=/admin",
        ]);
        response.end("cookies");
      } else if (path === "/redirect") {
        response.writeHead(302, { location: `http://localhost:${innerPort}/landed?x=1` });
        response.end();
      } else {
        response.setHeader("content-type", "application/json");
        response.end(
          JSON.stringify({ method: request.method, url: path, headers: request.headers }),
        );
      }
    });
    innerWs = new WebSocketServer({ noServer: true });
    inner.on("upgrade", (request, socket, head) => {
      if (request.url !== "/echo") {
        socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope");
        return;
      }
      innerWs.handleUpgrade(request, socket, head, (ws) => {
        ws.send(`welcome ${request.headers.authorization ?? "no authorization"}`);
        ws.on("message", (data: Buffer) => ws.send(`echo:${data.toString()}`));
      });
    });
    await new Promise<void>((resolve) => inner.listen(0, "127.0.0.1", resolve));
    innerPort = (inner.address() as AddressInfo).port;
  });
  afterAll(async () => {
    innerWs.close();
    inner.closeAllConnections();
    await new Promise<void>((resolve) => inner.close(() => resolve()));
    await gw.close();
  });

  /** Starts the computer's worker (as a wake would) and marks it awake. */
  async function wake(person: Person): Promise<void> {
    if (!workers.has(person.computerId)) {
      const dirs = makeComputerDirs();
      gw.tokens.set(`token-${person.computerId}`, person.computerId);
      const worker = spawnWorker({
        gatewayUrl: gw.url,
        token: `token-${person.computerId}`,
        dirs,
      });
      workers.set(person.computerId, { worker, dirs });
      await waitForWorkerProcess(gw.gateway, person.computerId, worker);
    }
    states.set(person.computerId, "awake");
  }

  async function sleep(person: Person): Promise<void> {
    const running = workers.get(person.computerId);
    workers.delete(person.computerId);
    await running?.worker.stop();
    running?.dirs.remove();
    await gw.gateway.disconnect(person.computerId);
    states.set(person.computerId, "asleep");
  }

  function startApi(previewBaseUrl?: string) {
    const ports = createPortPreviews(
      {
        computerOf: async (accountId) => (await store.ensureComputer(accountId, "process")).id,
        ownerOf: async (computerId) => (await store.getComputer(computerId))?.accountId,
        state: async (computerId) => states.get(computerId) ?? "asleep",
        touch: async (computerId) => {
          touches.push(computerId);
        },
        gateway: {
          isConnected: (computerId) => gw.gateway.isConnected(computerId),
          call: (computerId, request, options) => gw.gateway.call(computerId, request, options),
          openTunnel: async (computerId, port, options) => {
            const stream = await gw.gateway.openTunnel(computerId, port, options);
            tunnels.push(stream);
            return stream;
          },
        },
        signer: createPreviewSigner(randomBytes(32)),
        reservedPorts: () => new Map([[3128, "it is the computer's HTTP proxy"]]),
        previewBaseUrl,
        linkTtlMs: 60_000,
        sessionTtlMs: 600_000,
      },
      store,
      { clock: () => clock.now },
    );
    return {
      ports,
      app: createApi({
        store,
        events: createEventHub(),
        kick: async () => undefined,
        interrupt: () => false,
        health: async () => ({ ok: true, checks: {} }),
        checkModel: () => undefined,
        defaultModel: () => ({ id: "demo", isDemo: true }),
        maxBodyBytes: 1024 * 1024,
        ports,
        limits: { requestsPerMinute: 0 },
      }),
    };
  }

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-ports-api-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    const person = async (name: string): Promise<Person> => {
      const account = await store.createAccount({ name, isAdmin: false });
      const token = (await issueApiToken(store, account.id, "test")).token;
      const computer = await store.ensureComputer(account.id, "process");
      return { token, accountId: account.id, computerId: computer.id };
    };
    alice = await person("alice");
    bob = await person("bob");
    clock.now = Date.now();
    touches.length = 0;
    tunnels.length = 0;
    const started = startApi();
    app = started.app;
    server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
    (server as http.Server).on("upgrade", (request, socket, head) =>
      started.ports.handleUpgrade(request, socket, head),
    );
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await wake(alice);
  });
  afterEach(async () => {
    for (const stream of tunnels) stream.destroy();
    (server as http.Server).closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.all(
      [...workers.values()].map(async ({ worker, dirs }) => {
        await worker.stop();
        dirs.remove();
      }),
    );
    for (const computerId of workers.keys()) await gw.gateway.disconnect(computerId);
    workers.clear();
    states.clear();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const bearer = (person: Person) => ({ authorization: `Bearer ${person.token}` });
  const preview = (person: Person, path: string, init: Parameters<typeof rawRequest>[1] = {}) =>
    rawRequest(`${url}/v1/computers/me/ports/${innerPort}${path}`, {
      ...init,
      headers: { ...bearer(person), ...init.headers },
    });
  /** A browser link for the person's port, and the Host its preview answers on. */
  async function link(person: Person, port = innerPort, path?: string) {
    const answer = await rawRequest(`${url}/v1/computers/me/preview-links`, {
      method: "POST",
      headers: { ...bearer(person), "content-type": "application/json" },
      body: JSON.stringify(path === undefined ? { port } : { port, path }),
    });
    expect(answer.status, answer.text).toBe(201);
    const linkUrl = new URL(String(answer.json.url));
    return { answer, linkUrl, host: linkUrl.host, target: `${linkUrl.pathname}${linkUrl.search}` };
  }
  /** Opens a link as a browser would: its 303 sets the session cookie. */
  async function openLink(person: Person, port = innerPort) {
    const { host, target } = await link(person, port);
    const opened = await rawRequest(`${url}${target}`, { headers: { host } });
    expect(opened.status, opened.text).toBe(303);
    const cookie = String(opened.headers["set-cookie"]?.[0] ?? "").split(";")[0]!;
    return { host, cookie, opened };
  }

  it("the server's path and query arrive as its own; the bearer token and Roost's cookie never reach it", async () => {
    const answer = await preview(alice, "/a/b%20c?x=1&y=%2F", {
      headers: { cookie: `app=1; ${previewCookie}=x`, "x-forwarded-for": "6.6.6.6" },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.url).toBe("/a/b%20c?x=1&y=%2F");
    const headers = answer.json.headers as Record<string, string>;
    expect(headers.authorization).toBeUndefined();
    expect(JSON.stringify(headers)).not.toContain(alice.token);
    expect(headers.host).toBe(`localhost:${innerPort}`);
    expect(headers["x-forwarded-prefix"]).toBe(`/v1/computers/me/ports/${innerPort}`);
    expect(headers["x-forwarded-for"]).toBe("127.0.0.1"); // the client's claim replaced
    expect(answer.headers["content-security-policy"]).toBe("sandbox");
    // Without a trailing slash the server's root is asked for.
    expect((await preview(alice, "")).json.url).toBe("/");
    expect(touches).toContain(alice.computerId); // a preview counts as activity
  });

  it("GET /v1/computers/me/ports lists a server while it listens, and not after it stops", async () => {
    const extra = http.createServer();
    await new Promise<void>((resolve) => extra.listen(0, "127.0.0.1", resolve));
    const extraPort = (extra.address() as AddressInfo).port;
    const listed = async () =>
      (
        (await rawRequest(`${url}/v1/computers/me/ports`, { headers: bearer(alice) })).json
          .ports as { port: number; addresses: string[] }[]
      ).find((entry) => entry.port === extraPort);
    expect(await listed()).toEqual({ port: extraPort, addresses: ["127.0.0.1"] });
    await new Promise<void>((resolve) => extra.close(() => resolve()));
    expect(await listed()).toBeUndefined();
  });

  it("a 20 MB download arrives whole and in order, and a 5 MB upload reaches the server whole", async () => {
    const download = await new Promise<Buffer>((resolve, reject) => {
      http
        .get(
          `${url}/v1/computers/me/ports/${innerPort}/big`,
          { headers: bearer(alice) },
          (response) => {
            const chunks: Buffer[] = [];
            response.on("data", (chunk: Buffer) => chunks.push(chunk));
            response.on("end", () => resolve(Buffer.concat(chunks)));
          },
        )
        .on("error", reject);
    });
    expect(download.length).toBe(big.length);
    expect(sha256(download)).toBe(sha256(big));
    const body = randomBytes(5 * 1024 * 1024);
    const uploaded = await preview(alice, "/upload", { method: "POST", body });
    expect(uploaded.json).toEqual({ size: body.length, sha256: sha256(body) });
  });

  it("slow reader: a client that stops reading holds the server back instead of the gateway buffering the body", async () => {
    const response = await app.request(`/v1/computers/me/ports/${innerPort}/big`, {
      headers: bearer(alice),
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    const stream = tunnels.at(-1)!;
    let last = -1;
    await waitFor(
      async () => {
        const settled = stream.bytesIn === last;
        last = stream.bytesIn;
        await new Promise((resolve) => setTimeout(resolve, 100));
        return settled;
      },
      { timeoutMs: 20_000, message: "the tunnel to stop taking bytes" },
    );
    // The window (256 KiB) and a few stream buffers, nowhere near the 20 MB body.
    expect(stream.bytesIn).toBeLessThan(2 * 1024 * 1024);
    await reader.cancel();
  });

  it("an event stream delivers its first event before the stream ends", async () => {
    const received: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      http
        .get(
          `${url}/v1/computers/me/ports/${innerPort}/sse`,
          { headers: bearer(alice) },
          (response) => {
            expect(response.headers["content-type"]).toBe("text/event-stream");
            response.on("data", (chunk: Buffer) => {
              received.push(chunk.toString());
              if (received.join("").includes("data: one")) releaseSse?.();
            });
            response.on("end", () => resolve());
          },
        )
        .on("error", reject);
    });
    await done;
    // "one" arrived alone, before the server was told to send "two" and end.
    expect(received[0]).toBe("data: one\n\n");
    expect(received.join("")).toBe("data: one\n\ndata: two\n\n");
  });

  it("a WebSocket through the API path: messages both ways, and the bearer token does not reach the server", async () => {
    const ws = new WebSocket(
      `${url.replace("http", "ws")}/v1/computers/me/ports/${innerPort}/echo`,
      { headers: bearer(alice) },
    );
    const messages: string[] = [];
    ws.on("message", (data: Buffer) => messages.push(data.toString()));
    await new Promise<void>((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    await waitFor(() => messages.length === 1);
    ws.send("hello");
    await waitFor(() => messages.length === 2);
    expect(messages).toEqual(["welcome no authorization", "echo:hello"]);
    ws.close();
  });

  it("a WebSocket upgrade without a token is refused with 401 before anything reaches the computer", async () => {
    const ws = new WebSocket(
      `${url.replace("http", "ws")}/v1/computers/me/ports/${innerPort}/echo`,
    );
    const status = await new Promise<number>((resolve) => {
      ws.once("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0));
      ws.once("error", () => undefined);
    });
    expect(status).toBe(401);
    expect(tunnels).toHaveLength(0);
  });

  it("a sleeping computer answers 409 computer_asleep and is not woken", async () => {
    const answer = await preview(bob, "/");
    expect(answer.status).toBe(409);
    expect(answer.json.error).toEqual({
      code: "computer_asleep",
      message: `the computer is asleep; nothing listens on port ${innerPort}. Wake it (POST /v1/computers/me/wake) and start the server first`,
      details: { computerId: bob.computerId, state: "asleep" },
    });
    expect(workers.has(bob.computerId)).toBe(false);
    expect(
      (await rawRequest(`${url}/v1/computers/me/ports`, { headers: bearer(bob) })).json.error?.code,
    ).toBe("computer_asleep");
  });

  it("nothing listening on the port answers 404; a port outside 1–65535 or not a number 400; a reserved port 400", async () => {
    const free = http.createServer();
    await new Promise<void>((resolve) => free.listen(0, "127.0.0.1", resolve));
    const freePort = (free.address() as AddressInfo).port;
    await new Promise<void>((resolve) => free.close(() => resolve()));
    const nothing = await rawRequest(`${url}/v1/computers/me/ports/${freePort}/`, {
      headers: bearer(alice),
    });
    expect(nothing.status).toBe(404);
    expect(nothing.json.error?.message).toMatch(/nothing listens on port \d+/);
    for (const port of ["0", "65536", "abc", "80.5", "-1", "0080000"]) {
      const answer = await rawRequest(`${url}/v1/computers/me/ports/${port}/`, {
        headers: bearer(alice),
      });
      expect(answer.status, port).toBe(400);
      expect(answer.json.error?.message).toMatch(/whole number from 1 to 65535/);
    }
    const reserved = await rawRequest(`${url}/v1/computers/me/ports/3128/`, {
      headers: bearer(alice),
    });
    expect(reserved.status).toBe(400);
    expect(reserved.json.error?.message).toMatch(/port 3128 cannot be previewed/);
    expect(tunnels).toHaveLength(0);
  });

  it("Set-Cookie from the server loses its Domain, moves under the preview's path, and cannot set Roost's cookie; redirects stay in the preview", async () => {
    const cookies = await preview(alice, "/cookies");
    expect(cookies.headers["set-cookie"]).toEqual([
      `app=1; HttpOnly; Path=/v1/computers/me/ports/${innerPort}/`,
      `${previewCookie}=forged; Path=/v1/computers/me/ports/${innerPort}/`,
      `deep=2; Path=/v1/computers/me/ports/${innerPort}/admin`,
    ]);
    const redirect = await preview(alice, "/redirect");
    expect(redirect.status).toBe(302);
    expect(redirect.headers.location).toBe(`/v1/computers/me/ports/${innerPort}/landed?x=1`);
    // On a preview host, the server may not set the preview's own cookie.
    const { host, cookie } = await openLink(alice);
    const onHost = await rawRequest(`${url}/cookies`, { headers: { host, cookie } });
    expect(onHost.headers["set-cookie"]).toEqual([
      "app=1; HttpOnly; Path=/",
      "deep=2; Path=/admin",
    ]);
  });

  it("a browser link opens the preview on a host of its own: the link sets an HttpOnly cookie, leaves the address, and the page's own requests work with the cookie alone", async () => {
    const { answer, linkUrl, host } = await link(alice, innerPort, "/start?x=1");
    expect(linkUrl.hostname).toMatch(new RegExp(`^p${innerPort}-[a-z2-7]{16}\\.localhost$`));
    expect(linkUrl.port).toBe(new URL(url).port);
    expect(linkUrl.pathname).toBe("/start");
    expect(linkUrl.searchParams.get("x")).toBe("1");
    expect(Date.parse(String(answer.json.expiresAt))).toBe(clock.now + 60_000);
    const opened = await rawRequest(`${url}${linkUrl.pathname}${linkUrl.search}`, {
      headers: { host },
    });
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe("/start?x=1");
    const setCookie = String(opened.headers["set-cookie"]?.[0]);
    expect(setCookie).toMatch(
      new RegExp(`^${previewCookie}=v1\\.[^;]+; Path=/; HttpOnly; SameSite=Lax; Max-Age=600$`),
    );
    const cookie = setCookie.split(";")[0]!;
    const page = await rawRequest(`${url}/start?x=1`, {
      headers: { host, cookie: `${cookie}; app=7` },
    });
    expect(page.status, page.text).toBe(200);
    expect(page.json.url).toBe("/start?x=1");
    const seen = page.json.headers as Record<string, string>;
    expect(seen.cookie).toBe("app=7"); // Roost's cookie stripped, the app's kept
    expect(seen["x-forwarded-host"]).toBe(host);
    // Every path on the host is the server's, even Roost's own API paths.
    expect((await rawRequest(`${url}/v1/me`, { headers: { host, cookie } })).json.url).toBe(
      "/v1/me",
    );
    expect(
      (await rawRequest(`${url}/v1/me`, { headers: { host, cookie } })).json.error,
    ).toBeUndefined();
    const audit = await store.listAudit({ accountId: alice.accountId });
    expect(audit.map((entry) => entry.action)).toContain("computer.preview_link");
  });

  it("on a preview host the app's own Authorization passes, and a Roost token in it does not", async () => {
    const { host, cookie } = await openLink(alice);
    const basic = `Basic ${Buffer.from("user:pass").toString("base64")}`;
    const own = await rawRequest(`${url}/`, { headers: { host, cookie, authorization: basic } });
    expect((own.json.headers as Record<string, string>).authorization).toBe(basic);
    const roost = await rawRequest(`${url}/`, {
      headers: { host, cookie, authorization: `Bearer ${alice.token}` },
    });
    expect((roost.json.headers as Record<string, string>).authorization).toBeUndefined();
  });

  it("attacks on links: tampered, expired, another port's, another account's, a bearer token or nothing at all on a preview host all get 401", async () => {
    const { host, target } = await link(alice);
    const expect401 = async (headers: Record<string, string>, path = "/", what = "") => {
      const answer = await rawRequest(`${url}${path}`, { headers: { host, ...headers } });
      expect(answer.status, `${what}: ${answer.text}`).toBe(401);
      expect(answer.json.error?.code).toBe("unauthenticated");
    };
    const token = new URL(target, "http://x").searchParams.get(previewLinkParameter)!;
    const [version, claims, signature] = token.split(".") as [string, string, string];
    // Tampered: another port in the claims, or a changed signature.
    const forged = Buffer.from(
      Buffer.from(claims, "base64url").toString().replace(`"p":${innerPort}`, '"p":9'),
    ).toString("base64url");
    await expect401({}, `/?${previewLinkParameter}=${version}.${forged}.${signature}`, "claims");
    const flipped = `${signature.slice(0, -2)}${signature.endsWith("AA") ? "BB" : "AA"}`;
    await expect401({}, `/?${previewLinkParameter}=${version}.${claims}.${flipped}`, "signature");
    // Alice's link on the host of another port of hers.
    const otherHost = host.replace(`p${innerPort}-`, `p${innerPort === 9999 ? 9998 : 9999}-`);
    const onOther = await rawRequest(`${url}${target}`, { headers: { host: otherHost } });
    expect(onOther.status).toBe(401);
    // Bob's session on alice's host; a bearer token instead of a cookie; nothing.
    await wake(bob);
    const bobs = await openLink(bob);
    await expect401({ cookie: bobs.cookie }, "/", "bob's cookie");
    await expect401({ authorization: `Bearer ${alice.token}` }, "/", "bearer");
    await expect401({}, "/", "nothing");
    // A session cookie copied into a link, and a link token used as a cookie, do not work.
    const alices = await openLink(alice);
    const sessionToken = alices.cookie.slice(previewCookie.length + 1);
    await expect401({}, `/?${previewLinkParameter}=${sessionToken}`, "session as link");
    await expect401({ cookie: `${previewCookie}=${token}` }, "/", "link as cookie");
    // Expired: the link after its lifetime, the session after its own.
    clock.now += 60_001;
    await expect401({}, target, "expired link");
    expect((await rawRequest(`${url}/`, { headers: { host, cookie: alices.cookie } })).status).toBe(
      200,
    );
    clock.now += 600_000;
    await expect401({ cookie: alices.cookie }, "/", "expired session");
    expect(
      tunnels.every(
        (stream) => stream.computerId === alice.computerId || stream.computerId === bob.computerId,
      ),
    ).toBe(true);
  });

  it("CSRF: a request with the preview's cookie but another origin is refused (403), its own origin passes", async () => {
    const { host, cookie } = await openLink(alice);
    const evil = await rawRequest(`${url}/`, {
      method: "POST",
      headers: { host, cookie, origin: "http://evil.example" },
      body: "x",
    });
    expect(evil.status).toBe(403);
    expect(evil.json.error?.code).toBe("forbidden");
    const own = await rawRequest(`${url}/`, {
      method: "POST",
      headers: { host, cookie, origin: `http://${host}` },
      body: "x",
    });
    expect(own.status).toBe(200);
  });

  it("a WebSocket on a preview host works with the cookie, and is refused from another origin", async () => {
    const { host, cookie } = await openLink(alice);
    const ws = new WebSocket(`${url.replace("http", "ws")}/echo`, {
      headers: { host, cookie },
      origin: `http://${host}`,
    });
    const messages: string[] = [];
    ws.on("message", (data: Buffer) => messages.push(data.toString()));
    await new Promise<void>((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    ws.send("hi");
    await waitFor(() => messages.length === 2);
    expect(messages).toEqual(["welcome no authorization", "echo:hi"]);
    ws.close();
    const evil = new WebSocket(`${url.replace("http", "ws")}/echo`, {
      headers: { host, cookie },
      origin: "http://evil.example",
    });
    const status = await new Promise<number>((resolve) => {
      evil.once("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0));
      evil.once("error", () => undefined);
    });
    expect(status).toBe(403);
  });

  it("flood: beyond the computer's tunnel limit previews answer 429, and another account's previews keep working", async () => {
    await wake(bob);
    // Eight event streams stay open (the server never ends them here); the ninth is refused.
    const held: http.ClientRequest[] = [];
    try {
      for (let index = 0; index < 8; index++) {
        await new Promise<void>((resolve, reject) => {
          const request = http.get(
            `${url}/v1/computers/me/ports/${innerPort}/sse`,
            { headers: bearer(alice) },
            (response) => {
              expect(response.statusCode).toBe(200);
              resolve();
            },
          );
          request.on("error", reject);
          held.push(request);
        });
      }
      const refused = await preview(alice, "/");
      expect(refused.status).toBe(429);
      expect(refused.json.error?.message).toMatch(/8 preview connections open, its limit/);
      expect(refused.headers["retry-after"]).toBe("1");
      const other = await preview(bob, "/bob");
      expect(other.status).toBe(200);
      expect(other.json.url).toBe("/bob");
    } finally {
      for (const request of held) request.destroy();
    }
    await waitFor(() => gw.gateway.tunnelCount(alice.computerId) === 0);
    expect((await preview(alice, "/again")).status).toBe(200);
  });

  it("a link on a server reached by a name of its own needs ROOST_PREVIEW_URL; with it, links use that domain", async () => {
    const refused = await rawRequest(`${url}/v1/computers/me/preview-links`, {
      method: "POST",
      headers: { ...bearer(alice), "content-type": "application/json", host: "roost.example.com" },
      body: JSON.stringify({ port: innerPort }),
    });
    expect(refused.status).toBe(503);
    expect(refused.json.error?.message).toMatch(/ROOST_PREVIEW_URL/);
    const bad = await rawRequest(`${url}/v1/computers/me/preview-links`, {
      method: "POST",
      headers: { ...bearer(alice), "content-type": "application/json" },
      body: JSON.stringify({ port: 70_000 }),
    });
    expect(bad.status).toBe(400);

    const configured = startApi("https://preview.example.com").app;
    const made = await configured.request("/v1/computers/me/preview-links", {
      method: "POST",
      headers: { ...bearer(alice), "content-type": "application/json" },
      body: JSON.stringify({ port: innerPort }),
    });
    const linkUrl = new URL(((await made.json()) as { url: string }).url);
    expect(linkUrl.protocol).toBe("https:");
    expect(linkUrl.hostname).toMatch(
      new RegExp(`^p${innerPort}-[a-z2-7]{16}\\.preview\\.example\\.com$`),
    );
  });

  it("the computer going to sleep ends its open previews", async () => {
    const events: string[] = [];
    const ended = new Promise<void>((resolve) => {
      http.get(
        `${url}/v1/computers/me/ports/${innerPort}/sse`,
        { headers: bearer(alice) },
        (response) => {
          response.on("data", (chunk: Buffer) => events.push(chunk.toString()));
          response.on("error", () => resolve());
          response.on("close", () => resolve());
        },
      );
    });
    await waitFor(() => events.length === 1);
    await sleep(alice);
    await ended;
    expect(gw.gateway.tunnelCount(alice.computerId)).toBe(0);
  });
});
