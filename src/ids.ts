import { randomBytes } from "node:crypto";

/** Prefixed random ids (`bot_3k9…`): readable in logs, unguessable, sortable by nothing. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString("base64url")}`;
}

export type IdGenerator = (prefix: string) => string;
