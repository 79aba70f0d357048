import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createFakeS3Server, type FakeS3Server } from "./testing/fake-s3-server.ts";
import { createS3BlobStore, type BlobStore, type S3BlobStoreOptions } from "./index.ts";

async function withS3(
  run: (context: {
    server: FakeS3Server;
    store: BlobStore;
    open: (options?: Partial<S3BlobStoreOptions>) => BlobStore;
  }) => Promise<void>,
  storeOptions: Partial<S3BlobStoreOptions> = {},
) {
  const server = await createFakeS3Server({ buckets: ["roost"], accessKeyId: "AKIDROOST" });
  const opened: BlobStore[] = [];
  const open = (options: Partial<S3BlobStoreOptions> = {}) => {
    const store = createS3BlobStore({
      endpoint: server.endpoint,
      region: "eu-west-1",
      bucket: "roost",
      accessKeyId: "AKIDROOST",
      secretAccessKey: "secret",
      retryDelayMs: 5,
      ...storeOptions,
      ...options,
    });
    opened.push(store);
    return store;
  };
  try {
    await run({ server, store: open(), open });
  } finally {
    for (const store of opened) await store.close();
    await server.close();
  }
}

describe("S3 blob store", () => {
  it("fake server: an unsigned or malformed request is refused", () =>
    withS3(async ({ server }) => {
      const unsigned = await fetch(`${server.endpoint}/roost/x`);
      expect(unsigned.status).toBe(403);
      expect(await unsigned.text()).toContain("<Code>AccessDenied</Code>");
      const malformed = await fetch(`${server.endpoint}/roost/x`, {
        headers: {
          authorization: "AWS4-HMAC-SHA256 Credential=nonsense",
          "x-amz-date": "20250101T000000Z",
        },
      });
      expect(malformed.status).toBe(403);
      expect(await malformed.text()).toContain("AuthorizationHeaderMalformed");
    }));

  it("requests are SigV4-signed, path-style, under the prefix", () =>
    withS3(
      async ({ server, store }) => {
        await store.put("k/1", Buffer.from("v"));
        expect([...server.objects("roost").keys()]).toEqual(["tenant-a/k/1"]);
        expect(server.requests.at(-1)).toMatchObject({
          method: "PUT",
          bucket: "roost",
          key: "tenant-a/k/1",
        });
        expect((await store.list("")).map((blob) => blob.key)).toEqual(["k/1"]);
      },
      { prefix: "tenant-a/" },
    ));

  it("two prefixes in one bucket do not see each other", () =>
    withS3(async ({ open }) => {
      const a = open({ prefix: "a/" });
      const b = open({ prefix: "b/" });
      await a.put("same", Buffer.from("from a"));
      await b.put("same", Buffer.from("from b"));
      await b.delete("same");
      expect((await a.list("")).map((blob) => blob.key)).toEqual(["same"]);
      expect(await b.head("same")).toBeUndefined();
    }));

  it("wrong credentials: a config_invalid error that names the settings to check", () =>
    withS3(async ({ open }) => {
      const store = open({ accessKeyId: "WRONG" });
      await expect(store.put("k", Buffer.from("v"))).rejects.toMatchObject({
        code: "config_invalid",
        message: expect.stringMatching(/InvalidAccessKeyId.*ROOST_S3_ACCESS_KEY_ID/) as unknown,
      });
      await expect(store.list("")).rejects.toMatchObject({ code: "config_invalid" });
    }));

  it("missing bucket: a config_invalid error that names the bucket", () =>
    withS3(async ({ open }) => {
      const store = open({ bucket: "nope" });
      // HEAD answers a bare 404 for a missing bucket too, so head() cannot tell; everything else can.
      await expect(store.list("")).rejects.toMatchObject({ code: "config_invalid" });
      await expect(store.put("k", Buffer.from("v"))).rejects.toThrow(
        /bucket "nope" does not exist.*ROOST_S3_BUCKET/,
      );
    }));

  it("S2: a 500 on PUT is retried and the file body is sent again whole", () =>
    withS3(async ({ server, store }) => {
      const dir = mkdtempSync(join(tmpdir(), "roost-s3-"));
      try {
        const file = join(dir, "body");
        const data = randomBytes(300_000);
        writeFileSync(file, data);
        server.failNext(2, { method: "PUT", status: 503, code: "SlowDown" });
        expect(await store.put("retried", { path: file })).toEqual({
          key: "retried",
          size: data.length,
        });
        expect(server.objects("roost").get("retried")?.body.equals(data)).toBe(true);
        expect(server.requests.filter((request) => request.method === "PUT").length).toBe(3);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }));

  it("S2: a store that keeps failing gives up with a retryable unavailable error", () =>
    withS3(async ({ server, store }) => {
      server.failNext(10, { status: 500 });
      await expect(store.head("k")).rejects.toMatchObject({ code: "unavailable", retryable: true });
      expect(server.requests.length).toBe(3); // maxAttempts
    }));

  it("unreachable endpoint: a retryable unavailable error", async () => {
    const server = await createFakeS3Server();
    const endpoint = server.endpoint;
    await server.close();
    const store = createS3BlobStore({
      endpoint,
      bucket: "roost",
      accessKeyId: "a",
      secretAccessKey: "b",
      retryDelayMs: 1,
    });
    try {
      await expect(store.get("k")).rejects.toMatchObject({ code: "unavailable", retryable: true });
    } finally {
      await store.close();
    }
  });

  it("S1: a large file goes up in parts; a failed part aborts the upload and leaves no object", () =>
    withS3(
      async ({ server, store }) => {
        const data = randomBytes(11 * 1024 * 1024);
        const dir = mkdtempSync(join(tmpdir(), "roost-s3-"));
        try {
          const file = join(dir, "body");
          writeFileSync(file, data);
          await store.put("multi", { path: file });
          const parts = server.requests.filter((request) => request.query.includes("partNumber"));
          expect(parts.length).toBe(3);
          expect(server.objects("roost").get("multi")?.body.equals(data)).toBe(true);
          expect(server.objects("roost").get("multi")?.etag).toMatch(/-3$/);

          server.requests.length = 0;
          server.failNext(20, { method: "PUT", status: 500 }); // every attempt of every part
          await expect(store.put("failed", { path: file })).rejects.toMatchObject({
            code: "unavailable",
          });
          expect(server.objects("roost").has("failed")).toBe(false);
          expect(
            server.requests.some(
              (request) => request.method === "DELETE" && request.query.includes("uploadId"),
            ),
          ).toBe(true);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
      {
        multipartThresholdBytes: 5 * 1024 * 1024,
        partSizeBytes: 5 * 1024 * 1024,
        partConcurrency: 2,
      },
    ));

  it("refuses half-given credentials", () => {
    expect(() => createS3BlobStore({ bucket: "b", accessKeyId: "only" })).toThrow(
      /both the access key id and the secret/,
    );
  });
});
