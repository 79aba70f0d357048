/**
 * Wiring of uploads into the loop (docs/uploads.md, LOOP14, HIS6): a message's uploads are copied
 * from the blob store into the account's computer through its worker (decision 0011: as the
 * computer's user, no link followed anywhere on the path, WFS1), and its images are read for
 * models that take them.
 *
 * Invariants:
 *   UPW1 a file is written only at its upload's path below /workspace/attachments/<conversation>/,
 *        through the files client: the worker refuses a symbolic link anywhere on the way
 *        (`is_symlink`), so a link the bot left there cannot lead the copy outside.
 *   UPW2 a copy failure (a computer that will not wake, a link in the way, a full disk) is that
 *        file's failure, with the reason; it never throws, so the journaled step always answers.
 *   UPW3 images sent to models are at most `maxImageBytes` each and `maxTurnImageBytes` together
 *        (they are journaled with the turn's context); the others stay files on the computer.
 */
import { Readable } from "node:stream";
import { createFilesClient, type WorkerCaller } from "../api/index.ts";
import type { BlobStore } from "../blobs/index.ts";
import type { ComputerStatus } from "../computers/index.ts";
import type { LoopUploads } from "../loop/index.ts";
import type { MediaPart } from "../models/index.ts";
import type { Store } from "../store/index.ts";

/** UPW3: what providers take for one image (Anthropic: 5 MB of base64). */
export const maxImageBytes = 3_750_000;
/** UPW3. */
export const maxTurnImageBytes = 10_000_000;

const modelImageTypes = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

export interface UploadsWiring {
  store: Pick<Store, "getAttachment" | "ensureComputer">;
  blobs: Pick<BlobStore, "get">;
  gateway: WorkerCaller & { isConnected(computerId: string): boolean };
  providerKind: string;
  /** Wakes a hosted computer (the control plane's `wake`). */
  wake(computerId: string, accountId: string): Promise<ComputerStatus>;
}

async function blobBytes(blobs: Pick<BlobStore, "get">, key: string): Promise<Buffer | undefined> {
  const body = await blobs.get(key);
  if (body === undefined) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function createLoopUploads(wiring: UploadsWiring): LoopUploads {
  const files = createFilesClient(wiring.gateway);
  return {
    async copy(accountId, attachments, signal) {
      const failed: { path: string; reason: string }[] = [];
      let computerId: string;
      try {
        const computer = await wiring.store.ensureComputer(accountId, wiring.providerKind);
        computerId = computer.id;
        if (computer.kind === "self-hosted") {
          if (!wiring.gateway.isConnected(computer.id))
            throw new Error("the self-hosted computer is not connected (start `roost worker`)");
        } else {
          const status = await wiring.wake(computer.id, accountId);
          if (status.state !== "awake")
            throw new Error(
              `the computer did not wake (${status.state}${status.failure === null ? "" : `: ${status.failure}`})`,
            );
        }
      } catch (error) {
        return {
          failed: attachments.map((file) => ({
            path: file.path,
            reason: (error as Error).message,
          })),
        }; // UPW2
      }
      for (const file of attachments) {
        try {
          const record = await wiring.store.getAttachment(file.id);
          if (record === undefined) throw new Error("the upload was deleted");
          const body = await wiring.blobs.get(record.blobKey);
          if (body === undefined) throw new Error("the upload's bytes are gone");
          const relative = file.path.replace(/^\/workspace\//, ""); // UPW1
          await files.upload(
            computerId,
            relative,
            Readable.toWeb(body) as ReadableStream<Uint8Array>,
            signal,
          );
        } catch (error) {
          failed.push({ path: file.path, reason: (error as Error).message }); // UPW2
        }
      }
      return { failed };
    },

    async images(attachments) {
      const media: MediaPart[] = [];
      let total = 0;
      for (const file of attachments) {
        if (!modelImageTypes.has(file.mimeType) || file.size > maxImageBytes) continue; // UPW3
        if (total + file.size > maxTurnImageBytes) break;
        const record = await wiring.store.getAttachment(file.id);
        if (record === undefined) continue;
        const bytes = await blobBytes(wiring.blobs, record.blobKey);
        if (bytes === undefined) continue;
        total += bytes.length;
        media.push({ type: "image", mimeType: file.mimeType, data: bytes.toString("base64") });
      }
      return media;
    },
  };
}
