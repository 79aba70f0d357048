/**
 * The attachments API (docs/api.md "Attachments"): what a conversation's tool calls left for its
 * owner — screenshots, images, downloads, recordings — listed and downloaded.
 *
 * Invariants:
 *   AAPI1 only the conversation's owner sees its attachments: another account's conversation,
 *         or an attachment of another conversation, answers 404 exactly like a missing one.
 *   AAPI2 a download is served as a download: `Content-Disposition: attachment` through
 *         attachmentDisposition (no name reaches the header unescaped), `nosniff`, a sandboxing
 *         CSP, and a content type from a short list of images and videos (everything else is
 *         `application/octet-stream`), so no attachment runs as a page of this origin.
 *   AAPI3 deleting a conversation or a bot deletes its attachments' blobs too (by prefix, ATT5),
 *         after the rows are gone; a blob store failure is logged, never fails the delete.
 */
import { Readable } from "node:stream";
import type { Context, Hono } from "hono";
import { NotFoundError } from "../errors/index.ts";
import { attachmentBlobPrefix, attachmentView } from "../attachments/index.ts";
import type { BlobStore } from "../blobs/index.ts";
import type { Logger } from "../log/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Account, Store } from "../store/index.ts";
import { attachmentDisposition } from "./content-disposition.ts";

type Variables = { account: Account; requestId: string };
type AppContext = Context<{ Variables: Variables }>;

/** Types a browser may render from an attachment; none of them can run script (AAPI2). */
const displayableTypes = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "video/webm",
  "video/mp4",
]);

/** AAPI3: remove the blobs of a deleted conversation, or of every conversation of a deleted bot. */
export async function deleteAttachmentBlobs(
  blobs: Pick<BlobStore, "list" | "delete">,
  owner: { accountId: string; botId: string; conversationId?: string },
  logger: Logger,
): Promise<void> {
  try {
    for (const blob of await blobs.list(attachmentBlobPrefix(owner))) await blobs.delete(blob.key);
  } catch (error) {
    logger.warn("could not delete the attachments of a deleted conversation or bot", {
      error,
      ...owner,
    });
  }
}

export function registerAttachmentRoutes(
  app: Hono<{ Variables: Variables }>,
  deps: { store: Store; blobs: Pick<BlobStore, "get"> },
) {
  const { store, blobs } = deps;
  const ownConversation = async (context: AppContext, id: string) => {
    const conversation = await store.getConversation(id);
    if (conversation === undefined || conversation.accountId !== context.get("account").id)
      throw new NotFoundError("conversation", id); // AAPI1
    return conversation;
  };

  app.get("/v1/conversations/:id/attachments", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const attachments = await store.listAttachments(conversation.id);
    return context.json({
      attachments: attachments.map(attachmentView),
    } satisfies Api.AttachmentList);
  });

  app.get("/v1/conversations/:id/attachments/:attachmentId", async (context) => {
    const conversation = await ownConversation(context, context.req.param("id"));
    const id = context.req.param("attachmentId");
    const attachment = await store.getAttachment(id);
    if (attachment === undefined || attachment.conversationId !== conversation.id)
      throw new NotFoundError("attachment", id); // AAPI1
    const body = await blobs.get(attachment.blobKey);
    if (body === undefined) throw new NotFoundError("attachment", id);
    return new Response(Readable.toWeb(body) as ReadableStream<Uint8Array>, {
      headers: {
        "content-type": displayableTypes.has(attachment.mimeType)
          ? attachment.mimeType
          : "application/octet-stream",
        "content-length": String(attachment.size),
        "content-disposition": attachmentDisposition(attachment.name), // AAPI2
        "x-content-type-options": "nosniff",
        "content-security-policy": "default-src 'none'; sandbox",
        "cache-control": "private, max-age=3600",
      },
    });
  });
}
