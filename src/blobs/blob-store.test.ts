import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { blobStoreContract } from "./blob-store.contract.ts";
import { createFakeS3Server } from "./testing/fake-s3-server.ts";
import { createLocalBlobStore, createS3BlobStore } from "./index.ts";

blobStoreContract("local folder", async () => {
  const dir = mkdtempSync(join(tmpdir(), "roost-blobs-"));
  const store = createLocalBlobStore(dir);
  return {
    store,
    async close() {
      await store.close();
      // L1: nothing is left behind in the temporary folder, whatever the case did.
      const leftovers = existsSync(join(dir, ".tmp")) ? readdirSync(join(dir, ".tmp")) : [];
      expect(leftovers).toEqual([]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

blobStoreContract("S3 (fake server, small pages, multipart above 6 MiB)", async () => {
  const server = await createFakeS3Server({
    buckets: ["roost"],
    accessKeyId: "roost-test",
    maxKeys: 3,
  });
  const store = createS3BlobStore({
    endpoint: server.endpoint,
    region: "us-east-1",
    bucket: "roost",
    accessKeyId: "roost-test",
    secretAccessKey: "roost-test-secret",
    forcePathStyle: true,
    prefix: "contract/",
    multipartThresholdBytes: 6 * 1024 * 1024,
    partSizeBytes: 5 * 1024 * 1024,
  });
  return {
    store,
    async close() {
      await store.close();
      await server.close();
    },
  };
});

it("local folder: a key cannot also be a folder of other keys (a and a/b)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "roost-blobs-"));
  try {
    const store = createLocalBlobStore(dir);
    await store.put("a/b", Buffer.from("x"));
    await expect(store.put("a", Buffer.from("y"))).rejects.toMatchObject({
      code: "internal",
      operation: "put",
      key: "a",
    });
    expect((await store.list("")).map((blob) => blob.key)).toEqual(["a/b"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
