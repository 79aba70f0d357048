/**
 * The live view through the real API on a real HTTP server, a real gateway and real worker
 * processes, tunnelled to a real x11vnc serving a real Xvfb. The worker's `screens.*` operations
 * are answered by the test (the screen manager lives in the browser's worker code): the list
 * names the real x11vnc's port, and `screens.control` calls are recorded.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve, type ServerType } from "@hono/node-server";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub } from "../events/index.ts";
import {
  makeComputerDirs,
  spawnWorker,
  startTestGateway,
  waitForWorkerProcess,
  type TestComputerDirs,
  type TestGateway,
  type WorkerProcess,
} from "../gateway/testing/index.ts";
import type { Screen, ScreensControlInput } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";
import { createLiveView, type LiveView } from "./screens.ts";
import { rawRequest } from "../../test/support/raw-http.ts";
import { rfbClient, startVncDisplay, type VncDisplay } from "../../test/support/vnc-display.ts";
import { waitFor } from "../../test/support/wait.ts";

interface Person {
  token: string;
  accountId: string;
  computerId: string;
}

describe("the live view through the API", () => {
  let gw: TestGateway;
  let display: VncDisplay;
  let dir: string;
  let store: Store;
  let server: ServerType;
  let url: string;
  let alice: Person;
  let bob: Person;
  let liveView: LiveView;
  const workers = new Map<string, { worker: WorkerProcess; dirs: TestComputerDirs }>();
  /** The screens each computer's worker answers. */
  const screensOf = new Map<string, Screen[]>();
  const controls: { computerId: string; input: ScreensControlInput }[] = [];
  const sockets: WebSocket[] = [];
  const reservedPort = 7700;

  beforeAll(async () => {
    gw = await startTestGateway({ tunnels: { maxTunnelsPerComputer: 16 } });
    display = await startVncDisplay();
  }, 60_000);
  afterAll(async () => {
    await display?.close();
    await gw?.close();
  });

  async function wake(person: Person): Promise<void> {
    const dirs = makeComputerDirs();
    gw.tokens.set(`token-${person.computerId}`, person.computerId);
    const worker = spawnWorker({ gatewayUrl: gw.url, token: `token-${person.computerId}`, dirs });
    workers.set(person.computerId, { worker, dirs });
    await waitForWorkerProcess(gw.gateway, person.computerId, worker);
  }

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-screens-api-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    const person = async (name: string): Promise<Person> => {
      const account = await store.createAccount({ name, isAdmin: false });
      const token = (await issueApiToken(store, account.id, "test")).token;
      const computer = await store.ensureComputer(account.id, "process");
      return { token, accountId: account.id, computerId: computer.id };
    };
    alice = await person("alice");
    bob = await person("bob");
    controls.length = 0;
    screensOf.clear();
    screensOf.set(alice.computerId, [
      {
        id: "s-bot_a",
        botId: "bot_a",
        width: display.width,
        height: display.height,
        busy: false,
        vncPort: display.vncPort,
        controller: null,
      },
    ]);
    screensOf.set(bob.computerId, []);
    liveView = createLiveView(
      {
        computerOf: async (accountId) => (await store.ensureComputer(accountId, "process")).id,
        state: async (computerId) => (workers.has(computerId) ? "awake" : "asleep"),
        touch: async () => undefined,
        gateway: {
          isConnected: (computerId) => gw.gateway.isConnected(computerId),
          call: async (computerId, request, options) => {
            if (request.tool === "screens.list")
              return { ok: true, output: { screens: screensOf.get(computerId) ?? [] } };
            if (request.tool === "screens.control") {
              controls.push({ computerId, input: request.input as ScreensControlInput });
              return { ok: true, output: { ok: true } };
            }
            return gw.gateway.call(computerId, request, options);
          },
          openTunnel: (computerId, port, options) =>
            gw.gateway.openTunnel(computerId, port, options),
        },
        ticketSecret: randomBytes(32),
        reservedPorts: () =>
          new Map([[reservedPort, "it is one of Roost's own ports on this host"]]),
        leasePollMs: 100,
      },
      store,
    );
    const app = createApi({
      store,
      events: createEventHub(),
      kick: async () => undefined,
      interrupt: () => false,
      health: async () => ({ ok: true, checks: {} }),
      checkModel: () => undefined,
      defaultModel: () => ({ id: "demo", isDemo: true }),
      maxBodyBytes: 1024 * 1024,
      liveView,
      limits: { requestsPerMinute: 0 },
    });
    server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
    (server as http.Server).on("upgrade", (request, socket, head) =>
      liveView.handleUpgrade(request, socket, head),
    );
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await wake(alice);
  });
  afterEach(async () => {
    for (const ws of sockets) ws.terminate();
    sockets.length = 0;
    await liveView.close();
    (server as http.Server).closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    for (const [computerId, { worker, dirs }] of workers) {
      await worker.stop();
      dirs.remove();
      await gw.gateway.disconnect(computerId);
    }
    workers.clear();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const bearer = (person: Person) => ({ authorization: `Bearer ${person.token}` });
  const api = (
    person: Person,
    method: string,
    path: string,
    body?: unknown,
  ): ReturnType<typeof rawRequest> =>
    rawRequest(`${url}${path}`, {
      method,
      headers: {
        ...bearer(person),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  /** Opens the VNC WebSocket; answers the socket, or the HTTP status it was refused with. */
  function connect(
    path: string,
    headers: Record<string, string> = {},
  ): Promise<{ ws: WebSocket } | { status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${url.replace("http", "ws")}${path}`, { headers });
      sockets.push(ws);
      ws.once("open", () => resolve({ ws }));
      ws.once("unexpected-response", (_request, response) => {
        let body = "";
        response.on("data", (chunk: Buffer) => (body += chunk.toString()));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      });
      ws.once("error", reject);
    });
  }
  async function viewer(person: Person, screenId = "s-bot_a") {
    const answer = await api(person, "POST", `/v1/computers/me/screens/${screenId}/viewers`);
    expect(answer.status, answer.text).toBe(201);
    const { viewerId, path } = answer.json as { viewerId: string; path: string };
    const opened = await connect(path);
    if (!("ws" in opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
    return { viewerId, ws: opened.ws, rfb: rfbClient(opened.ws) };
  }

  it("the VNC WebSocket answers with the screen's RFB banner for its owner (ticket or bearer)", async () => {
    const { rfb } = await viewer(alice);
    expect((await rfb.read(12)).toString("latin1")).toBe("RFB 003.008\n");
    const withBearer = await connect("/v1/computers/me/screens/s-bot_a/vnc", bearer(alice));
    if (!("ws" in withBearer)) throw new Error(`refused: ${withBearer.status}`);
    const size = await rfbClient(withBearer.ws).handshake();
    expect(size).toEqual({ width: display.width, height: display.height });
  });

  it("another account's screen is 404 like a missing one, its tickets and bad ones are refused", async () => {
    await wake(bob);
    const asBob = await connect("/v1/computers/me/screens/s-bot_a/vnc", bearer(bob));
    expect(asBob).toMatchObject({ status: 404 });
    expect((await api(bob, "POST", "/v1/computers/me/screens/s-bot_a/viewers")).status).toBe(404);
    expect(
      (
        await api(bob, "POST", "/v1/computers/me/screens/s-bot_a/control", {
          viewerId: "vw_aaaaaaaaaa",
        })
      ).status,
    ).toBe(404);
    expect((await api(bob, "GET", "/v1/computers/me/screens")).json).toEqual({ screens: [] });
    // Alice's ticket names her screen; it does not open another path, and a forged one is nothing.
    const ticket = (await api(alice, "POST", "/v1/computers/me/screens/s-bot_a/viewers")).json as {
      path: string;
    };
    const query = ticket.path.slice(ticket.path.indexOf("?"));
    expect(await connect(`/v1/computers/me/screens/s-other/vnc${query}`)).toMatchObject({
      status: 401,
    });
    const [body] = query.slice("?ticket=".length).split(".");
    expect(
      await connect(`/v1/computers/me/screens/s-bot_a/vnc?ticket=${body}.${"A".repeat(43)}`),
    ).toMatchObject({ status: 401 });
    expect(await connect("/v1/computers/me/screens/s-bot_a/vnc")).toMatchObject({ status: 401 });
  });

  it("bad screen ids are 400 with how to fix it; an asleep computer lists no screens and is not woken", async () => {
    const bad = await api(alice, "POST", "/v1/computers/me/screens/..%2F..%2Fx/viewers");
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("is not a screen id");
    expect(await connect("/v1/computers/me/screens/a%20b/vnc", bearer(alice))).toMatchObject({
      status: 400,
    });
    const missing = await api(alice, "POST", "/v1/computers/me/screens/s-nobody/viewers");
    expect(missing.status).toBe(404);
    const noViewer = await api(alice, "POST", "/v1/computers/me/screens/s-bot_a/control", {
      viewerId: "me",
    });
    expect(noViewer.status).toBe(400);
    expect(noViewer.text).toContain("viewerId");
    // Bob's computer has no worker: listing answers [] without waking it, a viewer is 409.
    expect((await api(bob, "GET", "/v1/computers/me/screens")).json).toEqual({ screens: [] });
    expect(await connect("/v1/computers/me/screens/s-bot_a/vnc", bearer(bob))).toMatchObject({
      status: 409,
    });
    expect(workers.has(bob.computerId)).toBe(false);
  });

  it("input from a view-only viewer changes nothing; the controller's moves the pointer", async () => {
    await display.xdotool("mousemove", "10", "10");
    await waitFor(async () => (await display.pointer()).x === 10, { what: "the pointer at 10" });
    const watcher = await viewer(alice);
    await watcher.rfb.handshake();
    watcher.rfb.pointer(700, 500);
    watcher.rfb.key(true, 0x61);
    watcher.rfb.key(false, 0x61);
    // A frame request after the input: once its answer arrives, x11vnc has read everything before.
    watcher.rfb.updateRequest(false, 8, 8);
    await watcher.rfb.readUpdate();
    expect(await display.pointer()).toEqual({ x: 10, y: 10 });

    const taken = await api(alice, "POST", "/v1/computers/me/screens/s-bot_a/control", {
      viewerId: watcher.viewerId,
    });
    expect(taken.status, taken.text).toBe(200);
    expect(controls.at(-1)).toMatchObject({
      computerId: alice.computerId,
      input: { screenId: "s-bot_a", controller: { accountId: alice.accountId } },
    });
    watcher.rfb.pointer(700, 500);
    await waitFor(async () => (await display.pointer()).x === 700, {
      what: "the controller's pointer event to move the pointer",
    });
    // Handing back makes the same viewer view-only again, at once.
    expect((await api(alice, "DELETE", "/v1/computers/me/screens/s-bot_a/control")).status).toBe(
      204,
    );
    expect(controls.at(-1)?.input.controller).toBeNull();
    watcher.rfb.pointer(20, 20);
    watcher.rfb.updateRequest(false, 8, 8);
    await watcher.rfb.readUpdate();
    expect(await display.pointer()).toEqual({ x: 700, y: 500 });
    const audit = (await store.listAudit({ accountId: alice.accountId })).map(
      (each) => each.action,
    );
    expect(audit).toEqual(
      expect.arrayContaining(["screen.control_taken", "screen.control_released"]),
    );
  });

  it("two viewers cannot both take control: one 200, the other 409 until it is handed back", async () => {
    const first = await viewer(alice);
    const second = await viewer(alice);
    const [a, b] = await Promise.all(
      [first, second].map((each) =>
        api(alice, "POST", "/v1/computers/me/screens/s-bot_a/control", {
          viewerId: each.viewerId,
        }),
      ),
    );
    expect([a!.status, b!.status].sort()).toEqual([200, 409]);
    const loser = a!.status === 409 ? a! : b!;
    expect(loser.text).toContain("another live view holds control");
    const listed = (await api(alice, "GET", "/v1/computers/me/screens")).json as {
      screens: { controller: { viewerId: string } | null }[];
    };
    const winner = a!.status === 200 ? first : second;
    expect(listed.screens[0]?.controller?.viewerId).toBe(winner.viewerId);
    // The holder renews.
    const renewed = await api(alice, "POST", "/v1/computers/me/screens/s-bot_a/control", {
      viewerId: winner.viewerId,
      durationMs: 10_000,
    });
    expect(renewed.status).toBe(200);
  });

  it("an expired lease is as good as none: another viewer may take it", async () => {
    const first = await viewer(alice);
    const second = await viewer(alice);
    await store.takeScreenLease({
      computerId: alice.computerId,
      screenId: "s-bot_a",
      accountId: alice.accountId,
      viewerId: first.viewerId,
      until: Date.now() + 300,
      reason: "person",
    });
    expect(
      (
        await api(alice, "POST", "/v1/computers/me/screens/s-bot_a/control", {
          viewerId: second.viewerId,
        })
      ).status,
    ).toBe(409);
    await waitFor(
      async () =>
        (
          await api(alice, "POST", "/v1/computers/me/screens/s-bot_a/control", {
            viewerId: second.viewerId,
          })
        ).status === 200,
      { what: "the expired lease to be taken" },
    );
  });

  it("a flood of messages ends the viewer's stream; an unknown message type too", async () => {
    const flooder = await viewer(alice);
    await flooder.rfb.handshake();
    const request = Buffer.from([3, 1, 0, 0, 0, 0, 0, 1, 0, 1]);
    flooder.rfb.send(Buffer.concat(Array.from({ length: 5000 }, () => request)));
    expect((await flooder.rfb.closed).code).toBe(1008);
    const odd = await viewer(alice);
    await odd.rfb.handshake();
    odd.rfb.send(Buffer.from([77, 0, 0, 0]));
    expect(await odd.rfb.closed).toMatchObject({ code: 1008 });
  });

  it("LV7: a screen whose VNC port is reserved (Roost's own) is never tunnelled to", async () => {
    screensOf.set(alice.computerId, [
      { ...screensOf.get(alice.computerId)![0]!, id: "s-evil", vncPort: reservedPort },
    ]);
    const refused = await connect("/v1/computers/me/screens/s-evil/vnc", bearer(alice));
    expect(refused).toMatchObject({ status: 503 });
    expect("body" in refused ? refused.body : "").toContain("no live view may reach");
  });

  it("LV5: a lease taken here ends by itself at its end: the worker is told and it is audited", async () => {
    const holder = await viewer(alice);
    const taken = await api(alice, "POST", "/v1/computers/me/screens/s-bot_a/control", {
      viewerId: holder.viewerId,
      durationMs: 10_000,
    });
    expect(taken.status).toBe(200);
    expect(controls.at(-1)?.input.controller).not.toBeNull();
    await waitFor(() => controls.at(-1)?.input.controller === null, {
      timeoutMs: 20_000,
      what: "the worker to be told the lease ended",
    });
    expect(await store.getScreenLease(alice.computerId, "s-bot_a")).toBeUndefined();
    const released = (await store.listAudit({ accountId: alice.accountId })).find(
      (entry) => entry.action === "screen.control_released",
    );
    expect(released?.detail).toMatchObject({ expired: true });
  }, 30_000);
});
