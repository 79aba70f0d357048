/**
 * The uploads API (upload-routes.ts) against a real SQLite store and a local blob store: an
 * upload is stored and attached to a message by id (the message step names its path); another
 * account's upload or conversation answers 404 (UPL1); oversize bodies, a seventh file, unknown
 * types, bytes that are not their declared type and names with folders are refused with the
 * limit in the error, and nothing is stored for them (UPL2–UPL5).
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
import { uploadLimits } from "./upload-routes.ts";

let dir: string;
let store: Store;
let blobs: BlobStore;
let app: ReturnType<typeof createApi>;
let alice: { id: string; token: string };
let bob: { id: string; token: string };
let kicks: string[];

const png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.alloc(24, 1)]);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-uploads-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  blobs = createLocalBlobStore(join(dir, "blobs"));
  kicks = [];
  app = createApi({
    store,
    events: createEventHub(),
    kick: async (conversationId) => {
      kicks.push(conversationId);
    },
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

async function conversationOf(owner: { id: string }) {
  const bot = await store.createBot({
    accountId: owner.id,
    name: `b${Math.random()}`,
    instructions: "",
    model: null,
  });
  return store.createConversation({ accountId: owner.id, botId: bot.id, title: "t" });
}

const upload = (
  who: { token: string },
  conversationId: string,
  name: string,
  type: string,
  body: string | Buffer | ReadableStream<Uint8Array>,
  headers: Record<string, string> = {},
) =>
  app.request(`/v1/conversations/${conversationId}/uploads?name=${encodeURIComponent(name)}`, {
    method: "POST",
    headers: { authorization: `Bearer ${who.token}`, "content-type": type, ...headers },
    body,
    // Node's fetch needs this for a streamed body.
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
  });

const post = (who: { token: string }, conversationId: string, body: unknown) =>
  app.request(`/v1/conversations/${conversationId}/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${who.token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

async function uploaded(response: Response): Promise<Api.Upload> {
  expect(response.status).toBe(201);
  return (await response.json()) as Api.Upload;
}

async function storedBlobs(): Promise<string[]> {
  return (await blobs.list("attachments/")).map((blob) => blob.key);
}

describe("uploads API", () => {
  it("stores an upload and attaches it to a message, whose step names its path on the computer", async () => {
    const conversation = await conversationOf(alice);
    const image = await uploaded(await upload(alice, conversation.id, "cat.png", "image/png", png));
    expect(image).toMatchObject({
      kind: "upload",
      name: "cat.png",
      mimeType: "image/png",
      size: png.length,
      path: `/workspace/attachments/${conversation.id}/cat.png`,
    });
    // The same name again is made unique (UPL4): one upload never overwrites another on the computer.
    const second = await uploaded(
      await upload(alice, conversation.id, "cat.png", "image/png", png),
    );
    expect(second.path).toBe(`/workspace/attachments/${conversation.id}/cat (2).png`);
    const notes = await uploaded(
      await upload(alice, conversation.id, "notes.txt", "text/plain; charset=utf-8", "hello"),
    );
    expect(notes.mimeType).toBe("text/plain");
    const audited = (await store.listAudit({ accountId: alice.id })).filter(
      (entry) => entry.action === "conversation.upload",
    );
    expect(audited.map((entry) => entry.detail.name)).toEqual(
      expect.arrayContaining(["cat.png", "cat (2).png", "notes.txt"]),
    );

    const sent = await post(alice, conversation.id, {
      text: "what is this?",
      clientMessageId: "m1",
      attachments: [image.id, notes.id],
    });
    expect(sent.status).toBe(202);
    expect(kicks).toEqual([conversation.id]);
    const [message] = await store.listMessages(conversation.id);
    expect(message?.attachments?.map((file) => file.path)).toEqual([image.path, notes.path]);
    const steps = await store.listSteps(conversation.id);
    const payload = steps[0]?.payload as unknown as Api.MessagePayload;
    expect(payload.attachments).toEqual([
      { id: image.id, name: "cat.png", mimeType: "image/png", size: png.length, path: image.path },
      { id: notes.id, name: "notes.txt", mimeType: "text/plain", size: 5, path: notes.path },
    ]);
    // An attachment-only message needs no text.
    const only = await post(alice, conversation.id, {
      text: "",
      clientMessageId: "m2",
      attachments: [second.id],
    });
    expect(only.status).toBe(202);
    const empty = await post(alice, conversation.id, { text: "", clientMessageId: "m3" });
    expect(empty.status).toBe(400);
    // The upload downloads through the attachments API, like any attachment.
    const download = await app.request(
      `/v1/conversations/${conversation.id}/attachments/${image.id}`,
      { headers: { authorization: `Bearer ${alice.token}` } },
    );
    expect(Buffer.from(await download.arrayBuffer())).toEqual(png);
    const limits = await app.request("/v1/uploads/limits", {
      headers: { authorization: `Bearer ${alice.token}` },
    });
    expect(((await limits.json()) as Api.UploadLimits).maxPerMessage).toBe(6);
  });

  it("another account's upload cannot be attached, and its conversation takes no uploads (404)", async () => {
    const mine = await conversationOf(alice);
    const theirs = await conversationOf(bob);
    const bobs = await uploaded(await upload(bob, theirs.id, "secret.png", "image/png", png));
    const attached = await post(alice, mine.id, {
      text: "look",
      clientMessageId: "m1",
      attachments: [bobs.id],
    });
    expect(attached.status).toBe(404);
    expect(((await attached.json()) as Api.ErrorBody).error.message).toContain(bobs.id);
    // Nor can Alice attach Bob's upload inside Bob's conversation, or upload into it.
    expect(
      (await post(alice, theirs.id, { text: "x", clientMessageId: "m", attachments: [bobs.id] }))
        .status,
    ).toBe(404);
    expect((await upload(alice, theirs.id, "a.png", "image/png", png)).status).toBe(404);
    // An upload of another of Alice's own conversations is not this conversation's either.
    const other = await conversationOf(alice);
    const elsewhere = await uploaded(await upload(alice, other.id, "a.png", "image/png", png));
    expect(
      (
        await post(alice, mine.id, {
          text: "x",
          clientMessageId: "m2",
          attachments: [elsewhere.id],
        })
      ).status,
    ).toBe(404);
    // A tool's attachment (a screenshot) is no upload.
    await store.putAttachment({
      id: "att_tool",
      accountId: alice.id,
      conversationId: mine.id,
      turnId: "t",
      callId: "c",
      kind: "screenshot",
      name: "s.png",
      mimeType: "image/png",
      size: 1,
      blobKey: "k",
    });
    expect(
      (await post(alice, mine.id, { text: "x", clientMessageId: "m3", attachments: ["att_tool"] }))
        .status,
    ).toBe(404);
    expect(await store.listMessages(mine.id)).toEqual([]);
  });

  it("a seventh attachment is refused with the limit in the error", async () => {
    const conversation = await conversationOf(alice);
    const ids: string[] = [];
    for (let index = 0; index < 7; index++)
      ids.push(
        (await uploaded(await upload(alice, conversation.id, `f${index}.txt`, "text/plain", "x")))
          .id,
      );
    const refused = await post(alice, conversation.id, {
      text: "seven",
      clientMessageId: "m1",
      attachments: ids,
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as Api.ErrorBody).error.message).toBe(
      "a message takes at most 6 attachments; this one names 7",
    );
    const twice = await post(alice, conversation.id, {
      text: "twice",
      clientMessageId: "m2",
      attachments: [ids[0], ids[0]],
    });
    expect(twice.status).toBe(400);
    expect(
      (
        await post(alice, conversation.id, {
          text: "six",
          clientMessageId: "m3",
          attachments: ids.slice(0, 6),
        })
      ).status,
    ).toBe(202);
  });

  it("an oversize upload gets 413 with the limit, declared or streamed, and leaves nothing stored", async () => {
    const conversation = await conversationOf(alice);
    const declared = await upload(alice, conversation.id, "big.pdf", "application/pdf", "%PDF-", {
      "content-length": String(uploadLimits.maxBytes + 1),
    });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as Api.ErrorBody).error.message).toContain("26214400 bytes");
    // No length: the stream is cut past the limit.
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(Buffer.from("%PDF-"));
        if (sent > uploadLimits.maxBytes) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const streamed = await upload(alice, conversation.id, "big.pdf", "application/pdf", stream);
    expect(streamed.status).toBe(413);
    expect(((await streamed.json()) as Api.ErrorBody).error.message).toContain("26214400 bytes");
    expect(await storedBlobs()).toEqual([]);
    expect(await store.listAttachments(conversation.id)).toEqual([]);
  });

  it("refuses types that are not documents, images or audio, and images that are not images", async () => {
    const conversation = await conversationOf(alice);
    const program = await upload(
      alice,
      conversation.id,
      "setup.exe",
      "application/x-msdownload",
      "MZ",
    );
    expect(program.status).toBe(400);
    expect(((await program.json()) as Api.ErrorBody).error.message).toContain(
      "application/x-msdownload is not one of them",
    );
    const disguised = await upload(
      alice,
      conversation.id,
      "cat.png",
      "image/png",
      "<html><script>alert(1)</script></html>",
    );
    expect(disguised.status).toBe(400);
    expect(((await disguised.json()) as Api.ErrorBody).error.message).toContain(
      "the file is not image/png",
    );
    expect((await upload(alice, conversation.id, "a.png", "", png)).status).toBe(400);
    expect((await upload(alice, conversation.id, "empty.txt", "text/plain", "")).status).toBe(400);
    const audio = await upload(alice, conversation.id, "memo.mp3", "audio/mpeg", "ID3");
    expect(audio.status).toBe(201);
    expect(await storedBlobs()).toHaveLength(1);
  });

  it("a name with a folder, .. or a control character is refused: it cannot leave the conversation's folder", async () => {
    const conversation = await conversationOf(alice);
    for (const name of ["../../.bashrc", "..", "a/b.txt", "..\\x.txt", "a\nb.txt", " "]) {
      const refused = await upload(alice, conversation.id, name, "text/plain", "x");
      expect(refused.status, name).toBe(400);
      expect(((await refused.json()) as Api.ErrorBody).error.message, name).toContain(
        "give a plain file name",
      );
    }
    expect((await upload(alice, conversation.id, "x".repeat(201), "text/plain", "x")).status).toBe(
      400,
    );
    expect(await storedBlobs()).toEqual([]);
  });

  it("deleting the conversation deletes its uploads' blobs", async () => {
    const conversation = await conversationOf(alice);
    await uploaded(await upload(alice, conversation.id, "a.png", "image/png", png));
    expect(await storedBlobs()).toHaveLength(1);
    const deleted = await app.request(`/v1/conversations/${conversation.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${alice.token}` },
    });
    expect(deleted.status).toBe(204);
    expect(await storedBlobs()).toEqual([]);
  });
});
