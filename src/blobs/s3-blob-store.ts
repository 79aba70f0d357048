/**
 * A blob store in any S3-compatible object store (AWS S3, MinIO, Ceph RGW, R2, …) through
 * `@aws-sdk/client-s3`. Key `k` is the object `<prefix>k` in `bucket`.
 *
 * Invariants (see types.ts for B1–B4):
 *   S1 bodies are streamed from files, never held whole in memory: a file up to
 *      `multipartThresholdBytes` goes up in one PUT with its Content-Length; a larger one as a
 *      multipart upload of `partSizeBytes` parts (aborted on failure, so no half object is ever
 *      visible: B1). A stream of unknown length is first spooled to a temporary file.
 *   S2 retries are ours, not the SDK's (`maxAttempts: 1` on the client): every attempt opens a
 *      fresh read stream, because a stream consumed by a failed attempt cannot be sent again.
 *   S3 checksums are only sent when an operation requires them (`WHEN_REQUIRED`): the SDK's
 *      default trailing checksums (aws-chunked bodies) are not understood by every S3-compatible
 *      server, and the payload is covered by TLS, S3's Content-Length check and the snapshot's
 *      own SHA-256.
 */
import { createReadStream } from "node:fs";
import { mkdtemp, open, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { setTimeout as delay } from "node:timers/promises";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import {
  assertValidKey,
  assertValidPrefix,
  BlobStoreError,
  isFileBody,
  isUint8Array,
  type BlobBody,
  type BlobInfo,
  type BlobOperation,
  type BlobStore,
  type PutResult,
} from "./types.ts";

export interface S3BlobStoreOptions {
  /** e.g. http://127.0.0.1:9000 for MinIO; omit for AWS S3. */
  endpoint?: string;
  /** @default "us-east-1" */
  region?: string;
  bucket: string;
  /** With `secretAccessKey`; when both are omitted the AWS SDK's default credential chain applies. */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Path-style URLs (`<endpoint>/<bucket>/<key>`), which most self-hosted stores need. @default true when `endpoint` is set */
  forcePathStyle?: boolean;
  /** Prepended to every key, e.g. "roost/". @default "" */
  prefix?: string;
  /** Files larger than this are uploaded in parts. @default 67108864 (64 MiB) */
  multipartThresholdBytes?: number;
  /** Size of each part but the last (S3's minimum is 5 MiB). @default 16777216 (16 MiB) */
  partSizeBytes?: number;
  /** Parts uploaded at once. @default 4 */
  partConcurrency?: number;
  /** Attempts per request when the failure is retryable (5xx, throttling, network). @default 3 */
  maxAttempts?: number;
  /** First retry delay; doubled each time, with jitter. @default 200 */
  retryDelayMs?: number;
  /** Where streamed bodies are spooled before upload. @default os.tmpdir() */
  spoolDir?: string;
  /** Receives the SDK's warnings and errors. @default dropped */
  log?: (message: string) => void;
}

const retryableNames = new Set([
  "SlowDown",
  "RequestTimeout",
  "InternalError",
  "ServiceUnavailable",
  "RequestTimeTooSkewed",
  "TimeoutError",
]);
const retryableNetworkCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ECONNABORTED",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);
const credentialErrors = new Set([
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "AccessDenied",
  "AuthorizationHeaderMalformed",
  "InvalidToken",
  "ExpiredToken",
]);

function sdkLogger(log: ((message: string) => void) | undefined) {
  const drop = () => undefined;
  const forward = (...content: unknown[]) => {
    const message = content.map(String).join(" ");
    // S2: the SDK warns that it does not retry streaming bodies; we do, with fresh streams.
    if (log && !message.includes("non-retryable streaming request")) log(`s3: ${message}`);
  };
  return { trace: drop, debug: drop, info: drop, warn: forward, error: forward };
}

/** A blob store backed by an S3-compatible bucket. The bucket must exist. */
export function createS3BlobStore(options: S3BlobStoreOptions): BlobStore {
  const prefix = options.prefix ?? "";
  if (prefix !== "") assertValidPrefix(prefix);
  const bucket = options.bucket;
  const threshold = options.multipartThresholdBytes ?? 64 * 1024 * 1024;
  const partSize = options.partSizeBytes ?? 16 * 1024 * 1024;
  const partConcurrency = Math.max(1, options.partConcurrency ?? 4);
  const maxAttempts = Math.max(1, options.maxAttempts ?? 3);
  const retryDelayMs = options.retryDelayMs ?? 200;
  const where = `s3://${bucket}/${prefix}${options.endpoint ? ` at ${options.endpoint}` : ""}`;
  if ((options.accessKeyId === undefined) !== (options.secretAccessKey === undefined)) {
    throw new BlobStoreError(
      "config_invalid",
      "put",
      "",
      `S3 (${where}): set both the access key id and the secret access key, or neither (ROOST_S3_ACCESS_KEY_ID, ROOST_S3_SECRET_ACCESS_KEY)`,
    );
  }

  const client = new S3Client({
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    region: options.region ?? "us-east-1",
    forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
    ...(options.accessKeyId !== undefined && options.secretAccessKey !== undefined
      ? {
          credentials: {
            accessKeyId: options.accessKeyId,
            secretAccessKey: options.secretAccessKey,
          },
        }
      : {}),
    maxAttempts: 1, // S2
    requestChecksumCalculation: "WHEN_REQUIRED", // S3
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: { connectionTimeout: 10_000, socketTimeout: 120_000 },
    logger: sdkLogger(options.log),
  });

  function toBlobError(operation: BlobOperation, key: string, error: unknown): BlobStoreError {
    if (error instanceof BlobStoreError) return error;
    const status = error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
    const name = (error as Error | undefined)?.name ?? "";
    const code = (error as NodeJS.ErrnoException | undefined)?.code ?? "";
    const message = (error as Error | undefined)?.message ?? String(error);
    if (name === "NoSuchBucket") {
      return new BlobStoreError(
        "config_invalid",
        operation,
        key,
        `S3 bucket ${JSON.stringify(bucket)} does not exist${options.endpoint ? ` at ${options.endpoint}` : ""} (create it, or set ROOST_S3_BUCKET)`,
        { cause: error },
      );
    }
    if (credentialErrors.has(name) || status === 403) {
      return new BlobStoreError(
        "config_invalid",
        operation,
        key,
        `S3 (${where}) refused the request: ${name}: ${message} (check ROOST_S3_ACCESS_KEY_ID, ROOST_S3_SECRET_ACCESS_KEY and the bucket's policy)`,
        { cause: error },
      );
    }
    if (
      (status !== undefined && (status >= 500 || status === 429)) ||
      retryableNames.has(name) ||
      retryableNetworkCodes.has(code)
    ) {
      return new BlobStoreError(
        "unavailable",
        operation,
        key,
        `S3 (${where}) is unavailable: ${name || code}: ${message}`,
        { cause: error, retryAfterMs: retryDelayMs },
      );
    }
    return new BlobStoreError(
      "internal",
      operation,
      key,
      `S3 (${where}): ${name}${status ? ` (HTTP ${status})` : ""}: ${message}`,
      { cause: error },
    );
  }

  /** S2: run `request` up to maxAttempts times while its failure is retryable. */
  async function withRetries<T>(
    operation: BlobOperation,
    key: string,
    request: () => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await request();
      } catch (error) {
        const failure = toBlobError(operation, key, error);
        if (failure.retryAfterMs === undefined || attempt >= maxAttempts) throw failure;
        await delay(failure.retryAfterMs * 2 ** (attempt - 1) * (0.5 + Math.random()));
      }
    }
  }

  async function putFile(key: string, path: string, size: number): Promise<void> {
    const Key = prefix + key;
    if (size <= threshold) {
      await withRetries("put", key, () =>
        client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key,
            Body: createReadStream(path),
            ContentLength: size,
          }),
        ),
      );
      return;
    }
    const created = await withRetries("put", key, () =>
      client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key })),
    );
    const uploadId = created.UploadId;
    if (uploadId === undefined)
      throw new BlobStoreError("internal", "put", key, `S3 (${where}) returned no UploadId`);
    try {
      const partCount = Math.ceil(size / partSize);
      const etags: string[] = new Array<string>(partCount);
      let next = 0;
      let failed = false;
      const uploadParts = async () => {
        while (next < partCount && !failed) {
          const index = next++;
          const start = index * partSize;
          const length = Math.min(partSize, size - start);
          const uploaded = await withRetries("put", key, () =>
            client.send(
              new UploadPartCommand({
                Bucket: bucket,
                Key,
                UploadId: uploadId,
                PartNumber: index + 1,
                Body: createReadStream(path, { start, end: start + length - 1 }),
                ContentLength: length,
              }),
            ),
          );
          if (uploaded.ETag === undefined)
            throw new BlobStoreError(
              "internal",
              "put",
              key,
              `S3 (${where}) returned no ETag for part ${index + 1}`,
            );
          etags[index] = uploaded.ETag;
        }
      };
      // Let every worker stop before aborting, so no part lands after the abort.
      const settled = await Promise.allSettled(
        Array.from({ length: Math.min(partConcurrency, partCount) }, () =>
          uploadParts().catch((error: unknown) => {
            failed = true;
            throw error;
          }),
        ),
      );
      const rejected = settled.find((result) => result.status === "rejected");
      if (rejected) throw rejected.reason;
      await withRetries("put", key, () =>
        client.send(
          new CompleteMultipartUploadCommand({
            Bucket: bucket,
            Key,
            UploadId: uploadId,
            MultipartUpload: {
              Parts: etags.map((ETag, index) => ({ ETag, PartNumber: index + 1 })),
            },
          }),
        ),
      );
    } catch (error) {
      // B1: an aborted upload leaves nothing visible; failing to abort only leaves parts the
      // bucket's lifecycle rule (AbortIncompleteMultipartUpload) should clean up.
      await client
        .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key, UploadId: uploadId }))
        .catch(() => undefined);
      throw error;
    }
  }

  async function put(key: string, body: BlobBody): Promise<PutResult> {
    assertValidKey(key, "put");
    try {
      if (isUint8Array(body)) {
        await withRetries("put", key, () =>
          client.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: prefix + key,
              Body: body,
              ContentLength: body.byteLength,
            }),
          ),
        );
        return { key, size: body.byteLength };
      }
      if (isFileBody(body)) {
        const { size } = await stat(body.path);
        await putFile(key, body.path, size);
        return { key, size };
      }
      // S1: spool a stream of unknown length, so its Content-Length is known and retries can re-read it.
      const spool = await mkdtemp(join(options.spoolDir ?? tmpdir(), "roost-s3-spool-"));
      try {
        const path = join(spool, "body");
        const handle = await open(path, "wx", 0o600);
        let size = 0;
        try {
          for await (const chunk of body) {
            await handle.write(chunk);
            size += chunk.byteLength;
          }
        } finally {
          await handle.close();
        }
        await putFile(key, path, size);
        return { key, size };
      } finally {
        await rm(spool, { recursive: true, force: true });
      }
    } catch (error) {
      throw toBlobError("put", key, error);
    }
  }

  async function get(key: string): Promise<Readable | undefined> {
    assertValidKey(key, "get");
    try {
      const response = await withRetries("get", key, () =>
        client.send(new GetObjectCommand({ Bucket: bucket, Key: prefix + key })),
      );
      return response.Body as Readable | undefined;
    } catch (error) {
      if (
        (error as BlobStoreError).cause instanceof Error &&
        ((error as BlobStoreError).cause as Error).name === "NoSuchKey"
      )
        return undefined;
      throw error;
    }
  }

  async function head(key: string): Promise<BlobInfo | undefined> {
    assertValidKey(key, "head");
    try {
      const response = await withRetries("head", key, () =>
        client.send(new HeadObjectCommand({ Bucket: bucket, Key: prefix + key })),
      );
      return {
        key,
        size: response.ContentLength ?? 0,
        modifiedAt: response.LastModified ?? new Date(0),
      };
    } catch (error) {
      const cause = (error as BlobStoreError).cause;
      if (
        cause instanceof S3ServiceException &&
        (cause.name === "NotFound" || cause.$metadata.httpStatusCode === 404)
      )
        return undefined;
      throw error;
    }
  }

  async function list(listPrefix: string): Promise<BlobInfo[]> {
    assertValidPrefix(listPrefix);
    const found: BlobInfo[] = [];
    let token: string | undefined;
    do {
      const page = await withRetries("list", listPrefix, () =>
        client.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: prefix + listPrefix,
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
        ),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || !object.Key.startsWith(prefix)) continue;
        found.push({
          key: object.Key.slice(prefix.length),
          size: object.Size ?? 0,
          modifiedAt: object.LastModified ?? new Date(0),
        });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)); // B4
  }

  async function remove(key: string): Promise<void> {
    assertValidKey(key, "delete");
    await withRetries("delete", key, () =>
      client.send(new DeleteObjectCommand({ Bucket: bucket, Key: prefix + key })),
    );
  }

  return {
    kind: "s3",
    put,
    get,
    head,
    list,
    delete: remove,
    async close() {
      client.destroy();
    },
  };
}
