import { lazy, Suspense } from "react";

const Markdown = lazy(() => import("./markdown.tsx"));

/** Markdown once its chunk has loaded; plain text (same words, same place) until then. */
export function LazyMarkdown({ text }: { text: string }) {
  return (
    <Suspense fallback={<div className="markdown markdown-plain">{text}</div>}>
      <Markdown text={text} />
    </Suspense>
  );
}
