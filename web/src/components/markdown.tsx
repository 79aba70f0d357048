/**
 * Markdown with GitHub extensions and highlighted code. Loaded lazily (see markdown-lazy.tsx)
 * so the first screen does not wait for it. Raw HTML in the text is shown as text, never run.
 */
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import dockerfile from "highlight.js/lib/languages/dockerfile";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Check, Copy } from "lucide-react";
import { memo, useMemo, useState, type ReactNode } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";

const languages = {
  bash,
  css,
  diff,
  dockerfile,
  go,
  ini,
  javascript,
  json,
  markdown,
  python,
  rust,
  shell,
  sql,
  typescript,
  xml,
  yaml,
};
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);
hljs.registerAliases(["sh", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });
hljs.registerAliases(["toml"], { languageName: "ini" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["md"], { languageName: "markdown" });

/** Longer code is shown plain: highlighting it would hold up the page. */
const highlightLimit = 40_000;

/** Highlighted code by language and text: a row scrolled back into view is not highlighted again. */
const highlighted = new Map<string, string | undefined>();
const highlightCacheSize = 500;

export function highlight(code: string, language: string | undefined): string | undefined {
  if (code.length > highlightLimit) return undefined;
  const key = `${language ?? ""}\u0000${code}`;
  if (highlighted.has(key)) return highlighted.get(key);
  const html = highlightUncached(code, language);
  if (highlighted.size >= highlightCacheSize) highlighted.delete(highlighted.keys().next().value!);
  highlighted.set(key, html);
  return html;
}

function highlightUncached(code: string, language: string | undefined): string | undefined {
  try {
    if (language !== undefined && hljs.getLanguage(language) !== undefined)
      return hljs.highlight(code, { language, ignoreIllegals: true }).value;
    if (language === undefined && code.length < 5000) {
      const result = hljs.highlightAuto(code, [
        "bash",
        "json",
        "javascript",
        "typescript",
        "python",
        "yaml",
        "xml",
        "sql",
        "diff",
      ]);
      return result.relevance >= 5 ? result.value : undefined;
    }
  } catch {
    // fall back to plain text
  }
  return undefined;
}

function textOf(node: ReactNode): string {
  if (typeof node === "string" || typeof node === "number") return String(node);
  if (Array.isArray(node)) return node.map(textOf).join("");
  if (node !== null && typeof node === "object" && "props" in node)
    return textOf((node.props as { children?: ReactNode }).children);
  return "";
}

export function CodeBlock({ code, language }: { code: string; language: string | undefined }) {
  const [copied, setCopied] = useState(false);
  const html = useMemo(() => highlight(code, language), [code, language]);
  const copy = () => {
    void navigator.clipboard?.writeText(code).then(() => {
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    });
  };
  return (
    <div className="code-block">
      <div className="code-bar">
        <span>{language ?? "text"}</span>
        <button
          type="button"
          className="code-copy"
          onClick={copy}
          aria-label={copied ? "Copied" : "Copy code"}
        >
          {copied ? <Check size={14} aria-hidden="true" /> : <Copy size={14} aria-hidden="true" />}
          <span>{copied ? "Copied" : "Copy"}</span>
        </button>
      </div>
      {/* Focusable: a wide block scrolls sideways, and a keyboard must reach it too. */}
      <pre tabIndex={0}>
        {html === undefined ? (
          <code>{code}</code>
        ) : (
          <code className="hljs" dangerouslySetInnerHTML={{ __html: html }} />
        )}
      </pre>
    </div>
  );
}

const components: Components = {
  pre({ children }) {
    const child: unknown = Array.isArray(children) ? (children as unknown[])[0] : children;
    const className =
      (child as { props?: { className?: string } } | undefined)?.props?.className ?? "";
    const language = /language-([\w+#-]+)/.exec(className)?.[1]?.toLowerCase();
    return <CodeBlock code={textOf(children).replace(/\n$/, "")} language={language} />;
  },
  a({ href, children }) {
    return (
      <a href={href} target="_blank" rel="noopener noreferrer">
        {children}
      </a>
    );
  },
  table({ children }) {
    return (
      <div className="table-scroll">
        <table>{children}</table>
      </div>
    );
  },
};

const remarkPlugins = [remarkGfm];

/**
 * The rendered tree of `text`, cached by text (most recently used kept). React elements are
 * immutable descriptions, so one tree serves every row showing the same text, and a row that
 * scrolls out of the window and back is not parsed again. `ReactMarkdown` is a plain function
 * (no hooks), so the parse can run outside a render: markdown-lazy.tsx runs it in idle time.
 */
const trees = new Map<string, ReactNode>();
const treeCacheSize = 3000;

export function markdownTree(text: string): ReactNode {
  const cached = trees.get(text);
  if (cached !== undefined) {
    trees.delete(text); // most recently used last
    trees.set(text, cached);
    return cached;
  }
  const tree = ReactMarkdown({ children: text, remarkPlugins, components });
  if (trees.size >= treeCacheSize) trees.delete(trees.keys().next().value!);
  trees.set(text, tree);
  return tree;
}

export function hasMarkdownTree(text: string): boolean {
  return trees.has(text);
}

function Markdown({ text }: { text: string }) {
  return <div className="markdown">{markdownTree(text)}</div>;
}

export default memo(Markdown);
