/**
 * The `roost computer-host` role (issue 17 §3, decision 0041): one API node with
 * ROOST_COMPUTERS=remote and two computer hosts, on one Postgres, one external Restate and one
 * blob store. The loop runs on the API node; the computer runs on the host (its home), its worker
 * dials the host's gateway, and the API node reaches it through node-to-node forwarding. The API
 * node never starts a sandbox; the host serves no public API and no loop.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureRequestIdentity,
  findFreePort,
  startEmbeddedRestate,
  type EmbeddedRestate,
} from "../../src/engine/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { createTestDatabase, postgresAvailable } from "../support/postgres.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

const postgres = await postgresAvailable();

interface ComputerView {
  id: string;
  state: string;
  home: string | null;
  failure: string | null;
}

// Needs Postgres; in CI (CI=true) postgresAvailable() fails loudly instead of skipping.
describe.skipIf(!postgres.ok)("roost computer-host: computers run apart from API nodes", () => {
  const dirs: string[] = [];
  const secret = randomBytes(32).toString("base64url");
  let restate: EmbeddedRestate;
  let database: { url: string; drop(): Promise<void> };
  let apiNode: RoostProcess;
  /** host-1: the attacks' target. */
  let host: RoostProcess;
  let host2: RoostProcess;
  let apiNodeUrl: string;
  const nodeUrls = new Map<string, string>();
  const hosts = new Map<string, RoostProcess>();
  /** The host the computer's first wake went to (picked by its id), and the other one. */
  let home: RoostProcess;
  let homeId: string;

  const dir = () => {
    const created = mkdtempSync(join(tmpdir(), "roost-computer-host-"));
    dirs.push(created);
    return created;
  };
  const admin = () => apiClient(apiNode.url, apiNode.token);

  beforeAll(async () => {
    const restateDir = dir();
    const ingressPort = await findFreePort();
    const adminPort = await findFreePort([ingressPort]);
    const identity = await ensureRequestIdentity(restateDir);
    restate = await startEmbeddedRestate({
      dataDir: restateDir,
      ingressPort,
      adminPort,
      requestIdentityPemFile: identity.privateKeyPemFile,
    });
    database = await createTestDatabase();
    const blobDir = dir();
    const nodePortApi = await findFreePort([ingressPort, adminPort]);
    const nodePortHost = await findFreePort([ingressPort, adminPort, nodePortApi]);
    const nodePortHost2 = await findFreePort([ingressPort, adminPort, nodePortApi, nodePortHost]);
    apiNodeUrl = `http://127.0.0.1:${nodePortApi}`;
    nodeUrls.set("host-1", `http://127.0.0.1:${nodePortHost}`);
    nodeUrls.set("host-2", `http://127.0.0.1:${nodePortHost2}`);
    const env = (nodeUrl: string, nodePort: number) => ({
      ROOST_STORE: "postgres",
      ROOST_DATABASE_URL: database.url,
      ROOST_RESTATE_INGRESS_URL: restate.ingressUrl,
      ROOST_RESTATE_ADMIN_URL: restate.adminUrl,
      ROOST_RESTATE_IDENTITY_KEYS: identity.publicKey,
      ROOST_COMPUTER_PROVIDER: "process",
      ROOST_BLOB_DIR: blobDir,
      ROOST_FOLLOW_UP_WINDOW_MS: "200",
      ROOST_NODE_URL: nodeUrl,
      ROOST_NODE_PORT: String(nodePort),
      ROOST_NODE_SECRET: secret,
      // A host that does not answer for this long has lost its computers (the kill test).
      ROOST_HOME_TIMEOUT_MS: "3000",
    });
    apiNode = await createRoostProcess({
      dataDir: dir(),
      env: {
        ...env(apiNodeUrl, nodePortApi),
        ROOST_NODE_ID: "api-1",
        ROOST_COMPUTERS: "remote",
        ROOST_COMPUTER_HOSTS: "host-1,host-2",
      },
    });
    await apiNode.start();
    host = await createRoostProcess({
      command: "computer-host",
      dataDir: dir(),
      env: { ...env(nodeUrls.get("host-1")!, nodePortHost), ROOST_NODE_ID: "host-1" },
    });
    host2 = await createRoostProcess({
      command: "computer-host",
      dataDir: dir(),
      env: { ...env(nodeUrls.get("host-2")!, nodePortHost2), ROOST_NODE_ID: "host-2" },
    });
    hosts.set("host-1", host).set("host-2", host2);
    await Promise.all([host.start(), host2.start()]);
  }, 120_000);
  afterAll(async () => {
    await host?.stop();
    await host2?.stop();
    await apiNode?.stop();
    await restate?.close();
    await database?.drop();
    for (const created of dirs) rmSync(created, { recursive: true, force: true });
  });

  it("a shell turn on the API node runs on the host's computer; the API node started no sandbox", async () => {
    const api = admin();
    const bot = await api.createBot("remote-computer");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "$ echo from-host > f.txt && cat f.txt");
    const steps = await api.waitForSteps(conversation.id, "reply", 1, 90_000);
    const tool = steps.find((step) => step.kind === "tool") as TestStep;
    expect(tool.payload).toMatchObject({
      name: "shell",
      isError: false,
      details: { exitCode: 0, stdout: "from-host\n" },
    });
    const computer = await api.call<ComputerView>("GET", "/v1/computers/me");
    expect(computer).toMatchObject({ state: "awake", failure: null });
    expect(["host-1", "host-2"]).toContain(computer.home);
    homeId = computer.home!;
    home = hosts.get(homeId)!;
    const other = hosts.get(homeId === "host-1" ? "host-2" : "host-1")!;
    // The file is on the home's disk; the other host and the API node have no such computer.
    expect(
      readFileSync(join(home.dataDir, "computers", computer.id, "workspace", "f.txt"), "utf8"),
    ).toBe("from-host\n");
    expect(existsSync(join(other.dataDir, "computers", computer.id))).toBe(false);
    expect(existsSync(join(apiNode.dataDir, "computers", computer.id))).toBe(false);
    // The worker is connected to the host's gateway: the host's node endpoint knows it, the API's not.
    const ask = (nodeUrl: string) =>
      fetch(`${nodeUrl}/node/v1/workers/${computer.id}`, {
        headers: { authorization: `Bearer ${secret}` },
      });
    expect((await ask(nodeUrls.get(homeId)!)).status).toBe(200);
    expect((await ask(apiNodeUrl)).status).toBe(404);
  }, 120_000);

  it("the files API on the API node lists and reads the host's files", async () => {
    const api = admin();
    const listing = await api.call<Api.Listing>("GET", "/v1/computers/me/files");
    expect(listing.entries.map((entry) => entry.name)).toContain("f.txt");
    const content = await fetch(
      `${apiNode.url}/v1/computers/me/files/content?path=${encodeURIComponent("/workspace/f.txt")}`,
      { headers: { authorization: `Bearer ${apiNode.token()}` } },
    );
    expect(await content.text()).toBe("from-host\n");
  });

  it("sleep and wake through the API node go to the host, which snapshots and restores", async () => {
    const api = admin();
    const slept = await api.call<ComputerView>("POST", "/v1/computers/me/sleep");
    expect(slept).toMatchObject({ state: "asleep", home: homeId, failure: null });
    const woken = await api.call<ComputerView>("POST", "/v1/computers/me/wake");
    expect(woken).toMatchObject({ state: "awake", home: homeId, failure: null });
    const listing = await api.call<Api.Listing>("GET", "/v1/computers/me/files");
    expect(listing.entries.map((entry) => entry.name)).toContain("f.txt");
    expect(existsSync(join(apiNode.dataDir, "computers", slept.id))).toBe(false);
  }, 120_000);

  it("no loop runs on the host: Restate's loop services are the API node's, the host has only its host service", async () => {
    const deploymentOf = async (service: string) => {
      const found = (await (await fetch(`${restate.adminUrl}/services/${service}`)).json()) as {
        deployment_id: string;
      };
      return (
        (await (await fetch(`${restate.adminUrl}/deployments/${found.deployment_id}`)).json()) as {
          uri: string;
        }
      ).uri;
    };
    expect(await deploymentOf("conversation")).toContain(`:${apiNode.servicePort}`);
    expect(await deploymentOf("computer")).toContain(`:${apiNode.servicePort}`);
    expect(await deploymentOf("roost_host_host_1")).toBe(
      `http://127.0.0.1:${host.servicePort}/host`,
    );
    // The host's service port answers nothing but /host (a discovery of the loop's services is refused).
    const status = await new Promise<number>((resolve, reject) => {
      const session = http2.connect(`http://127.0.0.1:${host.servicePort}`);
      session.once("error", reject);
      const request = session.request({ ":method": "GET", ":path": "/discover" });
      request.once("response", (headers) => {
        resolve(Number(headers[":status"]));
        session.close();
      });
      request.once("error", reject);
      request.end();
    });
    expect(status).toBe(404);
  });

  it("attack: the host serves no public API, with or without a valid token, and no web app", async () => {
    const token = apiNode.token();
    for (const [method, path] of [
      ["GET", "/v1/computers/me"],
      ["GET", "/v1/computers/me/files"],
      ["POST", "/v1/accounts"],
      ["GET", "/v1/bots"],
      ["GET", "/"],
      ["GET", "/v1/events"],
    ] as const) {
      for (const authorization of [undefined, `Bearer ${token}`]) {
        const response = await fetch(`${host.url}${path}`, {
          method,
          headers: authorization === undefined ? {} : { authorization },
          ...(method === "POST" ? { body: JSON.stringify({ name: "x" }) } : {}),
        });
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(await response.text()).toContain("this is a computer host");
      }
    }
    // Its health is served: load balancers and monitors poll it.
    expect((await fetch(`${host.url}/v1/health`)).status).toBe(200);
    // The host created no admin token of its own.
    expect(existsSync(join(host.dataDir, "admin-token"))).toBe(false);
  });

  it("attack: the host's node endpoint refuses requests without the node secret", async () => {
    const { id } = await admin().call<ComputerView>("GET", "/v1/computers/me");
    const body = JSON.stringify({
      computerId: id,
      call: { callId: "c1", tool: "shell", input: { command: "id" }, timeoutMs: 1000 },
    });
    for (const authorization of [
      undefined,
      `Bearer ${apiNode.token()}`,
      `Bearer ${secret}x`,
      `Bearer ${secret.slice(0, -1)}`,
    ]) {
      const response = await fetch(`${nodeUrls.get("host-1")!}/node/v1/calls`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(authorization === undefined ? {} : { authorization }),
        },
        body,
      });
      expect(response.status).toBe(401);
      expect(await response.text()).toContain("ROOST_NODE_SECRET");
    }
  });

  it("attack: a wake sent straight to the host's service for an unknown id reaches no provider", async () => {
    for (const computerId of ["../../etc", "cmp_doesnotexist", ""]) {
      const response = await fetch(`${restate.ingressUrl}/roost_host_host_1/wake`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ computerId, previousHome: null, atLeastGeneration: null }),
      });
      const text = await response.text();
      expect(response.status, text).toBeGreaterThanOrEqual(400);
      expect(text).toContain("computer host host-1: no computer");
      expect(existsSync(join(host.dataDir, "computers", computerId || "x"))).toBe(false);
    }
  });

  it("a host killed with the computer awake: the next turn moves it to the other host from its snapshot", async () => {
    const api = admin();
    const otherId = homeId === "host-1" ? "host-2" : "host-1";
    // The snapshot the sleep above saved has f.txt; the home's later changes die with it.
    await home.kill("SIGKILL");
    const bot = await api.createBot("after-the-kill");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "$ cat f.txt && hostname > /dev/null && echo moved");
    const steps = await api.waitForSteps(conversation.id, "reply", 1, 120_000);
    const tool = steps.find((step) => step.kind === "tool") as TestStep;
    expect(tool.payload).toMatchObject({
      name: "shell",
      isError: false,
      details: { exitCode: 0, stdout: "from-host\nmoved\n" },
    });
    const computer = await api.call<ComputerView>("GET", "/v1/computers/me");
    expect(computer).toMatchObject({ state: "awake", home: otherId });
    expect(existsSync(join(apiNode.dataDir, "computers", computer.id))).toBe(false);
  }, 180_000);

  it("a start with a wrong combination says how to fix it", async () => {
    const broken = await createRoostProcess({
      command: "computer-host",
      dataDir: dir(),
      env: {
        ROOST_STORE: "postgres",
        ROOST_DATABASE_URL: database.url,
        ROOST_RESTATE_INGRESS_URL: restate.ingressUrl,
        ROOST_RESTATE_ADMIN_URL: restate.adminUrl,
        ROOST_NODE_ID: "host-2",
      },
    });
    await expect(broken.start()).rejects.toThrow(
      /needs node-to-node forwarding: set ROOST_NODE_URL/,
    );
  }, 60_000);
});
