/** The attachments part of the store (attachment-types.ts, ATS1–ATS2), written once against `SqlDriver`. */
import type { SqlDriver, SqlExecutor } from "./driver.ts";
import type { AttachmentKind, AttachmentRecord, AttachmentStore } from "./attachment-types.ts";

interface AttachmentRow {
  id: string;
  account_id: string;
  conversation_id: string;
  turn_id: string;
  call_id: string;
  kind: string;
  name: string;
  mime_type: string;
  size: number | string;
  blob_key: string;
  created_at: number | string;
}

const toRecord = (row: AttachmentRow): AttachmentRecord => ({
  id: row.id,
  accountId: row.account_id,
  conversationId: row.conversation_id,
  turnId: row.turn_id,
  callId: row.call_id,
  kind: row.kind as AttachmentKind,
  name: row.name,
  mimeType: row.mime_type,
  size: Number(row.size),
  blobKey: row.blob_key,
  createdAt: Number(row.created_at),
});

export function createAttachmentQueries(driver: SqlDriver, now: () => number): AttachmentStore {
  const get = async (id: string) => {
    const [row] = await driver.all<AttachmentRow>("SELECT * FROM attachments WHERE id = ?", [id]);
    return row === undefined ? undefined : toRecord(row);
  };
  return {
    async putAttachment(input) {
      // ATS1: the id decides; a repeat leaves the first row as it was.
      await driver.run(
        `INSERT INTO attachments (id, account_id, conversation_id, turn_id, call_id, kind, name, mime_type, size, blob_key, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
        [
          input.id,
          input.accountId,
          input.conversationId,
          input.turnId,
          input.callId,
          input.kind,
          input.name,
          input.mimeType,
          input.size,
          input.blobKey,
          now(),
        ],
      );
      const stored = await get(input.id);
      if (stored === undefined) throw new Error(`attachment ${input.id} was not stored`);
      return stored;
    },
    async listAttachments(conversationId, options = {}) {
      const rows = await driver.all<AttachmentRow>(
        "SELECT * FROM attachments WHERE conversation_id = ? ORDER BY created_at, id LIMIT ?",
        [conversationId, options.limit ?? 500],
      );
      return rows.map(toRecord);
    },
    getAttachment: get,
  };
}

/** ATS2: a conversation's attachment rows go with it (their blobs are the caller's to remove). */
export async function deleteAttachmentsOf(
  tx: SqlExecutor,
  where: "id = ?" | "bot_id = ?",
  key: string,
): Promise<void> {
  await tx.run(
    `DELETE FROM attachments WHERE conversation_id IN (SELECT id FROM conversations WHERE ${where})`,
    [key],
  );
}
