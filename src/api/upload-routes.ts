/**
 * Uploads (docs/uploads.md, issue 16 §3): files a person attaches to a message. The bytes go to
 * the blob store at once; `POST /v1/conversations/{id}/messages` names them by id, and the loop
 * copies them into the computer at `/workspace/attachments/<conversation>/<name>`
 * (platform/uploads.ts).
 *
 * Invariants:
 *   UPL1 only the conversation's owner uploads into it or attaches its uploads: another
 *        account's conversation, or an upload of another conversation, answers 404 exactly like
 *        a missing one (AAPI1).
 *   UPL2 an upload is at most `uploadLimits.maxBytes`: a declared length over it is refused before
 *        a byte is read, and the stream is cut past it; nothing is stored for a refused upload.
 *   UPL3 only documents, images and audio of the listed types; an image or PDF whose first bytes
 *        are not of its declared type is refused, so nothing else is stored under their name.
 *   UPL4 a name is one plain file name (no folder, no `..`, no control characters, at most 200
 *        characters): it names the file on the computer inside the conversation's folder, and is
 *        made unique within the conversation, so one upload never overwrites another.
 *   UPL5 at most `maxPerMessage` uploads per message, and `maxPerConversation` per conversation.
 *   UPL6 an upload's blob lives under its conversation's attachment prefix (ATT5), so deleting
 *        the conversation or its bot deletes it.
 */
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import type { Context, Hono } from "hono";
import { z } from "zod";
import { InvalidRequestError, NotFoundError, RoostError } from "../errors/index.ts";
import { attachmentBlobPrefix, attachmentView } from "../attachments/index.ts";
import type { BlobStore } from "../blobs/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, AttachmentRecord, Conversation, Store } from "../store/index.ts";
import { readQuery } from "./validation.ts";

type Variables = { account: Account; requestId: string };
type AppContext = Context<{ Variables: Variables }>;

const imageTypes = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const documentTypes = [
  "application/pdf",
  "text/plain",
  "text/markdown",
  "text/csv",
  "text/html",
  "text/xml",
  "application/json",
  "application/xml",
  "application/rtf",
  "application/msword",
  "application/vnd.ms-excel",
  "application/vnd.ms-powerpoint",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  "application/vnd.oasis.opendocument.text",
  "application/vnd.oasis.opendocument.spreadsheet",
];
const audioTypes = [
  "audio/mpeg",
  "audio/wav",
  "audio/x-wav",
  "audio/ogg",
  "audio/webm",
  "audio/mp4",
  "audio/aac",
  "audio/flac",
  "audio/x-m4a",
];

/** UPL2, UPL3, UPL5 (docs/uploads.md "Limits"). */
export const uploadLimits = {
  /** 25 MiB, the files API's upload limit. */
  maxBytes: 25 * 1024 * 1024,
  maxPerMessage: 6,
  maxPerConversation: 200,
  mimeTypes: [...documentTypes, ...imageTypes, ...audioTypes],
} as const;

export const uploadsRoot = "/workspace/attachments";

/** Where an upload of `conversationId` named `name` is copied on the computer. */
export function uploadPath(conversationId: string, name: string): string {
  return `${uploadsRoot}/${conversationId}/${name}`;
}

/** The first bytes each checked type starts with (UPL3). */
const signatures: Record<string, (head: Buffer) => boolean> = {
  "image/png": (head) => head.subarray(0, 8).equals(Buffer.from("89504e470d0a1a0a", "hex")),
  "image/jpeg": (head) => head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff,
  "image/gif": (head) => head.subarray(0, 4).toString("latin1") === "GIF8",
  "image/webp": (head) =>
    head.subarray(0, 4).toString("latin1") === "RIFF" &&
    head.subarray(8, 12).toString("latin1") === "WEBP",
  "application/pdf": (head) => head.subarray(0, 5).toString("latin1") === "%PDF-",
};

const uploadQuery = z.strictObject({
  name: z.string({ error: "name is required: ?name=report.pdf" }),
});

/** UPL4: the name as given, or a 400 saying what is wrong with it. */
export function checkUploadName(name: string): string {
  const problem =
    name === "." || name === ".."
      ? "is a folder reference"
      : /[/\\]/.test(name)
        ? "contains a folder separator (/ or \\)"
        : // eslint-disable-next-line no-control-regex
          /[\u0000-\u001f\u007f]/.test(name)
          ? "contains a control character"
          : name.trim() === ""
            ? "is empty"
            : [...name].length > 200
              ? "is longer than 200 characters"
              : undefined;
  if (problem !== undefined)
    throw new InvalidRequestError(
      `name ${problem}; give a plain file name such as report.pdf (it is copied to ${uploadsRoot}/<conversation>/<name>)`,
      { field: "name" },
    );
  return name;
}

/** UPL4: `name`, or `name (2).ext`, … — the first not taken in the conversation. */
function uniqueName(name: string, taken: ReadonlySet<string>): string {
  if (!taken.has(name)) return name;
  const dot = name.lastIndexOf(".");
  const [stem, extension] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
  for (let index = 2; ; index++) {
    const candidate = `${stem} (${index})${extension}`;
    if (!taken.has(candidate)) return candidate;
  }
}

export function uploadView(record: AttachmentRecord): Api.Upload {
  return {
    ...attachmentView(record),
    kind: "upload",
    path: uploadPath(record.conversationId, record.name),
  };
}

function limitsText(): string {
  return `at most ${uploadLimits.maxPerMessage} files per message, ${uploadLimits.maxBytes} bytes (25 MiB) each`;
}

/** Bytes of a stream, cut past the limit (UPL2); the first bytes are checked (UPL3). */
async function* checked(
  body: ReadableStream<Uint8Array>,
  mimeType: string,
  refused: { error?: RoostError },
): AsyncIterable<Uint8Array> {
  try {
    yield* checkedBytes(body, mimeType);
  } catch (error) {
    // The blob store may wrap what its body threw; the route answers the refusal itself.
    if (error instanceof RoostError) refused.error = error;
    throw error;
  }
}

async function* checkedBytes(
  body: ReadableStream<Uint8Array>,
  mimeType: string,
): AsyncIterable<Uint8Array> {
  let size = 0;
  let head: Buffer | undefined = Buffer.alloc(0);
  const signature = signatures[mimeType];
  for await (const chunk of Readable.fromWeb(body as never) as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > uploadLimits.maxBytes) throw tooLarge();
    if (head !== undefined && signature !== undefined) {
      head = Buffer.concat([head, chunk]);
      if (head.length < 12) continue;
      if (!signature(head)) throw notOfType(mimeType);
      const held = head;
      head = undefined;
      yield held;
      continue;
    }
    yield chunk;
  }
  if (head !== undefined && head.length > 0 && signature !== undefined) {
    if (!signature(head)) throw notOfType(mimeType);
    yield head;
  }
  if (size === 0) throw new InvalidRequestError("the upload is empty; send the file's bytes");
}

const tooLarge = () =>
  new RoostError(
    "payload_too_large",
    `an upload is at most ${uploadLimits.maxBytes} bytes (25 MiB); this one is larger`,
    { details: { limits: { maxBytes: uploadLimits.maxBytes } } },
  );
const notOfType = (mimeType: string) =>
  new InvalidRequestError(
    `the file is not ${mimeType}: its first bytes do not match; send it with its real Content-Type`,
  );

/**
 * UPL1, UPL5: the uploads `ids` name, in order, for a message in `conversation`; 404 for one that
 * is not this conversation's, 400 past the per-message limit or for an id given twice.
 */
export async function resolveMessageAttachments(
  store: Pick<Store, "getAttachment">,
  conversation: Conversation,
  ids: readonly string[],
): Promise<Api.MessageAttachment[]> {
  if (ids.length > uploadLimits.maxPerMessage)
    throw new InvalidRequestError(
      `a message takes at most ${uploadLimits.maxPerMessage} attachments; this one names ${ids.length}`,
      { field: "attachments", limits: { maxPerMessage: uploadLimits.maxPerMessage } },
    );
  if (new Set(ids).size !== ids.length)
    throw new InvalidRequestError("attachments names an upload twice; name each once", {
      field: "attachments",
    });
  const attached: Api.MessageAttachment[] = [];
  for (const id of ids) {
    const record = await store.getAttachment(id);
    if (
      record === undefined ||
      record.kind !== "upload" ||
      record.conversationId !== conversation.id ||
      record.accountId !== conversation.accountId
    )
      throw new NotFoundError("upload", id); // UPL1
    attached.push({
      id: record.id,
      name: record.name,
      mimeType: record.mimeType,
      size: record.size,
      path: uploadPath(conversation.id, record.name),
    });
  }
  return attached;
}

export function registerUploadRoutes(
  app: Hono<{ Variables: Variables }>,
  deps: {
    store: Store;
    blobs: Pick<BlobStore, "put" | "delete">;
    /** Fresh upload ids. @default random */
    newId?: () => string;
  },
) {
  const { store, blobs } = deps;
  const newId = deps.newId ?? (() => `upl_${randomBytes(12).toString("hex")}`);
  const ownConversation = async (context: AppContext, id: string) => {
    const conversation = await store.getConversation(id);
    if (conversation === undefined || conversation.accountId !== context.get("account").id)
      throw new NotFoundError("conversation", id); // UPL1
    return conversation;
  };

  app.get("/v1/uploads/limits", (context) =>
    context.json({
      maxBytes: uploadLimits.maxBytes,
      maxPerMessage: uploadLimits.maxPerMessage,
      mimeTypes: [...uploadLimits.mimeTypes],
    } satisfies Api.UploadLimits),
  );

  app.post("/v1/conversations/:id/uploads", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const name = checkUploadName(readQuery(context, uploadQuery).name); // UPL4
    const mimeType = (context.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
    if (mimeType === undefined || !uploadLimits.mimeTypes.includes(mimeType))
      throw new InvalidRequestError(
        `uploads are documents, images or audio (${uploadLimits.mimeTypes.join(", ")}); ${mimeType === undefined || mimeType === "" ? "send the file's type as Content-Type" : `${mimeType} is not one of them`}`,
        { field: "content-type", limits: { mimeTypes: uploadLimits.mimeTypes } },
      ); // UPL3
    const declared = Number(context.req.header("content-length") ?? "0");
    if (declared > uploadLimits.maxBytes) throw tooLarge(); // UPL2
    const existing = (await store.listAttachments(conversation.id)).filter(
      (record) => record.kind === "upload",
    );
    if (existing.length >= uploadLimits.maxPerConversation)
      throw new RoostError(
        "conflict",
        `a conversation holds at most ${uploadLimits.maxPerConversation} uploads; start a new conversation (${limitsText()})`,
        { details: { limits: { maxPerConversation: uploadLimits.maxPerConversation } } },
      ); // UPL5
    const body = context.req.raw.body;
    if (body === null) throw new InvalidRequestError("the upload is empty; send the file's bytes");
    const id = newId();
    const blobKey = `${attachmentBlobPrefix({
      accountId: conversation.accountId,
      botId: conversation.botId,
      conversationId: conversation.id,
    })}${id}`; // UPL6
    let size: number;
    const refused: { error?: RoostError } = {};
    try {
      size = (await blobs.put(blobKey, checked(body, mimeType, refused))).size;
    } catch (error) {
      await blobs.delete(blobKey).catch(() => undefined);
      throw refused.error ?? error;
    }
    const record = await store.putAttachment({
      id,
      accountId: conversation.accountId,
      conversationId: conversation.id,
      turnId: "",
      callId: "",
      kind: "upload",
      name: uniqueName(name, new Set(existing.map((upload) => upload.name))), // UPL4
      mimeType,
      size,
      blobKey,
    });
    await store.audit({
      accountId: context.get("account").id,
      action: "conversation.upload",
      target: conversation.id,
      detail: { uploadId: record.id, name: record.name, mimeType, size },
    });
    return context.json(uploadView(record), 201);
  });
}
