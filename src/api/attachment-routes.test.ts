/**
 * The attachments API (attachment-routes.ts) against a real SQLite store and a local blob store:
 * the owner lists and downloads; another account's conversation and another conversation's
 * attachment answer 404 like missing ones (AAPI1); downloads are served as downloads with a safe
 * name, and HTML never comes back as a page (AAPI2).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createLocalBlobStore, type BlobStore } from "../blobs/index.ts";
import { createEventHub } from "../events/index.ts";
import type { Api } from "../protocol/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let blobs: BlobStore;
let app: ReturnType<typeof createApi>;
let alice: { id: string; token: string };
let bob: { id: string; token: string };

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-attachments-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  blobs = createLocalBlobStore(join(dir, "blobs"));
  app = createApi({
    store,
    events: createEventHub(),
    kick: async () => undefined,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 65_536,
    interrupt: () => false,
    attachments: { blobs },
  });
  const account = async (name: string) => {
    const created = await store.createAccount({ name, isAdmin: false });
    return { id: created.id, token: (await issueApiToken(store, created.id, "test")).token };
  };
  alice = await account("alice");
  bob = await account("bob");
});
afterEach(async () => {
  await store.close();
  await blobs.close();
  await rm(dir, { recursive: true, force: true });
});

const get = (who: { token: string }, path: string) =>
  app.request(path, { headers: { authorization: `Bearer ${who.token}` } });

async function conversationWith(
  owner: { id: string },
  files: { id: string; name: string; mimeType: string; bytes: Buffer }[],
) {
  const bot = await store.createBot({
    accountId: owner.id,
    name: `b${Math.random()}`,
    instructions: "",
    model: null,
  });
  const conversation = await store.createConversation({
    accountId: owner.id,
    botId: bot.id,
    title: "t",
  });
  for (const file of files) {
    const blobKey = `attachments/${owner.id}/${bot.id}/${conversation.id}/${file.id}`;
    await blobs.put(blobKey, file.bytes);
    await store.putAttachment({
      id: file.id,
      accountId: owner.id,
      conversationId: conversation.id,
      turnId: "turn_1",
      callId: "call_1",
      kind: file.mimeType.startsWith("image/") ? "screenshot" : "download",
      name: file.name,
      mimeType: file.mimeType,
      size: file.bytes.length,
      blobKey,
    });
  }
  return conversation;
}

describe("attachments API", () => {
  it("lists a conversation's attachments and downloads each", async () => {
    const png = Buffer.from("89504e470d0a1a0a", "hex");
    const conversation = await conversationWith(alice, [
      { id: "att_png", name: "browser-screenshot-1.png", mimeType: "image/png", bytes: png },
      {
        id: "att_pdf",
        name: "report.pdf",
        mimeType: "application/pdf",
        bytes: Buffer.from("%PDF"),
      },
    ]);
    const listed = await get(alice, `/v1/conversations/${conversation.id}/attachments`);
    expect(listed.status).toBe(200);
    const body = (await listed.json()) as Api.AttachmentList;
    expect(body.attachments.map((item) => [item.id, item.kind, item.name, item.size])).toEqual([
      ["att_png", "screenshot", "browser-screenshot-1.png", 8],
      ["att_pdf", "download", "report.pdf", 4],
    ]);
    const image = await get(alice, `/v1/conversations/${conversation.id}/attachments/att_png`);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await image.arrayBuffer())).toEqual(png);
    const pdf = await get(alice, `/v1/conversations/${conversation.id}/attachments/att_pdf`);
    expect(pdf.headers.get("content-type")).toBe("application/octet-stream");
    expect(pdf.headers.get("content-disposition")).toBe(
      `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`,
    );
    expect(await pdf.text()).toBe("%PDF");
  });

  it("answers 404 for another account's conversation and for another conversation's attachment (AAPI1)", async () => {
    const mine = await conversationWith(alice, [
      { id: "att_a", name: "a.png", mimeType: "image/png", bytes: Buffer.from("a") },
    ]);
    const theirs = await conversationWith(bob, [
      { id: "att_b", name: "b.png", mimeType: "image/png", bytes: Buffer.from("b") },
    ]);
    const list = await get(bob, `/v1/conversations/${mine.id}/attachments`);
    expect(list.status).toBe(404);
    const missing = await get(bob, `/v1/conversations/conv_missing/attachments`);
    expect(missing.status).toBe(404);
    const [listBody, missingBody] = (await Promise.all([list.json(), missing.json()])) as {
      error: { code: string; message: string };
    }[];
    expect(listBody!.error.code).toBe(missingBody!.error.code);
    expect(listBody!.error.message).toBe(
      missingBody!.error.message.replace("conv_missing", mine.id),
    );
    expect((await get(bob, `/v1/conversations/${mine.id}/attachments/att_a`)).status).toBe(404);
    // Bob's own conversation does not open Alice's attachment either.
    const crossed = await get(bob, `/v1/conversations/${theirs.id}/attachments/att_a`);
    expect(crossed.status).toBe(404);
    expect((await get(alice, `/v1/conversations/${mine.id}/attachments/att_b`)).status).toBe(404);
    expect((await get(alice, `/v1/conversations/${mine.id}/attachments/att_a`)).status).toBe(200);
  });

  it("serves HTML as a download, never as a page, with a name that cannot break the header (AAPI2)", async () => {
    const conversation = await conversationWith(alice, [
      {
        id: "att_html",
        name: 'evil"\r\nSet-Cookie: x=1;.html',
        mimeType: "text/html",
        bytes: Buffer.from("<script>alert(1)</script>"),
      },
    ]);
    const response = await get(alice, `/v1/conversations/${conversation.id}/attachments/att_html`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/octet-stream");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    expect(response.headers.get("set-cookie")).toBeNull();
    expect(response.headers.get("content-disposition")).toMatch(/^attachment; filename="evil__/);
  });

  it("deleting a conversation or a bot deletes its attachments and their blobs (AAPI3)", async () => {
    const conversation = await conversationWith(alice, [
      { id: "att_gone", name: "a.png", mimeType: "image/png", bytes: Buffer.from("a") },
    ]);
    const kept = await conversationWith(alice, [
      { id: "att_kept", name: "k.png", mimeType: "image/png", bytes: Buffer.from("k") },
    ]);
    const remove = (path: string) =>
      app.request(path, { method: "DELETE", headers: { authorization: `Bearer ${alice.token}` } });
    expect((await remove(`/v1/conversations/${conversation.id}`)).status).toBe(204);
    expect((await get(alice, `/v1/conversations/${conversation.id}/attachments`)).status).toBe(404);
    expect(await store.getAttachment("att_gone")).toBeUndefined();
    const left = (await blobs.list(`attachments/${alice.id}/`)).map((blob) => blob.key);
    expect(left).toEqual([(await store.getAttachment("att_kept"))!.blobKey]);
    expect((await remove(`/v1/bots/${kept.botId}`)).status).toBe(204);
    expect(await blobs.list(`attachments/${alice.id}/`)).toEqual([]);
  });
});
