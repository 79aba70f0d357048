/**
 * The worker runs inside every awake computer, so its memory counts once per computer. Run from
 * its TypeScript sources, Node loads its type stripper (a WASM compiler) into each worker: about
 * 30 MiB more RSS than running the same code as JavaScript (measured: 107 vs 76 MiB). So at
 * start-up the server strips the worker's sources (src/worker and src/protocol, which is all the
 * worker imports of ours; lint enforces that) into plain JavaScript once, and providers start
 * that. When the build cannot be made (a read-only install), workers run from the sources.
 *
 * Where rolldown is installed, the same build also bundles the worker into one CommonJS script
 * (`bundle/main.cjs`), and that is the entry providers start: Node then reads and compiles one
 * file instead of resolving and linking ~150 modules, which takes ~40 ms off every worker's start
 * and so off every wake (decision 0021, a third pass). In the bundle `zod` is `zod-lite.ts`, the
 * part of zod the protocol's schemas use: ~60 ms off a start and ~3 MiB off a worker's memory.
 * The script is CommonJS because Node starts one 11–23 ms sooner than an ES module (the sixth
 * pass). The MCP SDK and playwright-core stay outside it: they load only when a computer first
 * uses them. Without rolldown (an install without it), the stripped files are the entry.
 *
 * The output lives under node_modules/.cache/roost-worker/<version of the sources>: inside the
 * tree sandboxes already mount, and where the packages left outside the bundle resolve from
 * node_modules as for the sources. Folders of older versions are left behind (about 1 MB each).
 */
import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { stripTypeScriptTypes } from "node:module";
import { join, resolve } from "node:path";

/**
 * Node options of a worker inside a computer, where its memory counts once per awake computer
 * (decision 0021). `--max-semi-space-size=1` (MiB) keeps the young generation small: its garbage
 * is collected a little more often, and ~10 MiB of RSS an idle worker never needs are not held.
 * `--no-opt --no-maglev` leave out V8's optimizing compilers (their code and their work; the
 * baseline compiler stays): the worker waits on sockets, files and child processes, and loses
 * no measurable speed. Not `--lite-mode`: it saves ~2 MiB more but turns WebAssembly off, which
 * Node's TypeScript stripper needs when a worker runs from the sources.
 * Measured in bench/tool-roundtrip.ts and bench/wake-local.ts.
 */
export const workerNodeOptions: readonly string[] = [
  "--max-semi-space-size=1",
  "--no-opt",
  "--no-maglev",
];

/** The folders the worker's code comes from, relative to `src/`. */
const workerFolders = ["worker", "protocol"] as const;
export const workerBuildDir = join("node_modules", ".cache", "roost-worker");

export interface WorkerBuild {
  /** Absolute path of the built entry on this host. */
  entry: string;
  /** The entry relative to the checkout's root (for sandboxes that mount the checkout elsewhere). */
  relativeEntry: string;
}

const thisCheckout = resolve(import.meta.dirname, "..", "..");

/** Packages a worker loads only when a computer first needs them, or never (optional). */
const outsideTheBundle = [
  /^node:/,
  /^@modelcontextprotocol\//,
  "playwright-core",
  // ws's optional native helpers: it runs without them.
  "bufferutil",
  "utf-8-validate",
];
/**
 * What the bundle's imports of packages resolve to instead, as absolute paths under `root`: no
 * package is bundled, so the sources alone are the build's version.
 */
export function workerBundleAliases(root: string): Record<string, string> {
  return { zod: join(root, "src", "worker", "zod-lite.ts") };
}

interface Bundler {
  build(options: {
    input: string;
    platform: "node";
    external: (string | RegExp)[];
    resolve: { alias: Record<string, string> };
    output: { file: string; format: "cjs" };
    logLevel: "silent";
  }): Promise<unknown>;
}

/**
 * Whether rolldown is installed, without loading it: the server only loads it (its native
 * binding, ~30 ms and its memory) when a build is missing.
 */
function bundlerInstalled(): boolean {
  try {
    import.meta.resolve("rolldown");
    return true;
  } catch {
    return false;
  }
}

/**
 * Node's own type stripper (the one that runs our sources). It warns once that its API is
 * experimental; that warning says nothing to an operator starting Roost, so it is not passed on.
 */
function stripTypes(code: string): string {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- put back as it was, below
  const original = process.emitWarning;
  const emitWarning = original.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = (warning: string | Error, ...rest: unknown[]) => {
    if (String(warning).includes("stripTypeScriptTypes")) return;
    emitWarning(warning, ...rest);
  };
  try {
    return stripTypeScriptTypes(code, { mode: "strip" });
  } finally {
    process.emitWarning = original;
  }
}

/** Rewrites relative `.ts` specifiers (static and dynamic imports) to `.js`. */
export function rewriteImports(code: string): string {
  return code.replace(
    /((?:from\s+|import\s*\(\s*|import\s+)["']\.\.?\/[^"']*?)\.ts(["'])/g,
    "$1.js$2",
  );
}

async function sources(root: string): Promise<{ folder: string; file: string; path: string }[]> {
  const found = [];
  for (const folder of workerFolders) {
    for (const file of (await readdir(join(root, "src", folder))).sort()) {
      if (file.endsWith(".ts") && !file.endsWith(".test.ts"))
        found.push({ folder, file, path: join(root, "src", folder, file) });
    }
  }
  return found;
}

/** Builds the worker's JavaScript when it is missing or older than its sources; fast otherwise. */
export async function prepareWorkerBuild(
  options: {
    roostRoot?: string;
    log?: (message: string) => void;
    /** false: only the stripped files, even where rolldown is installed (tests, benches). */
    bundle?: boolean;
  } = {},
): Promise<WorkerBuild | undefined> {
  const root = options.roostRoot ?? thisCheckout;
  try {
    const files = await sources(root);
    const bundled = options.bundle !== false && bundlerInstalled();
    const fingerprint = createHash("sha256").update(process.version);
    for (const source of files) {
      const info = await stat(source.path);
      fingerprint.update(`${source.folder}/${source.file}:${info.size}:${info.mtimeMs}\n`);
    }
    if (bundled) fingerprint.update("bundle\n");
    // One immutable folder per version of the sources: a server building while another one's
    // workers start never pulls files from under them.
    const relativeDir = join(workerBuildDir, fingerprint.digest("hex").slice(0, 16));
    const relativeEntry = join(
      relativeDir,
      ...(bundled ? ["bundle", "main.cjs"] : ["worker", "main.js"]),
    );
    const out = join(root, relativeDir);
    const build = { entry: join(root, relativeEntry), relativeEntry };
    if (
      await stat(join(out, "complete")).then(
        () => true,
        () => false,
      )
    )
      return build;

    const staging = `${out}.${process.pid}.tmp`;
    await rm(staging, { recursive: true, force: true });
    for (const source of files) {
      await mkdir(join(staging, source.folder), { recursive: true });
      const code = stripTypes(await readFile(source.path, "utf8"));
      await writeFile(
        join(staging, source.folder, source.file.replace(/\.ts$/, ".js")),
        rewriteImports(code),
      );
    }
    // The built files are ES modules like the sources.
    await writeFile(join(staging, "package.json"), '{ "type": "module" }\n');
    if (bundled) {
      const bundler: Bundler = await import("rolldown");
      await bundler.build({
        input: join(root, "src", "worker", "main.ts"),
        platform: "node",
        external: outsideTheBundle,
        resolve: { alias: workerBundleAliases(root) },
        output: { file: join(staging, "bundle", "main.cjs"), format: "cjs" },
        logLevel: "silent",
      });
    }
    await writeFile(join(staging, "complete"), "");
    try {
      await rename(staging, out);
    } catch (error) {
      // Another server built the same version first: use theirs.
      await rm(staging, { recursive: true, force: true });
      if (
        !(await stat(join(out, "complete")).then(
          () => true,
          () => false,
        ))
      )
        throw error;
    }
    return build;
  } catch (error) {
    options.log?.(
      `roost: could not build the worker's JavaScript (workers run from the sources): ${String(error)}`,
    );
    return undefined;
  }
}
