/**
 * HTML to readable Markdown for `web_fetch`, with turndown: scripts, styles, forms and other
 * parts that carry no text for a reader are dropped; the page's <title> is returned apart.
 */
import TurndownService from "turndown";

const turndown = new TurndownService({
  headingStyle: "atx",
  codeBlockStyle: "fenced",
  bulletListMarker: "-",
});
turndown.remove([
  "script",
  "style",
  "noscript",
  "template",
  "head",
  "iframe",
  "svg",
  "canvas",
  "form",
  "button",
  "select",
  "input",
  "textarea",
]);

const titlePattern = /<title[^>]*>([\s\S]*?)<\/title>/i;

/** The page's title (entities decoded roughly) and its body as Markdown. */
export function htmlToMarkdown(html: string): { title: string; markdown: string } {
  const title = (titlePattern.exec(html)?.[1] ?? "")
    .replace(/\s+/g, " ")
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .trim();
  const markdown = turndown
    .turndown(html)
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return { title, markdown };
}
