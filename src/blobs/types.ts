/**
 * The blob store: named, immutable-once-written byte strings (snapshot archives, manifests,
 * attachments later). One interface, two implementations (a local folder and any S3-compatible
 * store), one contract suite (blob-store.contract.ts) that both run.
 *
 * Invariants every implementation keeps:
 *   B1 a `put` is all or nothing: a reader sees the old value, the new value, or nothing, never a
 *      partial one, even if the writer crashes mid-way.
 *   B2 a `put` that resolved is durable (fsynced locally; acknowledged by the S3 server).
 *   B3 keys are validated the same way everywhere (`assertValidKey`), so a key that works in
 *      development works in production, and no key can escape the store's folder or prefix.
 *   B4 `list` returns keys in ascending byte order, complete (pagination is internal).
 */
import type { Readable } from "node:stream";
import { RoostError, type ErrorCode, type RoostErrorOptions } from "../errors/index.ts";

/** What `put` accepts: bytes in memory, a file to copy, or a stream (e.g. a child's stdout). */
export type BlobBody = Uint8Array | { path: string } | AsyncIterable<Uint8Array>;

export interface BlobInfo {
  key: string;
  size: number;
  modifiedAt: Date;
}

export interface PutResult {
  key: string;
  size: number;
}

export interface BlobStore {
  readonly kind: "local" | "s3";
  /** Store `body` under `key`, replacing any previous value (B1, B2). */
  put(key: string, body: BlobBody): Promise<PutResult>;
  /** The value as a stream, or undefined when there is no such key. */
  get(key: string): Promise<Readable | undefined>;
  head(key: string): Promise<BlobInfo | undefined>;
  /** Every blob whose key starts with `prefix` (plain string prefix, like S3), sorted (B4). */
  list(prefix: string): Promise<BlobInfo[]>;
  /** Remove `key`; removing a missing key is not an error. */
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

export type BlobOperation = "put" | "get" | "head" | "list" | "delete";

/** A blob store operation failed; `retryAfterMs` is set when repeating it may help. */
export class BlobStoreError extends RoostError {
  override readonly name = "BlobStoreError";
  readonly operation: BlobOperation;
  readonly key: string;
  constructor(
    code: ErrorCode,
    operation: BlobOperation,
    key: string,
    message: string,
    options: RoostErrorOptions = {},
  ) {
    super(code, `blob store: ${operation} ${JSON.stringify(key)}: ${message}`, {
      ...options,
      details: { operation, key, ...options.details },
    });
    this.operation = operation;
    this.key = key;
  }
}

const segmentPattern = /^[A-Za-z0-9_-][A-Za-z0-9._=-]*$/;
/** Longest key accepted (S3 allows 1,024 bytes including the store's prefix). */
export const maxKeyLength = 900;

/**
 * B3: keys are `/`-separated segments of `[A-Za-z0-9._=-]`, none empty and none starting with a
 * dot (so no `.`/`..`, and the local store's own `.tmp/` folder can never be named).
 */
export function assertValidKey(key: string, operation: BlobOperation): void {
  const valid =
    key.length > 0 &&
    key.length <= maxKeyLength &&
    key.split("/").every((segment) => segmentPattern.test(segment));
  if (!valid) {
    throw new BlobStoreError(
      "invalid_request",
      operation,
      key,
      `invalid key (use up to ${maxKeyLength} characters of "/"-separated segments of letters, digits, "_", "-", "=", "."; no empty segment, none starting with ".")`,
    );
  }
}

/** A list prefix may end anywhere inside a segment, so it is checked character by character. */
export function assertValidPrefix(prefix: string): void {
  if (
    prefix.length > maxKeyLength ||
    !/^[A-Za-z0-9._=/-]*$/.test(prefix) ||
    prefix.startsWith("/") ||
    prefix.includes("//")
  ) {
    throw new BlobStoreError(
      "invalid_request",
      "list",
      prefix,
      `invalid prefix (letters, digits, "_", "-", "=", ".", "/"; not starting with "/", no "//")`,
    );
  }
}

export function isUint8Array(body: BlobBody): body is Uint8Array {
  return body instanceof Uint8Array;
}

export function isFileBody(body: BlobBody): body is { path: string } {
  // A file ReadStream also has a `path`; it is a stream first.
  return (
    !(body instanceof Uint8Array) &&
    !(Symbol.asyncIterator in body) &&
    typeof (body as { path?: unknown }).path === "string"
  );
}
