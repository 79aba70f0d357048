/** Small formatting helpers for the UI. */

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return `${minutes} min ${seconds} s`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
export function formatRelative(iso: string | null, now = Date.now()): string {
  if (iso === null) return "";
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.round((then - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return "just now";
  if (abs < 3600) return relative.format(Math.round(seconds / 60), "minute");
  if (abs < 86_400) return relative.format(Math.round(seconds / 3600), "hour");
  if (abs < 7 * 86_400) return relative.format(Math.round(seconds / 86_400), "day");
  return new Date(then).toLocaleDateString();
}

// One formatter each: toLocale*String builds a new one per call, which costs a long
// conversation's timeline tens of milliseconds per thousand rows.
const timeFormat = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit" });
const countFormat = new Intl.NumberFormat();

export function formatTime(iso: string): string {
  const then = new Date(iso);
  return Number.isNaN(then.getTime()) ? "" : timeFormat.format(then);
}

/** A count in the reader's locale (`12,345`). */
export function formatCount(value: number): string {
  return countFormat.format(value);
}

/** One-line summary of a tool call's arguments. */
export function summarizeInput(input: unknown): string {
  if (input === null || input === undefined) return "";
  if (typeof input === "string") return input;
  if (typeof input !== "object") return JSON.stringify(input) ?? "";
  const record = input as Record<string, unknown>;
  for (const key of ["command", "path", "url", "query", "pattern"]) {
    const value = record[key];
    if (typeof value === "string") return value;
  }
  const text = JSON.stringify(input);
  return text === "{}" ? "" : text;
}
