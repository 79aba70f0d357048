/**
 * The worker protocol's frames: JSON text messages over one WebSocket, each an object with a
 * `type`. The worker dials out to the gateway (docs/worker-protocol.md describes the sequencing);
 * this module only says what a well-formed frame is, so both sides and any other-language worker
 * agree on the shape. It depends on nothing of ours.
 *
 * Unknown fields are ignored (stripped) so a peer may add optional fields within a protocol
 * version; an unknown `type` is a protocol error.
 */
import { z } from "zod";
import { gatewayTunnelFrameSchemas, workerTunnelFrameSchemas } from "./tunnels.ts";

/** The protocol version spoken by this code. A worker sends it in `hello`; the gateway refuses others. */
export const PROTOCOL_VERSION = 1;

/** Largest frame either side accepts, in UTF-8 bytes. @default 16 MiB */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** The gateway's WebSocket path on the platform's HTTP server. */
export const GATEWAY_PATH = "/v1/gateway";

/** Close codes used on the worker connection (4000-4999 is the application range). */
export const closeCodes = {
  /** Standard: the peer is shutting down (gateway close, worker exit). */
  goingAway: 1001,
  /** Standard: a frame exceeded the size limit. */
  messageTooBig: 1009,
  /** A frame was not JSON, failed its schema, or arrived out of sequence. */
  protocolError: 4000,
  /** The worker speaks a protocol version the gateway does not. */
  unsupportedProtocol: 4001,
  /** No `hello` arrived in time after the upgrade. */
  helloTimeout: 4002,
  /** A newer connection for the same computer replaced this one. */
  replaced: 4003,
  /** Nothing arrived from the peer within the heartbeat timeout. */
  heartbeatTimeout: 4004,
  /** The control plane disconnected the computer (it is going to sleep). */
  disconnected: 4005,
  /** Another worker of the computer is connected and answering; this one was refused. */
  inUse: 4006,
} as const;

const callId = z.string().min(1).max(256);
const shortText = z.string().max(256);

/** Longest tool time limit a call may carry: one day. */
export const MAX_CALL_TIMEOUT_MS = 24 * 60 * 60 * 1000;

// ── worker → gateway ────────────────────────────────────────────────────────────────────────────

export const helloFrameSchema = z.object({
  type: z.literal("hello"),
  /** Stable across restarts and restores of the worker (kept on the durable disk). */
  workerId: z.string().min(1).max(128),
  /** New for every worker process. */
  bootId: z.string().min(1).max(128),
  protocol: z.number().int().positive(),
  /** Tool names (and future feature flags) this worker supports. */
  capabilities: z.array(shortText).max(256),
  /** Call ids running in this worker right now. */
  inflight: z.array(callId).max(10_000),
});

export const chunkFrameSchema = z.object({
  type: z.literal("chunk"),
  callId,
  stream: z.enum(["stdout", "stderr"]),
  data: z.string(),
});

export const toolErrorSchema = z.object({
  code: z.string().min(1).max(64),
  message: z.string(),
});

export const resultFrameSchema = z.discriminatedUnion("ok", [
  z.object({ type: z.literal("result"), callId, ok: z.literal(true), output: z.unknown() }),
  z.object({ type: z.literal("result"), callId, ok: z.literal(false), error: toolErrorSchema }),
]);

/** Worker → gateway: the call was received (started, attached to, or answered from the done-log). */
export const workerAckFrameSchema = z.object({ type: z.literal("ack"), callId });

/** Worker → gateway: a call is still running (sent every few seconds; a keepalive per call). */
export const progressFrameSchema = z.object({
  type: z.literal("progress"),
  callId,
  elapsedMs: z.number().int().nonnegative(),
});

export const pingFrameSchema = z.object({
  type: z.literal("ping"),
  nonce: z.string().max(64).optional(),
});
export const pongFrameSchema = z.object({
  type: z.literal("pong"),
  nonce: z.string().max(64).optional(),
});

export const workerFrameSchema = z.discriminatedUnion("type", [
  helloFrameSchema,
  chunkFrameSchema,
  resultFrameSchema,
  workerAckFrameSchema,
  progressFrameSchema,
  pingFrameSchema,
  pongFrameSchema,
  ...workerTunnelFrameSchemas,
]);

// ── gateway → worker ────────────────────────────────────────────────────────────────────────────

export const welcomeFrameSchema = z.object({
  type: z.literal("welcome"),
  /** The computer this connection serves, taken from the token (never from the hello). */
  computerId: z.string().min(1).max(128),
  protocol: z.number().int().positive(),
  /** The gateway pings at this interval; a worker that hears nothing for 2× this reconnects. */
  heartbeatMs: z.number().int().positive(),
  maxFrameBytes: z.number().int().positive(),
});

export const callFrameSchema = z.object({
  type: z.literal("call"),
  /** Stable across retries: the same id always means the same call. */
  callId,
  tool: z.string().min(1).max(64),
  input: z.unknown(),
  /** The tool's time limit, measured by the worker from the start of the call. */
  timeoutMs: z.number().int().positive().max(MAX_CALL_TIMEOUT_MS),
  /** The bot the call works for: the browser and computer tools use that bot's screen. */
  botId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,128}$/)
    .optional(),
});

/** Gateway → worker: the result was received; the worker may forget its in-memory copy. */
export const gatewayAckFrameSchema = z.object({ type: z.literal("ack"), callId });

/** Gateway → worker: stop a running call (its result becomes a `cancelled` error). */
export const cancelFrameSchema = z.object({ type: z.literal("cancel"), callId });

export const gatewayFrameSchema = z.discriminatedUnion("type", [
  welcomeFrameSchema,
  callFrameSchema,
  gatewayAckFrameSchema,
  cancelFrameSchema,
  pingFrameSchema,
  pongFrameSchema,
  ...gatewayTunnelFrameSchemas,
]);

export type HelloFrame = z.infer<typeof helloFrameSchema>;
export type ChunkFrame = z.infer<typeof chunkFrameSchema>;
export type ResultFrame = z.infer<typeof resultFrameSchema>;
export type ToolError = z.infer<typeof toolErrorSchema>;
export type WorkerAckFrame = z.infer<typeof workerAckFrameSchema>;
export type ProgressFrame = z.infer<typeof progressFrameSchema>;
export type PingFrame = z.infer<typeof pingFrameSchema>;
export type PongFrame = z.infer<typeof pongFrameSchema>;
export type WelcomeFrame = z.infer<typeof welcomeFrameSchema>;
export type CallFrame = z.infer<typeof callFrameSchema>;
export type GatewayAckFrame = z.infer<typeof gatewayAckFrameSchema>;
export type CancelFrame = z.infer<typeof cancelFrameSchema>;

/** Any frame a worker sends. */
export type WorkerFrame = z.infer<typeof workerFrameSchema>;
/** Any frame the gateway sends. */
export type GatewayFrame = z.infer<typeof gatewayFrameSchema>;

/** Who sent the frame being parsed. */
export type FrameSender = "worker" | "gateway";

export type FrameErrorCode = "too_large" | "invalid_json" | "invalid_frame";

export interface FrameError {
  code: FrameErrorCode;
  /** Short enough to use as a WebSocket close reason. */
  message: string;
}

export type ParseFrameResult<F> = { ok: true; frame: F } | { ok: false; error: FrameError };

export interface ParseFrameOptions {
  /** @default MAX_FRAME_BYTES */
  maxBytes?: number;
}

/** Parses one received text frame; never throws. */
export function parseFrame(
  text: string,
  sender: "worker",
  options?: ParseFrameOptions,
): ParseFrameResult<WorkerFrame>;
export function parseFrame(
  text: string,
  sender: "gateway",
  options?: ParseFrameOptions,
): ParseFrameResult<GatewayFrame>;
export function parseFrame(
  text: string,
  sender: FrameSender,
  options: ParseFrameOptions = {},
): ParseFrameResult<WorkerFrame | GatewayFrame> {
  const maxBytes = options.maxBytes ?? MAX_FRAME_BYTES;
  // Cheap bound first: a UTF-16 length over the limit cannot be under it in UTF-8.
  const bytes = text.length > maxBytes ? text.length : Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) {
    return {
      ok: false,
      error: {
        code: "too_large",
        message: `frame of ${bytes} bytes exceeds the ${maxBytes}-byte limit`,
      },
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: { code: "invalid_json", message: "frame is not valid JSON" } };
  }
  const schema = sender === "worker" ? workerFrameSchema : gatewayFrameSchema;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    return {
      ok: false,
      error: { code: "invalid_frame", message: describeFrameIssue(value, parsed.error) },
    };
  }
  return { ok: true, frame: parsed.data };
}

/** Serializes a frame; the caller checks the size against the peer's limit with `frameBytes`. */
export function encodeFrame(frame: WorkerFrame | GatewayFrame): string {
  return JSON.stringify(frame);
}

export function frameBytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

function describeFrameIssue(value: unknown, error: z.ZodError): string {
  const type =
    typeof value === "object" && value !== null && "type" in value && typeof value.type === "string"
      ? value.type.slice(0, 32)
      : undefined;
  const issue = error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`;
  const prefix = type === undefined ? "frame has no string type" : `invalid ${type} frame`;
  return truncateReason(`${prefix}${where}: ${issue?.message ?? "schema mismatch"}`);
}

/** WebSocket close reasons are limited to 123 bytes. */
export function truncateReason(reason: string): string {
  if (Buffer.byteLength(reason, "utf8") <= 123) return reason;
  let cut = reason.slice(0, 120);
  while (Buffer.byteLength(cut, "utf8") > 120) cut = cut.slice(0, -1);
  return `${cut}...`;
}
