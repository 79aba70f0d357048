/**
 * The web app's first load (issue 16 §7, budget 100 KiB gzip of JS and CSS): each file index.html
 * makes the browser download before the first screen, and the lazy chunks loaded later, gzipped
 * as the server sends them. Builds web/dist when it is stale.
 *
 *   node bench/web-bundle.ts
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { defaultWebDistDir } from "../src/web/index.ts";
import { ensureWebBuilt } from "../test/web/harness.ts";
import {
  firstLoadBudgetBytes,
  kib,
  measureFirstLoad,
  servedGzipBytes,
} from "../test/web/first-load.ts";

ensureWebBuilt();
const load = measureFirstLoad(defaultWebDistDir);
console.log("first load (what index.html loads before the first screen):");
for (const asset of [...load.assets].sort((a, b) => b.gzipBytes - a.gzipBytes))
  console.log(
    `  ${asset.path.padEnd(40)} ${kib(asset.rawBytes).padStart(10)} raw ${kib(asset.gzipBytes).padStart(10)} gzip  (${asset.via})`,
  );
console.log(
  `  total: ${kib(load.gzipBytes)} gzip (${kib(load.rawBytes)} raw) of a ${kib(firstLoadBudgetBytes)} budget, ${kib(firstLoadBudgetBytes - load.gzipBytes)} left`,
);

const initial = new Set(load.assets.map((asset) => asset.path));
const lazy = readdirSync(join(defaultWebDistDir, "assets"))
  .map((name) => `assets/${name}`)
  .filter((path) => !initial.has(path) && /\.(js|css)$/.test(path))
  .map((path) => ({
    path,
    gzipBytes: servedGzipBytes(readFileSync(join(defaultWebDistDir, path))),
  }))
  .sort((a, b) => b.gzipBytes - a.gzipBytes);
console.log(`\nloaded later (${lazy.length} chunks, when a screen first needs them):`);
for (const chunk of lazy.slice(0, 12))
  console.log(`  ${chunk.path.padEnd(40)} ${kib(chunk.gzipBytes).padStart(10)} gzip`);
if (lazy.length > 12) console.log(`  … and ${lazy.length - 12} smaller`);
console.log(`  total: ${kib(lazy.reduce((sum, chunk) => sum + chunk.gzipBytes, 0))} gzip`);
