/**
 * What a browser downloads of the web app before its first screen: the files index.html names
 * (its module script, `modulepreload` links and stylesheets) and every module those import
 * statically, gzipped as the server sends them (src/web/static-files.ts: level 9 above 1 KiB).
 * Dynamic `import()` chunks (the screens, markdown, the live view) are not part of it.
 */
import { readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { gzipSync } from "node:zlib";

/** Issue 16 §7: JS and CSS of the first load, gzipped. */
export const firstLoadBudgetBytes = 100 * 1024;

export interface FirstLoadAsset {
  /** Path under dist, e.g. `assets/index-abc.js`. */
  readonly path: string;
  readonly rawBytes: number;
  readonly gzipBytes: number;
  /** How it is reached: named in index.html, or imported by another initial module. */
  readonly via: "index.html" | "static import";
}

export interface FirstLoad {
  readonly assets: readonly FirstLoadAsset[];
  readonly gzipBytes: number;
  readonly rawBytes: number;
}

/** Bytes on the wire the way the server sends them. */
export function servedGzipBytes(raw: Uint8Array): number {
  return raw.byteLength > 1024 ? gzipSync(raw, { level: 9 }).byteLength : raw.byteLength;
}

const tagAttributes = /<(script|link)\b([^>]*)>/g;
// `import x from "./a.js"`, `import "./a.js"`, `export { y } from "./a.js"`; never `import(`.
const staticImport = /\b(?:import|export)\s*(?!\()(?:[\w$*{}\s,]*?\bfrom\s*)?["']([^"']+\.js)["']/g;

function attribute(attributes: string, name: string): string | undefined {
  return new RegExp(`\\b${name}\\s*=\\s*"([^"]*)"`).exec(attributes)?.[1];
}

/** The first-load set of a built app in `distDir` (web/dist). */
export function measureFirstLoad(distDir: string): FirstLoad {
  const index = readFileSync(join(distDir, "index.html"), "utf8");
  const named: string[] = [];
  for (const [, tag, attributes = ""] of index.matchAll(tagAttributes)) {
    const rel = attribute(attributes, "rel");
    const target =
      tag === "script"
        ? attribute(attributes, "src")
        : rel === "modulepreload" || rel === "stylesheet"
          ? attribute(attributes, "href")
          : undefined;
    if (target !== undefined && /\.(js|css)$/.test(target) && !/^[a-z]+:/i.test(target))
      named.push(target.replace(/^\//, ""));
  }
  const assets = new Map<string, FirstLoadAsset>();
  const add = (path: string, via: FirstLoadAsset["via"]): Buffer | undefined => {
    if (assets.has(path)) return undefined;
    const raw = readFileSync(join(distDir, path));
    assets.set(path, { path, rawBytes: raw.byteLength, gzipBytes: servedGzipBytes(raw), via });
    return raw;
  };
  const followImports = (path: string, raw: Buffer) => {
    if (!path.endsWith(".js")) return;
    for (const [, specifier = ""] of raw.toString("utf8").matchAll(staticImport)) {
      if (!specifier.startsWith(".") && !specifier.startsWith("/")) continue;
      const target = specifier.startsWith("/")
        ? specifier.slice(1)
        : posix.join(posix.dirname(path), specifier);
      const imported = add(target, "static import");
      if (imported !== undefined) followImports(target, imported);
    }
  };
  const first = named.flatMap((path) => {
    const raw = add(path, "index.html");
    return raw === undefined ? [] : [{ path, raw }];
  });
  for (const { path, raw } of first) followImports(path, raw);
  const list = [...assets.values()];
  return {
    assets: list,
    gzipBytes: list.reduce((sum, asset) => sum + asset.gzipBytes, 0),
    rawBytes: list.reduce((sum, asset) => sum + asset.rawBytes, 0),
  };
}

export const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
