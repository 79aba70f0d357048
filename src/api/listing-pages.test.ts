/** Pages of a folder listing (listing-pages.ts, LPG1–LPG2). */
import { describe, expect, it } from "vitest";
import { pageListing } from "./listing-pages.ts";

const entries = [
  { name: "b.txt", type: "file" },
  { name: "z", type: "dir" },
  { name: "a.txt", type: "file" },
  { name: "c", type: "dir" },
  { name: "d.txt", type: "file" },
];

describe("listing pages", () => {
  it("pages folders first, then by name, each entry once", () => {
    const first = pageListing(entries, { limit: 2 });
    expect(first.entries.map((entry) => entry.name)).toEqual(["c", "z"]);
    const second = pageListing(entries, { limit: 2, cursor: first.nextCursor });
    expect(second.entries.map((entry) => entry.name)).toEqual(["a.txt", "b.txt"]);
    const third = pageListing(entries, { limit: 2, cursor: second.nextCursor });
    expect(third.entries.map((entry) => entry.name)).toEqual(["d.txt"]);
    expect(third.nextCursor).toBeUndefined();
  });

  it("an entry made or removed between pages shifts nothing (LPG1)", () => {
    const first = pageListing(entries, { limit: 3 });
    expect(first.entries.map((entry) => entry.name)).toEqual(["c", "z", "a.txt"]);
    const changed = [
      ...entries.filter((entry) => entry.name !== "c"),
      { name: "0.txt", type: "file" },
      { name: "c.txt", type: "file" },
    ];
    const second = pageListing(changed, { limit: 10, cursor: first.nextCursor });
    expect(second.entries.map((entry) => entry.name)).toEqual(["b.txt", "c.txt", "d.txt"]);
  });

  it("a cursor it did not give is a 400 saying to start again (LPG2)", () => {
    expect(() => pageListing(entries, { limit: 2, cursor: "not-a-cursor" })).toThrow(
      "list the folder again without it",
    );
  });
});
