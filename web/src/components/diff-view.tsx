/**
 * What a bot's `edit` or `write` changed, as a line diff (lib/line-diff.ts): removed lines red,
 * added lines green, long unchanged runs folded. `write` records only the new content, so a
 * write over an existing file says its earlier content was not recorded.
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
    const created = result?.details.created;
    return {
      before: "",
      after: input.content,
      ...(created === false
        ? {
            note: "Replaced an existing file; its earlier content was not recorded, so every line shows as new.",
          }
        : created === true
          ? { note: "A new file." }
          : {}),
    };
  }
  return undefined;
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
