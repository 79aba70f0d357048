import { RoostError } from "../errors/index.ts";

/** The durable engine could not be started, reached, or configured; the message says what to check. */
export class EngineUnavailableError extends RoostError {
  override readonly name = "EngineUnavailableError";
  /** The last lines restate-server logged, when we ran it. */
  readonly logTail: string | undefined;

  constructor(
    message: string,
    options: { logTail?: string; cause?: unknown; retryAfterMs?: number } = {},
  ) {
    super("unavailable", message, {
      ...(options.cause === undefined ? {} : { cause: options.cause }),
      ...(options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs }),
    });
    this.logTail = options.logTail;
  }
}
