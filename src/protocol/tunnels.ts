/**
 * Tunnels: TCP connections the gateway asks a worker to open to a port inside its computer (the
 * port previews of the API), carried as frames on the worker's own connection, multiplexed with
 * every other frame (docs/worker-protocol.md §14). And `ports.list`, the call that answers which
 * TCP ports listen inside the computer.
 *
 * A tunnel is a byte stream in each direction with its own credit: a side may send only as many
 * data bytes as the other side granted (the `window` of open/opened, then each `tunnel_credit`),
 * so a fast producer can never make the other side buffer more than the window it granted.
 *
 * The frames are new types within protocol 1, gated by the `tunnel` capability: a gateway sends
 * `tunnel_open` only to a worker whose hello lists it, and a worker sends tunnel frames only in
 * answer to one. A peer that does not know them never sees them.
 *
 * Unknown fields are stripped, as for the other frames.
 */
import { z } from "zod";

/** The hello capability of a worker that can open tunnels. */
export const tunnelCapability = "tunnel";

/** Limits every tunnel peer applies (part of the protocol). */
export const tunnelLimits = {
  /** Largest `data` of one frame, in bytes before base64 (the sender splits). */
  maxDataBytes: 256 * 1024,
  /** Largest window or credit one frame may grant. */
  maxWindowBytes: 16 * 1024 * 1024,
  /** Chunk size the reference peers send. */
  chunkBytes: 64 * 1024,
} as const;

/** Why a worker did not open a tunnel (`tunnel_refused.code`). Unknown codes mean `failed`. */
export const tunnelRefusalCodes = [
  /** Nothing listens on the port inside the computer (ECONNREFUSED on 127.0.0.1 and ::1). */
  "connection_refused",
  /** The connection did not complete in time. */
  "timeout",
  /** The worker holds as many tunnels as it allows. */
  "too_many_tunnels",
  /** The open frame was not acceptable (a tunnel id in use). */
  "invalid",
  /** Anything else; the message says what. */
  "failed",
] as const;
export type TunnelRefusalCode = (typeof tunnelRefusalCodes)[number];

const tunnelId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a tunnel id: 1 to 64 of [A-Za-z0-9_-]");
const port = z.number().int().min(1).max(65_535);
const windowBytes = z.number().int().positive().max(tunnelLimits.maxWindowBytes);
/** Base64 of at most maxDataBytes; its characters are checked when decoded (decodeChunk). */
const base64Data = z
  .string()
  .min(1)
  .max(Math.ceil(tunnelLimits.maxDataBytes / 3) * 4)
  .refine((text) => text.length % 4 === 0, "base64 text (a multiple of 4 characters)");

// ── gateway → worker ────────────────────────────────────────────────────────────────────────────

/** Open a TCP connection to `port` on the computer's loopback. */
export const tunnelOpenFrameSchema = z.object({
  type: z.literal("tunnel_open"),
  tunnelId,
  port,
  /** Bytes the worker may send on this tunnel before the gateway grants more. */
  window: windowBytes,
});

// ── worker → gateway ────────────────────────────────────────────────────────────────────────────

/** The connection inside the computer is open. */
export const tunnelOpenedFrameSchema = z.object({
  type: z.literal("tunnel_opened"),
  tunnelId,
  /** Bytes the gateway may send on this tunnel before the worker grants more. */
  window: windowBytes,
});

export const tunnelRefusedFrameSchema = z.object({
  type: z.literal("tunnel_refused"),
  tunnelId,
  code: z.string().min(1).max(64),
  message: z.string().max(1024),
});

// ── both directions ─────────────────────────────────────────────────────────────────────────────

/** Bytes of the stream, in order. Never more than the credit the receiver granted. */
export const tunnelDataFrameSchema = z.object({
  type: z.literal("tunnel_data"),
  tunnelId,
  data: base64Data,
});

/** The sender consumed `bytes` more of the receiver's data: it may send that many more. */
export const tunnelCreditFrameSchema = z.object({
  type: z.literal("tunnel_credit"),
  tunnelId,
  bytes: windowBytes,
});

/** The sender will send no more data (TCP FIN); the other direction stays open. */
export const tunnelEndFrameSchema = z.object({ type: z.literal("tunnel_end"), tunnelId });

/** The tunnel is gone in both directions (a reset, an error, a limit); idempotent. */
export const tunnelCloseFrameSchema = z.object({
  type: z.literal("tunnel_close"),
  tunnelId,
  reason: z.string().max(1024).optional(),
});

/** Tunnel frames a worker may send (members of workerFrameSchema). */
export const workerTunnelFrameSchemas = [
  tunnelOpenedFrameSchema,
  tunnelRefusedFrameSchema,
  tunnelDataFrameSchema,
  tunnelCreditFrameSchema,
  tunnelEndFrameSchema,
  tunnelCloseFrameSchema,
] as const;

/** Tunnel frames a gateway may send (members of gatewayFrameSchema). */
export const gatewayTunnelFrameSchemas = [
  tunnelOpenFrameSchema,
  tunnelDataFrameSchema,
  tunnelCreditFrameSchema,
  tunnelEndFrameSchema,
  tunnelCloseFrameSchema,
] as const;

export type TunnelOpenFrame = z.infer<typeof tunnelOpenFrameSchema>;
export type TunnelOpenedFrame = z.infer<typeof tunnelOpenedFrameSchema>;
export type TunnelRefusedFrame = z.infer<typeof tunnelRefusedFrameSchema>;
export type TunnelDataFrame = z.infer<typeof tunnelDataFrameSchema>;
export type TunnelCreditFrame = z.infer<typeof tunnelCreditFrameSchema>;
export type TunnelEndFrame = z.infer<typeof tunnelEndFrameSchema>;
export type TunnelCloseFrame = z.infer<typeof tunnelCloseFrameSchema>;
/** A tunnel frame either side may send. */
export type TunnelStreamFrame =
  TunnelDataFrame | TunnelCreditFrame | TunnelEndFrame | TunnelCloseFrame;

// ── ports.list ──────────────────────────────────────────────────────────────────────────────────
// A call like the file operations (not a model tool, no done-log): a read, harmless to repeat.

export const portOperationNames = ["ports.list"] as const;
export type PortOperationName = (typeof portOperationNames)[number];

export function isPortOperationName(value: string): value is PortOperationName {
  return (portOperationNames as readonly string[]).includes(value);
}

export const portsListInputSchema = z.object({});

export const listeningPortSchema = z.object({
  port,
  /** The address it listens on, as the kernel reports it: `127.0.0.1`, `0.0.0.0`, `::`, `::1`. */
  address: z.string().min(1).max(64),
});

export const portsListOutputSchema = z.object({
  /** TCP sockets in LISTEN state in the worker's network namespace, by port, then address. */
  ports: z.array(listeningPortSchema).max(65_535),
});

export type ListeningPort = z.infer<typeof listeningPortSchema>;
export type PortsListOutput = z.infer<typeof portsListOutputSchema>;
