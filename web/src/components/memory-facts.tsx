/**
 * The Memory panel's facts, by tier: user facts (the account's, shared by all its bots), the
 * bot's profile, its notes (which expire) and its log (newest first), each with Edit and Delete,
 * and a form to add one. User facts are changed through /v1/me/memory, the rest through the bot.
 */
import { Pencil, Plus, Trash2 } from "lucide-react";
import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import type { BotMemory, MemoryFact, MemoryTier } from "../api/types.ts";
import { formatRelative } from "../lib/format.ts";
import { useSession } from "../state/session.tsx";
import { messageOf, scopeOfTier, type PanelContext } from "./memory-shared.ts";

/** A note lives a week unless told otherwise (defaultNoteTtlMs), at most 90 days. */
const defaultNoteHours = 7 * 24;
const maxNoteHours = 90 * 24;
/** GET /v1/bots/{id}/memory lists at most this many log entries. */
const listedLogEntries = 100;

const number = new Intl.NumberFormat();
const addedTo: Record<MemoryTier, string> = {
  user: "your user facts",
  profile: "the profile",
  note: "the notes",
  log: "the log",
  team: "the team memory",
};

function snippet(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57).trimEnd()}…` : text;
}

export function MemoryFacts({ context, memory }: { context: PanelContext; memory: BotMemory }) {
  const { bot } = context;
  const chars = (facts: MemoryFact[]) => facts.reduce((sum, fact) => sum + fact.text.length, 0);
  const countOf = (tier: MemoryTier, facts: MemoryFact[]) => {
    const limit = tier === "log" || tier === "team" ? undefined : memory.limits[tier];
    if (limit === undefined)
      return facts.length >= listedLogEntries
        ? `the newest ${listedLogEntries}`
        : `${facts.length} ${facts.length === 1 ? "entry" : "entries"}`;
    return `${facts.length} of ${limit.facts} · ${number.format(chars(facts))} of ${number.format(limit.chars)} characters`;
  };

  return (
    <div className="memory-facts">
      <AddFact context={context} />
      <TierSection
        context={context}
        tier="user"
        title="User facts"
        count={countOf("user", memory.user)}
        description={
          <>
            About you, and <strong>shared by all your bots</strong>: a change here changes it for
            every one of them. Always in the prompt.
          </>
        }
        facts={memory.user}
      />
      <TierSection
        context={context}
        tier="profile"
        title="Profile"
        count={countOf("profile", memory.profile)}
        description={`What ${bot.name} always knows: in every prompt.`}
        facts={memory.profile}
      />
      <TierSection
        context={context}
        tier="note"
        title="Notes"
        count={countOf("note", memory.note)}
        description="Short-lived reminders: each one expires, then it is gone."
        facts={memory.note}
      />
      <TierSection
        context={context}
        tier="log"
        title="Log"
        count={countOf("log", memory.log)}
        description="Dated entries, newest first. The 30 most relevant to each new message go into the prompt."
        facts={memory.log}
      />
    </div>
  );
}

function AddFact({ context }: { context: PanelContext }) {
  const { api } = useSession();
  const id = useId();
  const [tier, setTier] = useState<MemoryTier>("profile");
  const [text, setText] = useState("");
  const [hours, setHours] = useState(String(defaultNoteHours));
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const scope = scopeOfTier(context.bot.id, tier);
      const result = await api.addMemory(scope, {
        tier,
        text,
        ...(tier === "note" ? { expiresInHours: Number(hours) } : {}),
      });
      setText("");
      context.changed({
        text: `Added to ${addedTo[tier]}.`,
        undo: { scope, revisionId: result.revision.id },
      });
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="memory-add"
      onSubmit={(event) => void submit(event)}
      aria-labelledby={`${id}-title`}
    >
      <h2 id={`${id}-title`}>Remember something</h2>
      <div className="memory-add-row">
        <label className="field">
          <span>Where</span>
          <select
            name="tier"
            value={tier}
            onChange={(event) => setTier(event.target.value as MemoryTier)}
          >
            <option value="user">User fact (all your bots)</option>
            <option value="profile">Profile</option>
            <option value="note">Note (expires)</option>
            <option value="log">Log</option>
          </select>
        </label>
        {tier === "note" && (
          <label className="field memory-hours">
            <span>Expires in (hours)</span>
            <input
              name="expiresInHours"
              type="number"
              min={1}
              max={maxNoteHours}
              step={1}
              value={hours}
              onChange={(event) => setHours(event.target.value)}
              required
            />
          </label>
        )}
      </div>
      <label className="field">
        <span>What to remember</span>
        <textarea
          name="text"
          value={text}
          onChange={(event) => setText(event.target.value)}
          rows={2}
          maxLength={2000}
          required
          placeholder="e.g. The project is called Falcon and ships in June."
          aria-describedby={error === undefined ? undefined : `${id}-error`}
        />
      </label>
      {error !== undefined && (
        <p className="notice notice-error" role="alert" id={`${id}-error`}>
          {error}
        </p>
      )}
      <div className="form-actions">
        <button
          className="button button-primary"
          type="submit"
          disabled={busy || text.trim() === ""}
        >
          <Plus size={16} aria-hidden="true" /> {busy ? "Adding…" : "Add"}
        </button>
      </div>
    </form>
  );
}

function TierSection({
  context,
  tier,
  title,
  count,
  description,
  facts,
}: {
  context: PanelContext;
  tier: MemoryTier;
  title: string;
  count: string;
  description: React.ReactNode;
  facts: MemoryFact[];
}) {
  const id = useId();
  return (
    <section className="memory-tier" data-tier={tier} aria-labelledby={`${id}-title`}>
      <div className="memory-tier-head">
        <h2 id={`${id}-title`}>{title}</h2>
        <span className="muted memory-count">{count}</span>
      </div>
      <p className="muted memory-tier-help">{description}</p>
      {facts.length === 0 ? (
        <p className="muted memory-empty">Nothing yet.</p>
      ) : (
        <ul className="fact-list" aria-labelledby={`${id}-title`}>
          {facts.map((fact) => (
            <FactRow key={fact.id} context={context} fact={fact} />
          ))}
        </ul>
      )}
    </section>
  );
}

function FactMeta({ fact }: { fact: MemoryFact }) {
  if (fact.tier === "note" && fact.expiresAt !== null)
    return (
      <>
        expires{" "}
        <time dateTime={fact.expiresAt} title={new Date(fact.expiresAt).toLocaleString()}>
          {formatRelative(fact.expiresAt)}
        </time>
      </>
    );
  if (fact.tier === "log")
    return (
      <time dateTime={fact.createdAt}>
        {new Date(fact.createdAt).toLocaleString([], { dateStyle: "medium", timeStyle: "short" })}
      </time>
    );
  const edited = fact.updatedAt !== fact.createdAt;
  return (
    <>
      {edited ? "changed " : "added "}
      <time dateTime={fact.updatedAt} title={new Date(fact.updatedAt).toLocaleString()}>
        {formatRelative(fact.updatedAt)}
      </time>
    </>
  );
}

function FactRow({ context, fact }: { context: PanelContext; fact: MemoryFact }) {
  const { api } = useSession();
  const id = useId();
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(fact.text);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const editButton = useRef<HTMLButtonElement>(null);
  const wasEditing = useRef(false);
  const scope = scopeOfTier(context.bot.id, fact.tier);

  // Back from editing, the keyboard is where it was: on this fact's Edit button.
  useEffect(() => {
    if (wasEditing.current && !editing) editButton.current?.focus();
    wasEditing.current = editing;
  }, [editing]);

  const save = async (event?: FormEvent) => {
    event?.preventDefault();
    if (draft.trim() === fact.text) {
      setEditing(false);
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const result = await api.editMemory(scope, fact.id, draft);
      setEditing(false);
      context.changed({ text: "Saved.", undo: { scope, revisionId: result.revision.id } });
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  const remove = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const result = await api.removeMemory(scope, fact.id);
      context.changed({
        text: `Deleted “${snippet(fact.text)}”.`,
        undo: { scope, revisionId: result.revision.id },
      });
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Escape") {
      event.preventDefault();
      setDraft(fact.text);
      setEditing(false);
      setError(undefined);
    } else if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      // Facts are one line (the server folds whitespace), so Enter saves.
      event.preventDefault();
      void save();
    }
  };

  return (
    <li className="fact" data-fact-id={fact.id}>
      {editing ? (
        <form className="fact-edit" onSubmit={(event) => void save(event)}>
          <label className="visually-hidden" htmlFor={`${id}-draft`}>
            Edit this fact
          </label>
          <textarea
            id={`${id}-draft`}
            value={draft}
            onChange={(event) => setDraft(event.target.value)}
            onKeyDown={onKeyDown}
            rows={2}
            maxLength={2000}
            autoFocus
            aria-describedby={error === undefined ? undefined : `${id}-error`}
          />
          <div className="fact-edit-actions">
            <button
              className="button button-primary button-small"
              type="submit"
              disabled={busy || draft.trim() === ""}
            >
              {busy ? "Saving…" : "Save"}
            </button>
            <button
              className="button button-small"
              type="button"
              onClick={() => {
                setDraft(fact.text);
                setEditing(false);
                setError(undefined);
              }}
            >
              Cancel
            </button>
          </div>
        </form>
      ) : (
        <div className="fact-body">
          <p className="fact-text" id={`${id}-text`}>
            {fact.text}
          </p>
          <div className="fact-meta muted">
            <FactMeta fact={fact} />
          </div>
        </div>
      )}
      {!editing && (
        <div className="fact-actions">
          <button
            ref={editButton}
            type="button"
            className="icon-button"
            aria-label="Edit"
            aria-describedby={`${id}-text`}
            title="Edit"
            disabled={busy}
            onClick={() => {
              setDraft(fact.text);
              setEditing(true);
            }}
          >
            <Pencil size={16} aria-hidden="true" />
          </button>
          <button
            type="button"
            className="icon-button icon-button-danger"
            aria-label="Delete"
            aria-describedby={`${id}-text`}
            title="Delete"
            disabled={busy}
            onClick={() => void remove()}
          >
            <Trash2 size={16} aria-hidden="true" />
          </button>
        </div>
      )}
      {error !== undefined && (
        <p className="notice notice-error fact-error" role="alert" id={`${id}-error`}>
          {error}
        </p>
      )}
    </li>
  );
}
