/**
 * The platform's wiring of attachments and of `web_fetch`'s `save_to`, through a REAL gateway and
 * a REAL worker process (the files operations, as the computer's user), a real SQLite store and a
 * local blob store. A tool source stands in for the browser (its `downloads` and `recording`
 * fields); paths it names are attacks too: a symlink out of the workspace, a path outside it,
 * `..` (ATT3: only what the files API could read).
 */
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../test/support/wait.ts";
import { z } from "zod";
import { createLocalBlobStore, type BlobStore } from "../blobs/index.ts";
import { resolveConfig } from "../config/index.ts";
import { createMemoryDurable } from "../engine/testing/index.ts";
import {
  spawnWorker,
  startTestGateway,
  waitForWorkerProcess,
  type TestGateway,
  type WorkerProcess,
} from "../gateway/testing/index.ts";
import type { Api } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter, defineToolSource, serverTool, type ToolResult } from "../tools/index.ts";
import { withConversationAttachments } from "./attachments.ts";
import { createWebToolSource } from "./web-tools.ts";

describe("attachments and save_to through a real worker", () => {
  let dir: string;
  let gw: TestGateway;
  let worker: WorkerProcess | undefined;
  let store: Store;
  let blobs: BlobStore;
  let page: Server;
  let turn: { accountId: string; botId: string; conversationId: string; turnId: string };
  let workspace: string;
  let computerId: string;
  let browserResult: ToolResult = { output: "", isError: false };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-platform-attachments-"));
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    blobs = createLocalBlobStore(join(dir, "blobs"));
    gw = await startTestGateway();
    const account = await store.createAccount({ name: "a", isAdmin: false });
    const bot = await store.createBot({
      accountId: account.id,
      name: "b",
      instructions: "",
      model: null,
    });
    const conversation = await store.createConversation({
      accountId: account.id,
      botId: bot.id,
      title: "t",
    });
    turn = { accountId: account.id, botId: bot.id, conversationId: conversation.id, turnId: "t1" };
    computerId = (await store.ensureComputer(account.id, "process")).id;
    const root = join(dir, "computer");
    workspace = join(root, "workspace");
    const dirs = {
      root,
      stateDir: join(root, "state"),
      workspace,
      home: join(root, "home"),
      remove: () => undefined,
    };
    for (const folder of [dirs.stateDir, dirs.workspace, dirs.home])
      mkdirSync(folder, { recursive: true });
    gw.tokens.set("token-1", computerId);
    worker = spawnWorker({ gatewayUrl: gw.url, token: "token-1", dirs });
    await waitForWorkerProcess(gw.gateway, computerId, worker);
    page = createServer((_request, response) => {
      response.setHeader("content-type", "application/pdf");
      response.end("%PDF-1.7 fetched");
    });
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    await gw?.close();
    await new Promise((resolve) => page?.close(resolve));
    await store?.close();
    await blobs?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const request = (callId: string) => ({
    ...turn,
    callId,
    durable: createMemoryDurable(),
    signal: new AbortController().signal,
  });
  const fakeBrowser = defineToolSource("browser", [
    serverTool({
      name: "browser",
      description: "A stand-in for the browser tool.",
      input: z.looseObject({}),
      run: async () => browserResult,
    }),
  ]);

  it("copies a download and a recording from the computer; refuses symlinks, outside paths and ..", async () => {
    mkdirSync(join(workspace, "downloads"), { recursive: true });
    writeFileSync(join(workspace, "downloads", "report.csv"), "a,b\n1,2\n");
    writeFileSync(join(workspace, "downloads", "task.webm"), "webm-frames");
    symlinkSync("/etc/passwd", join(workspace, "downloads", "passwd"));
    browserResult = {
      output: "Clicked.",
      isError: false,
      details: {
        downloads: [
          { path: "/workspace/downloads/report.csv", name: "report.csv", size: 8 },
          { path: "downloads/report.csv", name: "relative.csv", size: 8 },
          { path: "/workspace/downloads/passwd", name: "passwd", size: 100 },
          { path: "/etc/passwd", name: "passwd-direct", size: 100 },
          { path: "/workspace/../etc/passwd", name: "dotdot", size: 100 },
        ],
        recording: { path: "/workspace/downloads/task.webm", frames: 3 },
      },
    };
    const tools = withConversationAttachments(createToolRouter({ sources: [fakeBrowser] }), {
      store,
      blobs,
      gateway: gw.gateway,
      providerKind: "process",
    });
    await tools.specs(turn);
    const result = await tools.execute("browser", { action: "click" }, request("call_dl"));
    expect(result.isError).toBe(false);
    const kept = result.details?.attachments as Api.Attachment[];
    expect(kept.map((item) => [item.kind, item.name, item.size])).toEqual([
      ["download", "report.csv", 8],
      ["download", "relative.csv", 8],
      ["recording", "task.webm", 11],
    ]);
    const skipped = result.details?.attachmentsSkipped as { name: string; reason: string }[];
    expect(skipped.map((item) => item.name)).toEqual(["passwd", "passwd-direct", "dotdot"]);
    expect(skipped[0]!.reason).toMatch(/symlink|symbolic link/i);
    expect(skipped[1]!.reason).toMatch(/is not a file in \/workspace/);
    expect(skipped[2]!.reason).toMatch(/`\.` or `\.\.` component/);
    const rows = await store.listAttachments(turn.conversationId);
    const csv = rows.find((row) => row.name === "report.csv")!;
    const stream = await blobs.get(csv.blobKey);
    const chunks: Buffer[] = [];
    for await (const chunk of stream!) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe("a,b\n1,2\n");
    expect(JSON.stringify(rows)).not.toContain("root:");
  });

  it("web_fetch saves raw bytes into the awake computer, not through a symlink, and refuses a sleeping one", async () => {
    await store.setNetworkPolicy(computerId, { mode: "allowlist-only", allow: ["files.example"] });
    const port = (page.address() as AddressInfo).port;
    const source = createWebToolSource(resolveConfig({}, {}), {
      store,
      gateway: gw.gateway,
      providerKind: "process",
      platformPorts: () => [],
      // The page server is on 127.0.0.1, which the checks refuse: name a public address, route it here.
      fetcher: {
        resolve: async () => ["93.184.215.14"],
        connect: () => connect(port, "127.0.0.1"),
      },
    });
    const tools = createToolRouter({ sources: [source] });
    await tools.specs(turn);
    const fetchTo = (saveTo: string, callId: string) =>
      tools.execute(
        "web_fetch",
        { url: "http://files.example/report.pdf", format: "raw", save_to: saveTo },
        request(callId),
      );
    const saved = await fetchTo("/workspace/downloads/fetched.pdf", "call_f1");
    expect(saved.output).toMatch(
      /Saved http:\/\/files\.example\/report\.pdf \(200, application\/pdf, 16 bytes\) to \/workspace\/downloads\/fetched\.pdf/,
    );
    expect(readFileSync(join(workspace, "downloads", "fetched.pdf"), "utf8")).toBe(
      "%PDF-1.7 fetched",
    );
    // WF6: the fetch is in the computer's egress log, like a request through its proxy.
    await waitFor(
      async () =>
        (await store.listAudit({ limit: 50 })).find(
          (entry) =>
            entry.action === "egress.allowed" &&
            entry.target === computerId &&
            entry.detail.method === "WEB_FETCH" &&
            entry.detail.host === "files.example",
        ),
      { what: "the web_fetch audit row" },
    );

    const outside = mkdtempSync(join(tmpdir(), "roost-outside-"));
    symlinkSync(outside, join(workspace, "out"));
    const through = await fetchTo("out/evil.pdf", "call_f2");
    expect(through.isError).toBe(true);
    expect(through.output).toMatch(/Could not save to \/workspace\/out\/evil\.pdf/);
    expect(() => readFileSync(join(outside, "evil.pdf"))).toThrow();
    rmSync(outside, { recursive: true, force: true });

    expect((await fetchTo("../etc/x", "call_f3")).output).toMatch(
      /is not a file path in \/workspace/,
    );
    await store.setNetworkPolicy(computerId, { mode: "allowlist-only", allow: [] });
    expect((await fetchTo("downloads/denied.pdf", "call_f4")).output).toMatch(
      /not on this computer's allowlist/,
    );

    await worker!.stop();
    worker = undefined;
    await store.setNetworkPolicy(computerId, { mode: "allowlist-only", allow: ["files.example"] });
    const asleep = await fetchTo("downloads/later.pdf", "call_f5");
    expect(asleep.output).toMatch(/The computer is asleep, and web_fetch does not wake it/);
  });
});
