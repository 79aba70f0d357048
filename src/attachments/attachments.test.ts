/**
 * Attachments at the router seam, with a real SQLite store and a real local blob store. A tool
 * source stands in for the browser and read tools (their result shapes: media, `details.downloads`,
 * `details.recording`); `readFile` stands in for the worker's file operations, reading a folder
 * the test fills (the e2e test runs the real worker).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createLocalBlobStore, type BlobStore } from "../blobs/index.ts";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createToolRouter, defineToolSource, serverTool, type ToolResult } from "../tools/index.ts";
import { attachmentIdOf, withAttachments } from "./collect.ts";
import { withBrowserRecording } from "./recording.ts";

const png = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");

describe("attachments from tool results", () => {
  let dir: string;
  let store: Store;
  let blobs: BlobStore;
  let turn: { accountId: string; botId: string; conversationId: string; turnId: string };
  let runs = 0;
  let results: Record<string, ToolResult>;
  const seenInputs: unknown[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-attachments-"));
    mkdirSync(join(dir, "workspace", "downloads"), { recursive: true });
    store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    blobs = createLocalBlobStore(join(dir, "blobs"));
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
    runs = 0;
    seenInputs.length = 0;
    results = {};
  });
  afterEach(async () => {
    await store.close();
    await blobs.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const source = () =>
    defineToolSource("fake", [
      ...["browser", "read", "shell"].map((name) =>
        serverTool({
          name,
          description: `A stand-in for ${name}.`,
          input: z.looseObject({}),
          run: async (input) => {
            runs += 1;
            seenInputs.push(input);
            return results[name] ?? { output: "nothing", isError: false };
          },
        }),
      ),
    ]);

  function router(options: { maxFileBytes?: number; recording?: boolean } = {}) {
    return withAttachments(
      withBrowserRecording(createToolRouter({ sources: [source()] }), {
        isRecording: async () => options.recording === true,
      }),
      {
        store,
        blobs,
        readFile: async (_accountId, path) => {
          const bytes = await readFile(join(dir, "workspace", path.replace(/^\/workspace\//, "")));
          return {
            size: bytes.length,
            body: Readable.toWeb(Readable.from([bytes])) as ReadableStream<Uint8Array>,
          };
        },
        ...(options.maxFileBytes === undefined ? {} : { maxFileBytes: options.maxFileBytes }),
      },
    );
  }
  const request = (durable = createMemoryDurable(), callId = "call_1") => ({
    ...turn,
    callId,
    durable,
    signal: new AbortController().signal,
  });
  const blobBytes = async (key: string) => {
    const stream = await blobs.get(key);
    if (stream === undefined) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  it("keeps a browser screenshot and a read image, leaving the model's view unchanged (ATT4)", async () => {
    results.browser = {
      output: "Screenshot of the page.",
      isError: false,
      media: [{ type: "image", mimeType: "image/png", data: png.toString("base64") }],
      details: { action: "screenshot" },
    };
    results.read = {
      output: "Read image shot.jpeg",
      isError: false,
      media: [{ type: "image", mimeType: "image/jpeg", data: png.toString("base64") }],
      details: { path: "pics/shot.jpeg" },
    };
    const tools = router();
    await tools.specs(turn);
    const shot = await tools.execute("browser", { action: "screenshot" }, request());
    expect(shot.output).toBe("Screenshot of the page.");
    expect(shot.media).toHaveLength(1);
    const [attachment] = shot.details?.attachments as { id: string; kind: string; name: string }[];
    expect(attachment).toMatchObject({
      id: attachmentIdOf("call_1", 0),
      kind: "screenshot",
      name: "browser-screenshot-1.png",
      mimeType: "image/png",
      size: png.length,
    });
    const read = await tools.execute(
      "read",
      { path: "pics/shot.jpeg" },
      request(undefined, "call_2"),
    );
    expect(read.details?.attachments).toMatchObject([{ kind: "image", name: "shot.jpeg" }]);
    const stored = await store.listAttachments(turn.conversationId);
    expect(stored.map((row) => row.kind)).toEqual(["screenshot", "image"]);
    expect(await blobBytes(stored[0]!.blobKey)).toEqual(png);
    expect(stored[0]!.blobKey).toBe(
      `attachments/${turn.accountId}/${turn.botId}/${turn.conversationId}/${attachmentIdOf("call_1", 0)}`,
    );
  });

  it("a replayed call copies nothing again; a retried step stores nothing twice (ATT1, ATS1)", async () => {
    writeFileSync(join(dir, "workspace", "downloads", "report.pdf"), "%PDF-1.7 one");
    results.browser = {
      output: "Downloaded report.pdf",
      isError: false,
      details: {
        downloads: [{ path: "/workspace/downloads/report.pdf", name: "report.pdf", size: 12 }],
      },
    };
    const tools = router();
    await tools.specs(turn);
    const first = createMemoryDurable();
    const once = await tools.execute("browser", { action: "click" }, request(first));
    expect(once.details?.attachments).toMatchObject([
      { kind: "download", name: "report.pdf", mimeType: "application/pdf", size: 12 },
    ]);
    // Replay from the journal: neither the tool nor the copy runs again.
    writeFileSync(join(dir, "workspace", "downloads", "report.pdf"), "%PDF-1.7 changed!");
    const replayed = createMemoryDurable({ journal: first.journal });
    const again = await tools.execute("browser", { action: "click" }, request(replayed));
    expect(replayed.steps).toEqual([]);
    expect(again.details?.attachments).toEqual(once.details?.attachments);
    // The attachments step retried without its journal entry (a crash mid-way): same id, one row.
    const retried = await tools.execute("browser", { action: "click" }, request());
    expect(retried.details?.attachments).toMatchObject([{ id: attachmentIdOf("call_1", 0) }]);
    expect(await store.listAttachments(turn.conversationId)).toHaveLength(1);
    expect(runs).toBe(2);
  });

  it("skips a download over the limit and a missing one, saying why (ATT2)", async () => {
    writeFileSync(join(dir, "workspace", "downloads", "big.zip"), Buffer.alloc(5000));
    writeFileSync(join(dir, "workspace", "downloads", "small.txt"), "hello");
    results.browser = {
      output: "Downloaded three files",
      isError: false,
      details: {
        downloads: [
          { path: "/workspace/downloads/big.zip", name: "big.zip", size: 5000 },
          { path: "/workspace/downloads/gone.txt", name: "gone.txt", size: 3 },
          { path: "/workspace/downloads/small.txt", name: "small.txt", size: 5 },
        ],
      },
    };
    const tools = router({ maxFileBytes: 1000 });
    await tools.specs(turn);
    const result = await tools.execute("browser", { action: "click" }, request());
    expect(result.isError).toBe(false);
    expect(result.details?.attachments).toMatchObject([{ name: "small.txt", size: 5 }]);
    expect(result.details?.attachmentsSkipped).toEqual([
      { name: "big.zip", reason: "5000 bytes, over the attachment limit of 1000" },
      { name: "gone.txt", reason: expect.stringMatching(/ENOENT/) },
    ]);
    expect(await blobs.list(`attachments/${turn.accountId}/`)).toHaveLength(1);
  });

  it("keeps a recording, and sets `record` only when the bot records (REC1)", async () => {
    writeFileSync(join(dir, "workspace", "downloads", "rec.webm"), "frames");
    results.browser = {
      output: "Navigated",
      isError: false,
      details: { recording: { path: "/workspace/downloads/rec.webm", frames: 12 } },
    };
    const off = router({ recording: false });
    await off.specs(turn);
    await off.execute("browser", { action: "navigate", url: "x", record: true }, request());
    expect(seenInputs.at(-1)).toEqual({ action: "navigate", url: "x" });
    const on = router({ recording: true });
    await on.specs(turn);
    const result = await on.execute(
      "browser",
      { action: "navigate", url: "x" },
      request(undefined, "call_9"),
    );
    expect(seenInputs.at(-1)).toEqual({ action: "navigate", url: "x", record: true });
    expect(result.details?.attachments).toMatchObject([
      { kind: "recording", name: "rec.webm", mimeType: "video/webm", size: 6 },
    ]);
    await on.execute("shell", { command: "ls", record: "x" }, request(undefined, "call_10"));
    expect(seenInputs.at(-1)).toEqual({ command: "ls", record: "x" });
  });

  it("keeps at most 20 attachments per call and cleans their names (ATT6)", async () => {
    results.browser = {
      output: "Many shots",
      isError: false,
      media: Array.from({ length: 22 }, () => ({
        type: "image" as const,
        mimeType: "image/png",
        data: png.toString("base64"),
      })),
      details: {
        downloads: [{ path: "/workspace/downloads/x", name: "a/../b\r\nc.txt", size: 1 }],
      },
    };
    writeFileSync(join(dir, "workspace", "downloads", "x"), "x");
    const tools = router();
    await tools.specs(turn);
    const result = await tools.execute("browser", { action: "screenshot" }, request());
    expect(result.details?.attachments).toHaveLength(20);
    const skipped = result.details?.attachmentsSkipped as { name: string; reason: string }[];
    expect(skipped.map((item) => item.name)).toEqual([
      "browser-screenshot-21.png",
      "browser-screenshot-22.png",
      "a_.._b__c.txt",
    ]);
    expect(skipped[0]!.reason).toBe("over the limit of 20 attachments per call");
  });

  it("results without media, downloads or recordings take no step", async () => {
    const tools = router();
    await tools.specs(turn);
    const durable = createMemoryDurable();
    await tools.execute("shell", { command: "ls" }, request(durable));
    expect(durable.steps).toEqual(["tool:shell"]);
    expect(await store.listAttachments(turn.conversationId)).toEqual([]);
  });
});
