/**
 * What a bot's `edit` or `write` changed, as a line diff (lib/line-diff.ts): removed lines red,
 * added lines green, long unchanged runs folded. A `write` over an existing file diffs against
 * the text it replaced (its result's `previous`, recorded by the worker for UTF-8 text of at most
 * 64 KiB inside the workspace); otherwise the card says why the earlier content is not shown.
 */
import { useMemo } from "react";
import type { ToolCall, ToolPayload } from "../api/types.ts";
import { foldContext, lineDiff } from "../lib/line-diff.ts";
import "./diff-view.css";

/** At most this many characters on each side are diffed; the rest is said, not shown. */
const maxDiffChars = 200_000;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The before and after of an `edit` or `write` call, when its input has them. */
export function changeOf(
  call: Pick<ToolCall, "name" | "input">,
  result: ToolPayload | undefined,
): { before: string; after: string; note?: string } | undefined {
  const input = call.input;
  if (!isRecord(input)) return undefined;
  if (
    call.name === "edit" &&
    typeof input.oldString === "string" &&
    typeof input.newString === "string"
  )
    return { before: input.oldString, after: input.newString };
  if (call.name === "write" && typeof input.content === "string" && input.encoding !== "base64") {
    const details = result?.details;
    const created = details?.created;
    if (created === false && typeof details?.previous === "string")
      return { before: details.previous, after: input.content };
    return {
      before: "",
      after: input.content,
      ...(created === false
        ? { note: `Replaced ${omittedWhy(details?.previousOmitted)}, so every line shows as new.` }
        : created === true
          ? { note: "A new file." }
          : {}),
    };
  }
  return undefined;
}

/** Why a write's replaced content is not shown (the worker's `previousOmitted`). */
function omittedWhy(reason: unknown): string {
  switch (reason) {
    case "binary":
      return "a binary (or non-UTF-8) file; its earlier content is not shown";
    case "too_large":
      return "a file over 64 KiB; its earlier content was not recorded";
    case "outside_workspace":
      return "a file outside /workspace; its earlier content is not read";
    default:
      return "an existing file; its earlier content was not recorded";
  }
}

/** The diff of an `edit` or `write` call (nothing for other calls): the lazy chunk's entry. */
export default function ToolDiff({
  call,
  result,
}: {
  call: Pick<ToolCall, "name" | "input">;
  result: ToolPayload;
}) {
  const change = changeOf(call, result);
  if (change === undefined) return null;
  return (
    <div className="tool-section">
      <h4>Changes</h4>
      <DiffView before={change.before} after={change.after} note={change.note} />
    </div>
  );
}

export function DiffView({
  before,
  after,
  note,
}: {
  before: string;
  after: string;
  note?: string | undefined;
}) {
  const rows = useMemo(
    () => foldContext(lineDiff(before.slice(0, maxDiffChars), after.slice(0, maxDiffChars))),
    [before, after],
  );
  const added = rows.filter((row) => row.kind === "added").length;
  const removed = rows.filter((row) => row.kind === "removed").length;
  return (
    <figure className="diff-view" aria-label="Changes">
      <figcaption className="diff-caption">
        <span className="diff-count-added">+{added}</span>{" "}
        <span className="diff-count-removed">−{removed}</span>
        {note !== undefined && <span className="muted"> · {note}</span>}
        {(before.length > maxDiffChars || after.length > maxDiffChars) && (
          <span className="muted"> · only the first {maxDiffChars} characters are compared</span>
        )}
      </figcaption>
      <table className="diff-table">
        <tbody>
          {rows.map((row, index) =>
            row.kind === "fold" ? (
              <tr key={index} className="diff-fold">
                <td colSpan={3}>
                  ⋯ {row.count} unchanged {row.count === 1 ? "line" : "lines"}
                </td>
              </tr>
            ) : (
              <tr key={index} className={`diff-${row.kind}`}>
                <td className="diff-num">{row.oldLine ?? ""}</td>
                <td className="diff-num">{row.newLine ?? ""}</td>
                <td className="diff-text">
                  <span className="diff-sign" aria-hidden="true">
                    {row.kind === "added" ? "+" : row.kind === "removed" ? "−" : " "}
                  </span>
                  <span className="visually-hidden">
                    {row.kind === "added" ? "added: " : row.kind === "removed" ? "removed: " : ""}
                  </span>
                  {row.text}
                </td>
              </tr>
            ),
          )}
        </tbody>
      </table>
    </figure>
  );
}
