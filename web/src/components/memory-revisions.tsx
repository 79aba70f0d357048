/**
 * The Memory panel's revisions: the history (newest first, the bot's own and the user facts'
 * merged, paged with "Load more"), each a diff of before → after with who made it and when, and
 * Revert on applied ones; and the inbox of proposals with Accept and Reject, next to the bot's
 * review-mode setting.
 */
import { RotateCcw } from "lucide-react";
import { useEffect, useId, useState } from "react";
import type { MemoryScope } from "../api/client.ts";
import type { MemoryRevision } from "../api/types.ts";
import { formatRelative } from "../lib/format.ts";
import { onLinkClick, paths } from "../lib/router.ts";
import { wordDiff } from "../lib/word-diff.ts";
import {
  compareNewestFirst,
  inboxPageSize,
  memoryInboxChanged,
  type MemoryInbox,
} from "../state/memory-inbox.ts";
import { useSession } from "../state/session.tsx";
import { messageOf, scopeOf, tierLabel, type PanelContext } from "./memory-shared.ts";
import { EmptyState } from "./ui.tsx";

const pageSize = 20;

const actionLabel: Record<MemoryRevision["action"], string> = {
  add: "Added",
  replace: "Changed",
  remove: "Removed",
};

/** One paged list of revisions: the bot's own, or the account's user facts. */
interface Source {
  scope: MemoryScope;
  revisions: MemoryRevision[];
  next: string | null;
}

/**
 * The two sources merged newest first, up to where both are known: past the oldest loaded entry
 * of a source with more pages, an entry of the other could still be preceded by one not loaded.
 */
function mergeSources(sources: Source[]): { shown: MemoryRevision[]; more: Source | undefined } {
  const unfinished = sources.filter((source) => source.next !== null);
  // The source whose loaded part ends first is the one to page on.
  const more = unfinished
    .filter((source) => source.revisions.length > 0)
    .sort((a, b) => compareNewestFirst(a.revisions.at(-1)!, b.revisions.at(-1)!))[0];
  const boundary = more?.revisions.at(-1);
  const shown = sources
    .flatMap((source) => source.revisions)
    .sort(compareNewestFirst)
    .filter((revision) => boundary === undefined || compareNewestFirst(revision, boundary) <= 0);
  return { shown, more };
}

export function MemoryHistory({ context }: { context: PanelContext }) {
  const { api } = useSession();
  const { bot, version } = context;
  const [sources, setSources] = useState<Source[]>();
  const [error, setError] = useState<string>();
  const [loadingMore, setLoadingMore] = useState(false);

  useEffect(() => {
    const controller = new AbortController();
    const scopes: MemoryScope[] = [{ kind: "bot", botId: bot.id }, { kind: "user" }];
    Promise.all(
      scopes.map(async (scope): Promise<Source> => {
        const page = await api.memoryRevisions(scope, { limit: pageSize }, controller.signal);
        return { scope, revisions: page.revisions, next: page.next };
      }),
    )
      .then((value) => {
        setSources(value);
        setError(undefined);
      })
      .catch((caught: unknown) => {
        if (!controller.signal.aborted) setError(messageOf(caught));
      });
    return () => controller.abort();
  }, [api, bot.id, version]);

  if (sources === undefined)
    return (
      <EmptyState
        title={error === undefined ? "Loading…" : "Could not load the history"}
        detail={error}
      />
    );
  const { shown, more } = mergeSources(sources);

  const loadMore = async (source: Source) => {
    setLoadingMore(true);
    try {
      const page = await api.memoryRevisions(source.scope, {
        limit: pageSize,
        before: source.next!,
      });
      setSources((current) =>
        current?.map((candidate) =>
          candidate === source
            ? { ...source, revisions: [...source.revisions, ...page.revisions], next: page.next }
            : candidate,
        ),
      );
      setError(undefined);
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setLoadingMore(false);
    }
  };

  return (
    <section className="memory-history" aria-labelledby="memory-history-title">
      <h2 id="memory-history-title">History</h2>
      <p className="muted memory-tier-help">
        Every change to what {bot.name} remembers, newest first: by {bot.name} during a chat, by the
        memory pass after one, or by you. Reverting a change is a change too, so it shows up here as
        well.
      </p>
      {shown.length === 0 ? (
        <p className="muted memory-empty">No changes yet.</p>
      ) : (
        <ol className="revision-list">
          {shown.map((revision) => (
            <RevisionItem
              key={revision.id}
              context={context}
              revision={revision}
              actions={revision.status === "applied" ? ["revert"] : []}
            />
          ))}
        </ol>
      )}
      {error !== undefined && (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      )}
      {more !== undefined && (
        <div className="memory-more">
          <button
            type="button"
            className="button"
            disabled={loadingMore}
            onClick={() => void loadMore(more)}
          >
            {loadingMore ? "Loading…" : "Load more"}
          </button>
        </div>
      )}
    </section>
  );
}

export function MemoryInboxList({ context, inbox }: { context: PanelContext; inbox: MemoryInbox }) {
  const { bot } = context;
  const proposals = inbox.proposals;
  return (
    <>
      <ReviewSetting context={context} />
      <section className="memory-inbox" aria-labelledby="memory-inbox-title">
        <h2 id="memory-inbox-title">Waiting for review</h2>
        {proposals === undefined ? (
          <p className={inbox.error === undefined ? "muted" : "notice notice-error"}>
            {inbox.error ?? "Loading…"}
          </p>
        ) : proposals.length === 0 ? (
          <p className="muted memory-empty">
            Nothing waits for review.{" "}
            {bot.memoryReview
              ? `The memory pass's next proposals for ${bot.name} will show up here.`
              : ""}
          </p>
        ) : (
          <>
            {inbox.more && (
              <p className="muted">
                Showing the newest {inboxPageSize}; the rest show up as you decide these.
              </p>
            )}
            <ol className="revision-list">
              {proposals.map((revision) => (
                <RevisionItem
                  key={revision.id}
                  context={context}
                  revision={revision}
                  actions={["accept", "reject"]}
                />
              ))}
            </ol>
          </>
        )}
      </section>
    </>
  );
}

/** The bot's review mode, explained, and switchable right here. */
function ReviewSetting({ context }: { context: PanelContext }) {
  const { api, upsertBot } = useSession();
  const { bot } = context;
  const id = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();

  const toggle = async (memoryReview: boolean) => {
    setBusy(true);
    setError(undefined);
    try {
      upsertBot(await api.updateBot(bot.id, { memoryReview }));
      memoryInboxChanged();
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="memory-review" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Review mode</h2>
      <label className="choice">
        <input
          type="checkbox"
          checked={bot.memoryReview}
          disabled={busy}
          onChange={(event) => void toggle(event.target.checked)}
          aria-describedby={`${id}-help`}
        />
        <span>Review memory changes before they are saved</span>
      </label>
      <p className="muted memory-tier-help" id={`${id}-help`}>
        {bot.memoryReview ? "On" : "Off"}: after each turn, the memory pass reads the chat and
        decides what {bot.name} should remember.{" "}
        {bot.memoryReview
          ? "With review mode on it only proposes: each change waits here until you accept or reject it."
          : "With review mode off it saves its changes directly; you can still revert any of them in History."}{" "}
        What {bot.name} saves with its memory tool during a chat, and your own edits, are always
        saved directly.
      </p>
      {error !== undefined && (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

/** Who made a revision, with a link to the chat it came from. */
function Author({ revision, botName }: { revision: MemoryRevision; botName: string }) {
  const { bots, conversations } = useSession();
  if (revision.author === "user") return <>you</>;
  const conversation = conversations?.find((item) => item.id === revision.conversationId);
  // A user fact's writer is the bot of its chat; the bot's own memory is written by this bot.
  const writer =
    revision.scope === "bot"
      ? botName
      : (bots?.find((item) => item.id === conversation?.botId)?.name ?? "a bot");
  const chat =
    revision.conversationId === null ? undefined : (
      <a
        href={paths.conversation(revision.conversationId)}
        onClick={(event) => onLinkClick(event, paths.conversation(revision.conversationId!))}
      >
        {conversation === undefined ? "a chat" : `“${conversation.title}”`}
      </a>
    );
  if (revision.author === "pass")
    return chat === undefined ? <>the memory pass</> : <>the memory pass after {chat}</>;
  return chat === undefined ? (
    <>{writer}, during a chat</>
  ) : (
    <>
      {writer}, during {chat}
    </>
  );
}

function Diff({ revision }: { revision: MemoryRevision }) {
  const before = revision.before ?? "";
  const after = revision.after ?? "";
  const parts = wordDiff(before, after);
  const spoken =
    revision.action === "add"
      ? `Added: ${after}`
      : revision.action === "remove"
        ? `Removed: ${before}`
        : `Before: ${before}. After: ${after}`;
  return (
    <p className="diff">
      {/* del and ins are silent in most screen readers: they hear the plain before and after. */}
      <span className="visually-hidden">{spoken}</span>
      <span aria-hidden="true">
        {parts.map((part, index) =>
          part.kind === "same" ? (
            <span key={index}>{part.text}</span>
          ) : part.kind === "removed" ? (
            <del key={index}>{part.text}</del>
          ) : (
            <ins key={index}>{part.text}</ins>
          ),
        )}
      </span>
    </p>
  );
}

type RevisionAction = "revert" | "accept" | "reject";

const actionButton: Record<RevisionAction, string> = {
  revert: "Revert",
  accept: "Accept",
  reject: "Reject",
};

const doneText: Record<RevisionAction, string> = {
  revert: "Reverted: the change is undone, and the undoing is in the history.",
  accept: "Accepted and saved.",
  reject: "Rejected: nothing was saved.",
};

function RevisionItem({
  context,
  revision,
  actions,
}: {
  context: PanelContext;
  revision: MemoryRevision;
  actions: RevisionAction[];
}) {
  const { api } = useSession();
  const id = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const scope = scopeOf(context.bot.id, revision);

  const act = async (action: RevisionAction) => {
    setBusy(true);
    setError(undefined);
    try {
      const result = await api.decideMemory(scope, revision.id, action);
      context.changed({
        text: doneText[action],
        ...(action === "reject" ? {} : { undo: { scope, revisionId: result.revision.id } }),
      });
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <li
      className={`revision revision-${revision.status}`}
      data-revision-id={revision.id}
      data-status={revision.status}
    >
      <div className="revision-head">
        <h3 className="revision-title" id={`${id}-title`}>
          {actionLabel[revision.action]}
          <span className="visually-hidden"> in </span>
          <span className={`badge badge-small badge-tier badge-tier-${revision.tier}`}>
            {revision.tier === "user" ? "User fact · all bots" : tierLabel[revision.tier]}
          </span>
          {revision.revertOf !== null && <span className="badge badge-small">Revert</span>}
          {revision.status === "proposed" && !actions.includes("accept") && (
            <span className="badge badge-small badge-proposed">Waiting for review</span>
          )}
          {revision.status === "rejected" && <span className="badge badge-small">Rejected</span>}
        </h3>
        <div className="revision-meta muted">
          by <Author revision={revision} botName={context.bot.name} /> ·{" "}
          <time dateTime={revision.createdAt} title={new Date(revision.createdAt).toLocaleString()}>
            {formatRelative(revision.createdAt)}
          </time>
        </div>
      </div>
      <Diff revision={revision} />
      {actions.length > 0 && (
        <div className="revision-actions">
          {actions.map((action) => (
            <button
              key={action}
              type="button"
              className={`button button-small${action === "accept" ? " button-primary" : ""}`}
              disabled={busy}
              aria-describedby={`${id}-title`}
              onClick={() => void act(action)}
            >
              {action === "revert" && <RotateCcw size={14} aria-hidden="true" />}
              {actionButton[action]}
            </button>
          ))}
        </div>
      )}
      {error !== undefined && (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      )}
    </li>
  );
}
