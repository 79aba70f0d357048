/**
 * Writes the proxy's request log to the audit log: `egress.denied` for every refusal and
 * `egress.allowed` for every allowed request, one row each, target = the computer's id.
 *
 * Cheap by construction: writes are not awaited by the proxy, and when the store falls behind
 * (more than `maxPending` writes in flight) allowed entries are dropped and counted, the count
 * riding on the next row written (`detail.droppedBefore`); denied entries are never dropped.
 */
import { silentLogger, type Logger } from "../log/index.ts";
import type { Store } from "../store/index.ts";
import type { EgressLogEntry } from "./proxy.ts";

export interface EgressAuditOptions {
  /** Write allowed requests too. @default true */
  allowed?: boolean;
  /** Writes in flight beyond which allowed entries are dropped. @default 1000 */
  maxPending?: number;
  /** @default silent */
  logger?: Logger;
}

/** An `onRequest` hook for the proxy, with a way to wait for its writes. */
export interface EgressAuditSink {
  (entry: EgressLogEntry): void;
  /** Resolves when every write started so far has finished. */
  flush(): Promise<void>;
  /** Allowed entries dropped because the store fell behind. */
  readonly dropped: number;
}

/** The audit row's detail for a log entry (undefined fields left out). */
export function auditDetail(entry: EgressLogEntry): Record<string, unknown> {
  const detail: Record<string, unknown> = {
    method: entry.method,
    host: entry.host,
    port: entry.port,
    status: entry.status,
    bytesUp: entry.bytesUp,
    bytesDown: entry.bytesDown,
    durationMs: entry.durationMs,
  };
  if (entry.resolvedAddress !== undefined) detail.resolvedAddress = entry.resolvedAddress;
  if (entry.reason !== undefined) detail.reason = entry.reason;
  if (entry.code !== undefined) detail.code = entry.code;
  if (entry.intercepted === true) detail.intercepted = true;
  return detail;
}

/** Adapt a store's audit log into the proxy's `onRequest` hook. */
export function auditTo(
  store: Pick<Store, "audit">,
  options: EgressAuditOptions = {},
): EgressAuditSink {
  const writeAllowed = options.allowed ?? true;
  const maxPending = options.maxPending ?? 1000;
  const logger = (options.logger ?? silentLogger).child({ component: "egress-audit" });
  const pending = new Set<Promise<void>>();
  let dropped = 0;
  let droppedUnreported = 0;

  const sink = (entry: EgressLogEntry): void => {
    if (entry.decision === "allowed") {
      if (!writeAllowed) return;
      if (pending.size >= maxPending) {
        dropped += 1;
        droppedUnreported += 1;
        return;
      }
    }
    const detail = auditDetail(entry);
    if (droppedUnreported > 0) {
      detail.droppedBefore = droppedUnreported;
      droppedUnreported = 0;
    }
    const write = store
      .audit({
        accountId: null,
        action: entry.decision === "allowed" ? "egress.allowed" : "egress.denied",
        target: entry.computerId,
        detail,
      })
      .catch((error: unknown) => logger.warn("egress audit write failed", { error }))
      .finally(() => pending.delete(write));
    pending.add(write);
  };

  const flush = async (): Promise<void> => {
    while (pending.size > 0) await Promise.all(pending);
  };
  // defineProperty, not Object.assign: `dropped` must stay a live getter.
  return Object.defineProperty(Object.assign(sink, { flush }), "dropped", {
    get: () => dropped,
    enumerable: true,
  }) as EgressAuditSink;
}
