/**
 * A blob store in a local folder: key `a/b/c` is the file `<dir>/a/b/c`. The default for the
 * embedded mode.
 *
 * Invariants (see types.ts for B1–B4):
 *   L1 every value is written to `<dir>/.tmp/<random>`, fsynced, renamed over the final name and
 *      the parent folder fsynced (B1, B2); `.tmp/` is never listed (keys cannot start with a dot).
 *   L2 `delete` removes folders it leaves empty; a `put` racing with that removal re-creates its
 *      folder and retries the rename.
 *   L3 only the owner can read a blob (snapshots hold users' files): the store's folder is made
 *      0700 on every write (so an older, more open store is closed too) and each value 0600.
 */
import { randomUUID } from "node:crypto";
import { type Stats } from "node:fs";
import {
  chmod,
  copyFile,
  mkdir,
  open,
  readdir,
  rename,
  rm,
  rmdir,
  stat,
  unlink,
} from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import type { Readable } from "node:stream";
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

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

async function fsyncDir(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A blob store in `dir` (created on first write). */
export function createLocalBlobStore(folder: string): BlobStore {
  const dir = resolve(folder);
  const tmpDir = join(dir, ".tmp");
  const pathOf = (key: string) => join(dir, ...key.split("/"));

  const fail = (operation: BlobOperation, key: string, error: unknown): never => {
    if (error instanceof BlobStoreError) throw error;
    const code = errorCode(error);
    const hint =
      code === "ENOSPC"
        ? " (the disk is full)"
        : code === "EACCES"
          ? ` (check the permissions of ${dir})`
          : "";
    throw new BlobStoreError("internal", operation, key, `${(error as Error).message}${hint}`, {
      cause: error,
    });
  };

  async function writeTemp(tmp: string, body: BlobBody): Promise<number> {
    if (isFileBody(body)) {
      await copyFile(body.path, tmp);
      const handle = await open(tmp, "r+");
      try {
        await handle.chmod(0o600); // L3: a copy keeps its source's mode
        await handle.sync();
        return (await handle.stat()).size;
      } finally {
        await handle.close();
      }
    }
    const handle = await open(tmp, "wx", 0o600);
    try {
      let size = 0;
      if (isUint8Array(body)) {
        await handle.writeFile(body);
        size = body.byteLength;
      } else {
        for await (const chunk of body) {
          await handle.write(chunk);
          size += chunk.byteLength;
        }
      }
      await handle.sync();
      return size;
    } finally {
      await handle.close();
    }
  }

  async function put(key: string, body: BlobBody): Promise<PutResult> {
    assertValidKey(key, "put");
    const target = pathOf(key);
    const tmp = join(tmpDir, randomUUID());
    try {
      await mkdir(tmpDir, { recursive: true, mode: 0o700 }); // L3
      await chmod(dir, 0o700);
      const size = await writeTemp(tmp, body);
      for (let attempt = 0; ; attempt++) {
        await mkdir(dirname(target), { recursive: true, mode: 0o700 });
        try {
          await rename(tmp, target); // L1
          break;
        } catch (error) {
          if (errorCode(error) !== "ENOENT" || attempt >= 3) throw error; // L2
        }
      }
      await fsyncDir(dirname(target));
      return { key, size };
    } catch (error) {
      await rm(tmp, { force: true });
      return fail("put", key, error);
    }
  }

  async function get(key: string): Promise<Readable | undefined> {
    assertValidKey(key, "get");
    let handle;
    try {
      handle = await open(pathOf(key), "r");
    } catch (error) {
      if (["ENOENT", "ENOTDIR"].includes(errorCode(error) ?? "")) return undefined;
      return fail("get", key, error);
    }
    try {
      if (!(await handle.stat()).isFile()) {
        await handle.close();
        return undefined;
      }
    } catch (error) {
      await handle.close();
      return fail("get", key, error);
    }
    return handle.createReadStream({ highWaterMark: 256 * 1024 });
  }

  async function head(key: string): Promise<BlobInfo | undefined> {
    assertValidKey(key, "head");
    let stats: Stats;
    try {
      stats = await stat(pathOf(key));
    } catch (error) {
      if (["ENOENT", "ENOTDIR"].includes(errorCode(error) ?? "")) return undefined;
      return fail("head", key, error);
    }
    return stats.isFile() ? { key, size: stats.size, modifiedAt: stats.mtime } : undefined;
  }

  async function list(prefix: string): Promise<BlobInfo[]> {
    assertValidPrefix(prefix);
    const slash = prefix.lastIndexOf("/");
    const base = slash < 0 ? dir : pathOf(prefix.slice(0, slash));
    const found: BlobInfo[] = [];
    async function walk(folder: string): Promise<void> {
      let entries;
      try {
        entries = await readdir(folder, { withFileTypes: true });
      } catch (error) {
        if (["ENOENT", "ENOTDIR"].includes(errorCode(error) ?? "")) return;
        throw error;
      }
      for (const entry of entries) {
        if (entry.name.startsWith(".")) continue; // L1: .tmp/ and nothing a key can name
        const path = join(folder, entry.name);
        const key = relative(dir, path).split(sep).join("/");
        if (entry.isDirectory()) {
          // Descend only where keys below can still match the prefix.
          if (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`)) await walk(path);
        } else if (entry.isFile() && key.startsWith(prefix)) {
          const stats = await stat(path).catch(() => undefined); // deleted meanwhile: skip
          if (stats) found.push({ key, size: stats.size, modifiedAt: stats.mtime });
        }
      }
    }
    try {
      await walk(base);
    } catch (error) {
      return fail("list", prefix, error);
    }
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)); // B4
  }

  async function remove(key: string): Promise<void> {
    assertValidKey(key, "delete");
    const target = pathOf(key);
    try {
      await unlink(target);
    } catch (error) {
      if (["ENOENT", "ENOTDIR"].includes(errorCode(error) ?? "")) return;
      if (errorCode(error) === "EISDIR" || errorCode(error) === "EPERM") {
        if ((await stat(target).catch(() => undefined))?.isDirectory()) return; // a folder is not a blob
      }
      return fail("delete", key, error);
    }
    // L2: prune folders left empty, up to (not including) the store's own folder.
    for (
      let folder = dirname(target);
      folder !== dir && folder.startsWith(dir + sep);
      folder = dirname(folder)
    ) {
      try {
        await rmdir(folder);
      } catch {
        break; // not empty, or a put re-created it
      }
    }
  }

  return { kind: "local", put, get, head, list, delete: remove, close: async () => undefined };
}
