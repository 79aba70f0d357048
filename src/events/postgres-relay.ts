/**
 * Carries live events between server nodes that share a Postgres store, with LISTEN/NOTIFY.
 *
 * Invariants:
 *   R1 a node never delivers its own events twice: each notification names its origin node,
 *      and a node ignores notifications from itself (it delivered them when it published).
 *   R2 best effort, like every live event: a lost notification costs a client a reload from the
 *      store, never data. An event larger than a notification may be (8000 bytes) goes by
 *      reference: its text is stored in `relay_payloads` and the notification names the row,
 *      which receivers read; rows are pruned after `payloadRetentionMs`.
 *   R3 a dropped LISTEN connection is re-established with backoff; events in between are lost,
 *      so once it is back the hub is told to resync: its live streams end and their clients
 *      reload from their last seq. An event by reference that cannot be read does the same.
 *   R4 a node's events reach the others in the order it published them (deltas build text),
 *      those by reference too: one connection sends, and a receiver delivers in arrival order.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import type { EventHub, HubEvent } from "./index.ts";

/** The Postgres channel Roost's nodes talk on. */
export const eventsChannel = "roost_events";
/** Postgres refuses payloads of 8000 bytes or more. */
const maxPayloadBytes = 7900;
/** How long an event by reference stays readable (R2); receivers read it within milliseconds. */
const payloadRetentionMs = 5 * 60_000;

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

type Envelope = { origin: string; event: HubEvent } | { origin: string; ref: string };

/** The notification for an event: the event itself, or undefined when it must go by reference. */
function encode(origin: string, event: HubEvent): string | undefined {
  const payload = JSON.stringify({ origin, event } satisfies Envelope);
  return Buffer.byteLength(payload) <= maxPayloadBytes ? payload : undefined;
}

export async function connectPostgresRelay(options: PostgresRelayOptions): Promise<PostgresRelay> {
  const nodeId = options.nodeId ?? `node_${randomBytes(6).toString("hex")}`;
  const log = options.log ?? (() => undefined);
  // R4: one connection sends, so notifications leave (and arrive) in publishing order.
  const sender = new pg.Pool({ connectionString: options.url, max: 1 });
  sender.on("error", () => undefined);
  const reader = new pg.Pool({ connectionString: options.url, max: 1 });
  reader.on("error", () => undefined);
  let delivering: Promise<void> = Promise.resolve();
  let listener: pg.Client | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;

  async function listen(attempt = 0): Promise<void> {
    const client = new pg.Client({ connectionString: options.url });
    client.on("notification", (message) => {
      if (message.channel !== eventsChannel || message.payload === undefined) return;
      let envelope: Envelope;
      try {
        envelope = JSON.parse(message.payload) as Envelope;
      } catch {
        return; // not ours
      }
      if (envelope.origin === nodeId) return; // R1
      // R4: delivered in arrival order, an event by reference once it has been read.
      delivering = delivering.then(async () => {
        if ("event" in envelope) {
          options.hub.receive(envelope.event);
          return;
        }
        try {
          const { rows } = await reader.query<{ payload: string }>(
            "SELECT payload FROM relay_payloads WHERE id = $1",
            [envelope.ref],
          );
          if (rows[0] === undefined) throw new Error(`event ${envelope.ref} is gone`);
          options.hub.receive(JSON.parse(rows[0].payload) as HubEvent);
        } catch (error) {
          log(`roost: events relay could not read an event by reference: ${String(error)}`);
          options.hub.resync(); // R3: clients reload what they missed
        }
      });
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
    if (attempt > 0) options.hub.resync(); // R3: events sent while it was down are lost
  }

  await listen();
  let prunedAt = 0;
  options.hub.attachRelay((event) => {
    const payload = encode(nodeId, event);
    if (payload !== undefined) {
      sender.query("SELECT pg_notify($1, $2)", [eventsChannel, payload]).catch(() => undefined); // R2
      return;
    }
    // R2, R4: stored and named in one statement on the one sending connection; the row is
    // visible when the notification arrives (both at commit).
    const ref = `rp_${randomBytes(9).toString("hex")}`;
    const now = Date.now();
    sender
      .query(
        `WITH stored AS (INSERT INTO relay_payloads (id, payload, created_at) VALUES ($1, $2, $3))
         SELECT pg_notify($4, $5)`,
        [ref, JSON.stringify(event), now, eventsChannel, JSON.stringify({ origin: nodeId, ref })],
      )
      .catch(() => undefined);
    if (now - prunedAt > 60_000) {
      prunedAt = now;
      sender
        .query("DELETE FROM relay_payloads WHERE created_at < $1", [now - payloadRetentionMs])
        .catch(() => undefined);
    }
  });

  return {
    nodeId,
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      options.hub.attachRelay(() => undefined);
      await listener?.end().catch(() => undefined);
      await sender.end().catch(() => undefined);
      await reader.end().catch(() => undefined);
    },
  };
}
