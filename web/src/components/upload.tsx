/**
 * Attachments in the message box (docs/uploads.md): files picked with the paperclip button,
 * dropped on the box or pasted into it are uploaded at once (POST /v1/conversations/{id}/uploads)
 * and sent with the message by id. The limits are checked here first so a person hears at once
 * what is too much; the server checks them again.
 */
import { FileText, Loader2, Paperclip, X } from "lucide-react";
import { useCallback, useEffect, useRef, useState } from "react";
import type { Attachment, MessageAttachment, Upload } from "../api/types.ts";
import { formatBytes } from "../lib/format.ts";
import { useSession } from "../state/session.tsx";
import { Attachments } from "./attachments.tsx";
import "./files.css";

/** docs/uploads.md "Limits" (GET /v1/uploads/limits). */
export const uploadLimits = { maxPerMessage: 6, maxBytes: 25 * 1024 * 1024 };

/** A type the server takes, from the file's own type or its name. */
const typesByExtension: Record<string, string> = {
  md: "text/markdown",
  txt: "text/plain",
  csv: "text/csv",
  json: "application/json",
  pdf: "application/pdf",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  mp3: "audio/mpeg",
  wav: "audio/wav",
  m4a: "audio/mp4",
  ogg: "audio/ogg",
};

export function uploadType(file: File): string {
  if (file.type !== "") return file.type;
  const extension = /\.([A-Za-z0-9]+)$/.exec(file.name)?.[1]?.toLowerCase() ?? "";
  return typesByExtension[extension] ?? "application/octet-stream";
}

export interface PendingUpload {
  key: string;
  name: string;
  size: number;
  type: string;
  status: "uploading" | "ready" | "failed";
  upload?: Upload;
  error?: string;
  /** An object URL of an image, for its thumbnail. */
  preview?: string;
}

export interface UploadsController {
  items: readonly PendingUpload[];
  add(files: readonly File[]): void;
  remove(key: string): void;
  clear(): void;
  /** The ids to send with the message (the uploads that finished). */
  readyIds(): string[];
  uploading: boolean;
  /** Why the last files could not be added, in plain words. */
  problem: string | undefined;
}

/**
 * The message box's attachments for a conversation: its id, or (a new chat) a function that makes
 * the conversation when the first file is attached and answers its id.
 */
export function useUploads(target: string | (() => Promise<string>)): UploadsController {
  const conversationId = typeof target === "string" ? target : undefined;
  const targetRef = useRef(target);
  targetRef.current = target;
  const { api } = useSession();
  const [items, setItems] = useState<PendingUpload[]>([]);
  const [problem, setProblem] = useState<string>();
  const itemsRef = useRef(items);
  itemsRef.current = items;
  const counter = useRef(0);

  const patch = (key: string, change: Partial<PendingUpload>) =>
    setItems((current) =>
      current.map((item) => (item.key === key ? { ...item, ...change } : item)),
    );

  const add = useCallback(
    (files: readonly File[]) => {
      setProblem(undefined);
      const room = uploadLimits.maxPerMessage - itemsRef.current.length;
      const taken = files.slice(0, Math.max(0, room));
      const problems: string[] = [];
      if (files.length > taken.length)
        problems.push(
          `A message takes at most ${uploadLimits.maxPerMessage} files; ${files.length - taken.length} not added.`,
        );
      const added: PendingUpload[] = [];
      for (const file of taken) {
        if (file.size > uploadLimits.maxBytes) {
          problems.push(`${file.name} is ${formatBytes(file.size)}; a file is at most 25 MB.`);
          continue;
        }
        const type = uploadType(file);
        const key = `u${counter.current++}`;
        const item: PendingUpload = {
          key,
          name: file.name || "pasted",
          size: file.size,
          type,
          status: "uploading",
          ...(type.startsWith("image/") ? { preview: URL.createObjectURL(file) } : {}),
        };
        added.push(item);
        const current = targetRef.current;
        (typeof current === "string" ? Promise.resolve(current) : current())
          .then((id) =>
            api.upload(id, file.name || `pasted.${type.split("/")[1] ?? "bin"}`, file, type),
          )
          .then((upload) => patch(key, { status: "ready", upload }))
          .catch((error: unknown) =>
            patch(key, {
              status: "failed",
              error: error instanceof Error ? error.message : String(error),
            }),
          );
      }
      if (problems.length > 0) setProblem(problems.join(" "));
      if (added.length > 0) setItems((current) => [...current, ...added]);
    },
    [api],
  );

  const remove = useCallback((key: string) => {
    setItems((current) => {
      const gone = current.find((item) => item.key === key);
      if (gone?.preview !== undefined) URL.revokeObjectURL(gone.preview);
      return current.filter((item) => item.key !== key);
    });
  }, []);

  const clear = useCallback(() => {
    for (const item of itemsRef.current)
      if (item.preview !== undefined) URL.revokeObjectURL(item.preview);
    setItems([]);
    setProblem(undefined);
  }, []);

  // Another conversation: its own files.
  useEffect(() => {
    setItems([]);
    setProblem(undefined);
  }, [conversationId]);

  useEffect(
    () => () => {
      for (const item of itemsRef.current)
        if (item.preview !== undefined) URL.revokeObjectURL(item.preview);
    },
    [],
  );

  return {
    items,
    add,
    remove,
    clear,
    readyIds: () =>
      itemsRef.current.flatMap((item) => (item.upload === undefined ? [] : [item.upload.id])),
    uploading: items.some((item) => item.status === "uploading"),
    problem,
  };
}

/** The paperclip: picks files to attach. */
export function AttachButton({ uploads }: { uploads: UploadsController }) {
  const input = useRef<HTMLInputElement>(null);
  return (
    <>
      <button
        type="button"
        className="attach-button"
        aria-label="Attach files"
        title="Attach files (or drop or paste them here)"
        onClick={() => input.current?.click()}
      >
        <Paperclip size={16} aria-hidden="true" />
      </button>
      <input
        ref={input}
        type="file"
        multiple
        hidden
        data-testid="attach-input"
        onChange={(event) => {
          if (event.target.files !== null) uploads.add([...event.target.files]);
          event.target.value = "";
        }}
      />
    </>
  );
}

/** The files waiting to be sent with the message, with a thumbnail for images. */
export function AttachmentTray({ uploads }: { uploads: UploadsController }) {
  if (uploads.items.length === 0 && uploads.problem === undefined) return null;
  return (
    <div className="attachment-tray">
      {uploads.items.length > 0 && (
        <ul aria-label="Files to send">
          {uploads.items.map((item) => (
            <li key={item.key} className="tray-item" data-status={item.status}>
              {item.preview !== undefined ? (
                <img src={item.preview} alt="" className="tray-thumb" />
              ) : (
                <FileText size={16} aria-hidden="true" />
              )}
              <span className="tray-name" title={item.error ?? item.name}>
                {item.name}
              </span>
              <span className="tray-meta">
                {item.status === "uploading" ? (
                  <Loader2 size={12} className="spin" aria-label="Uploading" />
                ) : item.status === "failed" ? (
                  <span role="alert">{item.error}</span>
                ) : (
                  formatBytes(item.size)
                )}
              </span>
              <button
                type="button"
                className="icon-button tray-remove"
                aria-label={`Remove ${item.name}`}
                onClick={() => uploads.remove(item.key)}
              >
                <X size={12} aria-hidden="true" />
              </button>
            </li>
          ))}
        </ul>
      )}
      {uploads.problem !== undefined && (
        <p className="notice notice-warn" role="alert">
          {uploads.problem}
        </p>
      )}
    </div>
  );
}

/** A message's attached files in the timeline: images previewed, the rest as downloads. */
export function MessageAttachments({
  conversationId,
  attachments,
  time,
}: {
  conversationId: string;
  attachments: readonly MessageAttachment[];
  time: string;
}) {
  const views: Attachment[] = attachments.map((file) => ({
    id: file.id,
    conversationId,
    turnId: "",
    callId: "",
    kind: "upload",
    name: file.name,
    mimeType: file.mimeType,
    size: file.size,
    createdAt: time,
  }));
  return <Attachments attachments={views} />;
}
