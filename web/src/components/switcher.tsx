/**
 * Search across conversations and switch to one (issue 16 §2): Ctrl/Cmd-K anywhere, or the
 * sidebar's search button, opens it. With no words it lists the newest conversations; with words
 * it asks `GET /v1/conversations/search` (titles, messages and replies of the caller's own
 * conversations) and shows where each matched. ↑/↓ pick, Enter opens, Esc closes.
 */
import { Search } from "lucide-react";
import { lazy, Suspense, useEffect, useSyncExternalStore } from "react";
import "./chat-actions.css";

// Its own chunk: the first load stays small; the dialog loads on the first Ctrl/Cmd-K.
const SwitcherDialog = lazy(() => import("./switcher-dialog.tsx"));

// One switcher per page: the button and the shortcut open the same one.
let open = false;
const listeners = new Set<() => void>();
function setOpen(next: boolean) {
  open = next;
  for (const listener of [...listeners]) listener();
}
const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

export const isMac = () => /Mac|iPhone|iPad/.test(navigator.platform);

export function SearchButton() {
  return (
    <button
      type="button"
      className="nav-item sidebar-search"
      onClick={() => setOpen(true)}
      aria-keyshortcuts="Control+K Meta+K"
    >
      <Search size={16} aria-hidden="true" />
      <span className="nav-label">Search chats</span>
      <kbd>{isMac() ? "⌘K" : "Ctrl K"}</kbd>
    </button>
  );
}

/** Mounted once (shell.tsx): the Ctrl/Cmd-K shortcut and the dialog. */
export function Switcher() {
  const shown = useSyncExternalStore(subscribe, () => open);
  useEffect(() => {
    const onKey = (event: globalThis.KeyboardEvent) => {
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "k") {
        event.preventDefault();
        setOpen(!open);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  return shown ? (
    <Suspense fallback={null}>
      <SwitcherDialog onClose={() => setOpen(false)} />
    </Suspense>
  ) : null;
}
