/**
 * The first load's budget (issue 16 §7): the JS and CSS index.html makes a browser download
 * before the first screen, gzipped as served, is at most 100 KiB. The screens, markdown and the
 * live view are their own chunks (web/src/components/screens.tsx). `node bench/web-bundle.ts`
 * prints the figures.
 */
import { mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultWebDistDir } from "../../src/web/index.ts";
import { ensureWebBuilt } from "./harness.ts";
import { firstLoadBudgetBytes, kib, measureFirstLoad } from "./first-load.ts";

describe("first load", () => {
  it("index.html's JS and CSS, with their static imports, stay within 100 KiB gzip", () => {
    ensureWebBuilt();
    const load = measureFirstLoad(defaultWebDistDir);
    const listing = load.assets.map((asset) => `${asset.path} ${kib(asset.gzipBytes)}`).join(", ");
    expect(load.gzipBytes, `first load is ${kib(load.gzipBytes)}: ${listing}`).toBeLessThanOrEqual(
      firstLoadBudgetBytes,
    );
    // The figure is about the real app: its entry and stylesheet are in it…
    expect(load.assets.some((asset) => /^assets\/index-.*\.js$/.test(asset.path))).toBe(true);
    expect(load.assets.some((asset) => asset.path.endsWith(".css"))).toBe(true);
    // …and the heavy parts are not: they load when a screen first needs them.
    const assets = readdirSync(join(defaultWebDistDir, "assets"));
    for (const lazy of ["markdown-", "rfb-", "chat-view-", "memory-panel-", "skills-", "teams-"]) {
      const built = assets.filter((name) => name.startsWith(lazy) && name.endsWith(".js"));
      expect(built.length, `a ${lazy}*.js chunk is built`).toBeGreaterThan(0);
      for (const name of built)
        expect(load.assets.map((asset) => asset.path)).not.toContain(`assets/${name}`);
    }
  });

  it("counts what index.html names and what those modules import statically, not import()", () => {
    const dist = mkdtempSync(join(tmpdir(), "roost-first-load-"));
    try {
      mkdirSync(join(dist, "assets"));
      writeFileSync(
        join(dist, "index.html"),
        `<script type="module" crossorigin src="/assets/entry.js"></script>
         <link rel="modulepreload" crossorigin href="/assets/shared.js">
         <link rel="stylesheet" crossorigin href="/assets/app.css">
         <link rel="icon" href="/favicon.svg">`,
      );
      writeFileSync(
        join(dist, "assets", "entry.js"),
        `import{a as b}from"./shared.js";import"./side.js";const l=()=>import("./lazy.js");export{c}from"./more.js";`,
      );
      writeFileSync(join(dist, "assets", "shared.js"), "export const a = 1;");
      writeFileSync(join(dist, "assets", "side.js"), "x".repeat(5000)); // compressible: gzipped
      writeFileSync(join(dist, "assets", "more.js"), "export const c = 2;");
      writeFileSync(join(dist, "assets", "lazy.js"), "never counted");
      writeFileSync(join(dist, "assets", "app.css"), "body{}");
      const load = measureFirstLoad(dist);
      expect(load.assets.map((asset) => [asset.path, asset.via]).sort()).toEqual([
        ["assets/app.css", "index.html"],
        ["assets/entry.js", "index.html"],
        ["assets/more.js", "static import"],
        ["assets/shared.js", "index.html"],
        ["assets/side.js", "static import"],
      ]);
      const side = load.assets.find((asset) => asset.path === "assets/side.js")!;
      expect(side.rawBytes).toBe(5000);
      expect(side.gzipBytes).toBeLessThan(200);
    } finally {
      rmSync(dist, { recursive: true, force: true });
    }
  });
});
