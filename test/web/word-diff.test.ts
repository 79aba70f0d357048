/** The Memory panel's word diff (web/src/lib/word-diff.ts): what a revision's before → after shows. */
import { describe, expect, it } from "vitest";
import { wordDiff, type DiffPart } from "../../web/src/lib/word-diff.ts";

/** The diff written as text: [-removed-] and {+added+}. */
function render(parts: DiffPart[]): string {
  return parts
    .map((part) =>
      part.kind === "same"
        ? part.text
        : part.kind === "removed"
          ? `[-${part.text}-]`
          : `{+${part.text}+}`,
    )
    .join("");
}

describe("wordDiff", () => {
  it("marks only the changed word of an edited fact", () => {
    expect(render(wordDiff("The project is called Falcon.", "The project is called Heron."))).toBe(
      "The project is called [-Falcon.-]{+Heron.+}",
    );
  });

  it("shows a rewritten phrase as one removal and one addition, not word by word", () => {
    expect(render(wordDiff("I like tea a lot today", "I like strong black coffee today"))).toBe(
      "I like [-tea a lot-]{+strong black coffee+} today",
    );
  });

  it("keeps unchanged words between two separate changes", () => {
    expect(render(wordDiff("I like tea and cake", "I love tea and pie"))).toBe(
      "I [-like-]{+love+} tea and [-cake-]{+pie+}",
    );
  });

  it("an added fact is all added, a removed one all removed, an unchanged one all the same", () => {
    expect(wordDiff("", "A new fact.")).toEqual([{ kind: "added", text: "A new fact." }]);
    expect(wordDiff("An old fact.", "")).toEqual([{ kind: "removed", text: "An old fact." }]);
    expect(wordDiff("Same.", "Same.")).toEqual([{ kind: "same", text: "Same." }]);
  });

  it("both sides can always be read back from the parts, whatever the texts", () => {
    const words = ["a", "b", "c", "tea", " ", "  ", "x."];
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const text = () =>
      Array.from({ length: Math.floor(random() * 12) }, () => words[Math.floor(random() * 7)]).join(
        random() < 0.5 ? " " : "",
      );
    for (let round = 0; round < 300; round++) {
      const before = text();
      const after = text();
      const parts = wordDiff(before, after);
      const side = (kind: DiffPart["kind"]) =>
        parts
          .filter((part) => part.kind === "same" || part.kind === kind)
          .map((part) => part.text)
          .join("");
      expect(side("removed")).toBe(before);
      expect(side("added")).toBe(after);
      // Merged: never two parts of the same kind in a row.
      parts.slice(1).forEach((part, index) => expect(part.kind).not.toBe(parts[index]!.kind));
    }
  });

  it("a text too long for the table falls back to all removed, all added (and still reads back)", () => {
    const before = Array.from({ length: 600 }, (_, index) => `w${index}`).join(" ");
    const after = Array.from({ length: 600 }, (_, index) => `v${index}`).join(" ");
    expect(wordDiff(before, after, 1000)).toEqual([
      { kind: "removed", text: before },
      { kind: "added", text: after },
    ]);
  });
});
