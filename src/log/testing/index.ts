/** Test support for log/: a logger that keeps what it was told. Never imported by production code. */
import type { LogFields, Logger } from "../index.ts";

export interface LogEntry {
  level: "debug" | "info" | "warn" | "error";
  message: string;
  fields: LogFields;
}

export interface MemoryLogger extends Logger {
  readonly entries: LogEntry[];
  /** Messages only, for quick assertions. */
  messages(): string[];
}

export function createMemoryLogger(): MemoryLogger {
  const entries: LogEntry[] = [];
  const make = (bindings: LogFields): Logger => {
    const at =
      (level: LogEntry["level"]) =>
      (message: string, fields: LogFields = {}) =>
        void entries.push({ level, message, fields: { ...bindings, ...fields } });
    return {
      debug: at("debug"),
      info: at("info"),
      warn: at("warn"),
      error: at("error"),
      child: (more) => make({ ...bindings, ...more }),
    };
  };
  return Object.assign(make({}), {
    entries,
    messages: () => entries.map((entry) => entry.message),
  });
}
