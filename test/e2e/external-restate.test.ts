/**
 * Scale mode's engine: with ROOST_RESTATE_INGRESS_URL / ROOST_RESTATE_ADMIN_URL set, Roost starts
 * no Restate of its own and the same loop runs on the external one (here a restate-server this
 * test starts itself, standing in for a cluster).
 */
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  findFreePort,
  startEmbeddedRestate,
  type EmbeddedRestate,
} from "../../src/engine/index.ts";
import { apiClient } from "../support/api-client.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";

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
    restate = await startEmbeddedRestate({ dataDir: restateDir, ingressPort, adminPort });
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_RESTATE_INGRESS_URL: restate.ingressUrl,
        ROOST_RESTATE_ADMIN_URL: restate.adminUrl,
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
});
