/**
 * What a person can do with the messages of a conversation (docs/chat.md "Branches"): edit and
 * resend a message, regenerate the last reply, and page through the versions of a message that
 * was edited or regenerated ("‹ 1/2 ›"). Editing or regenerating starts a branch: the earlier
 * one stays in the record and the switcher shows it as it was (protocol/branches.ts BR2).
 *
 * The timeline's rows read all of this from one context, so a row needs only its step's seq and
 * message id; the timeline itself keeps only the choice of versions to show.
 */
import { ChevronLeft, ChevronRight, Pencil, RefreshCw } from "lucide-react";
import {
  createContext,
  useContext,
  useEffect,
  useRef,
  useState,
  type KeyboardEvent,
  type ReactNode,
} from "react";
import "./chat-actions.css";

export interface ChatActions {
  /** Versions of each message seq with more than one (BR3), oldest first. */
  versions: ReadonlyMap<number, readonly number[]>;
  choose(seq: number): void;
  /** Idle, on the active branch, and the caller's own conversation. */
  canAct: boolean;
  editingMessageId: string | undefined;
  startEdit(messageId: string): void;
  stopEdit(): void;
  edit(messageId: string, text: string): Promise<void>;
  regenerate(): Promise<void>;
  /** The message ids a person typed in the active branch (may be edited). */
  editable: ReadonlySet<string>;
}

const ChatActionsContext = createContext<ChatActions | undefined>(undefined);

export function ChatActionsProvider({
  value,
  children,
}: {
  value: ChatActions;
  children: ReactNode;
}) {
  return <ChatActionsContext.Provider value={value}>{children}</ChatActionsContext.Provider>;
}

export function useChatActions(): ChatActions | undefined {
  return useContext(ChatActionsContext);
}

function problemOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** "‹ 2/3 ›" under a message that has versions. */
export function VersionSwitcher({ seq }: { seq: number }) {
  const actions = useChatActions();
  const list = actions?.versions.get(seq);
  if (actions === undefined || list === undefined) return null;
  const index = list.indexOf(seq);
  const go = (to: number) => {
    const target = list[to];
    if (target !== undefined) actions.choose(target);
  };
  return (
    <span className="version-switcher" data-testid="version-switcher">
      <button
        type="button"
        className="icon-button version-step"
        onClick={() => go(index - 1)}
        disabled={index <= 0}
        aria-label="Earlier version"
        title="Earlier version"
      >
        <ChevronLeft size={14} aria-hidden="true" />
      </button>
      <span className="version-count" aria-live="polite">
        {index + 1}/{list.length}
      </span>
      <button
        type="button"
        className="icon-button version-step"
        onClick={() => go(index + 1)}
        disabled={index >= list.length - 1}
        aria-label="Later version"
        title="Later version"
      >
        <ChevronRight size={14} aria-hidden="true" />
      </button>
      {index < list.length - 1 && <span className="version-note">earlier version</span>}
    </span>
  );
}

/** The edit button beside a message the caller typed. */
export function EditMessageButton({ messageId }: { messageId: string }) {
  const actions = useChatActions();
  if (actions === undefined || !actions.canAct || !actions.editable.has(messageId)) return null;
  return (
    <button
      type="button"
      className="icon-button message-action"
      onClick={() => actions.startEdit(messageId)}
      aria-label="Edit message"
      title="Edit and resend (↑ in an empty message box)"
    >
      <Pencil size={14} aria-hidden="true" />
    </button>
  );
}

/** The message being edited: its words in a box, Save & send starts a branch. */
export function MessageEditor({ messageId, text }: { messageId: string; text: string }) {
  const actions = useChatActions();
  const [value, setValue] = useState(text);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const area = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    const element = area.current;
    if (element === null) return;
    element.focus();
    element.setSelectionRange(element.value.length, element.value.length);
  }, []);
  if (actions === undefined) return null;
  const save = async () => {
    const words = value.trim();
    if (words === "" || busy) return;
    setBusy(true);
    setProblem(undefined);
    try {
      await actions.edit(messageId, words);
      actions.stopEdit();
    } catch (error) {
      setProblem(problemOf(error));
      setBusy(false);
    }
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      actions.stopEdit();
    } else if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void save();
    }
  };
  return (
    <div className="row row-user message-editor">
      <textarea
        ref={area}
        className="message-editor-text"
        value={value}
        onChange={(event) => setValue(event.target.value)}
        onKeyDown={onKeyDown}
        aria-label="Edit message"
        maxLength={100_000}
        rows={Math.min(8, value.split("\n").length + 1)}
      />
      {problem !== undefined && (
        <div className="chat-action-problem" role="alert">
          Could not send the edit: {problem}
        </div>
      )}
      <div className="message-editor-buttons">
        <button type="button" className="button button-small" onClick={() => actions.stopEdit()}>
          Cancel
        </button>
        <button
          type="button"
          className="button button-small button-primary"
          onClick={() => void save()}
          disabled={busy || value.trim() === ""}
        >
          {busy ? "Sending…" : "Save & send"}
        </button>
      </div>
      <div className="row-meta">The earlier version stays: switch back with ‹ ›.</div>
    </div>
  );
}

/** Under the bot's last reply: ask the same message again. */
export function RegenerateButton() {
  const actions = useChatActions();
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  if (actions === undefined || !actions.canAct) return null;
  return (
    <span className="regenerate">
      <button
        type="button"
        className="link-button"
        disabled={busy}
        onClick={() => {
          setBusy(true);
          setProblem(undefined);
          actions
            .regenerate()
            .catch((error: unknown) => setProblem(problemOf(error)))
            .finally(() => setBusy(false));
        }}
      >
        <RefreshCw size={13} aria-hidden="true" /> {busy ? "Regenerating…" : "Regenerate"}
      </button>
      {problem !== undefined && (
        <span className="chat-action-problem" role="alert">
          Could not regenerate: {problem}
        </span>
      )}
    </span>
  );
}
