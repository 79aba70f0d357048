/**
 * The files panel (issue 16 §4): the computer's /workspace through the files API, in pages of
 * `pageSize` entries. Open a file to preview it (file-viewer.tsx, loaded when first needed: text
 * highlighted and editable, images, PDFs); rename, delete, make folders, and upload by the button
 * or by dropping files anywhere on the panel.
 */
import {
  ArrowUp,
  Download,
  File,
  Folder,
  FolderPlus,
  Link2,
  Pencil,
  Power,
  RefreshCw,
  Trash2,
  Upload,
  X,
} from "lucide-react";
import {
  lazy,
  Suspense,
  useCallback,
  useEffect,
  useRef,
  useState,
  type DragEvent,
  type FormEvent,
} from "react";
import { ApiError } from "../api/client.ts";
import type { FileEntry, Listing } from "../api/types.ts";
import { formatBytes, formatRelative } from "../lib/format.ts";
import { useSession } from "../state/session.tsx";
import "./files-panel.css";

const FileViewer = lazy(() => import("./file-viewer.tsx"));

const root = "/workspace";
/** Entries per page of a listing (the API's `limit`). */
export const pageSize = 200;

function parentOf(path: string): string | undefined {
  if (path === root || !path.startsWith(`${root}/`)) return undefined;
  return path.slice(0, path.lastIndexOf("/")) || root;
}

export function joinPath(dir: string, name: string): string {
  return `${dir.replace(/\/+$/, "")}/${name}`;
}

const messageOf = (caught: unknown) => (caught instanceof Error ? caught.message : String(caught));

/** A name typed by a person: one path component. */
function nameProblem(name: string): string | undefined {
  if (name.trim() === "") return "Give it a name.";
  if (name === "." || name === "..") return "That name is taken by the folder itself.";
  if (/[/\\]/.test(name)) return "A name cannot contain / or \\.";
  return undefined;
}

type Editing = { kind: "rename"; entry: FileEntry; name: string } | { kind: "mkdir"; name: string };

export default function FilesPanel({ onClose }: { onClose(): void }) {
  const { api, computer } = useSession();
  const [path, setPath] = useState(root);
  const [entries, setEntries] = useState<FileEntry[]>();
  const [nextCursor, setNextCursor] = useState<string>();
  const [error, setError] = useState<ApiError | Error>();
  const [loading, setLoading] = useState(false);
  const [status, setStatus] = useState<string>();
  const [dragging, setDragging] = useState(false);
  const [open, setOpen] = useState<FileEntry>();
  const [editing, setEditing] = useState<Editing>();
  const [confirmDelete, setConfirmDelete] = useState<FileEntry>();
  const fileInput = useRef<HTMLInputElement>(null);
  const panel = useRef<HTMLDivElement>(null);
  const computerState = computer.status === "ok" ? computer.computer.state : undefined;

  const load = useCallback(
    async (target: string, signal?: AbortSignal) => {
      setLoading(true);
      setError(undefined);
      try {
        const result: Listing = await api.listFiles(target, signal, { limit: pageSize });
        setEntries(result.entries);
        setNextCursor(result.nextCursor);
      } catch (caught) {
        if (signal?.aborted === true) return;
        setError(caught instanceof Error ? caught : new Error(String(caught)));
        setEntries(undefined);
        setNextCursor(undefined);
      } finally {
        if (signal?.aborted !== true) setLoading(false);
      }
    },
    [api],
  );

  const loadMore = async () => {
    if (nextCursor === undefined) return;
    setLoading(true);
    try {
      const result = await api.listFiles(path, undefined, { limit: pageSize, cursor: nextCursor });
      setEntries((current) => [...(current ?? []), ...result.entries]);
      setNextCursor(result.nextCursor);
    } catch (caught) {
      setStatus(`Could not list more: ${messageOf(caught)}`);
    } finally {
      setLoading(false);
    }
  };

  useEffect(() => {
    const controller = new AbortController();
    void load(path, controller.signal);
    return () => controller.abort();
  }, [load, path, computerState]);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== "Escape") return;
      // Escape closes what is on top first: the viewer, then the panel.
      if (open !== undefined) setOpen(undefined);
      else onClose();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose, open]);

  useEffect(() => {
    panel.current?.focus();
  }, []);

  const download = async (entry: FileEntry) => {
    setStatus(`Downloading ${entry.name}…`);
    try {
      const blob = await api.downloadFile(joinPath(path, entry.name));
      const url = URL.createObjectURL(blob);
      const link = document.createElement("a");
      link.href = url;
      link.download = entry.name;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      setStatus(undefined);
    } catch (caught) {
      setStatus(`Could not download ${entry.name}: ${messageOf(caught)}`);
    }
  };

  const upload = async (files: FileList | File[]) => {
    const list = [...files];
    for (const [index, file] of list.entries()) {
      setStatus(
        `Uploading ${file.name}${list.length > 1 ? ` (${index + 1} of ${list.length})` : ""}…`,
      );
      try {
        await api.uploadFile(joinPath(path, file.name), file);
      } catch (caught) {
        setStatus(`Could not upload ${file.name}: ${messageOf(caught)}`);
        await load(path);
        return;
      }
    }
    setStatus(
      list.length === 1 ? `Uploaded ${list[0]?.name ?? ""}.` : `Uploaded ${list.length} files.`,
    );
    await load(path);
  };

  const submitEdit = async (event: FormEvent) => {
    event.preventDefault();
    if (editing === undefined) return;
    const name = editing.name.trim();
    const problem = nameProblem(name);
    if (problem !== undefined) {
      setStatus(problem);
      return;
    }
    try {
      if (editing.kind === "rename") {
        if (name === editing.entry.name) {
          setEditing(undefined);
          return;
        }
        await api.renameFile(joinPath(path, editing.entry.name), joinPath(path, name));
        setStatus(`Renamed ${editing.entry.name} to ${name}.`);
      } else {
        await api.makeFolder(joinPath(path, name));
        setStatus(`Made the folder ${name}.`);
      }
      setEditing(undefined);
      await load(path);
    } catch (caught) {
      setStatus(
        `Could not ${editing.kind === "rename" ? "rename" : "make"} ${name}: ${messageOf(caught)}`,
      );
    }
  };

  const remove = async (entry: FileEntry) => {
    setConfirmDelete(undefined);
    try {
      await api.deleteFile(joinPath(path, entry.name), entry.type === "dir");
      setStatus(`Deleted ${entry.name}.`);
      await load(path);
    } catch (caught) {
      setStatus(`Could not delete ${entry.name}: ${messageOf(caught)}`);
    }
  };

  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setDragging(false);
    if (event.dataTransfer.files.length > 0) void upload(event.dataTransfer.files);
  };

  const crumbs = path.split("/").filter((part) => part !== "");
  const asleep =
    error instanceof ApiError && (error.code === "computer_asleep" || error.status === 409);
  const parent = parentOf(path);

  const nameForm = (label: string) =>
    editing !== undefined && (
      <form className="file-name-form" onSubmit={(event) => void submitEdit(event)}>
        <input
          aria-label={label}
          value={editing.name}
          autoFocus
          onChange={(event) => setEditing({ ...editing, name: event.target.value })}
          onKeyDown={(event) => {
            if (event.key === "Escape") {
              event.stopPropagation();
              setEditing(undefined);
            }
          }}
        />
        <button type="submit" className="button button-small button-primary">
          {editing.kind === "rename" ? "Rename" : "Make"}
        </button>
        <button type="button" className="button button-small" onClick={() => setEditing(undefined)}>
          Cancel
        </button>
      </form>
    );

  return (
    <div className="drawer-layer">
      <div className="drawer-scrim" onClick={onClose} aria-hidden="true" />
      <div
        className={`drawer files${dragging ? " dragging" : ""}${open === undefined ? "" : " viewing"}`}
        role="dialog"
        aria-modal="true"
        aria-label="Files on your computer"
        tabIndex={-1}
        ref={panel}
        onDragOver={(event) => {
          event.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={onDrop}
      >
        <div className="drawer-header">
          <h2>Files</h2>
          <button type="button" className="icon-button" onClick={onClose} aria-label="Close files">
            <X size={18} aria-hidden="true" />
          </button>
        </div>
        {open !== undefined ? (
          <Suspense fallback={<p className="muted files-body">Opening {open.name}…</p>}>
            <FileViewer
              path={joinPath(path, open.name)}
              entry={open}
              onClose={() => setOpen(undefined)}
              onSaved={() => void load(path)}
            />
          </Suspense>
        ) : (
          <>
            <nav className="crumbs" aria-label="Folder">
              {crumbs.map((crumb, index) => {
                const target = `/${crumbs.slice(0, index + 1).join("/")}`;
                const last = index === crumbs.length - 1;
                const reachable = target === root || target.startsWith(`${root}/`);
                return (
                  <span key={target}>
                    {index > 0 && <span className="crumb-sep">/</span>}
                    {last || !reachable ? (
                      <span aria-current={last ? "location" : undefined}>{crumb}</span>
                    ) : (
                      <button type="button" className="link-button" onClick={() => setPath(target)}>
                        {crumb}
                      </button>
                    )}
                  </span>
                );
              })}
            </nav>
            <div className="files-toolbar">
              <button
                type="button"
                className="button button-small"
                disabled={parent === undefined}
                onClick={() => parent !== undefined && setPath(parent)}
              >
                <ArrowUp size={14} aria-hidden="true" /> Up
              </button>
              <button
                type="button"
                className="button button-small"
                onClick={() => void load(path)}
                disabled={loading}
              >
                <RefreshCw size={14} className={loading ? "spin" : undefined} aria-hidden="true" />{" "}
                Refresh
              </button>
              <button
                type="button"
                className="button button-small"
                onClick={() => setEditing({ kind: "mkdir", name: "" })}
                disabled={asleep}
              >
                <FolderPlus size={14} aria-hidden="true" /> New folder
              </button>
              <button
                type="button"
                className="button button-small button-primary"
                onClick={() => fileInput.current?.click()}
                disabled={asleep}
              >
                <Upload size={14} aria-hidden="true" /> Upload
              </button>
              <input
                ref={fileInput}
                type="file"
                multiple
                hidden
                onChange={(event) => {
                  if (event.target.files !== null) void upload(event.target.files);
                  event.target.value = "";
                }}
              />
            </div>
            {editing?.kind === "mkdir" && nameForm("New folder name")}
            {status !== undefined && (
              <p className="files-status" role="status">
                {status}
              </p>
            )}
            <div className="files-body">
              {error !== undefined ? (
                <div className="notice notice-warn" role="alert">
                  {asleep ? "Your computer is asleep. Wake it to see its files." : error.message}
                  {asleep && computer.status === "ok" && (
                    <div>
                      <button
                        type="button"
                        className="button button-small button-primary"
                        onClick={computer.wake}
                        disabled={computer.busy}
                      >
                        <Power size={14} aria-hidden="true" /> Wake the computer
                      </button>
                    </div>
                  )}
                </div>
              ) : entries === undefined ? (
                <p className="muted">Loading…</p>
              ) : entries.length === 0 ? (
                <p className="muted">This folder is empty. Drop files here to upload them.</p>
              ) : (
                <ul className="file-list">
                  {entries.map((entry) => (
                    <li key={entry.name} className="file-item">
                      {editing?.kind === "rename" && editing.entry.name === entry.name ? (
                        nameForm(`New name for ${entry.name}`)
                      ) : confirmDelete?.name === entry.name ? (
                        <div
                          className="file-confirm"
                          role="group"
                          aria-label={`Delete ${entry.name}?`}
                        >
                          <span>
                            Delete {entry.name}
                            {entry.type === "dir" ? " and everything in it" : ""}?
                          </span>
                          <button
                            type="button"
                            className="button button-small button-danger"
                            onClick={() => void remove(entry)}
                          >
                            Delete
                          </button>
                          <button
                            type="button"
                            className="button button-small"
                            onClick={() => setConfirmDelete(undefined)}
                          >
                            Keep
                          </button>
                        </div>
                      ) : (
                        <>
                          <button
                            type="button"
                            className="file-row"
                            onClick={() =>
                              entry.type === "dir"
                                ? setPath(joinPath(path, entry.name))
                                : entry.type === "file"
                                  ? setOpen(entry)
                                  : void download(entry)
                            }
                            title={
                              entry.type === "dir" ? `Open ${entry.name}` : `Preview ${entry.name}`
                            }
                          >
                            {entry.type === "dir" ? (
                              <Folder size={16} aria-hidden="true" className="file-icon dir" />
                            ) : entry.type === "symlink" ? (
                              <Link2 size={16} aria-hidden="true" className="file-icon" />
                            ) : (
                              <File size={16} aria-hidden="true" className="file-icon" />
                            )}
                            <span className="file-name">{entry.name}</span>
                            <span className="file-meta">
                              {[
                                entry.type === "dir" ? "" : formatBytes(entry.size),
                                formatRelative(entry.modifiedAt),
                              ]
                                .filter((part) => part !== "")
                                .join(" · ")}
                            </span>
                          </button>
                          <span className="file-actions">
                            {entry.type === "file" && (
                              <button
                                type="button"
                                className="icon-button"
                                aria-label={`Download ${entry.name}`}
                                title="Download"
                                onClick={() => void download(entry)}
                              >
                                <Download size={14} aria-hidden="true" />
                              </button>
                            )}
                            <button
                              type="button"
                              className="icon-button"
                              aria-label={`Rename ${entry.name}`}
                              title="Rename"
                              onClick={() =>
                                setEditing({ kind: "rename", entry, name: entry.name })
                              }
                            >
                              <Pencil size={14} aria-hidden="true" />
                            </button>
                            <button
                              type="button"
                              className="icon-button"
                              aria-label={`Delete ${entry.name}`}
                              title="Delete"
                              onClick={() => setConfirmDelete(entry)}
                            >
                              <Trash2 size={14} aria-hidden="true" />
                            </button>
                          </span>
                        </>
                      )}
                    </li>
                  ))}
                </ul>
              )}
              {nextCursor !== undefined && (
                <button
                  type="button"
                  className="button button-small files-more"
                  onClick={() => void loadMore()}
                  disabled={loading}
                >
                  Show more
                </button>
              )}
            </div>
            <p className="files-foot muted">
              Files in /workspace survive sleep and restarts. Drop files anywhere here to upload.
            </p>
          </>
        )}
      </div>
    </div>
  );
}
