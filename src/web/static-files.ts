/**
 * Serving the built web app (`web/dist`) from disk.
 *
 * Invariants:
 *   W1 nothing outside `distDir` is ever read: paths are decoded, normalised and checked to stay
 *      inside it (no `..`, no NUL, no symlink tricks via a prefix match without a separator).
 *   W2 hashed assets (`/assets/*`, named by content) are cached for a year as immutable;
 *      `index.html` is revalidated on every load, so a rebuild reaches browsers at once.
 *   W3 an unknown path without a file extension answers `index.html` (client-side routes);
 *      an unknown path with one answers 404, so a missing script fails loudly, not as HTML.
 */
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { gzipSync } from "node:zlib";

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
  ".webmanifest": "application/manifest+json",
  ".wasm": "application/wasm",
};

/** Types worth compressing; images and fonts already are. */
const compressible = new Set([
  ".html",
  ".js",
  ".mjs",
  ".css",
  ".json",
  ".map",
  ".svg",
  ".txt",
  ".webmanifest",
]);

export interface StaticFile {
  body: Uint8Array;
  headers: Record<string, string>;
  status: 200 | 304;
}

interface CachedFile {
  mtimeMs: number;
  size: number;
  etag: string;
  raw: Uint8Array;
  gzip: Uint8Array | undefined;
}

export interface StaticFiles {
  /** The file for a URL path, `index.html` for client routes (W3), or undefined for a 404. */
  get(
    urlPath: string,
    request: { acceptEncoding: string | undefined; ifNoneMatch: string | undefined },
  ): Promise<StaticFile | undefined>;
  /** Whether `index.html` exists (the app has been built). */
  isBuilt(): Promise<boolean>;
}

export function createStaticFiles(distDir: string): StaticFiles {
  const root = normalize(distDir);
  const cache = new Map<string, CachedFile>();

  /** W1: a path inside `root`, or undefined. */
  const resolveInside = (urlPath: string): string | undefined => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(urlPath);
    } catch {
      return undefined;
    }
    if (decoded.includes("\0")) return undefined;
    const full = normalize(join(root, decoded));
    if (full !== root && !full.startsWith(root.endsWith(sep) ? root : root + sep)) return undefined;
    return full;
  };

  const load = async (file: string): Promise<CachedFile | undefined> => {
    const info = await stat(file).catch(() => undefined);
    if (info === undefined || !info.isFile()) return undefined;
    const cached = cache.get(file);
    if (cached !== undefined && cached.mtimeMs === info.mtimeMs && cached.size === info.size)
      return cached;
    const raw = new Uint8Array(await readFile(file));
    const etag = `"${createHash("sha1").update(raw).digest("base64url").slice(0, 20)}"`;
    const entry: CachedFile = {
      mtimeMs: info.mtimeMs,
      size: info.size,
      etag,
      raw,
      gzip:
        compressible.has(extname(file)) && raw.byteLength > 1024
          ? new Uint8Array(gzipSync(raw, { level: 9 }))
          : undefined,
    };
    cache.set(file, entry);
    return entry;
  };

  const respond = (
    file: string,
    entry: CachedFile,
    cacheControl: string,
    request: { acceptEncoding: string | undefined; ifNoneMatch: string | undefined },
  ): StaticFile => {
    const headers: Record<string, string> = {
      "content-type": contentTypes[extname(file)] ?? "application/octet-stream",
      "cache-control": cacheControl,
      etag: entry.etag,
      "x-content-type-options": "nosniff",
    };
    if (entry.gzip !== undefined) headers.vary = "Accept-Encoding";
    if (
      request.ifNoneMatch !== undefined &&
      request.ifNoneMatch.split(/\s*,\s*/).includes(entry.etag)
    ) {
      return { status: 304, body: new Uint8Array(), headers };
    }
    const gzipOk = entry.gzip !== undefined && /\bgzip\b/i.test(request.acceptEncoding ?? "");
    if (gzipOk && entry.gzip !== undefined) {
      headers["content-encoding"] = "gzip";
      return { status: 200, body: entry.gzip, headers };
    }
    return { status: 200, body: entry.raw, headers };
  };

  const indexFile = join(root, "index.html");

  return {
    async isBuilt() {
      return (await stat(indexFile).catch(() => undefined))?.isFile() === true;
    },
    async get(urlPath, request) {
      const file = resolveInside(urlPath);
      if (file !== undefined && file !== root) {
        const entry = await load(file);
        if (entry !== undefined) {
          const hashed = urlPath.startsWith("/assets/");
          const isIndex = file === indexFile;
          // W2
          const cacheControl = hashed
            ? "public, max-age=31536000, immutable"
            : isIndex
              ? "no-cache"
              : "public, max-age=3600";
          return respond(file, entry, cacheControl, request);
        }
      }
      // W3
      if (extname(urlPath) !== "" && !urlPath.endsWith("/")) return undefined;
      const index = await load(indexFile);
      return index === undefined ? undefined : respond(indexFile, index, "no-cache", request);
    },
  };
}
