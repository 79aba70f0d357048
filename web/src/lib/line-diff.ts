/**
 * A line diff of two texts, for the bot's `edit` and `write` tool cards: the longest common
 * subsequence over lines, after trimming the lines both share at the start and the end. Past
 * `maxCells` table cells (two long, wholly different files) it shows all removed, then all added.
 */

export interface DiffLine {
  kind: "same" | "removed" | "added";
  text: string;
  /** 1-based line numbers in the old and the new text (absent on the side it is not in). */
  oldLine?: number;
  newLine?: number;
}

function lines(text: string): string[] {
  if (text === "") return [];
  const split = text.split("\n");
  if (split.at(-1) === "") split.pop();
  return split;
}

export function lineDiff(before: string, after: string, maxCells = 4_000_000): DiffLine[] {
  const a = lines(before);
  const b = lines(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const out: DiffLine[] = [];
  let oldLine = 1;
  let newLine = 1;
  const same = (text: string) =>
    out.push({ kind: "same", text, oldLine: oldLine++, newLine: newLine++ });
  const removed = (text: string) => out.push({ kind: "removed", text, oldLine: oldLine++ });
  const added = (text: string) => out.push({ kind: "added", text, newLine: newLine++ });
  for (let index = 0; index < start; index++) same(a[index]!);
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const width = midB.length + 1;
  if ((midA.length + 1) * width > maxCells) {
    midA.forEach(removed);
    midB.forEach(added);
  } else {
    const common = new Uint32Array((midA.length + 1) * width);
    for (let i = midA.length - 1; i >= 0; i--)
      for (let j = midB.length - 1; j >= 0; j--)
        common[i * width + j] =
          midA[i] === midB[j]
            ? common[(i + 1) * width + j + 1]! + 1
            : Math.max(common[(i + 1) * width + j]!, common[i * width + j + 1]!);
    let i = 0;
    let j = 0;
    while (i < midA.length || j < midB.length) {
      if (i < midA.length && j < midB.length && midA[i] === midB[j]) {
        same(midA[i]!);
        i++;
        j++;
      } else if (
        j >= midB.length ||
        (i < midA.length && common[(i + 1) * width + j]! >= common[i * width + j + 1]!)
      ) {
        removed(midA[i]!);
        i++;
      } else {
        added(midB[j]!);
        j++;
      }
    }
  }
  for (let index = endA; index < a.length; index++) same(a[index]!);
  return out;
}

/** Unchanged runs longer than `context` lines on both sides are folded to one marker. */
export function foldContext(
  diff: readonly DiffLine[],
  context = 3,
): (DiffLine | { kind: "fold"; count: number })[] {
  const keep = diff.map((line) => line.kind !== "same");
  const near = diff.map((_, index) => {
    for (let offset = -context; offset <= context; offset++)
      if (keep[index + offset] === true) return true;
    return false;
  });
  const out: (DiffLine | { kind: "fold"; count: number })[] = [];
  for (const [index, line] of diff.entries()) {
    if (near[index] === true) out.push(line);
    else {
      const last = out.at(-1);
      if (last?.kind === "fold") last.count++;
      else out.push({ kind: "fold", count: 1 });
    }
  }
  return out;
}
