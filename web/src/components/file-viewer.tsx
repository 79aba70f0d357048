/**
 * One file of the computer, previewed (loaded only when a file is opened, with the highlighter):
 * text highlighted by its extension and editable in place (saved through the files API), images,
 * and PDFs in a frame. The bytes come with the session's token and are shown from an object URL
 * whose type this code chooses from the extension — never the file's own say — and a PDF only
 * when its bytes start as one, so no file of the computer runs as a page of Roost's origin.
 * A save first checks the file is still what was opened: a bot that wrote it meanwhile is not
 * overwritten unless the person says so.
 */
import { ArrowLeft, Download, Pencil, Save } from "lucide-react";
import { useEffect, useMemo, useState } from "react";
import type { FileEntry } from "../api/types.ts";
import { formatBytes } from "../lib/format.ts";
import { useSession } from "../state/session.tsx";
import { highlight } from "./markdown.tsx";

/** Larger text files are offered as downloads: the editor would hold them up. */
export const maxTextBytes = 1024 * 1024;

const imageTypes: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  svg: "image/svg+xml",
};

/** Extensions the highlighter knows (markdown.tsx registers them). */
const languages: Record<string, string> = {
  sh: "bash",
  bash: "bash",
  zsh: "bash",
  css: "css",
  diff: "diff",
  patch: "diff",
  go: "go",
  ini: "ini",
  toml: "ini",
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  jsx: "javascript",
  json: "json",
  md: "markdown",
  py: "python",
  rs: "rust",
  sql: "sql",
  ts: "typescript",
  tsx: "typescript",
  html: "xml",
  xml: "xml",
  svg: "xml",
  yml: "yaml",
  yaml: "yaml",
};

const extensionOf = (name: string) => /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase() ?? "";
const languageOf = (name: string) =>
  name === "Dockerfile" ? "dockerfile" : languages[extensionOf(name)];

type Preview =
  | { kind: "loading" }
  | { kind: "text"; text: string }
  | { kind: "image"; url: string }
  | { kind: "pdf"; url: string }
  | { kind: "none"; reason: string }
  | { kind: "error"; message: string };

/** Text when the bytes are UTF-8 without NUL (a binary file is not shown as text). */
function asText(bytes: Uint8Array): string | undefined {
  if (bytes.subarray(0, 8192).includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

export default function FileViewer({
  path,
  entry,
  onClose,
  onSaved,
}: {
  path: string;
  entry: FileEntry;
  onClose(): void;
  onSaved(): void;
}) {
  const { api } = useSession();
  const [preview, setPreview] = useState<Preview>({ kind: "loading" });
  const [draft, setDraft] = useState<string>();
  const [saving, setSaving] = useState(false);
  const [status, setStatus] = useState<string>();
  /** The file changed on the computer since it was opened: saving again overwrites it. */
  const [conflict, setConflict] = useState(false);

  useEffect(() => {
    let url: string | undefined;
    let cancelled = false;
    const extension = extensionOf(entry.name);
    const show = (next: Preview) => {
      if (!cancelled) setPreview(next);
    };
    void (async () => {
      try {
        const blob = await api.downloadFile(path);
        const bytes = new Uint8Array(await blob.arrayBuffer());
        const imageType = imageTypes[extension];
        if (imageType !== undefined) {
          url = URL.createObjectURL(new Blob([bytes], { type: imageType }));
          return show({ kind: "image", url });
        }
        if (extension === "pdf") {
          if (new TextDecoder().decode(bytes.subarray(0, 5)) !== "%PDF-")
            return show({ kind: "none", reason: "This file is named .pdf but is not a PDF." });
          url = URL.createObjectURL(new Blob([bytes], { type: "application/pdf" }));
          return show({ kind: "pdf", url });
        }
        if (bytes.byteLength > maxTextBytes)
          return show({
            kind: "none",
            reason: `This file is ${formatBytes(bytes.byteLength)}; files up to ${formatBytes(maxTextBytes)} are shown here. Download it instead.`,
          });
        const text = asText(bytes);
        if (text === undefined)
          return show({ kind: "none", reason: "This file is not text; download it to open it." });
        show({ kind: "text", text });
      } catch (caught) {
        show({ kind: "error", message: caught instanceof Error ? caught.message : String(caught) });
      }
    })();
    return () => {
      cancelled = true;
      if (url !== undefined) URL.revokeObjectURL(url);
    };
  }, [api, path, entry.name]);

  const highlighted = useMemo(
    () => (preview.kind === "text" ? highlight(preview.text, languageOf(entry.name)) : undefined),
    [preview, entry.name],
  );

  const save = async (overwrite = false) => {
    if (draft === undefined || preview.kind !== "text") return;
    setSaving(true);
    setStatus(undefined);
    try {
      if (!overwrite) {
        const now = await (await api.downloadFile(path)).text();
        if (now !== preview.text) {
          setConflict(true);
          setStatus(
            `${entry.name} changed on the computer since you opened it (a bot may have written it). Save anyway to replace it with your version, or cancel to keep it.`,
          );
          return;
        }
      }
      await api.uploadFile(path, new Blob([draft], { type: "text/plain" }));
      setConflict(false);
      setPreview({ kind: "text", text: draft });
      setDraft(undefined);
      setStatus(`Saved ${entry.name}.`);
      onSaved();
    } catch (caught) {
      setStatus(`Could not save: ${caught instanceof Error ? caught.message : String(caught)}`);
    } finally {
      setSaving(false);
    }
  };

  const download = async () => {
    try {
      const blob = await api.downloadFile(path);
      const href = URL.createObjectURL(blob);
      const link = document.createElement("a");
      link.href = href;
      link.download = entry.name;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(href), 10_000);
    } catch (caught) {
      setStatus(`Could not download: ${caught instanceof Error ? caught.message : String(caught)}`);
    }
  };

  return (
    <section className="file-viewer" aria-label={`Preview of ${entry.name}`}>
      <div className="file-viewer-bar">
        <button
          type="button"
          className="icon-button"
          onClick={onClose}
          aria-label="Back to the folder"
          title="Back to the folder"
        >
          <ArrowLeft size={16} aria-hidden="true" />
        </button>
        <span className="file-viewer-name" title={path}>
          {entry.name}
        </span>
        {preview.kind === "text" && draft === undefined && (
          <button
            type="button"
            className="button button-small"
            onClick={() => {
              setDraft(preview.text);
              setStatus(undefined);
            }}
          >
            <Pencil size={14} aria-hidden="true" /> Edit
          </button>
        )}
        {draft !== undefined && (
          <>
            <button
              type="button"
              className="button button-small button-primary"
              onClick={() => void save(conflict)}
              disabled={saving}
            >
              <Save size={14} aria-hidden="true" />{" "}
              {saving ? "Saving…" : conflict ? "Save anyway" : "Save"}
            </button>
            <button
              type="button"
              className="button button-small"
              onClick={() => {
                setDraft(undefined);
                setConflict(false);
                setStatus(undefined);
              }}
              disabled={saving}
            >
              Cancel
            </button>
          </>
        )}
        <button
          type="button"
          className="icon-button"
          onClick={() => void download()}
          aria-label={`Download ${entry.name}`}
          title="Download"
        >
          <Download size={16} aria-hidden="true" />
        </button>
      </div>
      {status !== undefined && (
        <p className="files-status" role="status">
          {status}
        </p>
      )}
      <div className="file-viewer-body">
        {preview.kind === "loading" ? (
          <p className="muted">Loading {entry.name}…</p>
        ) : preview.kind === "error" ? (
          <p className="notice notice-error" role="alert">
            {preview.message}
          </p>
        ) : preview.kind === "none" ? (
          <p className="muted">{preview.reason}</p>
        ) : preview.kind === "image" ? (
          <img className="file-viewer-image" src={preview.url} alt={entry.name} />
        ) : preview.kind === "pdf" ? (
          <iframe className="file-viewer-pdf" src={preview.url} title={`PDF: ${entry.name}`} />
        ) : draft !== undefined ? (
          <textarea
            className="file-editor"
            aria-label={`Contents of ${entry.name}`}
            value={draft}
            spellCheck={false}
            onChange={(event) => setDraft(event.target.value)}
            onKeyDown={(event) => {
              if ((event.ctrlKey || event.metaKey) && event.key === "s") {
                event.preventDefault();
                void save(conflict);
              }
            }}
          />
        ) : highlighted !== undefined ? (
          <pre className="file-text code-block">
            {/* highlight.js escapes the text it marks up */}
            <code dangerouslySetInnerHTML={{ __html: highlighted }} />
          </pre>
        ) : (
          <pre className="file-text code-block">
            <code>{preview.text}</code>
          </pre>
        )}
      </div>
    </section>
  );
}
