import { existsSync, statSync } from "node:fs";
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
});
