/**
 * Conversation attachments as the store keeps them (issue 13 §4, docs/web-tools.md): what a tool
 * call produced for the owner to see — screenshots and images, downloads, recordings — with the
 * blob store key of its bytes.
 *
 * Invariants (both implementations; checked by attachments.contract.ts):
 *   ATS1 an attachment's id is chosen by the writer from its call (deterministic), and putting
 *        the same id again changes nothing and answers the first row: a retried step never
 *        stores an attachment twice.
 *   ATS2 attachments go with their conversation (deleteConversation, deleteBot).
 */
export type AttachmentKind = "screenshot" | "image" | "download" | "recording" | "upload";

export interface AttachmentRecord {
  id: string;
  accountId: string;
  conversationId: string;
  turnId: string;
  callId: string;
  kind: AttachmentKind;
  name: string;
  mimeType: string;
  size: number;
  blobKey: string;
  createdAt: number;
}

export interface AttachmentStore {
  /** ATS1: inserts, or answers the row that has this id already. */
  putAttachment(input: Omit<AttachmentRecord, "createdAt">): Promise<AttachmentRecord>;
  /** Oldest first. */
  listAttachments(
    conversationId: string,
    options?: { limit?: number },
  ): Promise<AttachmentRecord[]>;
  getAttachment(id: string): Promise<AttachmentRecord | undefined>;
}
