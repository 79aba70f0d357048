/**
 * Attachments from tool results (issue 13 §4, docs/web-tools.md "Attachments"): at the one seam
 * every tool result passes — the tool router's `execute` — images in a result's media become
 * `screenshot` (browser, computer) or `image` attachments, the files in `details.downloads` become
 * `download` attachments and `details.recording` a `recording`, copied from the computer through
 * its worker into the blob store.
 *
 * Invariants:
 *   ATT1 one journaled step per call that produced anything (`attachments`): a replay reads its
 *        journaled answer and copies nothing again. Ids (and so blob keys) derive from the call id
 *        and the attachment's place in the result, and the store keeps the first row for an id
 *        (ATS1), so a step retried after a crash mid-way stores nothing twice.
 *   ATT2 a file is copied only when it is at most `maxFileBytes`, checked against the size the
 *        worker reports before any byte is read and again while reading; a bigger or missing
 *        file is skipped with the reason in `details.attachmentsSkipped`, never an error of the call.
 *   ATT3 files are read only through `readFile` (the computer's worker, as its user, confined to
 *        /workspace): a path the tool names cannot reach anything the files API cannot.
 *   ATT4 the model's view of the result is unchanged: attachments are added to `details` only.
 *   ATT6 at most `maxPerCall` (20) attachments per call; the rest are skipped, said in details.
 *   ATT5 blobs are keyed under their account, bot and conversation (`attachmentBlobPrefix`), so
 *        deleting a conversation or a bot removes its blobs by prefix, whatever the rows say.
 */
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { BlobStore } from "../blobs/index.ts";
import type { Api } from "../protocol/index.ts";
import type { AttachmentKind, AttachmentRecord, Store } from "../store/index.ts";
import type { ToolCallRequest, ToolResult, ToolRouter } from "../tools/index.ts";

/** A file of the account's computer, as the worker reads it. Throws when it cannot. */
export type ComputerFileReader = (
  accountId: string,
  path: string,
  signal: AbortSignal,
) => Promise<{ size: number; body: ReadableStream<Uint8Array> }>;

export interface AttachmentsOptions {
  store: Pick<Store, "putAttachment">;
  blobs: Pick<BlobStore, "put">;
  /** ATT3. Absent: downloads and recordings are skipped (said in details). */
  readFile?: ComputerFileReader | undefined;
  /** ATT2. @default 50_000_000 */
  maxFileBytes?: number;
}

/** What a result offers to keep, before it is stored. */
interface Candidate {
  kind: AttachmentKind;
  name: string;
  mimeType: string;
  source: { data: string } | { path: string };
}

const screenshotTools = new Set(["browser", "computer"]);

const mimeTypes: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
  txt: "text/plain",
  csv: "text/csv",
  json: "application/json",
  zip: "application/zip",
  webm: "video/webm",
  mp4: "video/mp4",
  mjpeg: "video/x-motion-jpeg",
  html: "text/html",
};
const extensionOf: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
};

function mimeOf(name: string): string {
  const extension = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase() ?? "";
  return mimeTypes[extension] ?? "application/octet-stream";
}

const baseName = (path: string) => path.slice(path.lastIndexOf("/") + 1) || "file";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The attachments a result offers, in a stable order (ATT1: the order names the ids). */
export function candidatesOf(tool: string, result: ToolResult): Candidate[] {
  const found: Candidate[] = [];
  (result.media ?? []).forEach((part, index) => {
    if (part.type !== "image") return;
    const kind = screenshotTools.has(tool) ? "screenshot" : "image";
    const name =
      tool === "read" && typeof result.details?.path === "string"
        ? baseName(result.details.path)
        : `${tool}-${kind}-${index + 1}.${extensionOf[part.mimeType] ?? "img"}`;
    found.push({ kind, name, mimeType: part.mimeType, source: { data: part.data } });
  });
  const downloads = result.details?.downloads;
  if (Array.isArray(downloads))
    for (const entry of downloads) {
      if (!isRecord(entry) || typeof entry.path !== "string") continue;
      const name =
        typeof entry.name === "string" && entry.name !== "" ? entry.name : baseName(entry.path);
      found.push({ kind: "download", name, mimeType: mimeOf(name), source: { path: entry.path } });
    }
  const recording = result.details?.recording;
  if (isRecord(recording) && typeof recording.path === "string") {
    const name = baseName(recording.path);
    found.push({
      kind: "recording",
      name,
      mimeType: mimeOf(name),
      source: { path: recording.path },
    });
  }
  // Names reach headers and the page only escaped, but stay short and free of control characters.
  return found.map((candidate) => ({
    ...candidate,
    name: cleanName(candidate.name),
  }));
}

function cleanName(name: string): string {
  let clean = "";
  for (const char of name) {
    const code = char.codePointAt(0) ?? 0;
    clean += code < 0x20 || code === 0x7f || char === "/" || char === "\\" ? "_" : char;
  }
  return clean.slice(0, 200) || "file";
}

/** ATT6. */
export const maxAttachmentsPerCall = 20;

/**
 * Where a conversation's (or, without `conversationId`, a bot's) attachment blobs live: the
 * prefix a delete of either removes (ATT5).
 */
export function attachmentBlobPrefix(owner: {
  accountId: string;
  botId: string;
  conversationId?: string;
}): string {
  return `attachments/${owner.accountId}/${owner.botId}/${owner.conversationId === undefined ? "" : `${owner.conversationId}/`}`;
}

/** ATT1: the attachment's id, from its call and its place in the result. */
export function attachmentIdOf(callId: string, index: number): string {
  return `att_${createHash("sha256").update(`${callId}\0${index}`).digest("hex").slice(0, 24)}`;
}

export function attachmentView(record: AttachmentRecord): Api.Attachment {
  return {
    id: record.id,
    conversationId: record.conversationId,
    turnId: record.turnId,
    callId: record.callId,
    kind: record.kind,
    name: record.name,
    mimeType: record.mimeType,
    size: record.size,
    createdAt: new Date(record.createdAt).toISOString(),
  };
}

/** Bytes of a stream, failing past `limit` (ATT2). */
async function* capped(body: ReadableStream<Uint8Array>, limit: number): AsyncIterable<Uint8Array> {
  let size = 0;
  for await (const chunk of Readable.fromWeb(body as never) as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > limit) throw new TooLarge(limit);
    yield chunk;
  }
}

class TooLarge extends Error {
  constructor(limit: number) {
    super(`larger than the attachment limit of ${limit} bytes`);
  }
}

/** A router whose results' media, downloads and recordings are kept as attachments. */
export function withAttachments(router: ToolRouter, options: AttachmentsOptions): ToolRouter {
  const maxFileBytes = options.maxFileBytes ?? 50_000_000;

  async function keep(
    candidates: readonly Candidate[],
    request: ToolCallRequest,
    signal: AbortSignal,
  ): Promise<{ attachments: Api.Attachment[]; skipped: { name: string; reason: string }[] }> {
    const attachments: Api.Attachment[] = [];
    const skipped: { name: string; reason: string }[] = [];
    for (const [index, candidate] of candidates.entries()) {
      if (index >= maxAttachmentsPerCall) {
        skipped.push({
          name: candidate.name,
          reason: `over the limit of ${maxAttachmentsPerCall} attachments per call`,
        }); // ATT6
        continue;
      }
      const id = attachmentIdOf(request.callId, index);
      const blobKey = `${attachmentBlobPrefix(request)}${id}`;
      let size: number;
      if ("data" in candidate.source) {
        const bytes = Buffer.from(candidate.source.data, "base64");
        await options.blobs.put(blobKey, bytes);
        size = bytes.length;
      } else {
        if (options.readFile === undefined) {
          skipped.push({
            name: candidate.name,
            reason: "files of the computer cannot be read here",
          });
          continue;
        }
        let file;
        try {
          file = await options.readFile(request.accountId, candidate.source.path, signal);
        } catch (error) {
          skipped.push({ name: candidate.name, reason: (error as Error).message });
          continue;
        }
        if (file.size > maxFileBytes) {
          await file.body.cancel();
          skipped.push({
            name: candidate.name,
            reason: `${file.size} bytes, over the attachment limit of ${maxFileBytes}`,
          }); // ATT2
          continue;
        }
        try {
          size = (await options.blobs.put(blobKey, capped(file.body, maxFileBytes))).size;
        } catch (error) {
          if (!(error instanceof TooLarge)) throw error;
          skipped.push({ name: candidate.name, reason: error.message });
          continue;
        }
      }
      const record = await options.store.putAttachment({
        id,
        accountId: request.accountId,
        conversationId: request.conversationId,
        turnId: request.turnId,
        callId: request.callId,
        kind: candidate.kind,
        name: candidate.name,
        mimeType: candidate.mimeType,
        size,
        blobKey,
      }); // ATS1
      attachments.push(attachmentView(record));
    }
    return { attachments, skipped };
  }

  return {
    specs: (context) => router.specs(context),
    endTurn: (context) => router.endTurn(context),
    async execute(name, input, request) {
      const result = await router.execute(name, input, request);
      const candidates = candidatesOf(name, result);
      if (candidates.length === 0) return result;
      const kept = await request.durable.step("attachments", (signal) =>
        keep(candidates, request, signal),
      ); // ATT1
      return {
        ...result,
        details: {
          ...result.details,
          attachments: kept.attachments,
          ...(kept.skipped.length === 0 ? {} : { attachmentsSkipped: kept.skipped }),
        },
      }; // ATT4
    },
  };
}
