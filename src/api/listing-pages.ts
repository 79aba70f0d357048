/**
 * Pages of a folder listing (`GET /v1/computers/me/files?limit=&cursor=`, docs/api.md "Files"):
 * the worker answers a folder whole (up to 10,000 entries, folders first, then by name), and the
 * API hands it out in pages, so a large folder never reaches a browser in one piece.
 *
 * Invariants:
 *   LPG1 a cursor names the last entry of its page (its kind and name), not a position: entries
 *        made or removed between two pages shift nothing, and no entry is listed twice.
 *   LPG2 a cursor that does not decode is a 400 saying to start again without it.
 */
import { InvalidRequestError } from "../errors/index.ts";

/** @default 200 */
export const defaultListingPage = 200;
export const maxListingPage = 1000;

interface Entry {
  name: string;
  type: string;
}

/** Folders first, then by name: the worker's order. */
const rank = (entry: Entry) => (entry.type === "dir" ? 0 : 1);
const compare = (a: [number, string], b: [number, string]) =>
  a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);

function decodeCursor(cursor: string): [number, string] {
  try {
    const value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      (value[0] === 0 || value[0] === 1) &&
      typeof value[1] === "string"
    )
      return [value[0] as number, value[1]];
  } catch {
    // answered below
  }
  throw new InvalidRequestError(
    "cursor is not one this API gave; list the folder again without it (LPG2)",
    { field: "cursor" },
  );
}

/** LPG1: the entries after `cursor`, at most `limit`, and the cursor of the next page. */
export function pageListing<T extends Entry>(
  entries: readonly T[],
  page: { limit: number; cursor?: string | undefined },
): { entries: T[]; nextCursor?: string } {
  const sorted = [...entries].sort((a, b) => compare([rank(a), a.name], [rank(b), b.name]));
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
  const start =
    after === undefined
      ? 0
      : sorted.findIndex((entry) => compare([rank(entry), entry.name], after) > 0);
  const rest = start === -1 ? [] : sorted.slice(start);
  const taken = rest.slice(0, page.limit);
  const last = taken.at(-1);
  return rest.length > taken.length && last !== undefined
    ? {
        entries: taken,
        nextCursor: Buffer.from(JSON.stringify([rank(last), last.name])).toString("base64url"),
      }
    : { entries: taken };
}
