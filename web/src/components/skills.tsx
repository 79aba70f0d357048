/**
 * The skill library (docs/skills.md): the list of the account's skills, a form to write a new one,
 * an upload of a skill's folder as an archive, and one skill's page — its description and
 * instructions to edit, its files to look at, new files from an archive, and delete.
 */
import { ArrowLeft, FileText, Plus, Save, Trash2, Upload } from "lucide-react";
import { useCallback, useEffect, useId, useRef, useState, type FormEvent } from "react";
import { ApiError } from "../api/client.ts";
import type { SkillDetail, SkillList } from "../api/types.ts";
import { formatBytes, formatRelative } from "../lib/format.ts";
import { navigate, onLinkClick, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import "./skills.css";
import { EmptyState, Header } from "./ui.tsx";

const archiveAccept = ".zip,.tar,.tar.gz,.tgz";

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A file input behind a button: picks one archive and hands it on. */
function ArchivePicker({
  label,
  busy,
  onFile,
}: {
  label: string;
  busy: boolean;
  onFile(file: File): void;
}) {
  const input = useRef<HTMLInputElement>(null);
  return (
    <>
      <input
        ref={input}
        type="file"
        accept={archiveAccept}
        hidden
        aria-label={label}
        onChange={(event) => {
          const file = event.target.files?.[0];
          event.target.value = "";
          if (file !== undefined) onFile(file);
        }}
      />
      <button
        type="button"
        className="button"
        disabled={busy}
        onClick={() => input.current?.click()}
      >
        <Upload size={16} aria-hidden="true" /> {label}
      </button>
    </>
  );
}

export function SkillsPage({ onMenu }: { onMenu(): void }) {
  const { api } = useSession();
  const [list, setList] = useState<SkillList>();
  const [error, setError] = useState<string>();
  const [creating, setCreating] = useState(false);
  const [uploading, setUploading] = useState(false);
  const [uploadError, setUploadError] = useState<string>();

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setList(await api.listSkills(signal));
        setError(undefined);
      } catch (caught) {
        if (signal?.aborted !== true) setError(messageOf(caught));
      }
    },
    [api],
  );
  useEffect(() => {
    const controller = new AbortController();
    void load(controller.signal);
    return () => controller.abort();
  }, [load]);

  const upload = async (file: File) => {
    setUploading(true);
    setUploadError(undefined);
    try {
      const skill = await api.uploadSkill(file);
      navigate(paths.skill(skill.name));
    } catch (caught) {
      setUploadError(`Could not upload ${file.name}: ${messageOf(caught)}`);
    } finally {
      setUploading(false);
    }
  };

  return (
    <>
      <Header title="Skills" onMenu={onMenu} />
      <div className="page">
        <section className="skills-intro">
          <p className="muted">
            Skills are instructions and files your bots use for particular tasks. Every bot sees
            each skill&apos;s name and description; it reads the instructions when it needs them,
            and runs the files from <code>~/skills/&lt;name&gt;/</code> on your computer. A bot can
            be limited to some skills in its settings.
          </p>
          <div className="form-actions">
            <button
              type="button"
              className="button button-primary"
              onClick={() => setCreating(true)}
              disabled={creating}
            >
              <Plus size={16} aria-hidden="true" /> New skill
            </button>
            <ArchivePicker
              label="Upload a folder"
              busy={uploading}
              onFile={(file) => void upload(file)}
            />
          </div>
          <p className="muted help-small">
            Upload a skill&apos;s folder as a .zip, .tar or .tar.gz with SKILL.md at its top (name
            and description in its front matter, then the instructions).
          </p>
          {uploading && <p className="muted">Uploading…</p>}
          {uploadError !== undefined && (
            <p className="notice notice-error" role="alert">
              {uploadError}
            </p>
          )}
        </section>
        {creating && <NewSkillForm onCancel={() => setCreating(false)} />}
        {error !== undefined && (
          <p className="notice notice-error" role="alert">
            Could not load your skills: {error}
          </p>
        )}
        {list === undefined && error === undefined && <p className="muted">Loading…</p>}
        {list !== undefined && list.skills.length === 0 && (
          <EmptyState title="No skills yet" detail="Write one, or upload a skill's folder." />
        )}
        {list !== undefined && list.skills.length > 0 && (
          <ul className="skill-list" aria-label="Your skills">
            {list.skills.map((skill) => (
              <li key={skill.name}>
                <a
                  className="skill-row"
                  href={paths.skill(skill.name)}
                  onClick={(event) => onLinkClick(event, paths.skill(skill.name))}
                >
                  <span className="skill-name">{skill.name}</span>
                  <span className="skill-description">{skill.description}</span>
                  <span className="skill-meta">
                    {skill.fileCount === 1 ? "1 file" : `${skill.fileCount} files`} ·{" "}
                    {formatBytes(skill.sizeBytes)} · updated {formatRelative(skill.updatedAt)}
                  </span>
                </a>
              </li>
            ))}
          </ul>
        )}
        {list !== undefined && (
          <p className="muted help-small">
            {list.skills.length} of {list.limits.maxSkills} skills. A skill holds at most{" "}
            {list.limits.maxFiles} files and {formatBytes(list.limits.maxSkillBytes)}.
          </p>
        )}
      </div>
    </>
  );
}

function NewSkillForm({ onCancel }: { onCancel(): void }) {
  const { api } = useSession();
  const id = useId();
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [body, setBody] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const skill = await api.createSkill({ name: name.trim(), description, body });
      navigate(paths.skill(skill.name));
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="form skill-form"
      aria-label="New skill"
      onSubmit={(event) => void submit(event)}
    >
      <h2>New skill</h2>
      <label className="field">
        <span>Name</span>
        <input
          name="skill-name"
          value={name}
          onChange={(event) => setName(event.target.value.toLowerCase())}
          required
          maxLength={64}
          pattern="[a-z0-9][a-z0-9-]*"
          placeholder="e.g. weekly-report"
          aria-describedby={`${id}-name-help`}
          autoFocus
        />
        <small className="muted" id={`${id}-name-help`}>
          Lowercase letters, digits and dashes. Its files go to ~/skills/{name || "<name>"}/.
        </small>
      </label>
      <label className="field">
        <span>Description</span>
        <input
          name="skill-description"
          value={description}
          onChange={(event) => setDescription(event.target.value)}
          required
          maxLength={300}
          placeholder="One line: what it is for, so a bot knows when to use it"
        />
      </label>
      <label className="field">
        <span>Instructions</span>
        <textarea
          name="skill-body"
          value={body}
          onChange={(event) => setBody(event.target.value)}
          required
          rows={10}
          placeholder="What to do, step by step, in Markdown. For example: “Run python3 ~/skills/weekly-report/collect.py, then …”"
        />
      </label>
      {error !== undefined && (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      )}
      <div className="form-actions">
        <button className="button button-primary" type="submit" disabled={busy}>
          <Save size={16} aria-hidden="true" /> {busy ? "Creating…" : "Create skill"}
        </button>
        <button className="button" type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function SkillPage({ name, onMenu }: { name: string; onMenu(): void }) {
  const { api } = useSession();
  const [skill, setSkill] = useState<SkillDetail>();
  const [loadError, setLoadError] = useState<ApiError | Error>();

  useEffect(() => {
    const controller = new AbortController();
    api
      .getSkill(name, controller.signal)
      .then(setSkill)
      .catch((caught: unknown) => {
        if (!controller.signal.aborted)
          setLoadError(caught instanceof Error ? caught : new Error(String(caught)));
      });
    return () => controller.abort();
  }, [api, name]);

  return (
    <>
      <Header title={skill?.name ?? name} subtitle={skill?.description} onMenu={onMenu} />
      <div className="page">
        <a
          className="link-button back-link"
          href={paths.skills}
          onClick={(event) => onLinkClick(event, paths.skills)}
        >
          <ArrowLeft size={14} aria-hidden="true" /> All skills
        </a>
        {skill === undefined ? (
          <EmptyState
            title={
              loadError === undefined
                ? "Loading…"
                : loadError instanceof ApiError && loadError.status === 404
                  ? "There is no such skill"
                  : "Could not load this skill"
            }
            detail={loadError?.message}
          />
        ) : (
          <SkillEditor key={skill.name} skill={skill} onChanged={setSkill} />
        )}
      </div>
    </>
  );
}

function SkillEditor({
  skill,
  onChanged,
}: {
  skill: SkillDetail;
  onChanged(skill: SkillDetail): void;
}) {
  const { api } = useSession();
  const [description, setDescription] = useState(skill.description);
  const [body, setBody] = useState(skill.body);
  const [error, setError] = useState<string>();
  const [status, setStatus] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [open, setOpen] = useState<{ path: string; text: string }>();

  const changed = description !== skill.description || body !== skill.body;
  const save = async (event: FormEvent) => {
    event.preventDefault();
    const patch: { description?: string; body?: string } = {};
    if (description !== skill.description) patch.description = description;
    if (body !== skill.body) patch.body = body;
    setBusy(true);
    setError(undefined);
    try {
      const saved = await api.updateSkill(skill.name, patch);
      onChanged(saved);
      setDescription(saved.description);
      setBody(saved.body);
      setStatus("Saved. Bots use the new version from their next turn.");
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };
  const replaceFiles = async (file: File) => {
    setBusy(true);
    setError(undefined);
    try {
      const saved = await api.uploadSkill(file, skill.name);
      onChanged(saved);
      setDescription(saved.description);
      setBody(saved.body);
      setOpen(undefined);
      setStatus(`Replaced the files with ${file.name}.`);
    } catch (caught) {
      setError(`Could not upload ${file.name}: ${messageOf(caught)}`);
    } finally {
      setBusy(false);
    }
  };
  const remove = async () => {
    setBusy(true);
    try {
      await api.deleteSkill(skill.name);
      navigate(paths.skills);
    } catch (caught) {
      setError(messageOf(caught));
      setBusy(false);
    }
  };
  const view = async (path: string) => {
    try {
      const bytes = new Uint8Array(await api.skillFile(skill.name, path));
      let text: string;
      try {
        text = bytes.includes(0)
          ? `(a binary file of ${formatBytes(bytes.byteLength)})`
          : new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      } catch {
        text = `(a binary file of ${formatBytes(bytes.byteLength)})`;
      }
      setOpen({ path, text });
    } catch (caught) {
      setError(`Could not open ${path}: ${messageOf(caught)}`);
    }
  };

  return (
    <>
      <form
        className="form skill-form"
        aria-label={`Edit ${skill.name}`}
        onSubmit={(event) => void save(event)}
      >
        <label className="field">
          <span>Description</span>
          <input
            name="skill-description"
            value={description}
            onChange={(event) => setDescription(event.target.value)}
            required
            maxLength={300}
          />
        </label>
        <label className="field">
          <span>Instructions</span>
          <textarea
            name="skill-body"
            value={body}
            onChange={(event) => setBody(event.target.value)}
            required
            rows={14}
          />
        </label>
        {error !== undefined && (
          <p className="notice notice-error" role="alert">
            {error}
          </p>
        )}
        {status !== undefined && error === undefined && (
          <p className="notice notice-info" role="status">
            {status}
          </p>
        )}
        <div className="form-actions">
          <button className="button button-primary" type="submit" disabled={busy || !changed}>
            <Save size={16} aria-hidden="true" /> Save changes
          </button>
          <ArchivePicker
            label="Replace files"
            busy={busy}
            onFile={(file) => void replaceFiles(file)}
          />
          {!confirmDelete ? (
            <button
              type="button"
              className="button button-danger"
              disabled={busy}
              onClick={() => setConfirmDelete(true)}
            >
              <Trash2 size={16} aria-hidden="true" /> Delete skill
            </button>
          ) : (
            <span className="confirm" role="group" aria-label="Confirm delete">
              <span>Delete {skill.name}? Its files leave ~/skills at the next turn.</span>
              <button
                type="button"
                className="button button-danger"
                disabled={busy}
                onClick={() => void remove()}
              >
                Delete
              </button>
              <button type="button" className="button" onClick={() => setConfirmDelete(false)}>
                Cancel
              </button>
            </span>
          )}
        </div>
      </form>
      <section className="skill-files" aria-label="Files">
        <h2>Files</h2>
        <p className="muted help-small">
          On your computer in <code>~/skills/{skill.name}/</code> · {formatBytes(skill.sizeBytes)}
        </p>
        <ul className="file-list">
          {skill.files.map((file) => (
            <li key={file.path}>
              <button
                type="button"
                className="file-row"
                aria-current={open?.path === file.path ? "true" : undefined}
                onClick={() => void view(file.path)}
              >
                <FileText size={16} className="file-icon" aria-hidden="true" />
                <span className="file-name">{file.path}</span>
                <span className="file-meta">
                  {file.executable && <span className="badge badge-small">executable</span>}{" "}
                  {formatBytes(file.sizeBytes)}
                </span>
              </button>
            </li>
          ))}
        </ul>
        {open !== undefined && (
          <figure className="skill-file-view">
            <figcaption>{open.path}</figcaption>
            <pre tabIndex={0} className="tool-pre" aria-label={`Content of ${open.path}`}>
              {open.text}
            </pre>
          </figure>
        )}
      </section>
    </>
  );
}
