/**
 * Scale mode's engine: with ROOST_RESTATE_INGRESS_URL / ROOST_RESTATE_ADMIN_URL set, Roost starts
 * no Restate of its own and the same loop runs on the external one (here a restate-server this
 * test starts itself, standing in for a cluster).
 */
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { connect } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureRequestIdentity,
  findFreePort,
  startEmbeddedRestate,
  type EmbeddedRestate,
} from "../../src/engine/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { waitFor } from "../support/wait.ts";

describe("an external Restate", () => {
  let dataDir: string;
  let restateDir: string;
  let restate: EmbeddedRestate;
  let roost: RoostProcess;

  beforeAll(async () => {
    restateDir = mkdtempSync(join(tmpdir(), "roost-external-restate-"));
    dataDir = mkdtempSync(join(tmpdir(), "roost-external-"));
    const ingressPort = await findFreePort();
    const adminPort = await findFreePort([ingressPort]);
    // The cluster signs its requests (request identity); Roost is told its public key.
    const identity = await ensureRequestIdentity(restateDir);
    restate = await startEmbeddedRestate({
      dataDir: restateDir,
      ingressPort,
      adminPort,
      requestIdentityPemFile: identity.privateKeyPemFile,
    });
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_RESTATE_INGRESS_URL: restate.ingressUrl,
        ROOST_RESTATE_ADMIN_URL: restate.adminUrl,
        ROOST_RESTATE_IDENTITY_KEYS: identity.publicKey,
      },
    });
    await roost.start();
  });
  afterAll(async () => {
    await roost?.stop();
    await restate?.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(restateDir, { recursive: true, force: true });
  });

  it("starts no restate-server of its own and runs turns on the external one", async () => {
    expect(existsSync(join(dataDir, "restate"))).toBe(false);
    expect(roost.output()).toContain(`external Restate at ${restate.ingressUrl}`);
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("remote");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "hello over there");
    const steps = await api.waitForSteps(conversation.id, "reply");
    expect(String(steps.at(-1)!.payload.text)).toContain('You said: "hello over there"');
  });

  it("accepts only requests the cluster signed", async () => {
    const session = connect(`http://127.0.0.1:${roost.servicePort}`);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const request = session.request({ ":method": "GET", ":path": "/discover" });
        request.on("response", (headers) => resolve(Number(headers[":status"])));
        request.on("error", reject);
        request.end();
      });
      expect(status).toBe(401);
    } finally {
      session.close();
    }
  });

  it("a node stopped while its loop waits in the follow-up window exits in seconds, and the loop goes on after", async () => {
    const api = apiClient(roost.url, roost.token);
    const bot = await api.createBot("drained");
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "first");
    await api.waitForSteps(conversation.id, "reply");
    // The loop now waits for a follow-up (2 min by default), holding its invocation open.
    const startedAt = Date.now();
    const stopping = roost.stop();
    // While it drains, health says so: a load balancer stops sending it work.
    const draining = await waitFor(
      async () => {
        const response = await fetch(`${roost.url}/v1/health`);
        return response.status === 503 ? await response.json() : undefined;
      },
      { what: "health 503 while the node drains", intervalMs: 50 },
    );
    expect(draining).toMatchObject({ ok: false, checks: { node: "shutting down" } });
    await stopping;
    const stoppedInMs = Date.now() - startedAt;
    expect(roost.output()).toContain("roost: SIGTERM, shutting down");
    expect(stoppedInMs).toBeLessThan(12_000); // grace 5 s; before, the window's 120 s
    await roost.start();
    await api.send(conversation.id, "second");
    await waitFor(
      async () =>
        (await api.steps(conversation.id)).some(
          (step) =>
            typeof step.payload.text === "string" &&
            step.payload.text.includes('You said: "second"'),
        ),
      { what: "the reply to the message sent after the restart", timeoutMs: 60_000 },
    );
  });
});
