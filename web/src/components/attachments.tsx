/**
 * What a tool call left in the conversation (screenshots, images, downloads, recordings), under
 * its card: images and videos previewed, everything else a download button. The bytes come from
 * the attachments API with the session's token, so previews are object URLs, revoked on unmount.
 */
import { Download, Film, Image as ImageIcon, Pause, Play } from "lucide-react";
import { useEffect, useRef, useState } from "react";
import type { Attachment } from "../api/types.ts";
import { formatBytes } from "../lib/format.ts";
import { parseRecording, type Frame } from "../lib/recording.ts";
import { useSession } from "../state/session.tsx";

const previewable = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const playable = new Set(["video/webm", "video/mp4"]);

/** The attachments of a tool result's `details.attachments`, when it has any. */
export function attachmentsOf(details: Record<string, unknown> | undefined): Attachment[] {
  const value = details?.attachments;
  if (!Array.isArray(value)) return [];
  return value.filter(
    (item): item is Attachment =>
      typeof item === "object" &&
      item !== null &&
      typeof (item as Attachment).id === "string" &&
      typeof (item as Attachment).conversationId === "string",
  );
}

function useObjectUrl(attachment: Attachment, wanted: boolean): string | undefined {
  const { api } = useSession();
  const [url, setUrl] = useState<string>();
  useEffect(() => {
    if (!wanted) return;
    const controller = new AbortController();
    let created: string | undefined;
    api
      .attachment(attachment.conversationId, attachment.id, controller.signal)
      .then((blob) => {
        created = URL.createObjectURL(blob);
        setUrl(created);
      })
      .catch(() => undefined);
    return () => {
      controller.abort();
      if (created !== undefined) URL.revokeObjectURL(created);
    };
  }, [api, attachment.conversationId, attachment.id, wanted]);
  return url;
}

/** A flip-book of a browser task's frames, at their recorded pace. */
function RecordingPlayer({ attachment }: { attachment: Attachment }) {
  const { api } = useSession();
  const [frames, setFrames] = useState<Frame[]>();
  const [index, setIndex] = useState(0);
  const [playing, setPlaying] = useState(false);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  useEffect(() => {
    const controller = new AbortController();
    api
      .attachment(attachment.conversationId, attachment.id, controller.signal)
      .then((blob) => blob.text())
      .then((text) => setFrames(parseRecording(text)))
      .catch(() => setFrames([]));
    return () => controller.abort();
  }, [api, attachment.conversationId, attachment.id]);

  useEffect(() => {
    if (!playing || frames === undefined) return;
    if (index >= frames.length - 1) {
      setPlaying(false);
      return;
    }
    const wait = Math.min(2000, Math.max(50, frames[index + 1]!.atMs - frames[index]!.atMs));
    timer.current = setTimeout(() => setIndex(index + 1), wait);
    return () => clearTimeout(timer.current);
  }, [playing, index, frames]);

  if (frames === undefined || frames.length === 0) return null;
  const frame = frames[Math.min(index, frames.length - 1)]!;
  return (
    <figure className="recording" aria-label={`Recording: ${attachment.name}`}>
      <img
        className="attachment-preview"
        src={frame.src}
        alt={`Frame ${index + 1} of ${frames.length}`}
      />
      <figcaption className="recording-controls">
        <button
          type="button"
          className="button button-small"
          aria-label={playing ? "Pause the recording" : "Play the recording"}
          onClick={() => {
            if (!playing && index >= frames.length - 1) setIndex(0);
            setPlaying(!playing);
          }}
        >
          {playing ? <Pause size={14} aria-hidden="true" /> : <Play size={14} aria-hidden="true" />}
        </button>
        <input
          type="range"
          min={0}
          max={frames.length - 1}
          value={index}
          aria-label="Frame"
          onChange={(event) => {
            setPlaying(false);
            setIndex(Number(event.target.value));
          }}
        />
        <span>
          {index + 1}/{frames.length} · {(frame.atMs / 1000).toFixed(1)} s
        </span>
      </figcaption>
    </figure>
  );
}

function AttachmentItem({ attachment }: { attachment: Attachment }) {
  const { api } = useSession();
  const isImage = previewable.has(attachment.mimeType);
  const isVideo = playable.has(attachment.mimeType);
  const url = useObjectUrl(attachment, isImage || isVideo);
  const [error, setError] = useState<string>();
  const label = `${attachment.name} (${formatBytes(attachment.size)})`;

  const download = async () => {
    setError(undefined);
    try {
      const blob = await api.attachment(attachment.conversationId, attachment.id);
      const href = URL.createObjectURL(blob);
      const link = document.createElement("a");
      link.href = href;
      link.download = attachment.name;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(href), 10_000);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  };

  return (
    <li className="attachment" data-kind={attachment.kind}>
      {isImage && url !== undefined && (
        <a href={url} target="_blank" rel="noreferrer" title={`Open ${label}`}>
          <img
            className="attachment-preview"
            src={url}
            alt={`${attachment.kind}: ${attachment.name}`}
          />
        </a>
      )}
      {attachment.kind === "recording" && <RecordingPlayer attachment={attachment} />}
      {isVideo && url !== undefined && (
        <video className="attachment-preview" src={url} controls aria-label={label} />
      )}
      <button
        type="button"
        className="button button-small attachment-download"
        onClick={() => void download()}
      >
        {attachment.kind === "recording" ? (
          <Film size={14} aria-hidden="true" />
        ) : isImage ? (
          <ImageIcon size={14} aria-hidden="true" />
        ) : (
          <Download size={14} aria-hidden="true" />
        )}
        <span>{label}</span>
      </button>
      {error !== undefined && (
        <span className="notice notice-error" role="alert">
          {error}
        </span>
      )}
    </li>
  );
}

export function Attachments({ attachments }: { attachments: readonly Attachment[] }) {
  if (attachments.length === 0) return null;
  return (
    <ul className="attachments" aria-label="Attachments">
      {attachments.map((attachment) => (
        <AttachmentItem key={attachment.id} attachment={attachment} />
      ))}
    </ul>
  );
}
