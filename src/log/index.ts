/**
 * log/: the server's one structured logger (pino underneath). Every module that logs takes a
 * `Logger` and adds its own fields with `child()` (component, request id, conversation and turn
 * ids); nothing writes to the console directly.
 *
 * Invariants:
 *   LOG1 no token reaches a log line: fields named like credentials are replaced, and API tokens,
 *        worker tokens and bearer credentials inside any text are replaced by `[REDACTED]`.
 *   LOG2 a log call never throws, whatever its fields hold.
 *   LOG3 secret values (secrets/) never reach a log line either: every registered redaction
 *        (`registerLogRedaction`) runs on every text after the credential patterns.
 */
import pino from "pino";

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `bindings` to every line. */
  child(bindings: LogFields): Logger;
}

export interface LogDestination {
  write(text: string): unknown;
}

export interface LoggerOptions {
  /** @default "info" */
  level?: LogLevel;
  /** `json`: one JSON object per line; `pretty`: a short human line (for a terminal). @default "json" */
  format?: "json" | "pretty";
  /** Where lines go. @default process.stderr */
  destination?: LogDestination;
}

const credentialFields = ["token", "apiKey", "authorization", "workerToken", "password", "secret"];

const credentialPatterns: RegExp[] = [
  /\broost_[A-Za-z0-9_-]{16,}/g, // API tokens (auth/)
  /\brwt_[A-Za-z0-9_-]{16,}/g, // worker tokens
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\bsk-[A-Za-z0-9_-]{16,}/g, // provider keys in echoed error texts
];

const redactions = new Set<(text: string) => string>();

/** LOG3: adds a redaction every log line passes (secret values); the answer removes it. */
export function registerLogRedaction(redact: (text: string) => string): () => void {
  redactions.add(redact);
  return () => void redactions.delete(redact);
}

/** LOG1, LOG3: credentials and secret values inside free text become `[REDACTED]`. */
export function redactCredentials(text: string): string {
  let result = text;
  for (const pattern of credentialPatterns) result = result.replace(pattern, "[REDACTED]");
  for (const redact of redactions) result = redact(result);
  return result;
}

function scrub(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return redactCredentials(value);
  if (value instanceof Error)
    return {
      name: value.name,
      message: redactCredentials(value.message),
      stack: value.stack === undefined ? undefined : redactCredentials(value.stack),
    };
  if (depth > 4 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => scrub(item, depth + 1));
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    result[key] = credentialFields.includes(key) ? "[REDACTED]" : scrub(item, depth + 1);
  }
  return result;
}

function wrap(logger: pino.Logger): Logger {
  const at =
    (level: "debug" | "info" | "warn" | "error") => (message: string, fields?: LogFields) => {
      try {
        logger[level](
          fields === undefined ? {} : (scrub(fields) as LogFields),
          redactCredentials(message),
        );
      } catch {
        // LOG2: a log line is never worth a crash
      }
    };
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: (bindings) => wrap(logger.child(scrub(bindings) as LogFields)),
  };
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? process.stderr;
  const stream = options.format === "pretty" ? prettyStream(destination) : destination;
  return wrap(
    pino(
      {
        level: options.level ?? "info",
        base: undefined,
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
      },
      stream,
    ),
  );
}

/**
 * A warning that can fire thousands of times a second (a connection flood): the first one is
 * logged at once, later ones are counted and logged at most once per `intervalMs`, with
 * `suppressed` saying how many were not logged in between.
 */
export function createThrottledWarning(
  logger: Logger,
  message: string,
  intervalMs = 10_000,
  now: () => number = Date.now,
): (fields?: LogFields) => void {
  let lastAt = Number.NEGATIVE_INFINITY;
  let suppressed = 0;
  return (fields) => {
    const at = now();
    if (at - lastAt < intervalMs) {
      suppressed += 1;
      return;
    }
    lastAt = at;
    logger.warn(message, suppressed > 0 ? { ...fields, suppressed } : fields);
    suppressed = 0;
  };
}

/** A logger that drops everything (tests and tools that do not care). */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};

const hiddenInPretty = new Set(["time", "level", "msg"]);

/** `12:00:01 warn  message  key=value …`: what a person reads in a terminal. */
function prettyStream(destination: LogDestination): { write(line: string): void } {
  return {
    write(line) {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        const time = typeof entry.time === "string" ? entry.time.slice(11, 19) : "";
        const level = typeof entry.level === "string" ? entry.level : "info";
        const extras = Object.entries(entry)
          .filter(([key]) => !hiddenInPretty.has(key))
          .map(
            ([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`,
          );
        destination.write(
          `${time} ${level.padEnd(5)} ${typeof entry.msg === "string" ? entry.msg : ""}${extras.length > 0 ? `  ${extras.join(" ")}` : ""}\n`,
        );
      } catch {
        destination.write(line);
      }
    },
  };
}
