/**
 * A word-level diff of two short texts, for showing a memory revision's before → after (facts
 * are at most 2,000 characters). The longest common subsequence over words and the spaces between
 * them, after trimming what both share at the start and the end. A change is shown as everything
 * removed, then everything added, up to the next unchanged word, which reads better than
 * alternating single words. Past `maxCells` table cells it shows all removed, all added instead.
 */

export interface DiffPart {
  kind: "same" | "removed" | "added";
  text: string;
}

function tokens(text: string): string[] {
  return text.split(/(\s+)/).filter((token) => token !== "");
}

function push(parts: DiffPart[], kind: DiffPart["kind"], text: string): void {
  if (text === "") return;
  const last = parts.at(-1);
  if (last?.kind === kind) last.text += text;
  else parts.push({ kind, text });
}

/** The edit steps between `a` and `b` (both already trimmed of a shared start and end). */
function middle(a: string[], b: string[], maxCells: number): DiffPart[] {
  const width = b.length + 1;
  if ((a.length + 1) * width > maxCells)
    return [
      { kind: "removed", text: a.join("") },
      { kind: "added", text: b.join("") },
    ].filter((part): part is DiffPart => part.text !== "");
  // common[i * width + j]: the longest common subsequence of a[i..] and b[j..].
  const common = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      common[i * width + j] =
        a[i] === b[j]
          ? common[(i + 1) * width + j + 1]! + 1
          : Math.max(common[(i + 1) * width + j]!, common[i * width + j + 1]!);

  const steps: DiffPart[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      steps.push({ kind: "same", text: a[i++]! });
      j++;
    } else if (common[(i + 1) * width + j]! >= common[i * width + j + 1]!) {
      steps.push({ kind: "removed", text: a[i++]! });
    } else {
      steps.push({ kind: "added", text: b[j++]! });
    }
  }
  while (i < a.length) steps.push({ kind: "removed", text: a[i++]! });
  while (j < b.length) steps.push({ kind: "added", text: b[j++]! });
  return steps;
}

export function wordDiff(before: string, after: string, maxCells = 250_000): DiffPart[] {
  const a = tokens(before);
  const b = tokens(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const steps = [
    { kind: "same" as const, text: a.slice(0, start).join("") },
    ...middle(a.slice(start, endA), b.slice(start, endB), maxCells),
    { kind: "same" as const, text: a.slice(endA).join("") },
  ];

  // Group each run of changes into "removed, then added"; a lone space between two changes
  // belongs to the run (it is "changed" on both sides), so a rewritten phrase reads as one.
  const parts: DiffPart[] = [];
  let removed = "";
  let added = "";
  const flush = () => {
    push(parts, "removed", removed);
    push(parts, "added", added);
    removed = added = "";
  };
  steps.forEach((step, index) => {
    const inRun = removed !== "" || added !== "";
    const next = steps.slice(index + 1).find((candidate) => candidate.text !== "");
    if (step.kind === "removed") removed += step.text;
    else if (step.kind === "added") added += step.text;
    else if (inRun && next !== undefined && next.kind !== "same" && /^\s+$/.test(step.text)) {
      removed += step.text;
      added += step.text;
    } else {
      flush();
      push(parts, "same", step.text);
    }
  });
  flush();
  return parts;
}
