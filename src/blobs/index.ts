/**
 * Blob stores: where snapshots (and later attachments) live. A local folder in the embedded mode,
 * any S3-compatible bucket when scaled out. Tests that need an S3 endpoint import
 * `createFakeS3Server` from `./testing/fake-s3-server.ts` (it is not part of this API).
 */
export { createLocalBlobStore } from "./local-blob-store.ts";
export { createS3BlobStore, type S3BlobStoreOptions } from "./s3-blob-store.ts";
export {
  assertValidKey,
  BlobStoreError,
  maxKeyLength,
  type BlobBody,
  type BlobInfo,
  type BlobOperation,
  type BlobStore,
  type PutResult,
} from "./types.ts";
