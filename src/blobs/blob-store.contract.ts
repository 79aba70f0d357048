/**
 * The contract every BlobStore implementation runs (the local folder and S3 alike). Each case
 * opens a fresh, empty store through `open`.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { BlobStore } from "./types.ts";

export interface OpenedBlobStore {
  store: BlobStore;
  close: () => Promise<void>;
}

async function readAll(stream: Readable | undefined): Promise<Buffer | undefined> {
  if (stream === undefined) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

async function* chunked(data: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < data.length; offset += size)
    yield data.subarray(offset, offset + size);
}

export function blobStoreContract(name: string, open: () => Promise<OpenedBlobStore>) {
  async function withStore(run: (store: BlobStore) => Promise<void>) {
    const { store, close } = await open();
    try {
      await run(store);
    } finally {
      await close();
    }
  }

  describe(`blob store contract: ${name}`, () => {
    it("puts bytes and gets them back; head reports size and time", () =>
      withStore(async (store) => {
        const before = Date.now() - 5_000;
        expect(await store.put("a/b/one.bin", Buffer.from("hello"))).toEqual({
          key: "a/b/one.bin",
          size: 5,
        });
        expect((await readAll(await store.get("a/b/one.bin")))?.toString()).toBe("hello");
        const info = await store.head("a/b/one.bin");
        expect(info).toMatchObject({ key: "a/b/one.bin", size: 5 });
        expect(info!.modifiedAt.getTime()).toBeGreaterThan(before);
      }));

    it("a missing key: get and head answer undefined, delete is harmless", () =>
      withStore(async (store) => {
        expect(await store.get("nope")).toBeUndefined();
        expect(await store.head("no/such/key")).toBeUndefined();
        await store.delete("no/such/key");
        await store.put("dir/child", Buffer.from("x"));
        expect(await store.get("dir")).toBeUndefined(); // a "folder" is not a blob
        expect(await store.head("dir")).toBeUndefined();
      }));

    it("put replaces the previous value", () =>
      withStore(async (store) => {
        await store.put("k", Buffer.from("first value"));
        await store.put("k", Buffer.from("second"));
        expect((await readAll(await store.get("k")))?.toString()).toBe("second");
        expect((await store.head("k"))?.size).toBe(6);
      }));

    it("puts from a file, from a Readable, from an async iterable, and an empty body", () =>
      withStore(async (store) => {
        const dir = mkdtempSync(join(tmpdir(), "roost-blob-contract-"));
        try {
          const file = join(dir, "source");
          writeFileSync(file, "from a file");
          expect(await store.put("f", { path: file })).toEqual({ key: "f", size: 11 });
          expect(
            await store.put("r", Readable.from([Buffer.from("from a "), Buffer.from("readable")])),
          ).toEqual({ key: "r", size: 15 });
          expect(await store.put("i", chunked(Buffer.from("from an iterable"), 3))).toEqual({
            key: "i",
            size: 16,
          });
          expect(await store.put("e", new Uint8Array(0))).toEqual({ key: "e", size: 0 });
          expect((await readAll(await store.get("f")))?.toString()).toBe("from a file");
          expect((await readAll(await store.get("r")))?.toString()).toBe("from a readable");
          expect((await readAll(await store.get("i")))?.toString()).toBe("from an iterable");
          expect((await readAll(await store.get("e")))?.length).toBe(0);
          expect((await store.head("e"))?.size).toBe(0);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }));

    it("round-trips a 12 MiB stream byte for byte", () =>
      withStore(async (store) => {
        const data = randomBytes(12 * 1024 * 1024 + 123);
        expect((await store.put("big/blob", chunked(data, 64 * 1024))).size).toBe(data.length);
        const back = await readAll(await store.get("big/blob"));
        expect(back?.length).toBe(data.length);
        expect(sha256(back!)).toBe(sha256(data));
        expect((await store.head("big/blob"))?.size).toBe(data.length);
      }));

    it("B1: a stream that fails mid-way stores nothing and leaves the old value", () =>
      withStore(async (store) => {
        await store.put("atomic", Buffer.from("old"));
        async function* failing(): AsyncGenerator<Uint8Array> {
          yield Buffer.alloc(64 * 1024, 1);
          throw new Error("source broke");
        }
        await expect(store.put("atomic", failing())).rejects.toThrow(/source broke/);
        await expect(store.put("fresh", failing())).rejects.toThrow(/source broke/);
        expect((await readAll(await store.get("atomic")))?.toString()).toBe("old");
        expect(await store.head("fresh")).toBeUndefined();
        await expect(store.put("gone", { path: "/nonexistent/roost-file" })).rejects.toMatchObject({
          operation: "put",
          key: "gone",
        });
        expect(await store.head("gone")).toBeUndefined();
        expect((await store.list("")).map((blob) => blob.key)).toEqual(["atomic"]);
      }));

    it("B4: lists by plain string prefix, sorted, across pages", () =>
      withStore(async (store) => {
        const keys = ["c/2", "a/b/c", "a/b1/x", "a/c", "b", "a/b/a", "c/1", "c/10", "c/3"];
        for (const key of keys) await store.put(key, Buffer.from(key));
        expect((await store.list("")).map((blob) => blob.key)).toEqual([...keys].sort());
        expect((await store.list("a/b")).map((blob) => blob.key)).toEqual([
          "a/b/a",
          "a/b/c",
          "a/b1/x",
        ]);
        expect((await store.list("a/b/")).map((blob) => blob.key)).toEqual(["a/b/a", "a/b/c"]);
        expect((await store.list("c/")).map((blob) => [blob.key, blob.size])).toEqual([
          ["c/1", 3],
          ["c/10", 4],
          ["c/2", 3],
          ["c/3", 3],
        ]);
        expect(await store.list("zzz/")).toEqual([]);
        expect(await store.list("a/b/c/d")).toEqual([]);
      }));

    it("delete removes one key only; the same key can be written again", () =>
      withStore(async (store) => {
        await store.put("x/y/z", Buffer.from("1"));
        await store.put("x/y2", Buffer.from("2"));
        await store.delete("x/y/z");
        expect(await store.head("x/y/z")).toBeUndefined();
        expect((await store.list("x/")).map((blob) => blob.key)).toEqual(["x/y2"]);
        await store.put("x/y/z", Buffer.from("3"));
        expect((await readAll(await store.get("x/y/z")))?.toString()).toBe("3");
      }));

    it("B3: refuses keys that could escape or collide, the same way everywhere", () =>
      withStore(async (store) => {
        for (const key of [
          "",
          "/a",
          "a/",
          "a//b",
          "../x",
          "a/../b",
          "./a",
          ".tmp/x",
          "a/.b",
          "a b",
          "a\\b",
          "ä",
          "x".repeat(901),
        ]) {
          await expect(store.put(key, Buffer.from("x")), key).rejects.toMatchObject({
            code: "invalid_request",
          });
          await expect(store.get(key), key).rejects.toMatchObject({ code: "invalid_request" });
        }
        await expect(store.list("/a")).rejects.toMatchObject({ code: "invalid_request" });
        expect(await store.list("")).toEqual([]);
      }));

    it("concurrent puts: every key lands whole; one writer wins a shared key", () =>
      withStore(async (store) => {
        const values = Array.from({ length: 8 }, (_, index) =>
          Buffer.alloc(100_000 + index, index),
        );
        await Promise.all(values.map((value, index) => store.put(`many/${index}`, value)));
        await Promise.all(values.map((value) => store.put("shared", value)));
        for (const [index, value] of values.entries()) {
          expect(sha256((await readAll(await store.get(`many/${index}`)))!)).toBe(sha256(value));
        }
        const shared = (await readAll(await store.get("shared")))!;
        expect(values.some((value) => sha256(value) === sha256(shared))).toBe(true);
      }));
  });
}
