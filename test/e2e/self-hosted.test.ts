/**
 * Bring your own machine, end to end (issue 9 §4, "Done when": `roost worker` on another folder
 * of this host serves a second account's bot). Roost runs as a real child process with the demo
 * model and the test provider for hosted computers; a second account registers its own machine
 * through the API, and `roost worker` runs as a real child process with a temporary folder of
 * this host as its workspace. The first account stays on its hosted computer throughout.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findFreePort } from "../../src/engine/index.ts";
import { rawClient } from "../../src/gateway/testing/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { notConnectedMessage } from "../../src/tools/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { startConnectProxy } from "../support/connect-proxy.ts";
import { testComputerProvider } from "../support/provider.ts";
import { createRoostProcess, type RoostProcess } from "../support/roost-process.ts";
import { startRoostWorker, type RoostWorkerProcess } from "../support/roost-worker.ts";
import { waitFor } from "../support/wait.ts";

describe(`a self-hosted machine end to end (hosted: ${testComputerProvider} provider, demo model)`, () => {
  let dataDir: string;
  let machineRoot: string;
  let roost: RoostProcess;
  /** The first account: the local admin, on its hosted computer. */
  let first: ReturnType<typeof apiClient>;
  /** The second account, whose own machine (a folder of this host) becomes its computer. */
  let second: ReturnType<typeof apiClient>;
  let secondToken: string;
  let machine: RoostWorkerProcess | undefined;
  let workspace: string;
  let home: string;
  let metricsPort: number;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-self-hosted-"));
    machineRoot = mkdtempSync(join(tmpdir(), "roost-e2e-machine-"));
    workspace = mkdtempSync(join(machineRoot, "workspace-"));
    home = mkdtempSync(join(machineRoot, "home-"));
    roost = await createRoostProcess({
      dataDir,
      env: {
        ROOST_COMPUTER_PROVIDER: testComputerProvider,
        ROOST_FOLLOW_UP_WINDOW_MS: "200",
        ROOST_LOG_FORMAT: "json",
      },
    });
    await roost.start();
    first = apiClient(roost.url, roost.token);
    const created = await first.call<Api.CreatedAccount>("POST", "/v1/accounts", {
      name: "byo",
    });
    secondToken = created.token;
    second = apiClient(roost.url, () => secondToken);
    metricsPort = await findFreePort([
      roost.ports.api,
      roost.ports.ingress,
      roost.ports.admin,
      roost.ports.node,
      roost.ports.service,
    ]);
  });
  afterAll(async () => {
    await machine?.stop();
    await roost?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(machineRoot, { recursive: true, force: true });
  });

  async function turn(client: ReturnType<typeof apiClient>, conversationId: string, text: string) {
    const before = (await client.steps(conversationId)).filter(
      (step) => step.kind === "reply",
    ).length;
    await client.send(conversationId, text);
    const steps = await client.waitForSteps(conversationId, "reply", before + 1, 90_000);
    const tool = steps.filter((step) => step.kind === "tool").at(-1);
    const reply = steps.filter((step) => step.kind === "reply").at(-1);
    return { tool: tool as TestStep, reply: String(reply?.payload.text) };
  }
  async function conversation(client: ReturnType<typeof apiClient>, name: string) {
    const bot = await client.createBot(name);
    return (await client.createConversation(bot.id)).id;
  }
  const stdout = (step: TestStep) => String((step.payload.details as { stdout?: string }).stdout);
  const computer = (client: ReturnType<typeof apiClient>) =>
    client.call<Api.Computer>("GET", "/v1/computers/me");
  const register = () =>
    second.call<Api.SelfHostedRegistration>("POST", "/v1/computers/me/self-hosted");
  const waitConnected = (connected: boolean, what: string) =>
    waitFor(async () => (await computer(second)).connected === connected, {
      timeoutMs: 30_000,
      what,
    });
  function start(args: string[], env: Record<string, string> = {}) {
    machine = startRoostWorker({
      args: [
        "--server",
        roost.url,
        "--workspace",
        workspace,
        "--metrics-port",
        String(metricsPort),
        ...args,
      ],
      home,
      env,
    });
    return machine;
  }
  async function stopMachine() {
    await machine?.stop();
    machine = undefined;
    await waitConnected(false, "the machine to be disconnected");
  }

  let firstConversation: string;
  let secondConversation: string;
  let firstWorkspace: string;
  let token: string;

  it("`roost worker` on another folder of this host serves the second account's bot; the first account keeps its own computer", async () => {
    firstConversation = await conversation(first, "hosted-bot");
    const mine = await turn(first, firstConversation, "$ pwd && echo first > mine && cat mine");
    expect(mine.tool.payload).toMatchObject({ name: "shell", isError: false });
    firstWorkspace = stdout(mine.tool).split("\n")[0] ?? "";
    expect(firstWorkspace).not.toBe("");

    // The second account uses its hosted computer first: that disk must survive the switch.
    secondConversation = await conversation(second, "machine-bot");
    const hosted = await turn(second, secondConversation, "$ echo on-the-hosted-disk > h && pwd");
    expect(hosted.tool.payload).toMatchObject({ isError: false });
    const secondHostedWorkspace = stdout(hosted.tool).trim();

    const registration = await register();
    token = registration.token;
    expect(registration.serverUrl).toBe(roost.url);
    expect(registration.command).toBe(`npx roost worker --server ${roost.url} --token ${token}`);
    expect(await computer(second)).toMatchObject({
      kind: "self-hosted",
      state: "disconnected",
      connected: false,
    });

    start(["--token", token]);
    await waitConnected(true, "the machine's worker to connect");
    expect(await computer(second)).toMatchObject({ kind: "self-hosted", state: "connected" });

    const ran = await turn(second, secondConversation, "$ pwd && echo hi > f && cat f");
    expect(ran.tool.payload).toMatchObject({
      name: "shell",
      isError: false,
      details: { exitCode: 0, stdout: `${workspace}\nhi\n` },
    });
    expect(ran.reply).toContain(workspace);
    expect(ran.reply).toContain("hi");
    expect(readFileSync(join(workspace, "f"), "utf8")).toBe("hi\n");
    expect(secondHostedWorkspace).not.toBe(workspace);

    // The first account's computer is its own: its workspace, its files, no `f`.
    const still = await turn(first, firstConversation, "$ pwd && cat mine && (cat f 2>&1 || true)");
    expect(stdout(still.tool)).toMatch(new RegExp(`^${firstWorkspace}\\nfirst\\n`));
    expect(stdout(still.tool)).not.toContain("hi");
    const firstComputer = await computer(first);
    expect(firstComputer).toMatchObject({ kind: "hosted" });
    expect(firstComputer.id).not.toBe((await computer(second)).id);
    // The first account's token cannot touch the second's machine.
    const foreign = await fetch(`${roost.url}/v1/computers/me/self-hosted`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${roost.token()}` },
    });
    expect(foreign.status).toBe(404);
    const firstFiles = await first.call<Api.Listing>("GET", "/v1/computers/me/files");
    expect(firstFiles.entries.map((entry) => entry.name)).not.toContain("f");
    expect((await computer(second)).connected).toBe(true);
  });

  it("serves /healthz, /readyz and /metrics on its local port", async () => {
    const base = `http://127.0.0.1:${metricsPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain("\nroost_worker_connected 1\n");
    expect(metrics).toMatch(/\nroost_worker_last_frame_age_seconds \d+\.\d+\n/);
    expect(metrics).toMatch(/\nroost_worker_connect_attempts_total [1-9]\d*\n/);
    expect(metrics).toMatch(/\nroost_worker_calls_total\{tool="shell",outcome="ok"\} [1-9]\d*\n/);
    expect(metrics).not.toContain(token);
  });

  it("a stolen token cannot take over the connected machine, and API tokens are no worker tokens: both refused at the gateway and logged", async () => {
    const gatewayUrl = `${roost.url.replace(/^http/, "ws")}/v1/gateway`;
    const thief = await rawClient(gatewayUrl, token);
    expect(thief.opened).toEqual({ ok: true });
    thief.hello({ workerId: "wrk_thief" });
    expect((await thief.closed).code).toBe(4006);
    expect((await computer(second)).connected).toBe(true);
    for (const apiToken of [roost.token(), secondToken]) {
      const refused = await rawClient(gatewayUrl, apiToken);
      expect(refused.opened).toMatchObject({ ok: false, status: 401 });
    }
    await waitFor(
      () =>
        roost
          .output()
          .includes("refused a hello from another worker while the current one answers") &&
        roost
          .output()
          .includes("refused a worker connection: its token is invalid, expired or revoked"),
      { what: "both refusals in the server log" },
    );
  });

  it("stopped, every computer tool answers the exact not-connected text; started again, it reconnects and the bot works", async () => {
    await stopMachine();
    expect(await computer(second)).toMatchObject({ state: "disconnected", connected: false });
    for (const text of ["$ echo unreachable", "ls", "read f"]) {
      const answered = await turn(second, secondConversation, text);
      expect(answered.tool.payload).toMatchObject({ isError: true, output: notConnectedMessage });
    }
    expect(notConnectedMessage).toBe(
      "Your computer (a self-hosted machine) is not connected. Start `roost worker` on it, then try again.",
    );
    start(["--token", token]);
    await waitConnected(true, "the restarted worker");
    const back = await turn(second, secondConversation, "$ cat f");
    expect(back.tool.payload).toMatchObject({ isError: false, details: { stdout: "hi\n" } });
  });

  it("a token rotated through the API reaches the running worker through its token file, without a restart", async () => {
    await stopMachine();
    const tokenFile = join(home, "worker-token");
    writeFileSync(tokenFile, `${token}\n`);
    chmodSync(tokenFile, 0o600);
    const running = start(["--token-file", tokenFile]);
    await waitConnected(true, "the worker with a token file");

    const rotated = await register();
    expect(rotated.rotated).toBe(true);
    // The old token stopped at once: the worker was cut off and its redial is refused.
    await waitFor(() => running.output().includes("refused the token"), {
      timeoutMs: 30_000,
      what: "the worker's redial with the old token to be refused",
    });
    expect((await computer(second)).connected).toBe(false);
    writeFileSync(tokenFile, `${rotated.token}\n`);
    token = rotated.token;
    await waitConnected(true, "the same worker, with the new token from the file");
    expect(running.child.exitCode).toBeNull();
    expect(machine).toBe(running);
    const after = await turn(second, secondConversation, "$ echo after-rotation");
    expect(stdout(after.tool)).toBe("after-rotation\n");
  });

  it("dials out through an HTTP CONNECT proxy given in HTTP_PROXY", async () => {
    await stopMachine();
    const proxy = await startConnectProxy();
    try {
      start(["--token", token], { HTTP_PROXY: proxy.url, NO_PROXY: "" });
      await waitConnected(true, "the worker through the proxy");
      expect(proxy.tunnels).toContain(`127.0.0.1:${roost.ports.api}`);
      expect(machine?.output()).toContain(`through the proxy ${proxy.url}`);
      const proxied = await turn(second, secondConversation, "$ echo through-the-proxy");
      expect(stdout(proxied.tool)).toBe("through-the-proxy\n");
    } finally {
      await stopMachine();
      await proxy.close();
    }
  });

  it("DELETE disconnects the worker at once, its token is refused (and logged), and the bot is back on the hosted computer and its disk", async () => {
    const running = start(["--token", token]);
    await waitConnected(true, "the worker before the DELETE");
    const removed = await second.call<Api.Computer>("DELETE", "/v1/computers/me/self-hosted");
    expect(removed).toMatchObject({ kind: "hosted", connected: false });
    await waitFor(() => /disconnected \(4005/.test(running.output()), {
      what: "the worker to be told it was disconnected",
    });
    await waitFor(() => running.output().includes("refused the token"), {
      timeoutMs: 30_000,
      what: "the revoked token to be refused",
    });
    expect(roost.output()).toContain(
      "refused a worker connection: its token is invalid, expired or revoked",
    );
    expect((await computer(second)).connected).toBe(false);

    const hosted = await turn(second, secondConversation, "$ pwd && cat h && ls");
    expect(hosted.tool.payload).toMatchObject({ isError: false });
    expect(stdout(hosted.tool)).not.toContain(workspace);
    expect(stdout(hosted.tool)).toContain("on-the-hosted-disk\n");
    expect(stdout(hosted.tool).split("\n")).not.toContain("f");
  });
});
