/**
 * Carries live events between server nodes that share a Postgres store, with LISTEN/NOTIFY.
 *
 * Invariants:
 *   R1 a node never delivers its own events twice: each notification names its origin node,
 *      and a node ignores notifications from itself (it delivered them when it published).
 *   R2 best effort, like every live event: a lost notification costs a client a reload from the
 *      store, never data. Notifications larger than Postgres allows are cut (tool output) or
 *      dropped (anything else), never split.
 *   R3 a dropped LISTEN connection is re-established with backoff; events in between are lost (R2).
 *   R4 a node's events reach the others in the order it published them (deltas build text).
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import type { EventHub, HubEvent } from "./index.ts";

/** The Postgres channel Roost's nodes talk on. */
export const eventsChannel = "roost_events";
/** Postgres refuses payloads of 8000 bytes or more. */
const maxPayloadBytes = 7900;

export interface PostgresRelay {
  readonly nodeId: string;
  close(): Promise<void>;
}

export interface PostgresRelayOptions {
  url: string;
  hub: EventHub;
  log?: (message: string) => void;
  /** @default a random id */
  nodeId?: string;
}

interface Envelope {
  origin: string;
  event: HubEvent;
}

/** Fits an event into one notification: tool output is cut (it is a live hint; the step holds it all). */
function encode(origin: string, event: HubEvent): string | undefined {
  let payload = JSON.stringify({ origin, event } satisfies Envelope);
  if (Buffer.byteLength(payload) <= maxPayloadBytes) return payload;
  if (event.type !== "tool-output") return undefined; // R2
  const room = maxPayloadBytes - (Buffer.byteLength(payload) - Buffer.byteLength(event.data)) - 64;
  const data = `${Buffer.from(event.data).subarray(0, Math.max(0, room)).toString()}…`;
  payload = JSON.stringify({ origin, event: { ...event, data } } satisfies Envelope);
  return Buffer.byteLength(payload) <= maxPayloadBytes ? payload : undefined;
}

export async function connectPostgresRelay(options: PostgresRelayOptions): Promise<PostgresRelay> {
  const nodeId = options.nodeId ?? `node_${randomBytes(6).toString("hex")}`;
  const log = options.log ?? (() => undefined);
  // R4: one connection sends, so notifications leave (and arrive) in publishing order.
  const sender = new pg.Pool({ connectionString: options.url, max: 1 });
  sender.on("error", () => undefined);
  let listener: pg.Client | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;

  async function listen(attempt = 0): Promise<void> {
    const client = new pg.Client({ connectionString: options.url });
    client.on("notification", (message) => {
      if (message.channel !== eventsChannel || message.payload === undefined) return;
      try {
        const envelope = JSON.parse(message.payload) as Envelope;
        if (envelope.origin !== nodeId) options.hub.receive(envelope.event); // R1
      } catch {
        // not ours
      }
    });
    client.on("error", () => {
      // R3: the 'end' handler reconnects.
    });
    client.on("end", () => {
      if (closed || listener !== client) return;
      listener = undefined;
      const delayMs = Math.min(5000, 100 * 2 ** attempt);
      log(`roost: events relay lost its Postgres connection; reconnecting in ${delayMs} ms`);
      retryTimer = setTimeout(() => {
        listen(attempt + 1).catch((error: unknown) => log(`roost: events relay: ${String(error)}`));
      }, delayMs);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${eventsChannel}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      if (closed) return;
      if (attempt === 0) throw error;
      retryTimer = setTimeout(
        () => {
          listen(attempt + 1).catch((next: unknown) => log(`roost: events relay: ${String(next)}`));
        },
        Math.min(5000, 100 * 2 ** attempt),
      );
      return;
    }
    listener = client;
  }

  await listen();
  options.hub.attachRelay((event) => {
    const payload = encode(nodeId, event);
    if (payload === undefined) return;
    sender.query("SELECT pg_notify($1, $2)", [eventsChannel, payload]).catch(() => undefined); // R2
  });

  return {
    nodeId,
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      options.hub.attachRelay(() => undefined);
      await listener?.end().catch(() => undefined);
      await sender.end().catch(() => undefined);
    },
  };
}
