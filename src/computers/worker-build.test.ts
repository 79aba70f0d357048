import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { prepareWorkerBuild, rewriteImports } from "./worker-build.ts";

describe("the worker's JavaScript build", () => {
  it("rewrites relative .ts specifiers only", () => {
    expect(
      rewriteImports('import { a } from "./a.ts";\nexport * from "../protocol/index.ts";'),
    ).toBe('import { a } from "./a.js";\nexport * from "../protocol/index.js";');
    expect(rewriteImports('const m = await import("./m.ts"); import "./side.ts";')).toBe(
      'const m = await import("./m.js"); import "./side.js";',
    );
    expect(rewriteImports('import { z } from "zod"; const s = "./not-an-import.ts";')).toBe(
      'import { z } from "zod"; const s = "./not-an-import.ts";',
    );
  });

  it("builds plain JavaScript that loads, and reuses it while the sources are unchanged", async () => {
    const build = await prepareWorkerBuild();
    expect(build).toBeDefined();
    expect(existsSync(build!.entry)).toBe(true);
    const builtAt = statSync(build!.entry).mtimeMs;
    expect(await prepareWorkerBuild()).toEqual(build);
    expect(statSync(build!.entry).mtimeMs).toBe(builtAt);
    // No type annotations are left, and the protocol module loads as JavaScript.
    const protocol = (await import(
      pathToFileURL(join(build!.entry, "..", "..", "protocol", "index.js")).href
    )) as {
      parseFrame: unknown;
      PROTOCOL_VERSION: number;
    };
    expect(typeof protocol.parseFrame).toBe("function");
    expect(protocol.PROTOCOL_VERSION).toBe(1);
  });

  it("bundles the worker into one CommonJS script, with zod-lite for zod, leaving the lazily loaded packages out", async () => {
    const build = await prepareWorkerBuild();
    expect(build!.relativeEntry).toMatch(/bundle\/main\.cjs$/);
    const code = readFileSync(build!.entry, "utf8");
    // No relative import is left: our modules are inside it (ws is not used).
    expect(code).not.toMatch(/(from\s+|require\(\s*)["']\.\.?\//);
    expect(code).not.toMatch(/(from\s+|require\(\s*)["'](zod|ws)["']/);
    // The protocol's schemas are built with zod-lite.ts: none of zod's own modules is inside.
    expect(code).toMatch(/src\/worker\/zod-lite\.ts/);
    expect(code).not.toMatch(/node_modules\/zod\//);
    expect(code).not.toMatch(/\$ZodType/);
    // The MCP SDK and playwright-core load only when a computer first uses them.
    expect(code).toMatch(/import\(["']@modelcontextprotocol\/sdk\/client\/index\.js["']\)/);
    expect(code).toMatch(/import\(["']playwright-core["']\)/);
    // It runs: without configuration it says what it needs and exits 2 (after loading everything).
    const run = spawnSync(process.execPath, [build!.entry], { encoding: "utf8", env: {} });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/gateway URL is required/);
    // Node's HTTP, HTTPS, TLS and zlib modules are not loaded at start (gateway-socket.ts): a
    // computer's worker never needs them, and they cost each wake time and memory; readline
    // loads at the first text `read`, crypto at the first hash of a file (light-crypto.ts).
    const loaded = spawnSync(
      process.execPath,
      [
        "--import",
        `data:text/javascript,process.on("exit", () => process.stderr.write("\\nLOADED " + process.moduleLoadList.join(",")))`,
        build!.entry,
      ],
      { encoding: "utf8", env: {} },
    );
    const modules = /LOADED (.*)/.exec(loaded.stderr)?.[1]?.split(",") ?? [];
    expect(modules).toContain("NativeModule net");
    expect(
      modules.filter((name) =>
        /^NativeModule (http|https|tls|zlib|readline|crypto|_http_\w+)$/.test(name),
      ),
    ).toEqual([]);
    // A bad ROOST_COMMAND_ENV (the provider's, protocol/command-env.ts) is refused the same way.
    const bad = spawnSync(process.execPath, [build!.entry], {
      encoding: "utf8",
      env: {
        ROOST_GATEWAY_URL: "ws://127.0.0.1:1/v1/gateway",
        ROOST_WORKER_TOKEN: "t",
        ROOST_WORKER_STATE_DIR: "/tmp",
        ROOST_COMMAND_ENV: "[1]",
      },
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/ROOST_COMMAND_ENV must be a JSON object of strings/);
  });

  it("without the bundler, the stripped files are the entry", async () => {
    const build = await prepareWorkerBuild({ bundle: false });
    expect(build!.relativeEntry).toMatch(/worker\/main\.js$/);
    const run = spawnSync(process.execPath, [build!.entry], { encoding: "utf8", env: {} });
    expect(run.status).toBe(2);
  });
});
