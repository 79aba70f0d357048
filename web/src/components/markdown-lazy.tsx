/**
 * Markdown off the frame (issue 16 §7: no frame over 50 ms while scrolling a long timeline).
 *
 * A row entering the timeline's window shows its text plain (same words, same place) and asks
 * for its markdown; the parse runs in idle time (requestIdleCallback, a few rows per idle
 * slice, newest request first), and the row then swaps in the cached tree (markdown.tsx). So a
 * frame that mounts a screen of new rows does not also parse a screen of markdown, and rows
 * scrolled past before the browser was idle are never parsed at all.
 *
 * A text already parsed is drawn as markdown at once (no plain flash when a row scrolls back),
 * and so is a row that already shows markdown and whose text changes (a reply streaming in).
 */
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { useRowResized } from "./virtual-list.tsx";

type MarkdownModule = typeof import("./markdown.tsx");

let module: MarkdownModule | undefined;
let loading: Promise<MarkdownModule> | undefined;

function load(): Promise<MarkdownModule> {
  loading ??= import("./markdown.tsx").then((loaded) => (module = loaded));
  return loading;
}

/** Texts waiting for their parse, and the rows waiting on each (insertion order). */
const waiting = new Map<string, Set<() => void>>();
let scheduled = false;

/**
 * Per idle slice: leave this much of it to the browser, parse for at most this long (an idle
 * slice can be 50 ms, and a frame asked for meanwhile would wait for it), and at most this many
 * texts (each swap is then drawn in a render of its own, outside the slice). At least one text
 * per slice, so a busy page still gets its markdown.
 */
const idleReserveMs = 3;
const idleSliceMs = 8;
const textsPerSlice = 6;

interface IdleDeadline {
  timeRemaining(): number;
  readonly didTimeout: boolean;
}

function requestIdle(work: (deadline: IdleDeadline) => void): void {
  if (typeof window.requestIdleCallback === "function") {
    window.requestIdleCallback(work, { timeout: 500 });
  } else {
    setTimeout(() => work({ timeRemaining: () => 8, didTimeout: true }), 1);
  }
}

function schedule(): void {
  if (scheduled || waiting.size === 0) return;
  scheduled = true;
  load().then(
    () => requestIdle(parseWaiting),
    () => {
      // The chunk did not load (offline, a new deploy): rows stay plain; the next request retries.
      loading = undefined;
      scheduled = false;
    },
  );
}

function parseWaiting(deadline: IdleDeadline): void {
  scheduled = false;
  const loaded = module!;
  // Newest first: while scrolling, the rows asked for last are the ones on screen now.
  const texts = [...waiting.keys()].reverse();
  let parsed = 0;
  const started = performance.now();
  for (const text of texts) {
    if (
      parsed > 0 &&
      (parsed >= textsPerSlice ||
        deadline.timeRemaining() < idleReserveMs ||
        performance.now() - started > idleSliceMs)
    )
      break;
    const listeners = waiting.get(text);
    waiting.delete(text);
    if (listeners === undefined || listeners.size === 0) continue;
    void loaded.markdownTree(text); // parsed into the cache; the row draws it
    parsed++;
    for (const listener of listeners) listener();
  }
  schedule();
}

function request(text: string, ready: () => void): () => void {
  let listeners = waiting.get(text);
  if (listeners === undefined) {
    listeners = new Set();
    waiting.set(text, listeners);
  }
  listeners.add(ready);
  schedule();
  return () => {
    const current = waiting.get(text);
    current?.delete(ready);
    if (current?.size === 0) waiting.delete(text);
  };
}

export function LazyMarkdown({ text }: { text: string }) {
  const cachedNow = module?.hasMarkdownTree(text) === true;
  // Once a row shows markdown it keeps doing so as its text changes (streaming).
  const [rich, setRich] = useState(cachedNow);
  const showRich = rich || cachedNow;
  useEffect(() => {
    if (showRich) return;
    return request(text, () => setRich(true));
  }, [text, showRich]);
  // In a timeline row, the list keeps the reading position in the same task as the swap.
  const rowResized = useRowResized();
  const wasRich = useRef(showRich);
  useLayoutEffect(() => {
    if (showRich && !wasRich.current) rowResized();
    wasRich.current = showRich;
  }, [showRich, rowResized]);
  if (showRich && module !== undefined)
    return <div className="markdown">{module.markdownTree(text)}</div>;
  return <div className="markdown markdown-plain">{text}</div>;
}
