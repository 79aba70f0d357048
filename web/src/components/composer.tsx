/**
 * The message box: Enter sends, Shift+Enter starts a new line. It stays usable while the bot
 * works: a message sent then joins the running turn. While the bot works, a Stop button beside
 * Send stops the turn (sending stays a normal message, never a stop).
 */
import { ArrowUp, Square } from "lucide-react";
import {
  useEffect,
  useLayoutEffect,
  useRef,
  useState,
  type FormEvent,
  type KeyboardEvent,
} from "react";

export function Composer({
  onSend,
  placeholder,
  hint,
  autoFocus = true,
  draftKey,
  onStop,
  stopping = false,
  onEditLast,
}: {
  onSend(text: string): void | Promise<void>;
  placeholder: string;
  hint?: string;
  autoFocus?: boolean;
  /** Keeps an unsent draft per conversation for this browser tab. */
  draftKey: string;
  /** Given while the bot works: shows the Stop button, which calls it. */
  onStop?: (() => void) | undefined;
  /** A stop was asked for and the turn has not ended yet. */
  stopping?: boolean;
  /** ↑ in an empty box: edit the last message (docs/chat.md "Keyboard"). */
  onEditLast?: (() => void) | undefined;
}) {
  const [text, setText] = useState(() => sessionStorage.getItem(`roost.draft.${draftKey}`) ?? "");
  const [sending, setSending] = useState(false);
  const area = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    if (text === "") sessionStorage.removeItem(`roost.draft.${draftKey}`);
    else sessionStorage.setItem(`roost.draft.${draftKey}`, text);
  }, [text, draftKey]);

  useLayoutEffect(() => {
    const element = area.current;
    if (element === null) return;
    element.style.height = "auto";
    element.style.height = `${Math.min(element.scrollHeight, 240)}px`;
  }, [text]);

  useEffect(() => {
    if (autoFocus && window.matchMedia("(pointer: fine)").matches) area.current?.focus();
  }, [autoFocus]);

  const send = async () => {
    const message = text.trim();
    if (message === "" || sending) return;
    setSending(true);
    setText("");
    try {
      await onSend(message);
    } catch {
      setText(message); // the caller showed why; keep the words
    } finally {
      setSending(false);
      area.current?.focus();
    }
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Escape" && onStop !== undefined) {
      event.preventDefault(); // the window's Esc handler must not stop twice
      onStop();
      return;
    }
    if (event.key === "ArrowUp" && text === "" && onEditLast !== undefined) {
      event.preventDefault();
      onEditLast();
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    }
  };

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    void send();
  };

  return (
    <form className="composer" onSubmit={onSubmit}>
      <div className="composer-box">
        <textarea
          ref={area}
          rows={1}
          value={text}
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
          placeholder={placeholder}
          aria-label="Message"
          maxLength={100_000}
          enterKeyHint="send"
        />
        {onStop !== undefined && (
          <button
            type="button"
            className="stop-button"
            onClick={onStop}
            disabled={stopping}
            aria-label="Stop"
            title={stopping ? "Stopping…" : "Stop the bot"}
          >
            <Square size={14} fill="currentColor" aria-hidden="true" />
          </button>
        )}
        <button
          type="submit"
          className="send-button"
          disabled={text.trim() === "" || sending}
          aria-label="Send"
        >
          <ArrowUp size={18} aria-hidden="true" />
        </button>
      </div>
      <div className="composer-hint">{hint ?? "Enter to send · Shift+Enter for a new line"}</div>
    </form>
  );
}
