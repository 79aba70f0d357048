/**
 * Copying skills onto the computer (sync.ts, SKS1–SKS5; computer tools CT7): a real gateway, a
 * real worker process with a real home folder, a real SQLite store.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import {
  makeComputerDirs,
  rawClient,
  spawnWorker,
  startTestGateway,
  waitForWorkerProcess,
  type TestComputerDirs,
  type TestGateway,
  type WorkerProcess,
} from "../gateway/testing/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createComputerTools, createToolRouter } from "../tools/index.ts";
import { createSkillService, type SkillService } from "./service.ts";
import { createSkillSync, createSkillSyncHook } from "./sync.ts";
import { skillMarkdown, tarArchive } from "./testing/archives.ts";

let dataDir: string;
let store: Store;
let skills: SkillService;
let gw: TestGateway;
let dirs: TestComputerDirs;
let worker: WorkerProcess;
let accountId: string;
let computerId: string;
const actor = () => ({ accountId, actorAccountId: accountId });

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "roost-skill-sync-"));
  store = await openStore({ kind: "sqlite", path: join(dataDir, "roost.db") });
  skills = createSkillService(store);
  gw = await startTestGateway();
  dirs = makeComputerDirs("roost-skill-sync-computer-");
});
afterAll(async () => {
  await worker?.stop();
  await gw?.close();
  await store?.close();
  dirs?.remove();
  rmSync(dataDir, { recursive: true, force: true });
});

let accounts = 0;
beforeEach(async () => {
  // Each case gets its own account and computer; the worker of the last one is replaced.
  accountId = (await store.createAccount({ name: `ada-${++accounts}`, isAdmin: false })).id;
  computerId = (await store.ensureComputer(accountId, "process")).id;
  await worker?.stop();
  rmSync(join(dirs.home, "skills"), { recursive: true, force: true });
  gw.tokens.set(`token-${accounts}`, computerId);
  worker = spawnWorker({ gatewayUrl: gw.url, token: `token-${accounts}`, dirs });
  await waitForWorkerProcess(gw.gateway, computerId, worker);
});

const onComputer = (...parts: string[]) => join(dirs.home, "skills", ...parts);
const sync = (allowed: string[] | null = null, timeoutMs?: number) =>
  createSkillSync({
    store,
    worker: gw.gateway,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  }).sync({ computerId, accountId, allowed });

async function addScriptSkill(name: string, output: string) {
  await skills.putArchive(actor(), {
    bytes: tarArchive([
      { path: "SKILL.md", data: skillMarkdown(name, `${name} skill`) },
      { path: "run.sh", data: `echo ${output}\n`, mode: 0o755 },
    ]),
    kind: "tar",
    mode: "upsert",
    name,
  });
}

describe("copying skills to ~/skills", () => {
  it("copies every skill, rewrites only what changed, removes what was deleted, and does nothing when nothing changed", async () => {
    await addScriptSkill("alpha", "alpha-v1");
    await skills.create(actor(), { name: "beta", description: "beta", body: "Beta steps." });
    expect(await sync()).toMatchObject({ state: "updated", written: ["alpha", "beta"] });
    expect(readFileSync(onComputer("alpha", "run.sh"), "utf8")).toBe("echo alpha-v1\n");
    expect(statSync(onComputer("alpha", "run.sh")).mode & 0o777).toBe(0o755);
    expect(readFileSync(onComputer("beta", "SKILL.md"), "utf8")).toContain("Beta steps.");

    const betaBefore = statSync(onComputer("beta")).ino;
    expect(await sync()).toMatchObject({ state: "current", written: [], removed: [] });

    await addScriptSkill("alpha", "alpha-v2");
    expect(await sync()).toMatchObject({ state: "updated", written: ["alpha"] });
    expect(readFileSync(onComputer("alpha", "run.sh"), "utf8")).toBe("echo alpha-v2\n");
    expect(statSync(onComputer("beta")).ino).toBe(betaBefore); // untouched

    await skills.remove(actor(), "alpha");
    expect(await sync()).toMatchObject({ state: "updated", written: [], removed: ["alpha"] });
    expect(existsSync(onComputer("alpha"))).toBe(false);
    expect(readdirSync(onComputer()).sort()).toEqual([".roost-skills.json", "beta"]);
  });

  it("a limited bot's sync copies only its skills and removes only what the account deleted (SKS3)", async () => {
    await addScriptSkill("mine", "mine");
    await addScriptSkill("theirs", "theirs");
    expect(await sync(["mine"])).toMatchObject({ written: ["mine"] });
    expect(existsSync(onComputer("theirs"))).toBe(false);
    expect(await sync(null)).toMatchObject({ written: ["theirs"] });
    // Another bot's skill stays when a limited bot syncs.
    expect(await sync(["mine"])).toMatchObject({ state: "current", removed: [] });
    expect(existsSync(onComputer("theirs", "run.sh"))).toBe(true);
  });

  it("the computer tools sync before the turn's first call, once per turn, one journaled step per call (CT7, SKS4)", async () => {
    await addScriptSkill("greet", "hello-from-skill");
    const botId = (await store.createBot({ accountId, name: "b", instructions: "", model: null }))
      .id;
    const hook = createSkillSyncHook({
      sync: createSkillSync({ store, worker: gw.gateway }),
      store,
    });
    const awake = (key: string) => ({
      id: key,
      state: "awake",
      lastActiveAt: null,
      holders: 0,
      failure: null,
    });
    const router = () =>
      createToolRouter({
        sources: [
          createComputerTools({
            store,
            gateway: gw.gateway,
            providerKind: "process",
            prepare: hook,
          }),
        ],
      });
    const durable = createMemoryDurable({ objects: { computer: async (key) => awake(key) } });
    const turn = { accountId, botId, conversationId: "conv_1", turnId: "turn_sync_1" };
    const tools = router();
    const shell = (callId: string, d = durable, source = tools) =>
      source.execute(
        "shell",
        { command: "bash ~/skills/greet/run.sh" },
        { ...turn, callId, durable: d, signal: new AbortController().signal },
      );
    const first = await shell("call_1");
    expect(first.output).toContain("hello-from-skill");
    await shell("call_2");
    const syncSteps = durable.journal.filter(
      (entry) => entry.type === "step" && entry.name === "skills:sync",
    );
    expect(syncSteps).toHaveLength(2);
    expect(syncSteps.map((entry) => (entry as { value: { state: string } }).value.state)).toEqual([
      "updated",
      "skipped",
    ]);
    // A replay (a fresh process's tools, the journal so far) takes the same path and runs nothing again.
    const replay = createMemoryDurable({
      journal: durable.journal,
      objects: { computer: async (key) => awake(key) },
    });
    const again = router();
    await shell("call_1", replay, again);
    await shell("call_2", replay, again);
    expect(replay.steps).toEqual([]);
  });

  it("a worker without skill operations: the sync reports it instead of failing (SKS1)", async () => {
    await worker.stop();
    gw.tokens.set("token-old", computerId);
    const old = await rawClient(gw.url, "token-old");
    old.hello({ workerId: "wrk_old", capabilities: ["shell"] });
    // The old worker answers every call it does not know as unknown_tool, as the real one does.
    old.ws.on("message", (data: Buffer) => {
      const frame = JSON.parse(data.toString()) as { type: string; callId?: string };
      if (frame.type !== "call") return;
      old.ws.send(JSON.stringify({ type: "ack", callId: frame.callId }));
      old.ws.send(
        JSON.stringify({
          type: "result",
          callId: frame.callId,
          ok: false,
          error: { code: "unknown_tool", message: "this worker has no tool" },
        }),
      );
    });
    try {
      await gw.gateway.waitForWorker(computerId, 10_000);
      await skills.create(actor(), { name: "any", description: "any", body: "any" });
      expect(await sync()).toMatchObject({
        state: "unsupported",
        message: expect.stringMatching(/update the self-hosted worker/) as unknown,
      });
    } finally {
      old.ws.close();
    }
  });

  it("a worker that never answers: the sync stops at its time limit (SKS2)", async () => {
    await worker.stop();
    gw.tokens.set("token-mute", computerId);
    const mute = await rawClient(gw.url, "token-mute");
    mute.hello({ workerId: "wrk_mute", capabilities: ["skills.sync", "skills.put"] });
    mute.ws.on("message", (data: Buffer) => {
      const frame = JSON.parse(data.toString()) as { type: string; callId?: string };
      if (frame.type === "call")
        mute.ws.send(JSON.stringify({ type: "ack", callId: frame.callId }));
    });
    try {
      await gw.gateway.waitForWorker(computerId, 10_000);
      await skills.create(actor(), { name: "slow", description: "slow", body: "slow" });
      const report = await sync(null, 1500);
      expect(report).toMatchObject({ state: "partial", written: [] });
      expect(report.message).toMatch(/stopped after 1500 ms/);
    } finally {
      mute.ws.close();
    }
  });
});
